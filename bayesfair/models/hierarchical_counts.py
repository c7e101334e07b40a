"""A hierarchical model of the per-intersection counts, fitted by nested Laplace
approximations in milliseconds (the model behind the audit's default fairness intervals)."""

from __future__ import annotations

import numpy as np

from .._validation import SeedLike, check_real
from ._design import Design
from ._nested_laplace import grid_posterior
from .conjugate import _Conjugate

__all__ = ["HierarchicalCounts"]


class HierarchicalCounts(_Conjugate):
    r"""Hierarchical logistic model of P(y=1|s): attribute effects plus intersection
    deviations, with learned scales, fitted by nested Laplace approximations.

    .. math::

        \operatorname{logit} P(y{=}1 \mid s) = \mu + \sum_d a_{d, s_d} + u_s,\quad
        a_{d,l} \sim N(0, \sigma_a^2),\; u_s \sim N(0, \tau^2),\;
        \sigma_a, \tau \sim \text{HalfNormal}(\text{prior\_scale}).

    The same structure as :class:`HierarchicalLogisticRegression` (Foulds et al.'s
    HLR: attribute effects and per-intersection noise), but with the attribute effects
    shrunk too and both scales integrated over a grid; given the scales the posterior of
    the log-odds is approximated by a Gaussian at its mode (Laplace), and the draws come
    from the mixture over the grid (Rue, Martino & Chopin 2009). No sampler is run, so a
    fit takes milliseconds on a few dozen intersections: the interval calibration of
    :func:`~bayesfair.interval_calibration` refits it on hundreds of replicate tables.
    A fit solves ``r x r`` systems at each of the 81 points of a 9 x 9 grid (``r = 1 +
    sum(levels)``, however many intersections ``G`` there are; 486 with a size term); a
    draw picks a grid point, then the effects from their ``r``-dimensional Gaussian and
    the deviations given them, so it never factorises a ``G x G`` covariance.

    With ``group_variance="size"`` the deviations' variance is ``tau^2 + psi^2 v_s``,
    ``v_s = 1 / (n_s p (1 - p))`` the sampling variance of the intersection's log-odds at
    the pooled rate ``p``, ``psi ~ HalfNormal(0.5)``: a small intersection may depart from
    its attribute values further than a large one, as a finite population's small groups do
    (their rates are those of their few rows). It is what the audit's default intervals use,
    whose truth is the audited population's own rates; the exchangeable default models
    P(y|s) of the process behind the data, as :class:`HierarchicalLogisticRegression` does.
    ``HierarchicalBayes`` of the per-group estimates has the same option.

    Parameters
    ----------
    prior_scale : float, default 1.0
        Scale of the half-normal priors of ``sigma_a`` and ``tau`` (log-odds).
    group_variance : {"exchangeable", "size"}, default "exchangeable"
        Whether the intersections' deviations share one variance or add a size term.
    draws, chains : int
        Posterior draws, arranged as ``chains`` x ``draws``.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Attributes
    ----------
    grid_ : GridPosterior
        Modes and posterior weights of the grid of ``(sigma_a, tau)`` (and ``psi``, with a
        size term).

    References
    ----------
    Rue, H., Martino, S. & Chopin, N. (2009). Approximate Bayesian inference for latent
    Gaussian models by using integrated nested Laplace approximations. *JRSS B* 71(2).

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import HierarchicalCounts
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> HierarchicalCounts(random_state=0).fit(data).p_draws_.shape
    (4, 1000, 16)
    """

    name = "HC"
    direct_method = "laplace"

    def __init__(
        self,
        prior_scale: float = 1.0,
        *,
        group_variance: str = "exchangeable",
        draws: int = 1000,
        chains: int = 4,
        random_state: SeedLike = None,
    ) -> None:
        super().__init__(draws=draws, chains=chains, random_state=random_state)
        self.method = "laplace"
        self.prior_scale = prior_scale
        self.group_variance = group_variance

    def _fit_exact(self, design: Design) -> None:
        check_real(self.prior_scale, "prior_scale", sign="positive")
        rng = np.random.default_rng(self._seed_source())
        self.grid_ = grid_posterior(
            design.n,
            design.k,
            design.codes,
            prior_scale=self.prior_scale,
            group_variance=self.group_variance,
        )
        p = self.grid_.draw(self.chains * self.draws, rng)
        p = p.reshape(self.chains, self.draws, design.n_groups)
        self.p_point_ = p.mean(axis=(0, 1))
        self._finish(design, {"p": p}, {})

    def predict_proba(self) -> np.ndarray:
        """Posterior mean of P(y=1|s) (the predictive probability of a new row).

        Returns
        -------
        numpy.ndarray, shape (n_intersections,)
        """
        self._check_fitted()
        return self.p_point_
