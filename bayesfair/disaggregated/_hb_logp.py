"""The hierarchical model's log density and gradient in closed form, compiled once for nutpie.

The same idea as :mod:`bayesfair.models._fastlogp`: the model of
:func:`~bayesfair.disaggregated.hierarchical.fit_hierarchical` is one linear
predictor per measure,

    eta_a = alpha + sum_b sigma_b z_b[index_b(a)],

over blocks ``b`` (each attribute, each pair of attributes, and for counts the
groups), with ``alpha ~ Normal(center, tau scale)``, ``sigma_b ~ HalfNormal(scale)`` (sampled
as ``log sigma_b``), ``z_b = Q_b v_b`` with ``v_b ~ Normal(0, 1)`` (``Q_b`` PyMC's
zero-sum transform for the attribute and pair blocks, the identity for the groups),
and a binomial likelihood on counts or
the Fay-Herriot marginal ``s_a ~ Normal(eta_a, se_a^2 + sigma_group^2)``.  The C
callbacks of :mod:`bayesfair._nutpie` read every size and value from a flat buffer,
so they compile once per machine (numba's on-disk cache) whatever the groups and
metrics, where
``nutpie.compile_pymc_model`` compiles each model structure in every process.
The unconstrained vector is in the PyMC model's order (``alpha``; per block
``log sigma_b`` then ``z_b``, measures first; ``log sigma_group`` last for
Fay-Herriot); ``tests/test_disaggregated.py`` checks density and gradient
against PyMC's.
"""

from __future__ import annotations

import numba
import numpy as np

from ..models._fastlogp import _log1pexp, _sigmoid

__all__ = ["HBLayout", "hb_logp_and_grad", "hierarchical_nutpie_model"]

_HEADER = 8  # M, G, number of blocks, Fay-Herriot (0/1), tau, unused x2, kind


@numba.njit(cache=True, nogil=True)
def _sizes(head):
    return int(head[0]), int(head[1]), int(head[2])


@numba.njit(cache=True, nogil=True)
def buffer_size(ud) -> int:
    m, g, nb = _sizes(ud)
    q = 0
    for b in range(nb):  # levels and unconstrained sizes follow the header and centres
        q += int(ud[_HEADER + 2 * m + b]) * int(ud[_HEADER + 2 * m + nb + b])
    return _HEADER + 2 * m + 2 * nb + nb * g + q + 3 * m * g


@numba.njit(cache=True, nogil=True)
def _unpack(buf):
    m, g, nb = _sizes(buf)
    o = _HEADER
    center = buf[o : o + m]
    o += m
    scale = buf[o : o + m]
    o += m
    levels = buf[o : o + nb]
    o += nb
    width = buf[o : o + nb]
    o += nb
    index = buf[o : o + nb * g].reshape((nb, g))
    o += nb * g
    qstart = o
    for b in range(nb):
        o += int(levels[b]) * int(width[b])
    d1 = buf[o : o + m * g].reshape((m, g))
    d2 = buf[o + m * g : o + 2 * m * g].reshape((m, g))
    mask = buf[o + 2 * m * g : o + 3 * m * g].reshape((m, g))
    return m, g, nb, center, scale, levels, width, index, qstart, d1, d2, mask


@numba.njit(cache=True, nogil=True)
def _effects(x, buf, mu, eff) -> None:
    """Every block's level effects ``Q_b v_b`` (not yet scaled) for measure ``mu``, into
    ``eff`` (blocks concatenated)."""
    m, _, nb, _, _, levels, width, _, qo, _, _, _ = _unpack(buf)
    xo = m
    eo = 0
    for b in range(nb):
        nl, nk = int(levels[b]), int(width[b])
        vo = xo + m + mu * nk
        for lv in range(nl):
            acc = 0.0
            for j in range(nk):
                acc += buf[qo + lv * nk + j] * x[vo + j]
            eff[eo + lv] = acc
        qo += nl * nk
        xo += m + m * nk
        eo += nl


@numba.njit(cache=True, nogil=True)
def _eta(x, buf, mu, eff, eta) -> None:
    """The linear predictor of measure ``mu`` at ``x``, into ``eta`` (effects into ``eff``)."""
    m, g, nb, _, _, levels, width, index, _, _, _, _ = _unpack(buf)
    _effects(x, buf, mu, eff)
    eta[:] = x[mu]
    xo = m
    eo = 0
    for b in range(nb):
        sd = np.exp(x[xo + mu])
        for a in range(g):
            eta[a] += sd * eff[eo + int(index[b, a])]
        xo += m + m * int(width[b])
        eo += int(levels[b])


@numba.njit(cache=True, nogil=True)
def hb_logp_and_grad(x, buf, grad) -> float:
    """Log density (up to a constant) at ``x``; writes the gradient into ``grad``."""
    m, g, nb, center, scale, levels, width, index, q0, d1, d2, mask = _unpack(buf)
    fay_herriot = buf[3] > 0
    tau = buf[4]
    grad[:] = 0.0
    lp = 0.0
    eta = np.empty(g)
    r = np.empty(g)
    eff = np.empty(int(levels.sum()))
    per_level = np.empty(int(levels.max()) if nb else 0)
    n_x = len(x)
    for mu in range(m):
        _eta(x, buf, mu, eff, eta)
        sc2 = scale[mu] * scale[mu]
        # likelihood and r = its derivative in eta
        if fay_herriot:
            sg = np.exp(x[n_x - m + mu])
            sg2 = sg * sg
            d_tot = 0.0
            for a in range(g):
                if mask[mu, a] > 0:
                    tot = d2[mu, a] * d2[mu, a] + sg2
                    e = d1[mu, a] - eta[a]
                    lp += -0.5 * e * e / tot - 0.5 * np.log(tot)
                    r[a] = e / tot
                    d_tot += 0.5 * e * e / (tot * tot) - 0.5 / tot
                else:
                    r[a] = 0.0
            # HalfNormal(scale) on sigma_group, with the log-Jacobian
            lp += -0.5 * sg2 / sc2 + x[n_x - m + mu]
            grad[n_x - m + mu] = 2.0 * sg2 * d_tot - sg2 / sc2 + 1.0
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
            acc = 0.0
            for lv in range(nl):
                acc += per_level[lv] * eff[eo + lv]
            grad[xo + mu] = sd * acc - sd * sd / sc2 + 1.0
            for j in range(nk):
                v = x[vo + j]
                lp -= 0.5 * v * v
                gj = -v
                for lv in range(nl):
                    gj += sd * buf[qo + lv * nk + j] * per_level[lv]
                grad[vo + j] = gj
            qo += nl * nk
            xo += m + m * nk
            eo += nl
    return lp


@numba.njit(cache=True, nogil=True)
def hb_expand(x, buf, out) -> None:
    """``alpha``; per block ``sigma_b`` and the level effects ``z_b``; ``sigma_group``
    (Fay-Herriot); then ``theta`` (counts: the rates) or ``eta`` (Fay-Herriot)."""
    m, g, nb, _, _, levels, width, _, _, _, _, _ = _unpack(buf)
    fay_herriot = buf[3] > 0
    n_x = len(x)
    eff = np.empty((m, int(levels.sum())))
    eta = np.empty((m, g))
    for mu in range(m):
        _eta(x, buf, mu, eff[mu], eta[mu])
    for mu in range(m):
        out[mu] = x[mu]
    o = m
    xo = m
    eo = 0
    for b in range(nb):
        nl = int(levels[b])
        for mu in range(m):
            out[o + mu] = np.exp(x[xo + mu])
            for lv in range(nl):
                out[o + m + mu * nl + lv] = eff[mu, eo + lv]
        o += m + m * nl
        xo += m + m * int(width[b])
        eo += nl
    if fay_herriot:
        for mu in range(m):
            out[o + mu] = np.exp(x[n_x - m + mu])
        o += m
    for mu in range(m):
        for a in range(g):
            out[o + mu * g + a] = eta[mu, a] if fay_herriot else _sigmoid(eta[mu, a])


class HBLayout:
    """Blocks, data and the flat buffer of one hierarchical model.

    Parameters
    ----------
    blocks : list of (name, level names, index per group, basis)
        In the PyMC model's order; the group block (counts only) last.  The basis
        ``Q`` (levels x unconstrained values) maps the sampled values to the level
        effects: PyMC's zero-sum transform, or the identity.
    center : array (M,)
    scale : float or array (M,)
        Prior scale of every block's and of the intercept's spread, per measure.
    data : (k, m) counts or (s, se, mask), each of shape (M, G)
    """

    def __init__(
        self,
        metric_names: list[str],
        n_groups: int,
        blocks: list[tuple[str, list[str], np.ndarray]],
        center: np.ndarray,
        *,
        fay_herriot: bool,
        tau: float,
        scale: float | np.ndarray = 1.0,
        d1: np.ndarray,
        d2: np.ndarray,
        mask: np.ndarray | None = None,
    ) -> None:
        m, g = len(metric_names), n_groups
        self.metric_names, self.blocks, self.fay_herriot = metric_names, blocks, fay_herriot
        self.n_groups = g
        mask = np.ones((m, g)) if mask is None else np.asarray(mask, dtype=float)
        header = [m, g, len(blocks), float(fay_herriot), tau, 0, 0, 0]
        bases = [np.asarray(q, dtype=float) for _, _, _, q in blocks]
        self.buffer = np.ascontiguousarray(
            np.concatenate(
                [
                    np.asarray(header, dtype=float),
                    np.asarray(center, dtype=float),
                    np.broadcast_to(np.asarray(scale, dtype=float), (m,)),
                    np.asarray([q.shape[0] for q in bases], dtype=float),
                    np.asarray([q.shape[1] for q in bases], dtype=float),
                    *[np.asarray(ix, dtype=float) for _, _, ix, _ in blocks],
                    *[q.ravel() for q in bases],
                    np.asarray(d1, dtype=float).ravel(),
                    np.asarray(d2, dtype=float).ravel(),
                    mask.ravel(),
                ]
            )
        )
        self.ndim = m + sum(m + m * q.shape[1] for q in bases) + (m if fay_herriot else 0)
        self.start = np.zeros(self.ndim)
        # alpha at its centre, each sigma at its prior scale, every z at 0
        self.start[:m] = center
        sc = np.log(np.broadcast_to(np.asarray(scale, dtype=float), (m,)))
        o = m
        for q in bases:
            self.start[o : o + m] = sc
            o += m + m * q.shape[1]
        if fay_herriot:
            self.start[o : o + m] = sc

    def logp(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        grad = np.empty(self.ndim)
        return float(hb_logp_and_grad(np.asarray(x, dtype=float), self.buffer, grad)), grad

    def variables(self):
        m = len(self.metric_names)
        names, shapes, dims = ["alpha"], [(m,)], {"alpha": ("measure",)}
        for name, lv, _, _ in self.blocks:
            names += [f"sigma_{name}", f"z_{name}"]
            shapes += [(m,), (m, len(lv))]
            dims[f"sigma_{name}"] = ("measure",)
            dims[f"z_{name}"] = ("measure", _level_dim(name))
        if self.fay_herriot:
            names.append("sigma_group")
            shapes.append((m,))
            dims["sigma_group"] = ("measure",)
        last = "eta" if self.fay_herriot else "theta"
        names.append(last)
        shapes.append((m, self.n_groups))
        dims[last] = ("measure", "group")
        return names, shapes, dims

    def coords(self) -> dict:
        out = {"measure": list(self.metric_names), "group": list(range(self.n_groups))}
        for name, lv, _, _ in self.blocks:
            out.setdefault(_level_dim(name), list(lv))
        return out


def _level_dim(block: str) -> str:
    return "group" if block == "group" else f"{block}_level"


def hierarchical_nutpie_model(layout: HBLayout):
    """The nutpie model of ``layout`` (compiled C callbacks, no per-model compilation)."""
    from .._nutpie import HIERARCHICAL, nutpie_model

    layout.buffer[7] = HIERARCHICAL
    return nutpie_model(layout.buffer, layout.start, layout.variables(), layout.coords())
