"""The hierarchical model's log density and gradient in closed form, compiled once for nutpie.

The same idea as :mod:`bayesfair.models._fastlogp`: the model of
:func:`~bayesfair.disaggregated.hierarchical.fit_hierarchical` is one linear
predictor per measure,

    eta_a = alpha + sum_b sigma_b z_b[index_b(a)],

over blocks ``b`` (each attribute, each pair of attributes, and for counts the
groups), with ``alpha ~ Normal(center, tau scale)``, ``sigma_b ~ HalfNormal(scale)``
(sampled as ``log sigma_b``), ``sigma_b z_b = scale rho_b^(1 - w_b) Q_b v_b`` with
``v_b ~ Normal(0, rho_b^(2 w_b))`` and ``rho_b = sigma_b / scale`` (``Q_b`` PyMC's
zero-sum transform for the attribute and pair blocks, the identity for the groups;
``w_b`` the block's centring weight: 0 non-centred, ``z_b = Q_b v_b``; 1 centred;
between, partially non-centred), and a binomial likelihood on counts or the
Fay-Herriot marginal ``s_a ~ Normal(eta_a, se_a^2 + sigma_group^2)``; with the size term
the group effect's variance is ``sigma_group^2 + psi^2 v_a`` (see ``HBLayout``).  The C callbacks of
:mod:`bayesfair._nutpie` read every size and value from a flat buffer, so they
compile once per machine (numba's on-disk cache) whatever the groups and metrics,
where ``nutpie.compile_pymc_model`` compiles each model structure in every process.
The unconstrained vector is in the PyMC model's order (``alpha``; per block
``log sigma_b`` then ``v_b``, measures first; ``log sigma_group`` for
Fay-Herriot; ``log psi`` last with the size term);
``tests/disaggregated/test_hierarchical_bayes.py`` checks density and gradient against
PyMC's.
"""

from __future__ import annotations

import numpy as np

from .._nutpie import HIERARCHICAL, hb_logp_and_grad, nutpie_model

__all__ = ["HBLayout", "hierarchical_nutpie_model"]


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
    centring : array (blocks, M), optional
        Each block's centring weight ``w`` in [0, 1] per measure (see above): the same
        model in other coordinates; 0 (default) non-centred.
    v : array (M, G), optional
        The groups' sampling variances: given, the count model's group effect (the last
        block) is ``sqrt(sigma_group^2 + psi^2 v_a) z_a``, and the Fay-Herriot marginal
        variance ``se_a^2 + sigma_group^2 + psi^2 v_a``, with ``psi ~ HalfNormal`` (sampled
        as ``log psi``, the last M unconstrained values); see ``HierarchicalBayes``'s
        ``group_variance``.
    store_identity : bool
        Store an identity basis as a matrix and multiply by it, as before it was
        special-cased (the same density; ``make bench`` measures the difference).
    """

    def __init__(
        self,
        metric_names: list[str],
        n_groups: int,
        blocks: list[tuple[str, list[str], np.ndarray, np.ndarray]],
        center: np.ndarray,
        *,
        fay_herriot: bool,
        tau: float,
        scale: float | np.ndarray = 1.0,
        d1: np.ndarray,
        d2: np.ndarray,
        mask: np.ndarray | None = None,
        centring: np.ndarray | None = None,
        v: np.ndarray | None = None,
        store_identity: bool = False,
    ) -> None:
        from .hierarchical import PSI_SCALE

        m, g = len(metric_names), n_groups
        self.metric_names, self.blocks, self.fay_herriot = metric_names, blocks, fay_herriot
        self.n_groups, self.size_term = g, v is not None
        mask = np.ones((m, g)) if mask is None else np.asarray(mask, dtype=float)
        size = [float(self.size_term), PSI_SCALE]
        header = [m, g, len(blocks), float(fay_herriot), tau, *size, HIERARCHICAL]
        bases = [np.asarray(q, dtype=float) for _, _, _, q in blocks]
        # an identity basis (the group block) is flagged, not stored: stored, it made each
        # evaluation O(G^2) (store_identity=True keeps that for the benchmark's baseline)
        identity = [
            not store_identity and q.shape[0] == q.shape[1] and np.array_equal(q, np.eye(len(q)))
            for q in bases
        ]
        scale = np.broadcast_to(np.asarray(scale, dtype=float), (m,))
        nb = len(blocks)
        centring = np.zeros((nb, m)) if centring is None else np.asarray(centring, dtype=float)
        if centring.shape != (nb, m):
            raise ValueError(f"centring must have shape (blocks, measures) = {(nb, m)}")
        self.centring = centring
        self.buffer = np.ascontiguousarray(
            np.concatenate(
                [
                    np.asarray(header, dtype=float),
                    np.asarray(center, dtype=float),
                    scale,
                    centring.ravel(),
                    np.asarray([q.shape[0] for q in bases], dtype=float),
                    np.asarray([q.shape[1] for q in bases], dtype=float),
                    np.asarray(identity, dtype=float),
                    *[np.asarray(ix, dtype=float) for _, _, ix, _ in blocks],
                    *[q.ravel() for q, eye in zip(bases, identity, strict=True) if not eye],
                    np.asarray(d1, dtype=float).ravel(),
                    np.asarray(d2, dtype=float).ravel(),
                    mask.ravel(),
                    np.asarray([] if v is None else v, dtype=float).ravel(),
                ]
            )
        )
        n_psi = m if self.size_term else 0
        self.ndim = m + sum(m + m * q.shape[1] for q in bases) + (m if fay_herriot else 0) + n_psi
        self.start = np.zeros(self.ndim)
        # alpha at its centre, each sigma at its prior scale, every z at 0
        self.start[:m] = center
        sc = np.log(scale)
        o = m
        for q in bases:
            self.start[o : o + m] = sc
            o += m + m * q.shape[1]
        if fay_herriot:
            self.start[o : o + m] = sc
        if self.size_term:  # log psi at log of its prior scale
            self.start[self.ndim - m :] = np.log(PSI_SCALE)

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
        if self.size_term:
            names.append("psi_group")
            shapes.append((m,))
            dims["psi_group"] = ("measure",)
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
    return nutpie_model(layout.buffer, layout.start, layout.variables(), layout.coords())
