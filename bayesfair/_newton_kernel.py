"""Compiled Newton's methods for logistic likelihoods: the nested-Laplace fit of the
per-intersection counts (:mod:`bayesfair.models._nested_laplace`) and I-hat's weighted
logistic regression (:class:`bayesfair.scan.ihat._WeightedLogit`).

Both are refitted thousands of times on small systems, where NumPy spends its time in
call overhead rather than arithmetic: interval calibration refits the counts' model on
every replicate table, each on a grid of 81 points (486 with a size term) whose systems
are ``r x r`` with ``r = 1 + sum(levels)`` (about ten); the scan's permutation test
refits two weighted logistic regressions, on a few dozen merged rows, for every permuted
data set.

The nested-Laplace maths is that of ``_LowRankPrior`` (see its docstring): with ``lam =
1 + t w`` (``t``: every intersection's deviation variance, ``tau^2``, plus ``psi^2 v`` with
a size term) and the effects' precision ``M = D^{-1} + Z' diag(w / lam) Z``, a Newton step
solves ``M beta = Z' (b / lam)`` and sets ``u = t (b - W Z beta) / lam``, ``f = Z beta +
u``, ``a = u / t``. ``Z`` is the intercept's column and every attribute's one-hot columns,
so each of its rows has ``1 + attributes`` ones among its ``r`` entries; the sums over
``Z`` run over those (:func:`_ones_of`), and a step writes into arrays allocated once per
call (:func:`_workspace`); :func:`grid_laplace` fits only the grid points that carry
weight. Every compiled function lives in this one file: numba
invalidates a cached function when its own file changes, not when a function it calls in
another file does.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "effect_factors",
    "grid_laplace",
    "half_logdets",
    "modes",
    "newton_point",
    "weighted_logit",
]


@numba.njit(cache=True)
def _log1pexp(x: float) -> float:
    """``log(1 + exp(x))`` as ``numpy.logaddexp(0, x)`` computes it."""
    return max(x, 0.0) + np.log1p(np.exp(-abs(x)))


@numba.njit(cache=True)
def _expit(x: float) -> float:
    return 1.0 / (1.0 + np.exp(-x))


@numba.njit(cache=True)
def _cholesky_into(m, low):
    """The lower Cholesky factor of the symmetric positive definite ``m``, written into
    the lower triangle of ``low`` (whose upper triangle stays 0)."""
    r = m.shape[0]
    for j in range(r):
        s = m[j, j]
        for q in range(j):
            s -= low[j, q] * low[j, q]
        low[j, j] = np.sqrt(s)
        for i in range(j + 1, r):
            s = m[i, j]
            for q in range(j):
                s -= low[i, q] * low[j, q]
            low[i, j] = s / low[j, j]


@numba.njit(cache=True)
def _cholesky(m):
    """Lower Cholesky factor of the symmetric positive definite ``m``."""
    low = np.zeros(m.shape)
    _cholesky_into(m, low)
    return low


@numba.njit(cache=True)
def _forward(low, x, out):
    """``low^{-1} x`` for a lower-triangular ``low``, written into ``out`` (and returned)."""
    for i in range(low.shape[0]):
        s = x[i]
        for q in range(i):
            s -= low[i, q] * out[q]
        out[i] = s / low[i, i]
    return out


@numba.njit(cache=True)
def _backward_into(low, y, x):
    """``low'^{-1} y`` for a lower-triangular ``low``, written into ``x``."""
    r = low.shape[0]
    for i in range(r - 1, -1, -1):
        s = y[i]
        for q in range(i + 1, r):
            s -= low[q, i] * x[q]
        x[i] = s / low[i, i]


@numba.njit(cache=True)
def _backward(low, y):
    """``low'^{-1} y`` for a lower-triangular ``low``."""
    x = np.empty(len(y))
    _backward_into(low, y, x)
    return x


@numba.njit(cache=True)
def _ones_of(z):
    """``Z``'s nonzero entries row by row: their columns and values (G, q), ``q`` the most
    of any row (shorter rows padded with value 0). ``Z`` is the intercept's column and
    every attribute's one-hot columns, so ``q = 1 + attributes`` of its ``r`` columns: every
    sum over a row of ``Z`` runs over ``q`` entries."""
    g_count, r = z.shape
    q = 0
    for g in range(g_count):
        c = 0
        for i in range(r):
            if z[g, i] != 0.0:
                c += 1
        q = max(q, c)
    cols = np.zeros((g_count, q), dtype=np.int64)
    vals = np.zeros((g_count, q))
    for g in range(g_count):
        c = 0
        for i in range(r):
            if z[g, i] != 0.0:
                cols[g, c] = i
                vals[g, c] = z[g, i]
                c += 1
    return cols, vals


@numba.njit(cache=True)
def _effects_precision(cols, vals, d, tau2, w, lam, m):
    """``lam = 1 + tau2 w`` (G,) and ``M = D^{-1} + Z' diag(w / lam) Z`` (r, r) at one grid
    point (``tau2`` (G,): the deviations' variances; ``Z`` as :func:`_ones_of`), written into
    ``lam`` and ``m``."""
    g_count, q = cols.shape
    m[:, :] = 0.0
    for g in range(g_count):
        lam[g] = 1.0 + tau2[g] * w[g]
        c = w[g] / lam[g]
        for i in range(q):
            ci = c * vals[g, i]
            for j in range(q):
                m[cols[g, i], cols[g, j]] += ci * vals[g, j]
    for i in range(m.shape[0]):
        m[i, i] += 1.0 / d[i]


@numba.njit(cache=True)
def _newton_step(cols, vals, d, tau2, w, b, work, f, a):
    """The Newton target ``f = (C^{-1} + W)^{-1} b`` and ``a = C^{-1} f`` at one grid point
    (``d`` (r,): the effects' variances, ``tau2`` (G,): the deviations'), written into
    ``f`` and ``a``; ``work`` is :func:`_workspace`'s."""
    lam, m, low, rhs, tmp = work
    _effects_precision(cols, vals, d, tau2, w, lam, m)
    _cholesky_into(m, low)
    rhs[:] = 0.0
    g_count, q = cols.shape
    for g in range(g_count):
        bl = b[g] / lam[g]
        for i in range(q):
            rhs[cols[g, i]] += vals[g, i] * bl
    _backward_into(low, _forward(low, rhs, tmp), rhs)  # beta, in rhs
    for g in range(g_count):
        zb = 0.0
        for i in range(q):
            zb += vals[g, i] * rhs[cols[g, i]]
        u = tau2[g] * (b[g] - w[g] * zb) / lam[g]
        f[g] = zb + u
        a[g] = u / tau2[g]


@numba.njit(cache=True)
def _workspace(g_count, r):
    """Arrays a Newton step writes into: ``lam`` (G,), ``M`` and its factor (r, r), two
    (r,) vectors."""
    return np.empty(g_count), np.empty((r, r)), np.zeros((r, r)), np.empty(r), np.empty(r)


@numba.njit(cache=True)
def newton_point(z, d, tau2, w, b):
    """The Newton target ``f = (C^{-1} + W)^{-1} b`` and ``a = C^{-1} f`` at one grid
    point (``d`` (r,): the effects' variances, ``tau2`` (G,): the deviations'): one step of
    :func:`_climb` on its own, which the checks compare against the dense formula."""
    cols, vals = _ones_of(z)
    f, a = np.empty(len(b)), np.empty(len(b))
    _newton_step(cols, vals, d, tau2, w, b, _workspace(z.shape[0], z.shape[1]), f, a)
    return f, a


@numba.njit(cache=True)
def _rate(eta: float, e: float) -> float:
    """``expit(eta)`` from ``e = exp(-|eta|)``."""
    return 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)


@numba.njit(cache=True)
def _objective(n, k, m, f, a, p):
    """``log p(k | m + f) - f' a / 2``, the function Newton's method climbs, as ``sum_g
    k_g eta_g - n_g log(1 + exp(eta_g)) - f_g a_g / 2``; writes ``expit(eta)`` into ``p``
    (the next step's weights), from the same exponential."""
    s = 0.0
    for g in range(len(n)):
        eta = m + f[g]
        e = np.exp(-abs(eta))
        s += k[g] * eta - n[g] * (max(eta, 0.0) + np.log1p(e)) - 0.5 * a[g] * f[g]
        p[g] = _rate(eta, e)
    return s


@numba.njit(cache=True)
def _buffers(g_count):
    """The (G,) arrays a climb writes into: ``w``, ``b``, ``p``, ``p_try``, ``f_new``,
    ``a_new``, ``f_try``, ``a_try``."""
    return (
        np.empty(g_count),
        np.empty(g_count),
        np.empty(g_count),
        np.empty(g_count),
        np.empty(g_count),
        np.empty(g_count),
        np.empty(g_count),
        np.empty(g_count),
    )


@numba.njit(cache=True)
def _climb(n, k, m, cols, vals, d, tau2, f, a, warm, max_iter, tol, bufs, work):
    """Newton's method at one grid point (``d`` (r,), ``tau2`` (G,)) of one table (``k``
    (G,), pooled log-odds ``m``) from ``f``, updating ``f`` and ``a`` to the mode in
    place; returns the objective there. A full step is halved (up to 30 times) where it
    would lower the objective, until the largest move is below ``tol`` (at most
    ``max_iter`` steps). ``warm``: ``f`` is another point's mode, whose ``a`` is not this
    point's, so the first step is taken whole."""
    w, b, p, p_try, f_new, a_new, f_try, a_try = bufs
    g_count = len(n)
    if warm:
        value = -np.inf
        for g in range(g_count):
            eta = m + f[g]
            p[g] = _rate(eta, np.exp(-abs(eta)))
    else:
        value = _objective(n, k, m, f, a, p)
    for _ in range(max_iter):
        for g in range(g_count):
            w[g] = n[g] * p[g] * (1 - p[g])
            b[g] = w[g] * f[g] + (k[g] - n[g] * p[g])
        _newton_step(cols, vals, d, tau2, w, b, work, f_new, a_new)
        step = 1.0
        for _ in range(30):
            for g in range(g_count):
                f_try[g] = f[g] + step * (f_new[g] - f[g])
                a_try[g] = a[g] + step * (a_new[g] - a[g])
            value_try = _objective(n, k, m, f_try, a_try, p_try)
            if not value_try < value - 1e-10:
                break
            step /= 2
        moved = 0.0
        for g in range(g_count):
            moved = max(moved, abs(f_try[g] - f[g]))
            f[g], a[g], p[g] = f_try[g], a_try[g], p_try[g]
        value = value_try
        if moved < tol:
            break
    return value


@numba.njit(cache=True)
def _half_logdet(n, m, f, cols, vals, d, tau2, work):
    """Half the log-determinant of ``B = I + W^(1/2) C W^(1/2)`` at one grid point's mode
    ``f`` (G,)."""
    return _half_logdet_of(_weights(n, m, f), cols, vals, d, tau2, work)


@numba.njit(cache=True)
def _half_logdet_of(w, cols, vals, d, tau2, work):
    """Half the log-determinant of ``B`` with the binomial information ``w`` (G,): ``(sum
    log lam + sum log D + log|M|) / 2``."""
    lam, mat, low, _, _ = work
    _effects_precision(cols, vals, d, tau2, w, lam, mat)
    _cholesky_into(mat, low)
    h = 0.0
    for g in range(len(w)):
        h += np.log(lam[g])
    for i in range(len(d)):
        h += np.log(d[i]) + 2.0 * np.log(low[i, i])
    return 0.5 * h


@numba.njit(cache=True)
def _start(k, z, s_count):
    """What fitting tables ``k`` (T, G) on ``s_count`` grid points needs: ``Z``'s ones
    (:func:`_ones_of`), the step's and the climb's arrays, and ``f`` and ``a`` (T, S, G)
    at 0."""
    t_count, g_count = k.shape
    cols, vals = _ones_of(z)
    f = np.zeros((t_count, s_count, g_count))
    return cols, vals, _workspace(g_count, z.shape[1]), _buffers(g_count), f, np.zeros_like(f)


@numba.njit(cache=True)
def modes(n, k, m, z, d, tau2, max_iter, tol):
    """The posterior mode of ``f = eta - m`` of every table ``k`` (T, G) at every grid
    point (``d`` (S, r), ``tau2`` (T, S, G)): ``f`` and ``a`` (T, S, G) and the objective
    (T, S), each point by :func:`_climb`, every point after the first from the previous
    point's mode (about three steps instead of five from 0). Every point, where
    :func:`grid_laplace` evaluates those that carry weight: the checks compare the two."""
    t_count, s_count = k.shape[0], d.shape[0]
    cols, vals, work, bufs, f, a = _start(k, z, s_count)
    value = np.empty((t_count, s_count))
    for t in range(t_count):
        for s in range(s_count):
            if s > 0:
                f[t, s] = f[t, s - 1]
            value[t, s] = _climb(
                n, k[t], m[t], cols, vals, d[s], tau2[t, s], f[t, s], a[t, s], s > 0,
                max_iter, tol, bufs, work,
            )  # fmt: skip
    return f, a, value


@numba.njit(cache=True)
def _weights(n, eta_offset, f):
    """The binomial information ``w = n p (1 - p)`` at ``eta = eta_offset + f``."""
    w = np.empty(len(n))
    for g in range(len(n)):
        p = _expit(eta_offset + f[g])
        w[g] = n[g] * p * (1 - p)
    return w


@numba.njit(cache=True)
def half_logdets(n, m, f, z, d, tau2):
    """Half the log-determinant of ``B = I + W^(1/2) C W^(1/2)`` at every table's and
    grid point's mode ``f`` (T, S, G), with the deviations' variances ``tau2`` (T, S, G):
    (T, S), the Laplace estimate's normalisation, at every point (as :func:`modes`; the fit
    goes through :func:`grid_laplace`)."""
    t_count, s_count, _ = f.shape
    cols, vals = _ones_of(z)
    work = _workspace(f.shape[2], z.shape[1])
    out = np.empty((t_count, s_count))
    for t in range(t_count):
        for s in range(s_count):
            out[t, s] = _half_logdet(n, m[t], f[t, s], cols, vals, d[s], tau2[t, s], work)
    return out


@numba.njit(cache=True)
def _log_weight(n, k, m, cols, vals, d, tau2, f, a, warm, max_iter, tol, bufs, work, prior):
    """One grid point's mode (:func:`_climb`, into ``f`` and ``a``) and log weight: the
    Laplace estimate of the log marginal likelihood plus the point's log ``prior``."""
    value = _climb(n, k, m, cols, vals, d, tau2, f, a, warm, max_iter, tol, bufs, work)
    w, p = bufs[0], bufs[2]  # p: expit at the mode, from the climb's last objective
    for g in range(len(n)):
        w[g] = n[g] * p[g] * (1 - p[g])
    return value - _half_logdet_of(w, cols, vals, d, tau2, work) + prior


@numba.njit(cache=True)
def _coarse(size):
    """The first, middle and last of ``size`` indices (fewer where they coincide)."""
    out = np.empty(3, dtype=np.int64)
    c = 0
    for i in (0, (size - 1) // 2, size - 1):
        if c == 0 or out[c - 1] != i:
            out[c] = i
            c += 1
    return out[:c]


@numba.njit(cache=True)
def grid_laplace(n, k, m, z, d, tau2, log_prior, shape, drop, max_iter, tol):
    """The nested-Laplace log weights of every table ``k`` (T, G) on a grid of ``shape``
    (its points in C order, ``S = prod(shape)``), evaluated where they matter: ``f``, ``a``
    (T, S, G) at the modes, and the log weights ``objective - half_logdet + log_prior``
    (T, S), ``-inf`` at the points left out.

    Per table, a coarse grid (the first, middle and last index of every axis) is fitted,
    then every point whose log weight is above the largest so far minus ``drop`` fits its
    neighbours on the grid (one index apart on one axis), each from that point's mode (or
    a fitted neighbour's on the last axis, the size term's scale, which moves the mode
    least), until no new point is within ``drop``: a flood fill of the region of the
    weights' superlevel set that the coarse points reach. With ``drop = 40``, a point left
    out has a weight below ``e^-40 = 4e-18`` of the largest, below a float64 sum's
    resolution; ``drop = inf`` fits every point. The Laplace weights are smooth in the log
    scales; a second region of weight is reached wherever it holds a coarse point. With
    many intersections the scales are pinned down and the region is a fraction of the
    grid."""
    t_count, s_count = k.shape[0], d.shape[0]
    cols, vals, work, bufs, f, a = _start(k, z, s_count)
    lw = np.full((t_count, s_count), -np.inf)
    seeds = []
    for i in _coarse(shape[0]):
        for j in _coarse(shape[1]):
            for q in _coarse(shape[2]):
                seeds.append((i * shape[1] + j) * shape[2] + q)
    visited = np.zeros(s_count, dtype=np.bool_)
    queue = np.empty(s_count, dtype=np.int64)
    for t in range(t_count):
        visited[:] = False
        best = -np.inf
        for i, s in enumerate(seeds):
            if i > 0:
                f[t, s] = f[t, seeds[i - 1]]
            lw[t, s] = _log_weight(
                n, k[t], m[t], cols, vals, d[s], tau2[t, s], f[t, s], a[t, s], i > 0,
                max_iter, tol, bufs, work, log_prior[s],
            )  # fmt: skip
            visited[s] = True
            best = max(best, lw[t, s])
        head, tail = 0, 0
        for s in seeds:
            if lw[t, s] > best - drop:
                queue[tail] = s
                tail += 1
        while head < tail:
            s = queue[head]
            head += 1
            if not lw[t, s] > best - drop:  # the largest rose since it was queued
                continue
            i0 = s // (shape[1] * shape[2])
            i1 = (s // shape[2]) % shape[1]
            i2 = s % shape[2]
            for axis in range(3):
                for step in (-1, 1):
                    j0 = i0 + step * (axis == 0)
                    j1 = i1 + step * (axis == 1)
                    j2 = i2 + step * (axis == 2)
                    if not (0 <= j0 < shape[0] and 0 <= j1 < shape[1] and 0 <= j2 < shape[2]):
                        continue
                    q = (j0 * shape[1] + j1) * shape[2] + j2
                    if visited[q]:
                        continue
                    visited[q] = True
                    src = s  # from a fitted neighbour on the size scale where there is one
                    if j2 > 0 and np.isfinite(lw[t, q - 1]):
                        src = q - 1
                    elif j2 < shape[2] - 1 and np.isfinite(lw[t, q + 1]):
                        src = q + 1
                    f[t, q] = f[t, src]
                    lw[t, q] = _log_weight(
                        n, k[t], m[t], cols, vals, d[q], tau2[t, q], f[t, q], a[t, q], True,
                        max_iter, tol, bufs, work, log_prior[q],
                    )  # fmt: skip
                    best = max(best, lw[t, q])
                    if lw[t, q] > best - drop:
                        queue[tail] = q
                        tail += 1
    return f, a, lw


@numba.njit(cache=True)
def effect_factors(n, m, f, z, d, tau2, points):
    """What a draw of ``eta`` needs at each of the grid ``points`` (U,) of every table, at
    its mode ``f`` (T, S, G): ``lam`` (T, U, G) and ``L_M^{-T}`` (T, U, r, r), the
    transposed inverse of ``M``'s Cholesky factor. The posterior of the effects and
    deviations is Gaussian with ``beta ~ N(0, M^{-1})`` and, given ``beta``, ``u = -(t w /
    lam) Z beta + N(0, t / lam)`` independently, so ``eta - mode = diag(1 / lam) Z beta +
    sqrt(t / lam) e``, whose covariance is the posterior's, ``diag(t / lam) + A M^{-1} A'``
    with ``A = diag(1 / lam) Z``: a draw costs ``r^2 + G r`` rather than the ``G^2`` of a
    factor of the ``G x G`` covariance, which is never formed."""
    t_count = f.shape[0]
    r = z.shape[1]
    lam_out = np.empty((t_count, len(points), f.shape[2]))
    inv_t = np.zeros((t_count, len(points), r, r))
    unit = np.zeros(r)
    col = np.empty(r)
    cols, vals = _ones_of(z)
    lam, mat, low, _, _ = _workspace(f.shape[2], r)
    for t in range(t_count):
        for u in range(len(points)):
            s = points[u]
            _effects_precision(cols, vals, d[s], tau2[t, s], _weights(n, m[t], f[t, s]), lam, mat)
            _cholesky_into(mat, low)
            lam_out[t, u] = lam
            for j in range(r):  # column j of low^{-1}: row j of low^{-T}
                unit[:] = 0.0
                unit[j] = 1.0
                _forward(low, unit, col)
                for i in range(r):
                    inv_t[t, u, j, i] = col[i]
    return lam_out, inv_t


# ---------------------------------------------------- I-hat's weighted logistic regression


@numba.njit(cache=True)
def _logit_objective(xa, y, w, reg, beta):
    """``sum_i w_i (log(1 + exp(eta_i)) - y_i eta_i) + sum_j reg_j beta_j^2 / 2``."""
    s = 0.0
    for i in range(xa.shape[0]):
        eta = 0.0
        for j in range(xa.shape[1]):
            eta += xa[i, j] * beta[j]
        s += w[i] * (_log1pexp(eta) - y[i] * eta)
    pen = 0.0
    for j in range(len(beta)):
        pen += reg[j] * beta[j] * beta[j]
    return s + 0.5 * pen


@numba.njit(cache=True)
def weighted_logit(xa, y, w, reg, max_iter):
    """Minimise :func:`_logit_objective` over ``beta`` from 0 by Newton's method with step
    halving (the Hessian ``X' diag(w mu (1 - mu)) X + diag(reg) + 1e-12 I``), until the
    objective stops falling (relative change 1e-14) or the step is below 1e-10."""
    n_rows, p = xa.shape
    beta = np.zeros(p)
    obj = _logit_objective(xa, y, w, reg, beta)
    for _ in range(max_iter):
        g = reg * beta
        h = np.diag(reg) + 1e-12 * np.eye(p)
        for i in range(n_rows):
            eta = 0.0
            for j in range(p):
                eta += xa[i, j] * beta[j]
            mu = _expit(eta)
            r = w[i] * (mu - y[i])
            c = w[i] * mu * (1 - mu)
            for j in range(p):
                g[j] += xa[i, j] * r
                cj = c * xa[i, j]
                if cj != 0.0:
                    for q in range(p):
                        h[j, q] += cj * xa[i, q]
        low = _cholesky(h)
        step = _backward(low, _forward(low, g, np.empty(p)))
        t = 1.0
        while True:
            new = beta - t * step
            new_obj = _logit_objective(xa, y, w, reg, new)
            if new_obj <= obj + 1e-12 * abs(obj) or t < 1e-8:
                break
            t *= 0.5
        done = abs(obj - new_obj) <= 1e-14 * max(1.0, abs(obj))
        beta, obj = new, new_obj
        if done or np.max(np.abs(t * step)) < 1e-10:
            break
    return beta
