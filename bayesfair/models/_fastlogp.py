"""The log density of LR and HLR with its gradient in closed form, compiled once for nutpie.

``nutpie.compile_pymc_model`` turns each PyMC model into numba code, which costs
about 13 s of compilation in every new Python process for HLR, several times the
sampling itself.  The logistic models of this package are small: one linear
predictor over the intersections, a binomial likelihood on their counts and, for
HLR, one scale and one deviation per intersection.  Their log density and
gradient fit in one loop, written here once as a numba C callback that reads
every size and value from a flat data buffer.  Nothing in it depends on the data
set, so numba caches it on disk: the first process on a machine compiles it (a
few seconds), later ones load it; and nutpie calls it from its own threads
without the Python interpreter.

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

import functools
import itertools

import numba
import numpy as np

from ._design import Design

__all__ = ["logistic_nutpie_model", "logp_and_grad", "zero_sum_basis"]

_HEADER = 8  # G, P, is_hlr, lam, prior precision, expanded size, rows of B, unused


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
        eta = 0.0
        for j in range(p):
            eta += xf[i, j] * x[j]
        if hlr:
            u = x[p + 1 + i]
            if cen[i] > 0:  # u is gamma_i ~ N(eta_i, sigma2)
                r = (u - eta) / sig
                gamma = u
                lp += -0.5 * r * r - s
            else:  # u is z_i ~ N(0, 1), gamma_i = eta_i + sigma2 z_i
                r = u
                gamma = eta + sig * u
                lp += -0.5 * u * u
        else:
            gamma = eta
            r = 0.0
            u = 0.0
        lp += k[i] * gamma - n[i] * _log1pexp(gamma)
        dg = k[i] - n[i] * _sigmoid(gamma)  # d loglik / d gamma_i
        if hlr and cen[i] > 0:
            # eta enters only through the prior of gamma_i
            de = r / sig
            grad[p] += r * r - 1.0
            grad[p + 1 + i] = dg - r / sig
        elif hlr:
            de = dg
            grad[p] += sig * u * dg
            grad[p + 1 + i] = sig * dg - u
        else:
            de = dg
        for j in range(p):
            grad[j] += xf[i, j] * de
    return lp


_LOGP_SIG = numba.types.int64(
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
)
_EXPAND_SIG = numba.types.int64(
    numba.types.uint64,
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
)


@numba.njit(cache=True, nogil=True)
def _buffer_size(ud):
    g = int(ud[0])
    p = int(ud[1])
    nb = int(ud[6])
    return _HEADER + 3 * g + p + g * p + nb * p


def _logp_entry(dim, x_, out_, logp_, ud_):
    head = numba.carray(ud_, (_HEADER,))
    buf = numba.carray(ud_, (_buffer_size(head),))
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (dim,))
    val = logp_and_grad(x, buf, out)
    logp_[0] = val
    for j in range(dim):
        if not np.isfinite(out[j]):
            return 3
    if not np.isfinite(val):
        return 4
    return 0


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
        eta = 0.0
        for j in range(p):
            eta += xf[i, j] * x[j]
        if hlr:
            u = x[p + 1 + i]
            z = (u - eta) / sig if cen[i] > 0 else u
            gamma = eta + sig * z
            out[o + i] = z
            out[o + g + i] = gamma
            out[o + 2 * g + i] = _sigmoid(gamma)
        else:
            out[o + i] = _sigmoid(eta)


def _expand_entry(dim, expanded, x_, out_, ud_):
    head = numba.carray(ud_, (_HEADER,))
    if int(head[5]) != expanded:
        return -1
    buf = numba.carray(ud_, (_buffer_size(head),))
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (expanded,))
    expand(x, buf, out)
    return 0


@functools.cache
def _cfuncs():
    """The C callbacks nutpie calls, compiled (or loaded from numba's cache) on first use."""
    return (
        numba.cfunc(_LOGP_SIG, cache=True, nogil=True)(_logp_entry),
        numba.cfunc(_EXPAND_SIG, cache=True, nogil=True)(_expand_entry),
    )


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


def nutpie_model(
    cfuncs,
    buffer: np.ndarray,
    start: np.ndarray,
    variables: tuple[list[str], list[tuple[int, ...]], dict[str, tuple[str, ...]]],
    coords: dict,
):
    """A nutpie model from compiled C callbacks ``(logp, expand)`` that read ``buffer``.

    ``variables`` are the names, shapes and dims that ``expand`` writes, in order;
    chains start at ``start`` jittered by U(-1, 1), as PyMC's default for nutpie.
    """
    import pandas as pd
    from nutpie.compile_pymc import CompiledPyMCModel

    names, shapes, dims = variables
    sizes = [int(np.prod(s)) for s in shapes]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(offsets)]
    ndim = len(start)

    def initial_point(seed: int) -> np.ndarray:
        return start + np.random.default_rng(seed).uniform(-1.0, 1.0, ndim)

    logp_cfunc, expand_cfunc = cfuncs
    return CompiledPyMCModel(
        _n_dim=ndim,
        dims=dims,
        _coords={k: pd.Index(v) for k, v in coords.items()},
        _shapes=dict(zip(names, shapes, strict=True)),
        compiled_logp_func=logp_cfunc,
        compiled_expand_func=expand_cfunc,
        initial_point_func=initial_point,
        shared_data={},
        user_data=buffer,  # kept alive by the model: the callbacks get its address
        n_expanded=int(offsets[-1]),
        shape_info=(names, slices, shapes),
        logp_func=None,
        expand_func=None,
    )


def logistic_nutpie_model(design: Design, **layout: object):
    """A compiled ``nutpie`` model of LR (no ``lam``) or HLR on ``design``'s counts.

    Its draws hold the variables and dims of the PyMC model: ``c``,
    ``beta_<attr>``, for HLR ``sigma2``, ``z`` and ``gamma``, and ``p``.
    """
    lay = LogisticLayout(design, **layout)  # type: ignore[arg-type]
    return nutpie_model(_cfuncs(), lay.buffer, lay.start, lay.variables(), design.coords())
