"""Conjugate models with exact posterior draws: Dirichlet-multinomial and naive Bayes."""

from __future__ import annotations

import numpy as np

from .. import _arviz
from .._validation import SeedLike, check_real
from .._vocabulary import PSEUDO_COUNT, renamed_arguments
from ._design import Design
from .base import FairnessModel, binomial_loglik

__all__ = ["DirichletMultinomial", "NaiveBayes"]


class _Conjugate(FairnessModel):
    exact = True

    @renamed_arguments(random_seed="random_state")
    def __init__(
        self,
        *,
        draws: int = 1000,
        chains: int = 4,
        random_state: SeedLike = None,
    ):
        super().__init__(
            method="exact",
            draws=draws,
            tune=0,
            chains=chains,
            random_state=random_state,
        )

    def _finish(self, design: Design, posterior: dict[str, np.ndarray], dims: dict) -> None:
        p = posterior["p"]
        self.idata_ = _arviz.from_draws(
            posterior,
            log_likelihood={"y": binomial_loglik(p, design)},
            observed={"y": design.k},
            coords=design.coords(),
            dims={**dims, "p": ["intersection"], "y": ["intersection"]},
        )


class DirichletMultinomial(_Conjugate):
    """Independent Dirichlet(pseudo_count) prior on P(y | s) of every intersection (smoothed EDF).

    The posterior of P(y=1|s) is Beta(N_{1,s} + pseudo_count, N_{0,s} + pseudo_count); its
    posterior predictive is Foulds et al. eq. 4 (the paper's "EDF-FB") and the
    point estimate is the raw frequency ("EDF-PE"; NaN for empty intersections).

    Parameters
    ----------
    pseudo_count : float, default 0.5.5
        Pseudo-count per outcome. 0.5 (Jeffreys) reproduces the paper's EDF-FB
        values on Adult; 1 is the uniform prior.
    draws, chains : int
        Exact posterior draws, arranged as ``chains`` x ``draws``.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import DirichletMultinomial
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> DirichletMultinomial(pseudo_count=1.0, random_state=0).fit(data).p_draws_.shape
    (4, 1000, 16)
    """

    name = "EDF"

    @renamed_arguments(alpha="pseudo_count", random_seed="random_state")
    def __init__(
        self,
        pseudo_count: float = PSEUDO_COUNT,
        *,
        draws: int = 1000,
        chains: int = 4,
        random_state: SeedLike = None,
    ) -> None:
        super().__init__(draws=draws, chains=chains, random_state=random_state)
        self.pseudo_count = pseudo_count

    def _fit_exact(self, design: Design) -> None:
        check_real(self.pseudo_count, "pseudo_count", sign="positive")
        rng = np.random.default_rng(self._seed_source())
        a = design.k + self.pseudo_count
        b = design.n - design.k + self.pseudo_count
        p = rng.beta(a, b, size=(self.chains, self.draws, design.n_groups))
        with np.errstate(invalid="ignore", divide="ignore"):
            self.p_point_ = np.where(design.n > 0, design.k / np.maximum(design.n, 1), np.nan)
        self._predictive = a / (a + b)
        self._finish(design, {"p": p}, {})

    def predict_proba(self) -> np.ndarray:
        """Exact posterior predictive ``(N_1 + pseudo_count) / (N + 2 pseudo_count)`` (eq. 4).

        Returns
        -------
        numpy.ndarray, shape (n_intersections,)
        """
        self._check_fitted()
        return self._predictive


def _dirichlet_mode(conc: np.ndarray) -> np.ndarray:
    """Mode of Dirichlet(conc) along the last axis.

    Components with concentration at most 1 sit at 0 when another exceeds 1 (there
    the density is largest, or unbounded); where none exceeds 1 (for example an
    outcome with no rows and a flat prior), the density has no unique mode and the
    mean stands in.  The plain formula (conc - 1) / sum(conc - 1) gives 0 / 0 or
    negative probabilities in those cases.
    """
    excess = np.maximum(conc - 1.0, 0.0)
    total = excess.sum(axis=-1, keepdims=True)
    mean = conc / conc.sum(axis=-1, keepdims=True)
    return np.where(total > 0, excess / np.where(total > 0, total, 1.0), mean)


class NaiveBayes(_Conjugate):
    """Naive Bayes: P(y=1) ~ Beta(a_y, a_y); P(s_d | y) ~ Dirichlet(a_s) for each attribute d.

    P(y=1 | s) is proportional to P(y=1) * prod_d P(s_d | y=1).  Conjugate:
    the posterior is drawn exactly from the per-attribute counts; the point
    estimate is the posterior mode (the maximum-likelihood fit when both
    pseudo-counts are 1).

    Parameters
    ----------
    a_y, a_s : float, default 1
        Pseudo-counts of the Beta prior on P(y) and of the Dirichlet priors on
        P(s_d | y).
    draws, chains : int
        Exact posterior draws, arranged as ``chains`` x ``draws``.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import NaiveBayes
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> NaiveBayes(random_state=0).fit(data).predict_proba().shape
    (16,)
    """

    name = "NB"

    @renamed_arguments(random_seed="random_state")
    def __init__(
        self,
        a_y: float = 1.0,
        a_s: float = 1.0,
        *,
        draws: int = 1000,
        chains: int = 4,
        random_state: SeedLike = None,
    ) -> None:
        super().__init__(draws=draws, chains=chains, random_state=random_state)
        self.a_y = a_y
        self.a_s = a_s

    def _counts(self, design: Design) -> list[np.ndarray]:
        """For every attribute: counts shaped (2, n_values) of (y, value)."""
        out = []
        for d, lv in enumerate(design.categories.values()):
            pos = np.bincount(design.codes[d], weights=design.k, minlength=len(lv))
            tot = np.bincount(design.codes[d], weights=design.n, minlength=len(lv))
            out.append(np.stack([tot - pos, pos]))
        return out

    @staticmethod
    def _combine(py1: np.ndarray, cond: list[np.ndarray], codes: np.ndarray) -> np.ndarray:
        # cond[d]: (..., 2, n_values) of P(s_d = v | y); work in logs for many attributes.
        log1 = np.log(py1)[..., None]
        log0 = np.log1p(-py1)[..., None]
        for d, c in enumerate(cond):
            log1 = log1 + np.log(c[..., 1, codes[d]])
            log0 = log0 + np.log(c[..., 0, codes[d]])
        return 1.0 / (1.0 + np.exp(log0 - log1))

    def _fit_exact(self, design: Design) -> None:
        check_real(self.a_y, "a_y", sign="positive")
        check_real(self.a_s, "a_s", sign="positive")
        rng = np.random.default_rng(self._seed_source())
        size = (self.chains, self.draws)
        k1, k0 = design.k.sum(), (design.n - design.k).sum()
        py1 = rng.beta(k1 + self.a_y, k0 + self.a_y, size=size)
        counts = self._counts(design)
        # Dirichlet posterior draws row by row (y = 0, 1) with their own concentrations.
        cond = [
            np.stack([rng.dirichlet(c[y] + self.a_s, size=size) for y in (0, 1)], axis=-2)
            for c in counts
        ]
        p = self._combine(py1, cond, design.codes)
        # Posterior mode (MLE when the pseudo-counts are 1).
        mode_y = _dirichlet_mode(np.array([k0, k1]) + self.a_y)[1]
        mode_c = [_dirichlet_mode(c + self.a_s) for c in counts]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.p_point_ = self._combine(np.asarray(mode_y), mode_c, design.codes)
        self._finish(design, {"p": p, "p_y": py1}, {})
