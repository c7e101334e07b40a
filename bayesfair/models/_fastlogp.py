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
``log sigma2``); ``tests/models/test_models.py`` checks values (up to a constant) and
gradients against PyMC at random points for every coding and parameterisation.

HLR's intersections are centred (``gamma_j`` the sampled value) or not (``z_j``,
with ``gamma_j = eta_j + sigma2 z_j``), each separately if asked; the estimator
centres all or none.  (Centring only the intersections whose data outweigh the
prior shortens trajectories threefold on Adult, but brings back the funnel:
1-9 divergences per fit at ``target_accept=0.98``, against none non-centred.)
"""

from __future__ import annotations

import numpy as np

from .._nutpie import LOGISTIC, MARGINAL, lr_logp_and_grad, mg_logp_and_grad, nutpie_model
from ._design import Design

__all__ = [
    "LogisticLayout",
    "MarginalLayout",
    "fixed_effects",
    "logistic_nutpie_model",
    "separate_unseen_directions",
    "unidentified_rotation",
    "zero_sum_basis",
]


def zero_sum_basis(levels: int) -> np.ndarray:
    """The matrix of PyMC's ``ZeroSumTransform.backward`` for one axis of ``levels``
    values: ``beta = M @ v`` with ``v`` the ``levels - 1`` unconstrained values."""
    m = levels
    eye = np.eye(m - 1)
    s = eye.sum(axis=0, keepdims=True)
    norm = s / (np.sqrt(m) + m)
    fill = norm - s / np.sqrt(m)
    return np.vstack([eye, fill]) - norm


def unidentified_rotation(x_seen: np.ndarray, tol: float = 1e-10) -> np.ndarray | None:
    """An orthogonal matrix whose first columns span the row space of ``x_seen`` and
    whose last columns span its null space (the directions the likelihood of those
    rows does not see), or None when there are none."""
    p = x_seen.shape[1]
    if x_seen.shape[0] == 0:
        return None
    _, sv, vt = np.linalg.svd(x_seen, full_matrices=True)
    rank = int((sv > tol * sv[0]).sum()) if sv[0] > 0 else 0
    return None if rank == p else vt.T


def separate_unseen_directions(
    xf: np.ndarray,
    prior_mu: np.ndarray,
    outputs: list[tuple[str, tuple[str, ...], np.ndarray]],
    seen: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, tuple[str, ...], np.ndarray]]]:
    """Rotate the fixed effects so that the directions no ``seen`` row of ``xf`` sees
    become coordinates of their own (``f = rot @ x``): the design, the prior means and
    the output maps in the new coordinates, or unchanged where every direction is seen.
    A change of variables with unit Jacobian; it leaves the model as it is only under an
    isotropic prior (one ``sigma`` for every fixed effect, as :class:`LogisticLayout`'s)."""
    rot = unidentified_rotation(xf[seen])
    if rot is None:
        return xf, prior_mu, outputs
    return xf @ rot, rot.T @ prior_mu, [(name, dims, m @ rot) for name, dims, m in outputs]


def fixed_effects(
    design: Design, mu: float, effects: str
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, tuple[str, ...], np.ndarray]]]:
    """The intercept ``c`` and one effect per attribute value (``beta_<attr>``) in the
    unconstrained coordinates ``f`` of PyMC's model: the design (intersections x
    coordinates), the prior means of ``f`` (each ``Normal(mean, sigma)``) and the output
    maps (name, dims, matrix taking ``f`` to the variable)."""
    g = design.n_groups
    blocks = [np.ones((g, 1))]
    maps: list[np.ndarray] = []
    prior_mu = [mu]
    for d, lv in enumerate(design.categories.values()):
        basis = zero_sum_basis(len(lv)) if effects == "sum_to_zero" else np.eye(len(lv))
        maps.append(basis)
        blocks.append(basis[design.codes[d]])
        prior_mu += [0.0 if effects == "sum_to_zero" else mu] * basis.shape[1]
    xf = np.hstack(blocks)
    p = xf.shape[1]
    outputs = [("c", (), np.eye(1, p))]
    start = 1
    for a, basis in zip(design.attributes, maps, strict=True):  # beta_<attr> = M @ v
        block = np.zeros((basis.shape[0], p))
        block[:, start : start + basis.shape[1]] = basis
        v = design.var(a)
        outputs.append((f"beta_{v}", (f"{v}_value",), block))
        start += basis.shape[1]
    return xf, np.asarray(prior_mu, dtype=float), outputs


class LogisticLayout:
    """The unconstrained vector and the flat buffer the compiled functions read.

    ``x`` holds the fixed effects (``f``, ``P`` values, prior ``Normal(prior_mu,
    sigma)``), then for HLR ``log sigma2`` and one value per row (``gamma_j`` where
    centred, ``z_j`` elsewhere).  Row ``j`` of ``xf`` is its linear predictor's
    design; ``n`` and ``k`` its trials and successes (any non-negative weights).
    ``outputs`` name the effect variables written for the draws: (name, dims,
    matrix mapping ``f`` to them); ``row_outputs`` adds ``p`` (LR; HLR always
    writes ``z``, ``gamma`` and ``p``).
    """

    def __init__(
        self,
        xf: np.ndarray,
        n: np.ndarray,
        k: np.ndarray,
        prior_mu: np.ndarray,
        *,
        sigma: float,
        outputs: list[tuple[str, tuple[str, ...], np.ndarray]],
        row_dim: str,
        lam: float | None = None,
        centered: bool | np.ndarray = False,
        row_outputs: bool = True,
    ) -> None:
        g, p = xf.shape
        if not row_outputs and lam is not None:
            raise ValueError("HLR always writes its per-row variables")
        self.row_outputs = row_outputs
        b = np.vstack([m for _, _, m in outputs])
        self.outputs = [(name, dims, m.shape[0]) for name, dims, m in outputs]
        self.row_dim = row_dim
        self.hlr = lam is not None
        self.n_groups = g
        self.n_fixed = p
        self.ndim = p + (1 + g if self.hlr else 0)
        self.centered = np.broadcast_to(np.asarray(centered, dtype=bool), (g,)).copy()
        n_expanded = b.shape[0] + (1 + 3 * g if self.hlr else g if row_outputs else 0)
        header = [
            *(g, p, float(self.hlr), lam or 0.0, 1.0 / sigma**2, n_expanded, b.shape[0]),
            LOGISTIC,
        ]
        self.buffer = np.ascontiguousarray(
            np.concatenate(
                [
                    np.asarray(header, dtype=float),
                    np.asarray(n, dtype=float),
                    np.asarray(k, dtype=float),
                    self.centered.astype(float),
                    np.asarray(prior_mu, dtype=float),
                    np.asarray(xf, dtype=float).ravel(),
                    b.ravel(),
                ]
            )
        )
        self.n_expanded = n_expanded
        self.start = np.zeros(self.ndim)
        self.start[:p] = prior_mu
        if self.hlr:
            self.start[p] = np.log(1.0 / lam)

    @classmethod
    def from_design(
        cls,
        design: Design,
        *,
        mu: float,
        sigma: float,
        effects: str,
        lam: float | None = None,
        centered: bool | np.ndarray = False,
        separate_unidentified: bool = False,
    ) -> LogisticLayout:
        """LR / HLR on ``design``: intercept ``c`` and one effect per attribute value
        (``beta_<attr>``, sum-to-zero through PyMC's transform or one-hot).

        ``separate_unidentified`` rotates the fixed effects' unconstrained values so
        that the directions no non-empty intersection sees (those of an attribute value
        without rows; with one-hot effects also the redundancy of the intercept and the
        indicators) become coordinates of their own.  Their prior is isotropic
        (``Normal(prior_mu, sigma)`` on every value), so the rotation is a change of
        variables with unit Jacobian that leaves the model as it is, and (for the
        non-centred HLR and for LR) those coordinates are independent of the rest in
        the posterior: NUTS no longer has to move along a ridge that only the prior
        bounds.  Where the non-empty intersections see every direction nothing changes.
        """
        xf, prior, outputs = fixed_effects(design, mu, effects)
        if separate_unidentified:
            xf, prior, outputs = separate_unseen_directions(xf, prior, outputs, design.n > 0)
        return cls(
            xf,
            design.n,
            design.k,
            prior,
            sigma=sigma,
            outputs=outputs,
            row_dim="intersection",
            lam=lam,
            centered=centered,
        )

    def logp(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        grad = np.empty(self.ndim)
        return float(lr_logp_and_grad(np.asarray(x, dtype=float), self.buffer, grad)), grad

    def variables(self) -> tuple[list[str], list[tuple[int, ...]], dict[str, tuple[str, ...]]]:
        names, shapes, dims = [], [], {}
        for name, d, size in self.outputs:
            names.append(name)
            shapes.append((size,) if d else ())
            if d:
                dims[name] = d
        per_row = ["z", "gamma", "p"] if self.hlr else ["p"] if self.row_outputs else []
        if self.hlr:
            names.append("sigma2")
            shapes.append(())
        names += per_row
        shapes += [(self.n_groups,)] * len(per_row)
        dims.update({v: (self.row_dim,) for v in per_row})
        return names, shapes, dims

    def nutpie_model(self, coords: dict):
        """The nutpie model of this layout (``coords`` for every dim of the outputs)."""
        return nutpie_model(self.buffer, self.start, self.variables(), coords)


def logistic_nutpie_model(design: Design, **layout: object):
    """A compiled ``nutpie`` model of LR (no ``lam``) or HLR on ``design``'s counts.

    Its draws hold the variables and dims of the PyMC model: ``c``,
    ``beta_<attr>``, for HLR ``sigma2``, ``z`` and ``gamma``, and ``p``.  The
    directions no non-empty intersection sees are sampled as coordinates of their
    own (``separate_unidentified``).
    """
    lay = LogisticLayout.from_design(design, separate_unidentified=True, **layout)  # type: ignore[arg-type]
    return lay.nutpie_model(design.coords())


class MarginalLayout:
    """HLR with its fixed effects integrated out: the same model, without the directions
    along which the effects and the deviations trade off.

    With ``f ~ Normal(prior_mu, sigma1)`` (the unconstrained intercept and effects,
    design ``X``) and ``gamma = X f + sigma2 z``, the log-odds given ``sigma2`` are
    ``Normal(X prior_mu, sigma1^2 X X' + sigma2^2 I)``.  With ``X = U S V'`` (singular
    value decomposition, rank ``R``), ``gamma = X prior_mu + U_R m + sigma2 U_W w``
    where ``m_r ~ Normal(0, (sigma1^2 s_r^2 + sigma2^2)^(1/2))`` are the ``R`` main
    directions, sampled centred (their prior scale is at least ``sigma1 s_r``, so no
    funnel forms as ``sigma2 -> 0``), and ``w ~ Normal(0, 1)`` the ``W = G - R``
    interaction directions.  The sampler sees ``G + 1`` values instead of ``P + G + 1``:
    in the usual parameterisations the ``R`` directions of ``z`` that lie in the span
    of ``X`` are redundant with the effects, a ridge only the priors bound, which
    NUTS must travel (with one protected attribute, where ``W = 0``, it diverged in
    most fits).  :meth:`recover` draws ``f`` (hence ``c``, ``beta_<attr>``) and ``z``
    from their exact conditional distribution given ``gamma`` and ``sigma2``, so the
    fit reports every variable of the model.

    Dense in the intersections (``G x G``): for designs of at most
    :data:`MAX_GROUPS` intersections.
    """

    MAX_GROUPS = 1000

    def __init__(self, design: Design, *, mu: float, sigma: float, effects: str, lam: float):
        g = design.n_groups
        if g > self.MAX_GROUPS:
            raise ValueError(
                f"the marginal parameterisation is dense in the intersections; {g:,} is more "
                f"than {self.MAX_GROUPS:,}: use parameterization='noncentered'"
            )
        xf, prior_mu, outputs = fixed_effects(design, mu, effects)
        u, sv, vt = np.linalg.svd(xf, full_matrices=True)
        r = int((sv > 1e-10 * sv[0]).sum())
        self.xf, self.prior_mu, self.outputs, self.sigma = xf, prior_mu, outputs, sigma
        self.singular, self.rotation = sv[:r], vt  # X = main @ diag(singular) @ rotation[:r]
        self.n_groups, self.n_main, self.n_interaction = g, r, g - r
        self.prior_var = sigma**2 * self.singular**2
        self.base = xf @ prior_mu
        self.main, self.interaction = u[:, :r], u[:, r:]
        self.ndim = g + 1
        header = [g, r, g - r, lam, 0.0, r + (g - r) + 1 + 2 * g, 0.0, MARGINAL]
        self.buffer = np.ascontiguousarray(
            np.concatenate(
                [
                    np.asarray(header, dtype=float),
                    np.asarray(design.n, dtype=float),
                    np.asarray(design.k, dtype=float),
                    self.prior_var,
                    self.base,
                    self.main.ravel(),
                    self.interaction.ravel(),
                ]
            )
        )
        self.start = np.zeros(self.ndim)
        self.start[r] = np.log(1.0 / lam)

    def coords(self) -> dict[str, list]:
        return {
            "main_direction": list(range(self.n_main)),
            "interaction_direction": list(range(self.n_interaction)),
        }

    def logp(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        grad = np.empty(self.ndim)
        return float(mg_logp_and_grad(np.asarray(x, dtype=float), self.buffer, grad)), grad

    def variables(self) -> tuple[list[str], list[tuple[int, ...]], dict[str, tuple[str, ...]]]:
        g, r, w = self.n_groups, self.n_main, self.n_interaction
        names = ["m", "w", "sigma2", "gamma", "p"]
        shapes: list[tuple[int, ...]] = [(r,), (w,), (), (g,), (g,)]
        dims = {
            "m": ("main_direction",),
            "w": ("interaction_direction",),
            "gamma": ("intersection",),
            "p": ("intersection",),
        }
        if w == 0:  # nothing to write: leave the variable out
            del names[1], shapes[1], dims["w"]
        return names, shapes, dims

    def nutpie_model(self, coords: dict):
        return nutpie_model(self.buffer, self.start, self.variables(), {**coords, **self.coords()})

    def recover(
        self, gamma: np.ndarray, sigma2: np.ndarray, rng: np.random.Generator
    ) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
        """Draws of ``c``, ``beta_<attr>`` and ``z`` (with their dims) given draws of
        ``gamma`` (``(..., G)``) and ``sigma2`` (``(...)``), from their conditional
        distribution.

        In the coordinates ``f' = V'(f - prior_mu)`` and ``y = U'(gamma - X
        prior_mu)``, ``y_r = s_r f'_r + sigma2 z'_r``: each ``f'_r`` is Gaussian given
        ``y_r`` (prior ``Normal(0, sigma1)``), and the directions of ``f`` the design
        does not see keep their prior; then ``z = (gamma - X f) / sigma2``.
        """
        sv, vt, r = self.singular, self.rotation, self.n_main
        sig = np.asarray(sigma2, dtype=float)[..., None]
        y = (gamma - self.base) @ self.main
        prec = 1.0 / self.sigma**2 + sv**2 / sig**2
        f_rot = self.sigma * rng.standard_normal((*gamma.shape[:-1], vt.shape[0]))
        f_rot[..., :r] = (sv / sig**2) * y / prec + rng.standard_normal(y.shape) / np.sqrt(prec)
        f = self.prior_mu + f_rot @ vt
        out = {name: (dims, f @ m.T if dims else f @ m[0]) for name, dims, m in self.outputs}
        out["z"] = (("intersection",), (gamma - f @ self.xf.T) / sig)
        return out
