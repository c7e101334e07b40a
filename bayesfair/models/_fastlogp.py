"""The log density of LR and HLR with its gradient in closed form, compiled once for nutpie.

``nutpie.compile_pymc_model`` turns each PyMC model into numba code, which costs
about 13 s of compilation in every new Python process for HLR, several times the
sampling itself.  The logistic models of this package are small: one linear
predictor over the intersections, a binomial likelihood on their counts and, for
HLR, one scale and one deviation per intersection.  Their log density and
gradient fit in one loop, written here once; nutpie calls it through the C
callbacks of :mod:`bayesfair._nutpie`, which read every size and value from a
flat data buffer.  Nothing in them depends on the data set, so numba caches them
on disk: the first process on a machine compiles them (a few seconds), later ones
load them; and nutpie calls them from its own threads without the Python
interpreter.

The density is that of the PyMC model the estimator builds, on the same
unconstrained values (effects through PyMC's ``ZeroSumTransform`` or one-hot,
``log sigma2``); ``tests/test_models.py`` checks values (up to a constant) and
gradients against PyMC at random points for every coding and parameterisation.

HLR's intersections are centred (``gamma_j`` the sampled value) or not (``z_j``,
with ``gamma_j = eta_j + sigma2 z_j``), each separately if asked; the estimator
centres all or none.  (Centring only the intersections whose data outweigh the
prior shortens trajectories threefold on Adult, but brings back the funnel:
1-9 divergences per fit at ``target_accept=0.98``, against none non-centred.)
"""

from __future__ import annotations

import numba
import numpy as np

from ._design import Design

__all__ = ["logistic_nutpie_model", "logp_and_grad", "zero_sum_basis"]

_HEADER = 8  # G, P, is_hlr, lam, prior precision, expanded size, rows of B, kind


def zero_sum_basis(levels: int) -> np.ndarray:
    """The matrix of PyMC's ``ZeroSumTransform.backward`` for one axis of ``levels``
    values: ``beta = M @ v`` with ``v`` the ``levels - 1`` unconstrained values."""
    m = levels
    eye = np.eye(m - 1)
    s = eye.sum(axis=0, keepdims=True)
    norm = s / (np.sqrt(m) + m)
    fill = norm - s / np.sqrt(m)
    return np.vstack([eye, fill]) - norm


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
def _unpack(buf):
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
def _intersection(x, xf, cen, i, p, hlr, sig):
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
def logp_and_grad(x, buf, grad) -> float:
    """Log density (up to a constant) at the unconstrained ``x``; writes the gradient."""
    g, p, n, k, cen, mu0, xf, _ = _unpack(buf)
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
        z, gamma = _intersection(x, xf, cen, i, p, hlr, sig)
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
def buffer_size(ud):
    g = int(ud[0])
    p = int(ud[1])
    nb = int(ud[6])
    return _HEADER + 3 * g + p + g * p + nb * p


@numba.njit(cache=True, nogil=True)
def expand(x, buf, out) -> None:
    """Write ``c``, every ``beta_<attr>``, then for HLR ``sigma2``, ``z``, ``gamma``;
    then ``p``, into ``out``."""
    g, p, _, _, cen, _, xf, b = _unpack(buf)
    hlr = buf[2] > 0
    nb = b.shape[0]
    for r in range(nb):
        acc = 0.0
        for j in range(p):
            acc += b[r, j] * x[j]
        out[r] = acc
    o = nb
    sig = 1.0
    if hlr:
        sig = np.exp(x[p])
        out[o] = sig
        o += 1
    for i in range(g):
        z, gamma = _intersection(x, xf, cen, i, p, hlr, sig)
        if hlr:
            out[o + i] = z
            out[o + g + i] = gamma
            out[o + 2 * g + i] = _sigmoid(gamma)
        else:
            out[o + i] = _sigmoid(gamma)


class LogisticLayout:
    """The unconstrained vector and the flat buffer the compiled functions read.

    ``x`` holds the intercept and the effects (``f``, ``P`` values), then for HLR
    ``log sigma2`` and one value per intersection (``gamma_j`` where centred,
    ``z_j`` elsewhere).
    """

    def __init__(
        self,
        design: Design,
        *,
        mu: float,
        sigma: float,
        effects: str,
        lam: float | None = None,
        centered: bool | np.ndarray = False,
    ) -> None:
        g = design.n_groups
        blocks = [np.ones((g, 1))]
        maps: list[np.ndarray] = []
        prior_mu = [mu]
        for d, lv in enumerate(design.levels.values()):
            basis = zero_sum_basis(len(lv)) if effects == "sum_to_zero" else np.eye(len(lv))
            maps.append(basis)
            blocks.append(basis[design.codes[d]])
            prior_mu += [0.0 if effects == "sum_to_zero" else mu] * basis.shape[1]
        xf = np.hstack(blocks)
        p = xf.shape[1]
        rows = [np.eye(1, p)]  # c
        start = 1
        for basis in maps:  # beta_<attr> = M @ v
            block = np.zeros((basis.shape[0], p))
            block[:, start : start + basis.shape[1]] = basis
            rows.append(block)
            start += basis.shape[1]
        b = np.vstack(rows)
        self.hlr = lam is not None
        self.attributes = design.attributes
        self.levels = [len(v) for v in design.levels.values()]
        self.n_groups = g
        self.n_fixed = p
        self.ndim = p + (1 + g if self.hlr else 0)
        self.centered = np.broadcast_to(np.asarray(centered, dtype=bool), (g,)).copy()
        n_expanded = b.shape[0] + (1 + 3 * g if self.hlr else g)
        header = [g, p, float(self.hlr), lam or 0.0, 1.0 / sigma**2, n_expanded, b.shape[0], 0]
        self.buffer = np.ascontiguousarray(
            np.concatenate(
                [
                    np.asarray(header, dtype=float),
                    design.n.astype(float),
                    design.k.astype(float),
                    self.centered.astype(float),
                    np.asarray(prior_mu, dtype=float),
                    xf.ravel(),
                    b.ravel(),
                ]
            )
        )
        self.n_expanded = n_expanded
        self.start = np.zeros(self.ndim)
        self.start[:p] = prior_mu
        if self.hlr:
            self.start[p] = np.log(1.0 / lam)

    def logp(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        grad = np.empty(self.ndim)
        return float(logp_and_grad(np.asarray(x, dtype=float), self.buffer, grad)), grad

    def variables(self) -> tuple[list[str], list[tuple[int, ...]], dict[str, tuple[str, ...]]]:
        names = ["c"] + [f"beta_{a}" for a in self.attributes]
        shapes: list[tuple[int, ...]] = [()] + [(m,) for m in self.levels]
        dims: dict[str, tuple[str, ...]] = {f"beta_{a}": (f"{a}_value",) for a in self.attributes}
        per_group = ["z", "gamma", "p"] if self.hlr else ["p"]
        if self.hlr:
            names.append("sigma2")
            shapes.append(())
        names += per_group
        shapes += [(self.n_groups,)] * len(per_group)
        dims.update({v: ("intersection",) for v in per_group})
        return names, shapes, dims


def logistic_nutpie_model(design: Design, **layout: object):
    """A compiled ``nutpie`` model of LR (no ``lam``) or HLR on ``design``'s counts.

    Its draws hold the variables and dims of the PyMC model: ``c``,
    ``beta_<attr>``, for HLR ``sigma2``, ``z`` and ``gamma``, and ``p``.
    """
    from .._nutpie import LOGISTIC, nutpie_model

    lay = LogisticLayout(design, **layout)  # type: ignore[arg-type]
    lay.buffer[7] = LOGISTIC
    return nutpie_model(lay.buffer, lay.start, lay.variables(), design.coords())
