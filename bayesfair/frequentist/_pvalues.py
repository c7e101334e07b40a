"""Monte Carlo p-values, Holm's adjustment, Clopper-Pearson bounds and the exact
permutation of a rate: the pieces the package's permutation tests (rates, AUC, correlation,
any metric) and the audit's scans share."""

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
    "holm",
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


def holm(p: np.ndarray) -> np.ndarray:
    r"""Holm's (1979) step-down adjustment of the p-values ``p`` of several tests.

    With the ``m`` p-values that are not NaN sorted, :math:`p_{(1)} \le \dots \le
    p_{(m)}`, the adjusted :math:`\tilde p_{(i)} = \max_{j \le i} \min(1, (m - j + 1)
    p_{(j)})`; rejecting where :math:`\tilde p \le \alpha` keeps the chance of any false
    rejection at most :math:`\alpha` whatever the tests' dependence (the scans of a class
    and of its complement are far from independent). NaN (a test without a p-value) stays
    NaN and is not counted.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.frequentist._pvalues import holm
    >>> holm(np.array([0.01, 0.04, 0.03, 0.2, np.nan])).round(2).tolist()
    [0.04, 0.09, 0.09, 0.2, nan]
    """
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    out[order] = np.minimum(np.maximum.accumulate((m - np.arange(m)) * p[order]), 1.0)
    return out


def holm_floor(n_tests: int, n_resamples: int) -> float:
    """The smallest Holm-adjusted p-value that ``n_tests`` Monte Carlo p-values of
    ``n_resamples`` resamples each can reach: ``n_tests`` times the smallest Monte Carlo
    p-value, ``1 / (n_resamples + 1)``, at most 1.

    Examples
    --------
    >>> from bayesfair.frequentist._pvalues import holm_floor
    >>> holm_floor(12, 99)
    0.12
    """
    return min(1.0, n_tests / (n_resamples + 1))


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
