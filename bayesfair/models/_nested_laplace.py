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
determinant and the posterior covariance work in the effects, where the intersections'
deviations have a diagonal precision and can be eliminated, so each solves a system of the
``1 + sum(levels)`` intercept and attribute effects rather than of the ``G``
intersections, compiled (:mod:`bayesfair._newton_kernel`), so a table of a few dozen
intersections takes milliseconds, which is what lets interval calibration refit it on
hundreds of replicate tables.

The attribute effects let an intersection borrow strength from every intersection that
shares one of its values; the deviations keep interactions; the scales are learned with
their uncertainty (no plug-in), so a fair table keeps posterior mass near
``sigma_a = tau = 0``. Empty intersections get the prediction of their attribute values.
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
#: Prior standard deviation of the intercept around the overall log-odds.
INTERCEPT_SD = 2.0
#: Up to this many floats (tables x draws x G x G), :meth:`GridPosterior.draw` gathers
#: every draw's Cholesky factor and transforms all draws in one call, the faster way on
#: tables of a couple of dozen intersections; beyond it, it transforms the draws of one grid
#: point at a time, so that the copying does not grow with the draws times ``G^2``.
GATHER_FLOATS = 2**18


@dataclass(frozen=True)
class GridPosterior:  # numpydoc ignore=PR01
    """Gaussian approximations of ``eta`` at every grid point and their weights; the
    covariances are formed only at the grid points a draw uses (:meth:`cholesky`)."""

    mode: np.ndarray  # (..., grid, G)
    weight: np.ndarray  # (..., grid) posterior probabilities of the grid points
    sigma_a: np.ndarray  # (grid,)
    tau: np.ndarray  # (grid,)
    laplace: tuple = field(repr=False)  # (n, m, f, z, d, tau2) of the kernel, tables flat

    def cholesky(self, points: np.ndarray) -> np.ndarray:
        """Cholesky factors of the posterior covariances at the grid ``points`` (U,):
        (..., U, G, G)."""
        n, m, f, z, d, tau2 = self.laplace
        cov = kernel.covariances(n, m, f, z, d, tau2, np.asarray(points, dtype=np.int64))
        cov = cov.reshape(*self.weight.shape[:-1], *cov.shape[1:])
        return np.linalg.cholesky(cov + 1e-9 * np.eye(len(n)))

    def draw(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draws of P(y=1|s) from the mixture: shape (..., size, G), one set of draws per
        table of the leading dimensions.

        Every draw picks a grid point by its weight, then ``eta = mode + L z`` with ``L``
        that point's Cholesky factor, formed only for the points picked. Up to
        :data:`GATHER_FLOATS`, every draw's factor is gathered and all draws are
        transformed in one call; beyond it (many intersections), the draws of one point
        together. Both give the same numbers."""
        lead = self.weight.shape[:-1]
        cdf = np.cumsum(self.weight, axis=-1)
        u = rng.random((*lead, size)) * cdf[..., -1:]
        g = np.minimum(_row_searchsorted(cdf, u), self.weight.shape[-1] - 1)
        z = rng.standard_normal((*lead, size, self.mode.shape[-1]))
        points = np.unique(g)
        chol = self.cholesky(points).reshape(-1, len(points), *z.shape[-1:] * 2)
        modes = self.mode.reshape(-1, *self.mode.shape[-2:])
        flat_g, flat_z = g.reshape(-1, size), z.reshape(-1, *z.shape[-2:])
        if flat_z.size * z.shape[-1] <= GATHER_FLOATS:  # every draw's factor, gathered
            t = np.arange(len(flat_z))[:, None]
            picked = chol[t, np.searchsorted(points, flat_g)]
            eta = modes[t, flat_g] + np.einsum("...dij,...dj->...di", picked, flat_z)
        else:  # many intersections: the draws of one grid point at a time
            eta = np.empty_like(flat_z)
            for t in range(len(flat_z)):
                for j, point in enumerate(points):
                    rows = np.flatnonzero(flat_g[t] == point)
                    if rows.size:
                        eta[t, rows] = modes[t, point] + np.einsum(
                            "ij,dj->di", chol[t, j], flat_z[t, rows]
                        )
        return expit(eta).reshape(z.shape)


def _row_searchsorted(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``searchsorted`` of every row of ``u`` in the same row of ``cdf`` (leading dims)."""
    return (u[..., :, None] >= cdf[..., None, :]).sum(axis=-1)


class _LowRankPrior:
    """The prior of ``f = eta - m`` at every grid point as effects, ``f = Z beta + u``:
    ``Z`` (G, r) the intercept's column of ones and every attribute's one-hot columns
    (``Z_d Z_d'`` is the agreement on attribute ``d``), ``beta ~ N(0, D)`` with ``D``
    (grid, r) the intercept's and the attribute effects' variances, ``u ~ N(0, tau^2 I)``;
    so ``C = Z D Z' + tau^2 I``.

    A Newton step and the Gaussian approximation (:mod:`bayesfair._newton_kernel`)
    eliminate ``u`` (its precision is diagonal) and solve an ``r x r`` system per grid
    point, ``r = 1 + sum(levels)``, instead of a ``G x G`` one. With weights ``w`` (the
    binomial information at the current ``eta``), ``lam = 1 + tau^2 w`` and ``M = D^{-1} +
    Z' diag(w / lam) Z``:

    - the Newton target ``f = (C^{-1} + W)^{-1} b`` solves ``Q (beta, u) = (Z' b, b)``,
      ``Q`` the prior precision plus ``X' W X``, ``X = [Z, I]``; the ``u`` rows give ``u =
      tau^2 (b - W Z beta) / lam``, and substituted in the ``beta`` rows, ``M beta = Z' (b /
      lam)``; the minimising split of ``f`` into effects has ``a = C^{-1} f = u / tau^2``;
    - half the log-determinant of ``B = I + W^(1/2) C W^(1/2)`` (the Laplace estimate's
      normalisation) is ``(sum log lam + sum log D + log|M|) / 2`` (the matrix
      determinant lemma);
    - the posterior covariance of ``eta``, ``(C^{-1} + W)^{-1}``, is ``diag(tau^2 / lam) +
      A M^{-1} A'`` with ``A = diag(1 / lam) Z``: a sum of two positive parts, which ``C -
      C W^(1/2) B^{-1} W^(1/2) C`` is not."""

    def __init__(self, codes: np.ndarray, sa: np.ndarray, tau: np.ndarray) -> None:
        self.sa, self.tau = sa, tau
        columns = [np.ones((codes.shape[1], 1))]
        columns += [(c[:, None] == np.unique(c)[None, :]).astype(float) for c in codes]
        self.z = np.hstack(columns)
        effects = np.repeat(sa[:, None] ** 2, self.z.shape[1] - 1, axis=1)
        self.d = np.hstack([np.full((len(sa), 1), INTERCEPT_SD**2), effects])
        self.tau2 = np.asarray(tau, dtype=float) ** 2

    def dense(self) -> np.ndarray:
        """``C`` at every grid point: (grid, G, G) (the fit never forms it; the checks
        compare against it)."""
        eye = np.eye(len(self.z))
        return (self.z * self.d[:, None, :]) @ self.z.T + self.tau2[:, None, None] * eye


def grid_posterior(
    n: np.ndarray,
    k: np.ndarray,
    codes: np.ndarray,
    *,
    scales: np.ndarray = SCALES,
    prior_scale: float = 1.0,
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

    Returns
    -------
    GridPosterior
    """
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    lead, tables = k.shape[:-1], k.reshape(-1, k.shape[-1])
    pos = tables.sum(axis=-1)
    m = np.log((pos + 0.5) / (n.sum() - pos + 0.5))
    codes, scales = np.asarray(codes), np.asarray(scales, dtype=float)
    prior, log_prior = _grid_prior(
        codes.dtype.str, codes.shape, codes.tobytes(), scales.tobytes(), float(prior_scale)
    )
    sa, tau = prior.sa, prior.tau
    f, _, psi = kernel.modes(n, tables, m, prior.z, prior.d, prior.tau2, 100, 1e-8)
    half_logdet = kernel.half_logdets(n, m, f, prior.z, prior.d, prior.tau2)
    laplace = (n, m, f, prior.z, prior.d, prior.tau2)
    log_marginal = (psi - half_logdet).reshape(*lead, -1)
    lw = log_marginal + log_prior
    weight = np.exp(lw - lw.max(axis=-1, keepdims=True))
    return GridPosterior(
        mode=m.reshape(*lead, 1, 1) + f.reshape(*lead, *f.shape[1:]),
        weight=weight / weight.sum(axis=-1, keepdims=True),
        sigma_a=sa,
        tau=tau,
        laplace=laplace,
    )


@functools.lru_cache(maxsize=16)
def _grid_prior(
    dtype: str, shape: tuple, codes: bytes, scales: bytes, prior_scale: float
) -> tuple[_LowRankPrior, np.ndarray]:
    """The prior of :func:`grid_posterior` at every grid point of a table's attribute
    ``codes`` and ``scales`` (as bytes, to be hashable): its :class:`_LowRankPrior` and the
    grid points' log prior weights. Cached, because a calibration refits tables of the same
    intersections hundreds of times; the scales and weights, which every posterior of the
    same intersections holds, are read-only."""
    grid = np.frombuffer(scales, dtype=float)
    sa, tau = (g.ravel() for g in np.meshgrid(grid, grid, indexing="ij"))
    prior = _LowRankPrior(np.frombuffer(codes, dtype=dtype).reshape(shape), sa, tau)
    # half-normal priors; the grid is uniform in log scale, hence the Jacobian sigma
    log_prior = -0.5 * ((sa / prior_scale) ** 2 + (tau / prior_scale) ** 2) + np.log(sa * tau)
    for a in (sa, tau, log_prior):
        a.setflags(write=False)
    return prior, log_prior
