"""The posterior of a hierarchical model of the per-intersection counts by nested Laplace
approximations on a grid of its two scales (Rue, Martino & Chopin 2009, "INLA").

The model (:class:`~bayesfair.models.HierarchicalCounts`): the log-odds of every
intersection ``s`` are an intercept, one effect per value of every protected attribute and
the intersection's own deviation,

.. math::

    \\eta_s = \\mu + \\sum_d a_{d, s_d} + u_s,\\quad
    \\mu \\sim N(m, \\sigma_\\mu^2),\\; a_{d,l} \\sim N(0, \\sigma_a^2),\\;
    u_s \\sim N(0, \\tau^2),\\quad k_s \\sim \\mathrm{Binomial}(n_s, \\mathrm{expit}\\,\\eta_s),

with half-normal priors on the two scales. Integrating the Gaussian effects out, ``eta``
has the prior ``N(m 1, C)``, ``C = sigma_mu^2 11' + sigma_a^2 K + tau^2 I`` (``K_{st}``:
the number of attributes on which ``s`` and ``t`` agree). Given the scales, the
posterior of ``eta`` is approximated by a Gaussian at its mode (Newton's method, Rasmussen
& Williams 2006, Algorithm 3.1), whose Laplace estimate of the marginal likelihood weights
the grid point; draws come from the mixture. Newton's steps, the Laplace estimate's
determinant and the draws work in the effects, where the intersections'
deviations have a diagonal precision and can be eliminated, so each solves a system of the
``1 + sum(levels)`` intercept and attribute effects rather than of the ``G``
intersections, compiled (:mod:`bayesfair._newton_kernel`), so a table of a few dozen
intersections takes milliseconds, which is what lets interval calibration refit it on
hundreds of replicate tables. The grid points whose weight is below ``e^-40`` of the
largest are not fitted (a flood fill from a coarse grid, :data:`DROP`): with many
intersections the data pin the scales down and most of the grid carries no weight.

The attribute effects let an intersection borrow strength from every intersection that
shares one of its values; the deviations keep interactions; the scales are learned with
their uncertainty (no plug-in), so a fair table keeps posterior mass near
``sigma_a = tau = 0``. Empty intersections get the prediction of their attribute values.

With ``group_variance="size"`` an intersection's deviation has the variance ``tau^2 +
psi^2 v_s``, ``v_s = 1 / (n_s p (1 - p))`` the sampling variance of its log-odds at the
table's pooled rate ``p``, and ``psi`` a third scale with its own half-normal prior
(:data:`SIZE_PRIOR_SCALE`) on its own grid (:data:`SIZE_SCALES`). The exchangeable
deviations assume that a small intersection departs from its attribute values no more than
a large one; in a finite population (a group of 40 people has the rate of those 40) a small
group carries its own noise, of the order of its sampling variance, and the exchangeable
model learns its spread from the large groups and shrinks the small ones too far. The size
term lets the data say how far small groups depart (``psi = 1``: as far as their sampling
noise), as ``HierarchicalBayes(group_variance="size")`` does for the per-group estimates.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from .. import _newton_kernel as kernel

__all__ = ["GridPosterior", "grid_posterior"]

#: The grid of each scale (log-spaced; the prior weight carries the Jacobian): from a
#: spread that changes no rate noticeably to one four prior sds out, coarse enough that a
#: refit stays cheap for the interval checks, which refit the model hundreds of times.
SCALES = np.geomspace(0.02, 4.0, 9)
#: The grid of the size term's scale ``psi`` (``group_variance="size"``): from a departure
#: a four-hundredth of an intersection's sampling variance to four times it.
SIZE_SCALES = np.geomspace(0.05, 2.0, 6)
#: Scale of the half-normal prior of ``psi``: departures beyond the sampling noise's own
#: size (``psi > 1``) need the data's support.
SIZE_PRIOR_SCALE = 0.5
#: The two models of the intersections' deviations.
GROUP_VARIANCES = ("exchangeable", "size")
#: Prior standard deviation of the intercept around the overall log-odds.
INTERCEPT_SD = 2.0
#: How far below the largest a grid point's log weight may be for its neighbours to be
#: fitted (:func:`~bayesfair._newton_kernel.grid_laplace`): ``e^-40 = 4e-18``, below what
#: a float64 sum of weights holds, so the points left out change no weight that is kept.
DROP = 40.0


@dataclass(frozen=True)
class GridPosterior:  # numpydoc ignore=PR01
    """Gaussian approximations of ``eta`` at the grid points that carry weight, and every
    point's weight (0 at the points not fitted, whose mode is the pooled log-odds, a
    placeholder no draw uses); what a draw needs of a grid point's Gaussian is formed only
    at the points a draw uses."""

    mode: np.ndarray  # (..., grid, G)
    weight: np.ndarray  # (..., grid) posterior probabilities of the grid points
    sigma_a: np.ndarray  # (grid,)
    tau: np.ndarray  # (grid,)
    psi: np.ndarray  # (grid,) the size term's scale (0 without one)
    laplace: tuple = field(repr=False)  # (n, m, f, z, d, tau2) of the kernel, tables flat

    def draw(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draws of P(y=1|s) from the mixture: shape (..., size, G), one set of draws per
        table of the leading dimensions.

        Every draw picks a grid point by its weight, then ``eta = mode + diag(1 / lam) Z
        beta + sqrt(t / lam) e`` with ``beta = L_M^{-T} z`` (``z``, ``e`` standard normal;
        :func:`~bayesfair._newton_kernel.effect_factors`): the effects' Gaussian, then the
        deviations' given them, which is the point's Gaussian of ``eta`` without forming its
        ``G x G`` covariance."""
        lead = self.weight.shape[:-1]
        cdf = np.cumsum(self.weight, axis=-1)
        u = rng.random((*lead, size)) * cdf[..., -1:]
        g = np.minimum(_row_searchsorted(cdf, u), self.weight.shape[-1] - 1)
        n, m, f, z, d, tau2 = self.laplace
        e = rng.standard_normal((*lead, size, len(n))).reshape(-1, size, len(n))
        zr = rng.standard_normal((*lead, size, z.shape[1])).reshape(-1, size, z.shape[1])
        points = np.unique(g)
        lam, inv_t = kernel.effect_factors(n, m, f, z, d, tau2, points)
        modes = self.mode.reshape(-1, *self.mode.shape[-2:])
        flat_g = g.reshape(-1, size)
        eta = np.empty_like(e)
        for t in range(len(flat_g)):  # one table at a time: memory of size x (G + r^2)
            picked = np.searchsorted(points, flat_g[t])
            beta = np.einsum("dij,dj->di", inv_t[t, picked], zr[t])
            lam_t = lam[t, picked]
            eta[t] = modes[t, flat_g[t]] + (beta @ z.T) / lam_t
            eta[t] += np.sqrt(tau2[t, flat_g[t]] / lam_t) * e[t]
        return expit(eta).reshape(*lead, size, len(n))


def _row_searchsorted(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``searchsorted`` of every row of ``u`` in the same row of ``cdf`` (leading dims)."""
    return (u[..., :, None] >= cdf[..., None, :]).sum(axis=-1)


class _LowRankPrior:
    """The prior of ``f = eta - m`` at every grid point as effects, ``f = Z beta + u``:
    ``Z`` (G, r) the intercept's column of ones and every attribute's one-hot columns
    (``Z_d Z_d'`` is the agreement on attribute ``d``), ``beta ~ N(0, D)`` with ``D``
    (grid, r) the intercept's and the attribute effects' variances, ``u ~ N(0, T)`` with
    ``T = diag(tau^2 + psi^2 v)`` (``psi = 0`` without a size term); so ``C = Z D Z' + T``.

    A Newton step and the Gaussian approximation (:mod:`bayesfair._newton_kernel`)
    eliminate ``u`` (its precision is diagonal) and solve an ``r x r`` system per grid
    point, ``r = 1 + sum(levels)``, instead of a ``G x G`` one. With weights ``w`` (the
    binomial information at the current ``eta``), ``t`` the diagonal of ``T``, ``lam = 1 +
    t w`` and ``M = D^{-1} + Z' diag(w / lam) Z``:

    - the Newton target ``f = (C^{-1} + W)^{-1} b`` solves ``Q (beta, u) = (Z' b, b)``,
      ``Q`` the prior precision plus ``X' W X``, ``X = [Z, I]``; the ``u`` rows give ``u =
      t (b - W Z beta) / lam``, and substituted in the ``beta`` rows, ``M beta = Z' (b /
      lam)``; the minimising split of ``f`` into effects has ``a = C^{-1} f = u / t``;
    - half the log-determinant of ``B = I + W^(1/2) C W^(1/2)`` (the Laplace estimate's
      normalisation) is ``(sum log lam + sum log D + log|M|) / 2`` (the matrix
      determinant lemma);
    - the posterior covariance of ``eta``, ``(C^{-1} + W)^{-1}``, is ``diag(t / lam) +
      A M^{-1} A'`` with ``A = diag(1 / lam) Z``: a sum of two positive parts, which ``C -
      C W^(1/2) B^{-1} W^(1/2) C`` is not, and the covariance of ``A beta + sqrt(t / lam)
      e`` with ``beta ~ N(0, M^{-1})`` and ``e`` standard normal, which is how a draw is
      made (the effects, then the deviations given them)."""

    def __init__(
        self, codes: np.ndarray, sa: np.ndarray, tau: np.ndarray, psi: np.ndarray | None = None
    ) -> None:
        self.sa, self.tau = sa, tau
        self.psi = np.zeros_like(sa) if psi is None else psi
        columns = [np.ones((codes.shape[1], 1))]
        columns += [(c[:, None] == np.unique(c)[None, :]).astype(float) for c in codes]
        self.z = np.hstack(columns)
        effects = np.repeat(sa[:, None] ** 2, self.z.shape[1] - 1, axis=1)
        self.d = np.hstack([np.full((len(sa), 1), INTERCEPT_SD**2), effects])
        self.tau2 = np.asarray(tau, dtype=float) ** 2

    def variances(self, n: np.ndarray, m: np.ndarray) -> np.ndarray:
        """The deviations' variances ``t = tau^2 + psi^2 v`` of every table (pooled
        log-odds ``m`` (T,)) at every grid point: (T, grid, G), with ``v = 1 / (n p (1 -
        p))`` at the table's pooled rate ``p`` (0 for an empty intersection, which has no
        noise of its own)."""
        p = expit(np.asarray(m, dtype=float))[:, None]
        with np.errstate(divide="ignore"):
            v = np.where(n > 0, 1 / (n * p * (1 - p)), 0.0)
        t = self.tau2[None, :, None] + self.psi[None, :, None] ** 2 * v[:, None, :]
        return np.ascontiguousarray(t)

    def dense(self, n: np.ndarray | None = None, m: float = 0.0) -> np.ndarray:
        """``C`` at every grid point: (grid, G, G) (the fit never forms it; the checks
        compare against it); with a size term, of a table of sizes ``n`` and pooled log-odds
        ``m``."""
        g = len(self.z)
        t = self.variances(np.ones(g) if n is None else np.asarray(n, float), np.array([m]))[0]
        return (self.z * self.d[:, None, :]) @ self.z.T + t[:, :, None] * np.eye(g)


def grid_posterior(
    n: np.ndarray,
    k: np.ndarray,
    codes: np.ndarray,
    *,
    scales: np.ndarray = SCALES,
    prior_scale: float = 1.0,
    group_variance: str = "exchangeable",
) -> GridPosterior:
    """The nested-Laplace posterior of the intersections' log-odds.

    Parameters
    ----------
    n : numpy.ndarray, shape (G,)
        Rows per intersection (empty intersections allowed).
    k : numpy.ndarray, shape (..., G)
        Positives per intersection; leading dimensions are tables fitted at once
        (replicates of one table, same ``n``).
    codes : numpy.ndarray, shape (n_attributes, G)
        Every intersection's value code of every attribute.
    scales : numpy.ndarray
        Grid of ``sigma_a`` and of ``tau`` (their product is the grid).
    prior_scale : float
        Scale of the half-normal priors of ``sigma_a`` and ``tau``.
    group_variance : {"exchangeable", "size"}, default "exchangeable"
        ``"size"`` adds ``psi^2 v_s`` to every intersection's deviation variance (see the
        module's docstring), with ``psi`` on the grid :data:`SIZE_SCALES`.

    Returns
    -------
    GridPosterior
    """
    if group_variance not in GROUP_VARIANCES:
        raise ValueError(
            f"`group_variance` must be one of {GROUP_VARIANCES}, got {group_variance!r}"
        )
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    lead, tables = k.shape[:-1], k.reshape(-1, k.shape[-1])
    pos = tables.sum(axis=-1)
    m = np.log((pos + 0.5) / (n.sum() - pos + 0.5))
    codes, scales = np.asarray(codes), np.asarray(scales, dtype=float)
    size_term = group_variance == "size"
    prior, log_prior = _grid_prior(
        codes.dtype.str,
        codes.shape,
        codes.tobytes(),
        scales.tobytes(),
        float(prior_scale),
        size_term,
    )
    tau2 = prior.variances(n, m)
    shape = (len(scales), len(scales), len(SIZE_SCALES) if size_term else 1)
    f, _, lw = kernel.grid_laplace(
        n, tables, m, prior.z, prior.d, tau2, log_prior, shape, DROP, 100, 1e-8
    )
    laplace = (n, m, f, prior.z, prior.d, tau2)
    lw = lw.reshape(*lead, -1)
    weight = np.exp(lw - lw.max(axis=-1, keepdims=True))  # 0 where not evaluated
    return GridPosterior(
        mode=m.reshape(*lead, 1, 1) + f.reshape(*lead, *f.shape[1:]),
        weight=weight / weight.sum(axis=-1, keepdims=True),
        sigma_a=prior.sa,
        tau=prior.tau,
        psi=prior.psi,
        laplace=laplace,
    )


@functools.lru_cache(maxsize=16)
def _grid_prior(
    dtype: str, shape: tuple, codes: bytes, scales: bytes, prior_scale: float, size_term: bool
) -> tuple[_LowRankPrior, np.ndarray]:
    """The prior of :func:`grid_posterior` at every grid point of a table's attribute
    ``codes`` and ``scales`` (as bytes, to be hashable), with or without a ``size_term``:
    its :class:`_LowRankPrior` and the grid points' log prior weights. Cached, because a
    calibration refits tables of the same intersections hundreds of times; the scales and
    weights, which every posterior of the same intersections holds, are read-only."""
    grid = np.frombuffer(scales, dtype=float)
    size_grid = SIZE_SCALES if size_term else np.zeros(1)
    sa, tau, psi = (g.ravel() for g in np.meshgrid(grid, grid, size_grid, indexing="ij"))
    prior = _LowRankPrior(np.frombuffer(codes, dtype=dtype).reshape(shape), sa, tau, psi)
    # half-normal priors; the grid is uniform in log scale, hence the Jacobian sigma
    log_prior = -0.5 * ((sa / prior_scale) ** 2 + (tau / prior_scale) ** 2) + np.log(sa * tau)
    if size_term:
        log_prior += -0.5 * (psi / SIZE_PRIOR_SCALE) ** 2 + np.log(psi)
    for a in (sa, tau, psi, log_prior):
        a.setflags(write=False)
    return prior, log_prior
