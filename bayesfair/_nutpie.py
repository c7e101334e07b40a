"""The compiled closed-form densities that nutpie samples.

nutpie's sampler calls ``logp(x, buffer=...)`` and ``expand(x, buffer=...)`` through
its public ``from_pyfunc`` entry point.  ``buffer`` is a flat float64 array that carries
every size and value of the model, with the kind of model in its eighth slot, which
picks the pair of functions: the logistic models of P(y|s) (LR, HLR, and HLR with its
effects integrated out; layout and documentation in :mod:`bayesfair.models._fastlogp`)
or the hierarchical model of per-group metrics (:mod:`bayesfair.disaggregated._hb_logp`).
Nothing here depends on a data set, so numba compiles it once per machine and caches
it on disk.  Every compiled function
lives in this one file on purpose: numba invalidates a cached function when its own
file changes, not when a function it calls in another file does.
"""

from __future__ import annotations

import functools
import inspect
import itertools

import numba
import numpy as np

from ._thread_state import keep_thread_state

__all__ = [
    "HIERARCHICAL",
    "LOGISTIC",
    "MARGINAL",
    "available",
    "hb_expand",
    "hb_logp_and_grad",
    "lr_expand",
    "lr_logp_and_grad",
    "mg_expand",
    "mg_logp_and_grad",
    "nutpie_model",
]

LOGISTIC, HIERARCHICAL, MARGINAL = 0.0, 1.0, 2.0
_HEADER = 8

# ---------------------------------------------------------------- logistic models (LR, HLR)
# buffer: header (G, P, is_hlr, lam, prior precision, expanded size, rows of B, kind), then
# n (G), k (G), centred (G), prior means (P), design (G x P), output map B (rows x P)


@numba.njit(cache=True, nogil=True)
def _log1pexp(x: float) -> float:
    if x > 0:
        return x + np.log1p(np.exp(-x))
    return np.log1p(np.exp(x))


@numba.njit(cache=True, nogil=True)
def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(x)
    return e / (1.0 + e)


@numba.njit(cache=True, nogil=True)
def _lr_unpack(buf):
    g = int(buf[0])
    p = int(buf[1])
    nb = int(buf[6])
    o = _HEADER
    n = buf[o : o + g]
    k = buf[o + g : o + 2 * g]
    cen = buf[o + 2 * g : o + 3 * g]
    mu0 = buf[o + 3 * g : o + 3 * g + p]
    o2 = o + 3 * g + p
    xf = buf[o2 : o2 + g * p].reshape((g, p))
    b = buf[o2 + g * p : o2 + g * p + nb * p].reshape((nb, p))
    return g, p, n, k, cen, mu0, xf, b


@numba.njit(cache=True, nogil=True)
def _lr_intersection(x, xf, cen, i, p, hlr, sig):
    """Intersection ``i``'s standardised deviation ``z`` and log-odds ``gamma = eta +
    sigma2 z`` (``gamma = eta``, the linear predictor, for LR)."""
    eta = 0.0
    for j in range(p):
        eta += xf[i, j] * x[j]
    if not hlr:
        return 0.0, eta
    u = x[p + 1 + i]  # gamma_i where centred, z_i elsewhere
    z = (u - eta) / sig if cen[i] > 0 else u
    return z, eta + sig * z


@numba.njit(cache=True, nogil=True)
def lr_logp_and_grad(x, buf, grad) -> float:
    """Log density (up to a constant) at the unconstrained ``x``; writes the gradient."""
    g, p, n, k, cen, mu0, xf, _ = _lr_unpack(buf)
    hlr = buf[2] > 0
    lam = buf[3]
    prec = buf[4]
    lp = 0.0
    for j in range(p):
        d = x[j] - mu0[j]
        lp -= 0.5 * prec * d * d
        grad[j] = -prec * d
    s = 0.0
    sig = 1.0
    if hlr:
        s = x[p]
        sig = np.exp(s)
        lp += s - lam * sig
        grad[p] = 1.0 - lam * sig
    for i in range(g):
        z, gamma = _lr_intersection(x, xf, cen, i, p, hlr, sig)
        lp += k[i] * gamma - n[i] * _log1pexp(gamma)
        dg = k[i] - n[i] * _sigmoid(gamma)  # d loglik / d gamma_i
        de = dg  # d lp / d eta_i
        if hlr:
            lp += -0.5 * z * z
            if cen[i] > 0:  # gamma_i ~ N(eta_i, sigma2) sampled: eta enters by its prior
                lp -= s
                de = z / sig
                grad[p] += z * z - 1.0
                grad[p + 1 + i] = dg - z / sig
            else:  # z_i ~ N(0, 1) sampled
                grad[p] += sig * z * dg
                grad[p + 1 + i] = sig * dg - z
        for j in range(p):
            grad[j] += xf[i, j] * de
    return lp


@numba.njit(cache=True, nogil=True)
def lr_expand(x, buf, out) -> None:
    """Write ``c``, every ``beta_<attr>``, then for HLR ``sigma2``, ``z``, ``gamma``;
    then ``p``, into ``out``."""
    g, p, _, _, cen, _, xf, b = _lr_unpack(buf)
    hlr = buf[2] > 0
    nb = b.shape[0]
    for r in range(nb):
        acc = 0.0
        for j in range(p):
            acc += b[r, j] * x[j]
        out[r] = acc
    o = nb
    if int(buf[5]) == nb:  # effects only (LR without per-row outputs)
        return
    sig = 1.0
    if hlr:
        sig = np.exp(x[p])
        out[o] = sig
        o += 1
    for i in range(g):
        z, gamma = _lr_intersection(x, xf, cen, i, p, hlr, sig)
        if hlr:
            out[o + i] = z
            out[o + g + i] = gamma
            out[o + 2 * g + i] = _sigmoid(gamma)
        else:
            out[o + i] = _sigmoid(gamma)


# ---------------------------------------------------------------- HLR, effects integrated out
# buffer: header (G, R, W, lam, -, expanded size, -, kind), then n (G), k (G), prior variances
# a (R), base log-odds (G), main directions U (G x R), interaction directions V (G x W)
# x: m (R), log sigma2, w (W); gamma = base + U m + sigma2 V w, m_r ~ N(0, a_r + sigma2^2)


@numba.njit(cache=True, nogil=True)
def _mg_unpack(buf):
    g, r, w = int(buf[0]), int(buf[1]), int(buf[2])
    o = _HEADER
    n = buf[o : o + g]
    k = buf[o + g : o + 2 * g]
    a = buf[o + 2 * g : o + 2 * g + r]
    o2 = o + 2 * g + r
    base = buf[o2 : o2 + g]
    u = buf[o2 + g : o2 + g + g * r].reshape((g, r))
    v = buf[o2 + g + g * r : o2 + g + g * r + g * w].reshape((g, w))
    return g, r, w, n, k, a, base, u, v


@numba.njit(cache=True, nogil=True)
def _mg_gamma(x, g, r, w, base, u, v, sig, out) -> None:
    for i in range(g):
        acc = base[i]
        for j in range(r):
            acc += u[i, j] * x[j]
        dev = 0.0
        for j in range(w):
            dev += v[i, j] * x[r + 1 + j]
        out[i] = acc + sig * dev


@numba.njit(cache=True, nogil=True)
def mg_logp_and_grad(x, buf, grad) -> float:
    """Log density (up to a constant) of HLR with its effects integrated out; writes
    the gradient."""
    g, r, w, n, k, a, base, u, v = _mg_unpack(buf)
    lam = buf[3]
    s = x[r]
    sig = np.exp(s)
    lp = s - lam * sig
    gs = 1.0 - lam * sig
    for j in range(r):
        var = a[j] + sig * sig
        lp -= 0.5 * (x[j] * x[j] / var + np.log(var))
        grad[j] = -x[j] / var
        gs += sig * sig * (x[j] * x[j] / (var * var) - 1.0 / var)
    for j in range(w):
        lp -= 0.5 * x[r + 1 + j] * x[r + 1 + j]
        grad[r + 1 + j] = -x[r + 1 + j]
    gamma = np.empty(g)
    _mg_gamma(x, g, r, w, base, u, v, sig, gamma)
    for i in range(g):
        lp += k[i] * gamma[i] - n[i] * _log1pexp(gamma[i])
        dg = k[i] - n[i] * _sigmoid(gamma[i])
        for j in range(r):
            grad[j] += u[i, j] * dg
        dev = 0.0
        for j in range(w):
            grad[r + 1 + j] += sig * v[i, j] * dg
            dev += v[i, j] * x[r + 1 + j]
        gs += sig * dev * dg
    grad[r] = gs
    return lp


@numba.njit(cache=True, nogil=True)
def mg_expand(x, buf, out) -> None:
    """Write ``m``, ``w``, ``sigma2``, ``gamma``, ``p`` into ``out``."""
    g, r, w, _, _, _, base, u, v = _mg_unpack(buf)
    sig = np.exp(x[r])
    for j in range(r):
        out[j] = x[j]
    for j in range(w):
        out[r + j] = x[r + 1 + j]
    out[r + w] = sig
    o = r + w + 1
    _mg_gamma(x, g, r, w, base, u, v, sig, out[o : o + g])
    for i in range(g):
        out[o + g + i] = _sigmoid(out[o + i])


# ---------------------------------------------------------------- hierarchical model of metrics
# buffer: header (M, G, blocks, Fay-Herriot, tau, size term, psi's prior scale, kind), centres
# (M), prior scales (M), centring weights w (blocks x M: 0 non-centred, 1 centred, between
# partially), levels (blocks), unconstrained sizes (blocks), identity (blocks: 1 where the basis
# is the identity, which is then not stored), index (blocks x G), bases, d1, d2, mask (M x G),
# and with the size term the groups' sampling variances v (M x G): the group effect's variance
# is then sigma_group^2 + psi^2 v_a, with log psi the last M unconstrained values


@numba.njit(cache=True, nogil=True)
def _hb_sizes(head):
    return int(head[0]), int(head[1]), int(head[2])


@numba.njit(cache=True, nogil=True)
def _hb_unpack(buf):
    m, g, nb = _hb_sizes(buf)
    o = _HEADER
    center = buf[o : o + m]
    o += m
    scale = buf[o : o + m]
    o += m
    weight = buf[o : o + nb * m].reshape((nb, m))
    o += nb * m
    levels = buf[o : o + nb]
    o += nb
    width = buf[o : o + nb]
    o += nb
    identity = buf[o : o + nb]
    o += nb
    index = buf[o : o + nb * g].reshape((nb, g))
    o += nb * g
    qstart = o
    for b in range(nb):
        o += _hb_basis_size(levels, width, identity, b)
    d1 = buf[o : o + m * g].reshape((m, g))
    d2 = buf[o + m * g : o + 2 * m * g].reshape((m, g))
    mask = buf[o + 2 * m * g : o + 3 * m * g].reshape((m, g))
    return m, g, nb, center, scale, levels, width, index, qstart, d1, d2, mask, weight, identity


@numba.njit(cache=True, nogil=True)
def _hb_size_term(buf):
    """Whether the group effect has the size term, and the groups' sampling variances v
    (M x G; the buffer's last values)."""
    m, g, _ = _hb_sizes(buf)
    size = buf[5] > 0
    n_v = m * g if size else 0
    return size, buf[len(buf) - n_v :].reshape((m, g) if size else (0, g))


@numba.njit(cache=True, nogil=True)
def _hb_psi2(x, m, mu, size) -> float:
    """psi^2 of measure ``mu`` (``log psi`` is among the last ``m`` values of ``x``); 0
    without the size term."""
    return np.exp(2.0 * x[len(x) - m + mu]) if size else 0.0


@numba.njit(cache=True, nogil=True)
def _hb_basis_size(levels, width, identity, b) -> int:
    """How many values block ``b``'s basis takes in the buffer (none for the identity:
    the group block's G x G identity made every density evaluation O(G^2))."""
    return 0 if identity[b] > 0 else int(levels[b]) * int(width[b])


@numba.njit(cache=True, nogil=True)
def _hb_effects(x, buf, mu, eff) -> None:
    """Every block's level effects ``Q_b v_b`` (not yet scaled) for measure ``mu``, into
    ``eff`` (blocks concatenated)."""
    m, _, nb, _, _, levels, width, _, qo, _, _, _, _, identity = _hb_unpack(buf)
    xo = m
    eo = 0
    for b in range(nb):
        nl, nk = int(levels[b]), int(width[b])
        vo = xo + m + mu * nk
        if identity[b] > 0:
            for lv in range(nl):
                eff[eo + lv] = x[vo + lv]
        else:
            for lv in range(nl):
                acc = 0.0
                for j in range(nk):
                    acc += buf[qo + lv * nk + j] * x[vo + j]
                eff[eo + lv] = acc
        qo += _hb_basis_size(levels, width, identity, b)
        xo += m + m * nk
        eo += nl


@numba.njit(cache=True, nogil=True)
def _hb_multiplier(x, xo, mu, scale, weight, b) -> float:
    """What block ``b``'s ``Q_b v_b`` is multiplied by in the linear predictor of measure
    ``mu``: ``scale rho^(1 - w)``, with ``rho = sigma_b / scale`` and ``w`` the block's
    centring weight (``v_b ~ Normal(0, rho^(2 w))``): sigma_b when non-centred (w = 0),
    the measure's prior scale when centred (w = 1)."""
    w = weight[b, mu]
    if w == 0.0:
        return np.exp(x[xo + mu])
    return scale[mu] * np.exp((1.0 - w) * (x[xo + mu] - np.log(scale[mu])))


@numba.njit(cache=True, nogil=True)
def _hb_eta(x, buf, mu, eff, eta) -> None:
    """The linear predictor of measure ``mu`` at ``x``, into ``eta`` (effects into ``eff``)."""
    m, g, nb, _, scale, levels, width, index, _, _, _, _, weight, _ = _hb_unpack(buf)
    size, v = _hb_size_term(buf)
    group_size = size and buf[3] == 0  # the count model's group block (the last) has the term
    psi2 = _hb_psi2(x, m, mu, size)
    _hb_effects(x, buf, mu, eff)
    eta[:] = x[mu]
    xo = m
    eo = 0
    for b in range(nb):
        sd = _hb_multiplier(x, xo, mu, scale, weight, b)
        if group_size and b == nb - 1:  # z_a times sqrt(sigma_group^2 + psi^2 v_a)
            for a in range(g):
                eta[a] += np.sqrt(sd * sd + psi2 * v[mu, a]) * eff[eo + int(index[b, a])]
        else:
            for a in range(g):
                eta[a] += sd * eff[eo + int(index[b, a])]
        xo += m + m * int(width[b])
        eo += int(levels[b])


@numba.njit(cache=True, nogil=True)
def hb_logp_and_grad(x, buf, grad) -> float:
    """Log density (up to a constant) at ``x``; writes the gradient into ``grad``.

    One function on purpose: nutpie calls it at every leapfrog step, and numba compiles it
    (with the small ``_hb_*`` helpers it inlines) into one loop over metrics, blocks and
    groups that accumulates the density and the gradient in place; the likelihood,
    the priors and the chain rule through the block multipliers share its local arrays.
    """
    m, g, nb, center, scale, levels, width, index, q0, d1, d2, mask, weight, identity = _hb_unpack(
        buf
    )
    fay_herriot = buf[3] > 0
    tau = buf[4]
    size, v = _hb_size_term(buf)
    ps2 = buf[6] * buf[6]
    grad[:] = 0.0
    lp = 0.0
    eta = np.empty(g)
    r = np.empty(g)
    eff = np.empty(int(levels.sum()))
    per_level = np.empty(int(levels.max()) if nb else 0)
    n_x = len(x)
    i_sg = n_x - m - (m if size else 0)  # Fay-Herriot's log sigma_group (log psi last)
    for mu in range(m):
        _hb_eta(x, buf, mu, eff, eta)
        sc2 = scale[mu] * scale[mu]
        psi2 = _hb_psi2(x, m, mu, size)
        if size:  # HalfNormal on psi, with the log-Jacobian
            lp += -0.5 * psi2 / ps2 + x[n_x - m + mu]
            grad[n_x - m + mu] = 1.0 - psi2 / ps2
        # likelihood and r = its derivative in eta
        if fay_herriot:
            sg = np.exp(x[i_sg + mu])
            sg2 = sg * sg
            d_tot = 0.0
            d_psi = 0.0
            for a in range(g):
                if mask[mu, a] > 0:
                    tot = d2[mu, a] * d2[mu, a] + sg2
                    if size:
                        tot += psi2 * v[mu, a]
                    e = d1[mu, a] - eta[a]
                    lp += -0.5 * e * e / tot - 0.5 * np.log(tot)
                    r[a] = e / tot
                    d_a = 0.5 * e * e / (tot * tot) - 0.5 / tot
                    d_tot += d_a
                    if size:
                        d_psi += d_a * v[mu, a]
                else:
                    r[a] = 0.0
            # HalfNormal(scale) on sigma_group, with the log-Jacobian
            lp += -0.5 * sg2 / sc2 + x[i_sg + mu]
            grad[i_sg + mu] = 2.0 * sg2 * d_tot - sg2 / sc2 + 1.0
            if size:
                grad[n_x - m + mu] += 2.0 * psi2 * d_psi
        else:
            for a in range(g):
                k = d1[mu, a]
                n = d2[mu, a]
                lp += -k * _log1pexp(-eta[a]) - (n - k) * _log1pexp(eta[a])
                r[a] = k - n * _sigmoid(eta[a])
        da = x[mu] - center[mu]
        t2 = tau * tau * sc2
        lp += -0.5 * da * da / t2
        total = 0.0
        for a in range(g):
            total += r[a]
        grad[mu] = total - da / t2
        xo = m
        eo = 0
        qo = q0
        for b in range(nb):
            nl, nk = int(levels[b]), int(width[b])
            s = x[xo + mu]
            sd = np.exp(s)
            vo = xo + m + mu * nk
            lp += -0.5 * sd * sd / sc2 + s  # HalfNormal(scale) on sigma_b, log-Jacobian
            per_level[:nl] = 0.0
            for a in range(g):
                per_level[int(index[b, a])] += r[a]
            # v ~ Normal(0, rho^(2 w)), rho = sigma_b / scale; eta gets mult Q v with
            # mult = scale rho^(1 - w) (w = 0: non-centred, 1: centred)
            w = weight[b, mu]
            mult = _hb_multiplier(x, xo, mu, scale, weight, b)
            acc = 0.0
            for lv in range(nl):
                acc += per_level[lv] * eff[eo + lv]
            if w == 0.0:
                rho2w = 1.0
                grad[xo + mu] = sd * acc - sd * sd / sc2 + 1.0
                for j in range(nk):
                    lp -= 0.5 * x[vo + j] * x[vo + j]
            else:
                log_rho = s - np.log(scale[mu])
                rho2w = np.exp(2.0 * w * log_rho)
                ss = 0.0
                for j in range(nk):
                    ss += x[vo + j] * x[vo + j]
                lp += -0.5 * ss / rho2w - nk * w * log_rho
                grad[xo + mu] = (
                    w * ss / rho2w - nk * w + (1.0 - w) * mult * acc - sd * sd / sc2 + 1.0
                )
            if size and not fay_herriot and b == nb - 1:
                # the group block with the size term: z_a times sqrt(sigma^2 + psi^2 v_a)
                sd2 = sd * sd
                d_sd = 0.0
                d_psi = 0.0
                for a in range(g):
                    lv = int(index[b, a])
                    mult_a = np.sqrt(sd2 + psi2 * v[mu, a])
                    rz = r[a] * x[vo + lv]
                    d_sd += rz * sd2 / mult_a
                    d_psi += rz * psi2 * v[mu, a] / mult_a
                    grad[vo + lv] = -x[vo + lv] + mult_a * r[a]
                grad[xo + mu] = d_sd - sd2 / sc2 + 1.0
                grad[n_x - m + mu] += d_psi
            else:
                for j in range(nk):
                    gj = -x[vo + j] / rho2w
                    if identity[b] > 0:
                        gj += mult * per_level[j]
                    else:
                        for lv in range(nl):
                            gj += mult * buf[qo + lv * nk + j] * per_level[lv]
                    grad[vo + j] = gj
            qo += _hb_basis_size(levels, width, identity, b)
            xo += m + m * nk
            eo += nl
    return lp


@numba.njit(cache=True, nogil=True)
def hb_expand(x, buf, out) -> None:
    """``alpha``; per block ``sigma_b`` and the standardized effects ``z_b``; ``sigma_group``
    (Fay-Herriot); ``psi_group`` (with the size term); then ``theta`` (counts: the rates) or
    ``eta`` (Fay-Herriot)."""
    m, g, nb, _, scale, levels, width, _, _, _, _, _, weight, _ = _hb_unpack(buf)
    fay_herriot = buf[3] > 0
    n_x = len(x)
    eff = np.empty((m, int(levels.sum())))
    eta = np.empty((m, g))
    for mu in range(m):
        _hb_eta(x, buf, mu, eff[mu], eta[mu])
    for mu in range(m):
        out[mu] = x[mu]
    o = m
    xo = m
    eo = 0
    for b in range(nb):
        nl = int(levels[b])
        for mu in range(m):
            sd = np.exp(x[xo + mu])
            out[o + mu] = sd
            # z_b, the effects in units of sigma_b, whichever way they were sampled
            to_z = _hb_multiplier(x, xo, mu, scale, weight, b) / sd
            for lv in range(nl):
                out[o + m + mu * nl + lv] = eff[mu, eo + lv] * to_z
        o += m + m * nl
        xo += m + m * int(width[b])
        eo += nl
    n_psi = m if _hb_size_term(buf)[0] else 0
    if fay_herriot:
        for mu in range(m):
            out[o + mu] = np.exp(x[n_x - m - n_psi + mu])
        o += m
    for mu in range(n_psi):
        out[o + mu] = np.exp(x[n_x - m + mu])
    o += n_psi
    for mu in range(m):
        for a in range(g):
            out[o + mu * g + a] = eta[mu, a] if fay_herriot else _sigmoid(eta[mu, a])


# ---------------------------------------------------------------- nutpie's entry point


@numba.njit(cache=True, nogil=True)
def _finite(val, grad):
    """``(val, grad)``, or ``(-inf, 0)`` when either is not finite: nutpie then treats the
    step as a divergence instead of stopping the chain."""
    if np.isfinite(val) and np.isfinite(grad).all():
        return val, grad
    grad[:] = 0.0
    return -np.inf, grad


# one function per kind of model, so that a process compiles only the kind it samples
@numba.njit(cache=True, nogil=True)
def _lr_logp(x, buffer):
    grad = np.empty(len(x))
    return _finite(lr_logp_and_grad(x, buffer, grad), grad)


@numba.njit(cache=True, nogil=True)
def _mg_logp(x, buffer):
    grad = np.empty(len(x))
    return _finite(mg_logp_and_grad(x, buffer, grad), grad)


@numba.njit(cache=True, nogil=True)
def _hb_logp(x, buffer):
    grad = np.empty(len(x))
    return _finite(hb_logp_and_grad(x, buffer, grad), grad)


_KERNELS = {
    LOGISTIC: (_lr_logp, lr_expand),
    HIERARCHICAL: (_hb_logp, hb_expand),
    MARGINAL: (_mg_logp, mg_expand),
}


@functools.cache
def available() -> bool:
    """Whether nutpie is installed with the public entry point for models given as
    functions (``nutpie.compiled_pyfunc.from_pyfunc``) that :func:`nutpie_model` uses.

    When it is not, the estimators fall back to ``nutpie.compile_pymc_model`` (slower to
    start, same posterior) and say so once with :func:`unavailable_reason`.
    """
    return unavailable_reason() is None


@functools.cache
def unavailable_reason() -> str | None:
    """Why :func:`available` is False (None when it is True)."""
    try:
        from nutpie.compiled_pyfunc import from_pyfunc
    except ImportError as err:
        return f"nutpie.compiled_pyfunc.from_pyfunc cannot be imported ({err})"
    params = inspect.signature(from_pyfunc).parameters
    missing = sorted(_FROM_PYFUNC_ARGS - set(params))
    if missing:
        return f"nutpie's from_pyfunc takes no {', '.join(missing)}"
    return None


#: the arguments of ``from_pyfunc`` that :func:`nutpie_model` passes
_FROM_PYFUNC_ARGS = {
    "ndim",
    "make_logp_fn",
    "make_expand_fn",
    "expanded_dtypes",
    "expanded_shapes",
    "expanded_names",
    "coords",
    "dims",
    "shared_data",
    "make_initial_point_fn",
}


def nutpie_model(
    buffer: np.ndarray,
    start: np.ndarray,
    variables: tuple[list[str], list[tuple[int, ...]], dict[str, tuple[str, ...]]],
    coords: dict,
):
    """A nutpie model whose density the compiled functions read from ``buffer``.

    Built through nutpie's public ``from_pyfunc``: nutpie calls ``logp(x, buffer=...)``
    and ``expand(x, buffer=...)``, each one call of a numba function compiled once per
    machine (cached on disk), so a new process starts sampling without compiling.
    ``variables`` are the names, shapes and dims that ``expand`` writes, in order;
    chains start at ``start`` jittered by U(-1, 1), as PyMC's default for nutpie.
    """
    import pandas as pd
    from nutpie.compiled_pyfunc import from_pyfunc

    names, shapes, dims = variables
    sizes = [int(np.prod(s)) for s in shapes]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(offsets)]
    n_expanded = int(offsets[-1])
    ndim = len(start)
    logp, expand = _KERNELS[float(buffer[7])]

    # nutpie calls both from its own threads: keep_thread_state spares each call the
    # creation and deletion of a Python thread state
    def make_logp_fn():
        return keep_thread_state(logp)

    def make_expand_fn(seed1, seed2, chain):
        def expand_draw(x, buffer):
            out = np.empty(n_expanded)
            expand(x, buffer, out)
            return {
                name: out[sl].reshape(shape)
                for name, sl, shape in zip(names, slices, shapes, strict=True)
            }

        return keep_thread_state(expand_draw)

    def initial_point(seed: int) -> np.ndarray:
        return start + np.random.default_rng(seed).uniform(-1.0, 1.0, ndim)

    return from_pyfunc(
        ndim=ndim,
        make_logp_fn=make_logp_fn,
        make_expand_fn=make_expand_fn,
        expanded_dtypes=[np.dtype("float64")] * len(names),
        expanded_shapes=[tuple(s) for s in shapes],
        expanded_names=list(names),
        coords={k: pd.Index(v) for k, v in coords.items()},
        dims={k: tuple(v) for k, v in dims.items()},
        shared_data={"buffer": np.ascontiguousarray(buffer, dtype=np.float64)},
        make_initial_point_fn=initial_point,
    )
