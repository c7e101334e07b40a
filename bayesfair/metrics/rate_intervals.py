"""Intervals of rates and of their differences, and the posterior probability that one rate
exceeds another: the small statistics the report's answers and charts put beside every rate
(Wilson, Newcombe, Jeffreys)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import beta, binomtest

from .._vocabulary import LEVEL
from ..data import AuditData
from .rates import RATE_DEFINITIONS, rate_name, unknown_rate

__all__ = [
    "jeffreys_difference",
    "jeffreys_interval",
    "newcombe_difference",
    "posterior_probability_higher",
    "probability_higher",
    "rate_and_rest",
    "wilson_interval",
]


def jeffreys_interval(
    k: np.ndarray, n: np.ndarray, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Jeffreys interval for binomial proportions (NaN where n = 0).

    Parameters
    ----------
    k, n : array_like
        Successes and trials.
    level : float, default 0.9
        Interval mass.

    Returns
    -------
    lower, upper : numpy.ndarray

    Examples
    --------
    >>> from bayesfair.metrics import jeffreys_interval
    >>> lo, hi = jeffreys_interval([0, 5], [10, 10])
    >>> float(lo[0]), round(float(hi[1]), 3)
    (0.0, 0.738)
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    a = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, beta.ppf(a, k + 0.5, n - k + 0.5), 0.0)
        hi = np.where(k < n, beta.ppf(1 - a, k + 0.5, n - k + 0.5), 1.0)
    return np.where(n > 0, lo, np.nan), np.where(n > 0, hi, np.nan)


def wilson_interval(k: float, n: float, level: float) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``k / n`` (scipy's ``binomtest``).

    Parameters
    ----------
    k, n : float
        Successes and trials (whole numbers, ``n`` > 0).
    level : float
        Confidence level.

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> from bayesfair.metrics import wilson_interval
    >>> round(wilson_interval(0, 10, 0.95)[1], 4)
    0.2775
    """
    ci = binomtest(round(k), round(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def newcombe_difference(k1, n1, k2, n2, level: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval of ``k1/n1 - k2/n2`` (his method 10): the Wilson
    intervals of the two rates combined; it keeps its level in small groups and near 0 or 1,
    where the Wald interval does not (Newcombe, Stat. Med. 17, 1998).

    Parameters
    ----------
    k1, n1, k2, n2 : float
        Successes and trials of the two groups.
    level : float
        Confidence level.

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> from bayesfair.metrics import newcombe_difference
    >>> lo, hi = newcombe_difference(56, 70, 48, 80, 0.95)
    >>> round(lo, 4), round(hi, 4)
    (0.0524, 0.3339)
    """
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, level)
    l2, u2 = wilson_interval(k2, n2, level)
    d = p1 - p2
    return d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2)


def jeffreys_difference(k1, n1, k2, n2, level: float, seed: int = 0) -> tuple[float, float]:
    """Equal-tailed posterior interval of ``r1 - r2`` with independent Jeffreys priors,
    Beta(1/2, 1/2), on the two rates (20,000 seeded Monte Carlo draws).

    Parameters
    ----------
    k1, n1, k2, n2 : float
        Successes and trials of the two groups.
    level : float
        Posterior mass.
    seed : int, default 0

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> from bayesfair.metrics import jeffreys_difference
    >>> lo, hi = jeffreys_difference(56, 70, 48, 80, 0.95)
    >>> bool(lo < 0.2 < hi)
    True
    """
    rng = np.random.default_rng(seed)
    d = beta.rvs(k1 + 0.5, n1 - k1 + 0.5, size=20_000, random_state=rng) - beta.rvs(
        k2 + 0.5, n2 - k2 + 0.5, size=20_000, random_state=rng
    )
    lo, hi = np.quantile(d, [0.5 - level / 2, 0.5 + level / 2])
    return float(lo), float(hi)


def posterior_probability_higher(
    data: AuditData, metric: str, by, group: str, n_draws: int = 20_000, seed: int = 0
) -> float:
    """Posterior probability that ``group``'s rate exceeds the rate of the other rows of
    ``by`` (independent Jeffreys Beta(1/2, 1/2) priors on the two rates): the Bayesian
    statement to read beside a p-value.

    Parameters
    ----------
    data : AuditData
        With a decision.
    metric : str
        A rate of :data:`bayesfair.metrics.RATE_DEFINITIONS`.
    by : str or list of str
        Protected columns defining the groups.
    group : str
        The group's label.
    n_draws : int, default 20000
        Monte Carlo draws of the two rates.
    seed : int, default 0

    Returns
    -------
    float

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> from bayesfair.metrics import posterior_probability_higher
    >>> round(posterior_probability_higher(data, "fpr", "sex", "1"), 3)  # sex 1's FPR is lower
    0.0
    """
    metric = rate_name(metric)
    if metric not in RATE_DEFINITIONS:
        raise ValueError(unknown_rate(metric))
    t = data.table_for(by)
    if group not in set(t["intersection"]):
        raise ValueError(
            f"`group` {group!r} is not a group of {by!r}; the groups are "
            f"{t['intersection'].tolist()[:10]}"
        )
    return probability_higher(*rate_and_rest(t, metric, group), n_draws, seed)


def probability_higher(group: tuple, rest: tuple, n_draws: int = 20_000, seed: int = 0) -> float:
    """P(rate of ``group`` > rate of ``rest``), each a (numerator, denominator) pair, under
    independent Jeffreys priors, by ``n_draws`` Monte Carlo draws."""
    (kg, ng), (kr, nr) = group, rest
    rng = np.random.default_rng(seed)
    a = rng.beta(kg + 0.5, ng - kg + 0.5, n_draws)
    b = rng.beta(kr + 0.5, nr - kr + 0.5, n_draws)
    return float(np.mean(a > b))


def rate_and_rest(t: pd.DataFrame, metric: str, group: str) -> tuple[tuple, tuple]:
    """(numerator, denominator) of ``metric`` in ``group`` and in the other rows of ``t``."""
    num, den = RATE_DEFINITIONS[metric]
    k = t[list(num)].sum(axis=1).to_numpy(float)
    n = t[list(den)].sum(axis=1).to_numpy(float)
    is_g = (t["intersection"] == group).to_numpy()
    return (k[is_g].sum(), n[is_g].sum()), (k[~is_g].sum(), n[~is_g].sum())
