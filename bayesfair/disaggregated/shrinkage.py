"""Standard, James-Stein (Bock) and empirical-Bayes estimates of per-group metrics.

All take the standard estimates ``s`` (NaN where undefined), the group sizes
``n`` and the pooled variance parameter ``sigma2`` (sigma_a^2 = sigma2 / n_a,
Herlihy et al. eq. 6); undefined groups stay NaN.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import ndtr

from .._vocabulary import LEVEL

__all__ = [
    "EB_INTERVALS",
    "dersimonian_laird_variance",
    "empirical_bayes",
    "james_stein",
    "robust_critical_value",
    "robust_empirical_bayes",
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


EB_INTERVALS = ("posterior", "prasad_rao", "robust")


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


def _noncoverage(t: np.ndarray, chi: np.ndarray) -> np.ndarray:
    """``r(sqrt(t), chi) = P(|Z - b| > chi)`` at ``b^2 = t``, Z standard normal."""
    b = np.sqrt(t)
    return ndtr(-chi - b) + ndtr(-chi + b)


def _bisect(f, lo: np.ndarray, hi: np.ndarray, steps: int = 60, log: bool = False) -> np.ndarray:
    """Elementwise root of an increasing ``f`` between ``lo`` (f < 0) and ``hi`` (f > 0),
    by the sign of ``f`` alone (geometric midpoints with ``log``). Not scipy's elementwise
    ``find_root``: near ``t = 0`` the tangency gap is of order ``t^2``, below rounding, and
    that solver, which stops where ``|f|`` is tiny, returned the bracket's end there (and
    NaN at other ``chi``)."""
    for _ in range(steps):
        mid = np.sqrt(lo * hi) if log else (lo + hi) / 2
        up = f(mid) > 0
        hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
    return (lo + hi) / 2


def _tangency(chi: np.ndarray) -> np.ndarray:
    """Where the tangent from ``t = 0`` touches ``t -> r(sqrt(t), chi)``, which is convex
    then concave in ``t`` (convex near 0 when ``chi > sqrt(3)``; 0 where it is not)."""
    r0 = _noncoverage(0.0, chi)

    def gap(t):  # < 0 below the tangency point, > 0 above it
        b = np.sqrt(t)
        slope = (np.exp(-((chi - b) ** 2) / 2) - np.exp(-((chi + b) ** 2) / 2)) / (
            2 * b * np.sqrt(2 * np.pi)
        )
        return _noncoverage(t, chi) - r0 - t * slope

    lo, hi = np.full_like(chi, 1e-8), (chi + 6) ** 2
    t0 = _bisect(gap, lo, hi, log=True)
    return np.where(chi > np.sqrt(3.0), t0, 0.0)


def _worst_noncoverage(m2: np.ndarray, chi: np.ndarray) -> np.ndarray:
    """The largest ``E_F P(|Z - b| > chi)`` over distributions F of the normalized bias ``b``
    with ``E_F b^2 = m2``: the concave envelope of ``t -> r(sqrt(t), chi)`` at ``m2``, the
    tangent from ``t = 0`` below the tangency point and the function above it (Armstrong,
    Kolesar and Plagborg-Moller 2022, Proposition B.1)."""
    t0 = _tangency(chi)
    r0 = _noncoverage(0.0, chi)
    with np.errstate(divide="ignore", invalid="ignore"):
        line = r0 + m2 / t0 * (_noncoverage(t0, chi) - r0)
    return np.where(m2 >= t0, _noncoverage(m2, chi), line)


def robust_critical_value(m2, level: float = LEVEL) -> np.ndarray:
    """The robust empirical Bayes critical value ``cva``: the smallest ``chi`` such that
    ``estimate +- chi * w * sigma`` misses with probability at most ``1 - level`` on average
    over any distribution of the groups' true values whose normalized bias ``b`` has second
    moment ``m2`` (Armstrong, Kolesar and Plagborg-Moller 2022, "Robust empirical Bayes
    confidence intervals", Econometrica 90(6); no constraint on the kurtosis).

    ``m2 = 0`` (no bias) gives the normal quantile; the value grows with ``m2``, beyond the
    normal model's ``z sqrt(1 + m2)``, because the bias need not be normal.

    Parameters
    ----------
    m2 : float or array_like
        Second moment of the normalized bias ``(estimate's mean - truth) / (w sigma)``.
    level : float, default 0.9

    Returns
    -------
    numpy.ndarray
        One critical value per ``m2``.

    Examples
    --------
    >>> from bayesfair.disaggregated import robust_critical_value
    >>> robust_critical_value([0.0, 1.0], 0.95).round(3)  # the normal model's: 1.96, 2.772
    array([1.96 , 3.259])
    """
    m2 = np.atleast_1d(np.asarray(m2, float))
    alpha = 1 - level
    z = stats.norm.ppf(1 - alpha / 2)
    lo = np.full_like(m2, z)
    hi = np.sqrt(m2 / alpha) + 2 * z + 1
    while np.any(short := _worst_noncoverage(m2, hi) > alpha):
        hi = np.where(short, 2 * hi, hi)
    chi = _bisect(lambda c: alpha - _worst_noncoverage(m2, c), lo, hi)
    return np.where(m2 > 0, chi, z)


def robust_empirical_bayes(s, n, sigma2, level: float = LEVEL):
    """Robust empirical Bayes estimates and intervals (Armstrong, Kolesar and
    Plagborg-Moller 2022)::

        mu2 = max(mean_a((s_a - m)^2 - sigma_a^2), 2 mean_a(sigma_a^4) / (K mean_a(sigma_a^2))),
        w_a = mu2 / (mu2 + sigma_a^2),   estimate_a = m + w_a (s_a - m),
        interval_a = estimate_a +- cva(sigma_a^2 / mu2) w_a sigma_a,

    with ``m`` the mean of the K defined groups' estimates and :func:`robust_critical_value`
    ``cva``. Every group counts alike in ``m`` and ``mu2``, so the spread the small groups
    show is not swamped by the large groups' (the size-weighted moment estimate of
    :func:`empirical_bayes` is, and its shrinkage then pulls small groups too far for its
    intervals); the lower bound on ``mu2`` (their "posterior mean truncation") keeps the
    estimates from being shrunk all the way to ``m``. The intervals hold their level on
    average over the groups whatever the distribution of the true values around ``m``,
    not only a normal one, which is why they are wider than a normal model's.

    Parameters
    ----------
    s, n : array_like
        As :func:`empirical_bayes`: the standard estimates (NaN where undefined) and the
        metric's denominators, per group.
    sigma2 : float
        As :func:`empirical_bayes`.
    level : float, default 0.9

    Returns
    -------
    estimate, lower, upper : numpy.ndarray
        NaN where the standard estimate is.
    mu2 : float
        The estimated second moment of the true values around ``m``.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.disaggregated import robust_empirical_bayes
    >>> s, n = np.array([0.1, 0.3, 0.2, 0.25]), np.array([500, 10, 80, 40])
    >>> est, lo, hi, mu2 = robust_empirical_bayes(s, n, 0.2)
    >>> bool(abs(est[0] - 0.1) < abs(est[1] - 0.3))  # the large group is shrunk least
    True
    """
    s = np.asarray(s, float)
    n = np.asarray(n, float)
    ok = _defined(s, n)
    sig = sigma2 / np.maximum(n, 1)
    centre = float(np.mean(s[ok]))
    mu2 = max(
        float(np.mean((s[ok] - centre) ** 2 - sig[ok])),
        2 * float(np.mean(sig[ok] ** 2)) / (ok.sum() * float(np.mean(sig[ok]))),
    )
    w = mu2 / (mu2 + sig)
    est = np.where(ok, centre + w * (s - centre), np.nan)
    half = robust_critical_value(np.where(ok, sig / mu2, 0.0), level) * w * np.sqrt(sig)
    half = np.where(ok, half, np.nan)
    return est, est - half, est + half, mu2


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
    :func:`dersimonian_laird_variance`.  ``interval="robust"`` is another estimator with
    its intervals, :func:`robust_empirical_bayes` (its shrinkage counts every group alike;
    its intervals hold their level on average over the groups whatever the distribution of
    their true values).

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
    interval : {"posterior", "prasad_rao", "robust"}
        See above.  (:func:`~bayesfair.disaggregated.disaggregated_evaluation`
        uses ``"prasad_rao"`` by default.)

    Returns
    -------
    estimate, lower, upper : numpy.ndarray
    tau2 : float
        The estimated spread of the true values (``mu2`` of
        :func:`robust_empirical_bayes` with ``interval="robust"``).

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
    if interval == "robust":
        return robust_empirical_bayes(s, n, sigma2, level)
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
