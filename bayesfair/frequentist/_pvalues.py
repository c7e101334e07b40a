"""Monte Carlo p-values, Clopper-Pearson bounds and the exact permutation of a rate: the
pieces the package's permutation tests (rates, AUC, correlation, any metric) share."""

from __future__ import annotations

import numpy as np
from scipy.special import betaincinv

from ..metrics.rates import RATE_DEFINITIONS

__all__ = [
    "ALTERNATIVES",
    "CELLS",
    "CLASS_CELLS",
    "clopper_pearson",
    "exact_permutation",
    "inexact_note",
    "monte_carlo_pvalue",
    "monte_carlo_pvalues",
]

CELLS = ("tp", "fp", "fn", "tn")
ALTERNATIVES = ("two-sided", "greater", "less")
#: the rows a rate's denominator counts, per permutation scheme (indices into CELLS)
CLASS_CELLS = {"within_outcome": ((0, 2), (1, 3)), "within_decision": ((0, 1), (2, 3))}


def monte_carlo_pvalue(null: np.ndarray, observed: float, alternative: str) -> tuple[float, int]:
    p, k = monte_carlo_pvalues(null, np.asarray(observed, dtype=float), alternative)
    return float(p), int(k)


def monte_carlo_pvalues(null: np.ndarray, observed: np.ndarray, alternative: str):
    """Monte Carlo p-values ``(1 + hits) / (1 + n_resamples)`` and hit counts of observed
    statistics (shape ``S``) against null draws (shape ``(n_resamples, *S)``)."""
    tol = 1e-12 * np.maximum(1.0, np.abs(observed))
    if alternative == "two-sided":
        hits = np.abs(null) >= np.abs(observed) - tol
    elif alternative == "greater":
        hits = null >= observed - tol
    else:
        hits = null <= observed + tol
    k = np.sum(hits & ~np.isnan(null), axis=0)
    return (k + 1) / (null.shape[0] + 1), k


def clopper_pearson(k, n, level: float = 0.99) -> tuple:
    """Two-sided Clopper-Pearson bounds of ``k`` successes in ``n > 0`` trials, exactly 0
    and 1 where ``k`` is 0 or ``n``: floats for numbers, arrays for arrays."""
    k, n = np.asarray(k, float), np.asarray(n, float)
    a = (1 - level) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k == 0, 0.0, betaincinv(k, n - k + 1, a))  # Beta(k, n-k+1)'s a-quantile
        hi = np.where(k == n, 1.0, betaincinv(k + 1, n - k, 1 - a))
    return (float(lo), float(hi)) if lo.ndim == 0 else (lo, hi)


def exact_permutation(metric: str) -> str:
    """The permutation that gives an exact test of ``metric(A) == metric(B)``.

    A rate is the mean of an indicator over the rows of its denominator's class: under
    the null hypothesis the indicators of that class are independent draws with one
    success probability in every group, so permuting group labels within the class
    (and only there) leaves their distribution unchanged, whatever else differs.
    FNR, FPR, TPR and TNR are rates over y = 1 or y = 0 (``within_outcome``); PPV,
    FDR, NPV and FOR over decision = 1 or 0 (``within_decision``); selection rate,
    base rate and accuracy over all rows (``free``).
    """
    den = set(RATE_DEFINITIONS[metric][1])
    for scheme, classes in CLASS_CELLS.items():
        if any(den == {CELLS[i] for i in cls} for cls in classes):
            return scheme
    return "free"


def inexact_note(metric: str, permute: str, exact: str | None = None, when: str = "") -> list:
    """A caveat when ``permute`` is not ``exact``, the permutation that is exact for
    ``metric`` (by default :func:`exact_permutation`'s; ``when`` qualifies it)."""
    exact = exact or exact_permutation(metric)
    if permute == exact:
        return []
    return [
        f"{permute} permutation is exact for {metric} only under the strong null (the "
        f"groups' rows are exchangeable); for equality of {metric} alone it is asymptotically "
        f"valid when studentized, and small groups can exceed the nominal level; "
        f"permute='{exact}' (the default, 'auto') is exact{when}"
    ]
