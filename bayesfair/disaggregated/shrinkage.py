"""Standard, James-Stein (Bock) and empirical-Bayes estimates of per-group metrics.

All take the standard estimates ``s`` (NaN where undefined), the group sizes
``n`` and the pooled variance parameter ``sigma2`` (sigma_a^2 = sigma2 / n_a,
Herlihy et al. eq. 6); undefined groups stay NaN.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .._vocabulary import LEVEL

__all__ = [
    "EB_INTERVALS",
    "dersimonian_laird_variance",
    "empirical_bayes",
    "james_stein",
    "standard_intervals",
]


def standard_intervals(s, n, sigma2, level: float = LEVEL):
    """Standard intervals (Herlihy et al. eq. 7): ``s_a +- z sigma / sqrt(n_a)``.

    Parameters
    ----------
    s : array_like
        Standard estimates per group (NaN where undefined).
    n : array_like
        Group sizes (the metric's denominators).
    sigma2 : float
        Pooled variance parameter: sigma_a^2 = sigma2 / n_a (eq. 6,
        :func:`pooled_sigma2`).
    level : float, default 0.9

    Returns
    -------
    lower, upper : numpy.ndarray

    Examples
    --------
    >>> from bayesfair.disaggregated import standard_intervals
    >>> lo, hi = standard_intervals([0.2, 0.5], [100, 25], 0.16, level=0.95)
    >>> [round(float(x), 4) for x in hi - lo]  # 2 z sqrt(0.16 / n)
    [0.1568, 0.3136]
    """
    z = stats.norm.ppf(0.5 + level / 2)
    se = np.sqrt(sigma2 / np.maximum(n, 1))
    return s - z * se, s + z * se


def _defined(s, n):
    ok = np.isfinite(s) & (n > 0)
    if ok.sum() < 2:
        raise ValueError("shrinkage needs at least two groups with a defined estimate")
    return ok


def james_stein(s, n, sigma2):
    """Bock's James-Stein estimator with ``|A| - 3`` in the numerator (Herlihy et al.,
    Section 5)::

        mu_a = mu0 + (1 - (|A| - 3) / sum_a (s_a - mu0)^2 / sigma_a^2)_+ (s_a - mu0),
        mu0 = sum_a n_a s_a / n, over the groups with a defined estimate.

    The factor is also capped at 1: with three or fewer defined groups ``|A| - 3 <= 0``
    and the formula would push estimates away from mu0 (James-Stein with an
    estimated centre needs at least four means to shrink), so they stay standard.

    Parameters
    ----------
    s : array_like
        Standard estimates per group (NaN where undefined).
    n : array_like
        Group sizes (the metric's denominators).
    sigma2 : float
        Pooled variance parameter: sigma_a^2 = sigma2 / n_a (eq. 6,
        :func:`pooled_sigma2`).

    Returns
    -------
    numpy.ndarray
        The shrunk estimates (NaN where ``s`` is undefined).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.disaggregated import james_stein
    >>> s, n = np.array([0.1, 0.3, 0.2, 0.25, 0.15]), np.array([20, 20, 200, 40, 40])
    >>> est = james_stein(s, n, 0.16)
    >>> bool(np.all(np.abs(est - 0.2) <= np.abs(s - 0.2)))  # every estimate moves toward mu0
    True
    """
    s = np.asarray(s, float)
    n = np.asarray(n, float)
    ok = _defined(s, n)
    mu0 = np.sum(n[ok] * s[ok]) / np.sum(n[ok])
    dist = np.sum((s[ok] - mu0) ** 2 * n[ok] / sigma2)
    k = ok.sum()
    shrink = min(1.0, max(0.0, 1.0 - (k - 3) / dist)) if dist > 0 else 0.0
    return np.where(ok, mu0 + shrink * (s - mu0), np.nan)


EB_INTERVALS = ("posterior", "prasad_rao")


def dersimonian_laird_variance(tau2: float, w: np.ndarray) -> float:
    """Variance of the (untruncated) moment estimator of tau^2 (Herlihy et al. eq. 13, which is
    DerSimonian and Laird's) under the normal model, with weights w_a = 1 / sigma_a^2
    (Biggerstaff and Tweedie 1997):

    Var(Q) = 2 (k - 1) + 4 (S1 - 2 S2 / S1 + S3 / S1^2) tau^2
             + 2 (S2 - 2 S3 / S1 + S2^2 / S1^2) tau^4,
    Var(tau^2) = Var(Q) / (S1 - S2 / S1)^2,  S_r = sum_a w_a^r.
    """
    w = np.asarray(w, float)
    k = len(w)
    s1, s2, s3 = w.sum(), np.sum(w**2), np.sum(w**3)
    var_q = (
        2 * (k - 1)
        + 4 * (s1 - 2 * s2 / s1 + s3 / s1**2) * tau2
        + 2 * (s2 - 2 * s3 / s1 + s2**2 / s1**2) * tau2**2
    )
    return float(var_q / (s1 - s2 / s1) ** 2)


def empirical_bayes(s, n, sigma2, level: float = LEVEL, interval: str = "posterior"):
    """Empirical Bayes (Herlihy et al., Appendix B, eqs. 9, 13, 14)::

        tau^2 = ((sum_a n_a (s_a - mu0)^2 - (|A| - 1) sigma^2) / (n - sum_a n_a^2 / n))_+,
        mu = sum_a s_a / (tau^2 + sigma_a^2) / sum_a 1 / (tau^2 + sigma_a^2),
        mu_a = mu + (1 - sigma_a^2 / (tau^2 + sigma_a^2)) (s_a - mu).

    ``interval="posterior"`` (the paper's) is mu_a +- z sqrt(g1), g1 = tau^2 sigma_a^2 /
    (tau^2 + sigma_a^2): it plugs in the estimates of mu and tau^2 as if they were known,
    so it leaves out their uncertainty, and where tau^2 is estimated as 0 every group's
    interval has zero width.  ``interval="prasad_rao"`` is mu_a +- z sqrt(g1 + g2 + 2 g3),
    Prasad and Rao's (1990) mean squared error of this estimator, as in small-area
    estimation: g2 = B_a^2 / sum_b 1 / (tau^2 + sigma_b^2) for the estimate of mu and
    g3 = sigma_a^4 / (tau^2 + sigma_a^2)^3 Var(tau^2) for the estimate of tau^2, with
    :func:`dersimonian_laird_variance`.

    Parameters
    ----------
    s : array_like
        Standard estimates per group (NaN where undefined).
    n : array_like
        Group sizes (the metric's denominators).
    sigma2 : float
        Pooled variance parameter: sigma_a^2 = sigma2 / n_a (eq. 6,
        :func:`pooled_sigma2`).
    level : float, default 0.9
    interval : {"posterior", "prasad_rao"}
        See above.  (:func:`~bayesfair.disaggregated.disaggregated_evaluation`
        uses ``"prasad_rao"`` by default.)

    Returns
    -------
    estimate, lower, upper : numpy.ndarray
    tau2 : float
        The estimated spread of the true values.

    Examples
    --------
    >>> import numpy as np
    >>> s, n = np.array([0.1, 0.12, 0.11, 0.1]), np.array([50, 80, 20, 40])
    >>> est, lo, hi, tau2 = empirical_bayes(s, n, 0.09)
    >>> tau2, bool(np.all(hi == lo))   # no spread beyond noise: zero-width posterior intervals
    (0.0, True)
    >>> _, lo, hi, _ = empirical_bayes(s, n, 0.09, interval="prasad_rao")
    >>> bool(np.all(hi > lo))
    True
    """
    if interval not in EB_INTERVALS:
        raise ValueError(f"`interval` must be one of {EB_INTERVALS}, got {interval!r}")
    s = np.asarray(s, float)
    n = np.asarray(n, float)
    ok = _defined(s, n)
    N = n[ok].sum()
    mu0 = np.sum(n[ok] * s[ok]) / N
    k = ok.sum()
    tau2 = (np.sum(n[ok] * (s[ok] - mu0) ** 2) - (k - 1) * sigma2) / (N - np.sum(n[ok] ** 2) / N)
    tau2 = max(float(tau2), 0.0)
    sig_a = sigma2 / np.maximum(n, 1)
    wts = 1.0 / (tau2 + sig_a[ok])
    mu = np.sum(wts * s[ok]) / np.sum(wts)
    b = sig_a / (tau2 + sig_a)
    est = np.where(ok, mu + (1 - b) * (s - mu), np.nan)
    mse = tau2 * sig_a / (tau2 + sig_a)
    if interval == "prasad_rao":
        var_tau2 = dersimonian_laird_variance(tau2, 1.0 / sig_a[ok])
        mse = mse + b**2 / np.sum(wts) + 2 * sig_a**2 / (tau2 + sig_a) ** 3 * var_tau2
    sd = np.sqrt(mse)
    z = stats.norm.ppf(0.5 + level / 2)
    return est, est - z * sd, est + z * sd, tau2
