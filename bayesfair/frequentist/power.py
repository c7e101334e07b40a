"""Power of the two-group rate test: the smallest difference a sample can detect and the
sample a difference needs (normal approximation to the studentized test)."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from .._validation import check_count, check_open_probability, check_real

__all__ = ["minimum_detectable_difference", "required_sample_size"]


def minimum_detectable_difference(
    rate: float, n_a: int, n_b: int, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest difference of a rate between two groups that a two-sided level-``alpha``
    studentized test detects with probability ``power`` (normal approximation; ``n_a``,
    ``n_b`` are the rate's denominators, e.g. the groups' positives for FNR).

    Parameters
    ----------
    rate : float
        The common rate under the null.
    n_a, n_b : int
        The rate's denominators in the two groups.
    alpha : float, default 0.05
    power : float, default 0.8

    Returns
    -------
    float

    Examples
    --------
    >>> from bayesfair.frequentist import minimum_detectable_difference
    >>> round(minimum_detectable_difference(0.3, 100, 400), 3)
    0.144
    """
    z = _power_quantiles(rate, alpha, power)
    n_a, n_b = check_count(n_a, "n_a"), check_count(n_b, "n_b")
    return float(z * np.sqrt(rate * (1 - rate) * (1 / n_a + 1 / n_b)))


def _power_quantiles(rate: float, alpha: float, power: float) -> float:
    """``z_{1 - alpha/2} + z_power``, after checking the three: a rate of 0 or 1 has no
    variance to detect a difference against, and 1.5 gave negative sample sizes."""
    check_open_probability(rate, "rate")
    check_open_probability(alpha, "alpha")
    check_open_probability(power, "power")
    return float(norm.ppf(1 - alpha / 2) + norm.ppf(power))


def required_sample_size(
    rate: float, difference: float, *, ratio: float = 1.0, alpha: float = 0.05, power: float = 0.8
) -> tuple[int, int]:
    """Denominators ``(n_a, n_b = ratio * n_a)`` needed to detect ``difference`` (see
    :func:`minimum_detectable_difference`).

    Parameters
    ----------
    rate : float
        The common rate under the null.
    difference : float
        The difference to detect (positive).
    ratio : float, default 1
        ``n_b / n_a``.
    alpha : float, default 0.05
    power : float, default 0.8

    Returns
    -------
    n_a, n_b : int

    Examples
    --------
    >>> from bayesfair.frequentist import required_sample_size
    >>> required_sample_size(0.3, 0.1, ratio=2.0)
    (248, 495)
    """
    check_real(difference, "difference", sign="positive")
    check_real(ratio, "ratio", sign="positive")
    z = _power_quantiles(rate, alpha, power)
    n_a = (z / difference) ** 2 * rate * (1 - rate) * (1 + 1 / ratio)
    return int(np.ceil(n_a)), int(np.ceil(ratio * n_a))
