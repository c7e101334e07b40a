"""Standard, James-Stein (Bock) and empirical-Bayes estimates of per-group metrics.

All take the standard estimates ``s`` (NaN where undefined), the group sizes
``n`` and the pooled variance parameter ``sigma2`` (sigma_a^2 = sigma2 / n_a,
Herlihy et al. eq. 6); undefined groups stay NaN.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["empirical_bayes", "james_stein", "standard_intervals"]


def standard_intervals(s, n, sigma2, level: float = 0.95):
    """Eq. 7: s_a +- z sigma / sqrt(n_a)."""
    z = stats.norm.ppf(0.5 + level / 2)
    se = np.sqrt(sigma2 / np.maximum(n, 1))
    return s - z * se, s + z * se


def _defined(s, n):
    ok = np.isfinite(s) & (n > 0)
    if ok.sum() < 2:
        raise ValueError("shrinkage needs at least two groups with a defined estimate")
    return ok


def james_stein(s, n, sigma2):
    """Bock's James-Stein estimator with |A| - 3 in the numerator (Herlihy et al., Section 5):

    mu_a = mu0 + (1 - (|A| - 3) / sum_a (s_a - mu0)^2 / sigma_a^2)_+ (s_a - mu0),
    mu0 = sum_a n_a s_a / n, over the groups with a defined estimate.

    The factor is also capped at 1: with three or fewer defined groups |A| - 3 <= 0
    and the formula would push estimates away from mu0 (James-Stein with an
    estimated centre needs at least four means to shrink), so they stay standard.
    """
    s = np.asarray(s, float)
    n = np.asarray(n, float)
    ok = _defined(s, n)
    mu0 = np.sum(n[ok] * s[ok]) / np.sum(n[ok])
    dist = np.sum((s[ok] - mu0) ** 2 * n[ok] / sigma2)
    k = ok.sum()
    shrink = min(1.0, max(0.0, 1.0 - (k - 3) / dist)) if dist > 0 else 0.0
    return np.where(ok, mu0 + shrink * (s - mu0), np.nan)


def empirical_bayes(s, n, sigma2, level: float = 0.95):
    """Empirical Bayes (Herlihy et al., Appendix B, eqs. 9, 13, 14).

    tau^2 = ((sum_a n_a (s_a - mu0)^2 - (|A| - 1) sigma^2) / (n - sum_a n_a^2 / n))_+,
    mu = sum_a s_a / (tau^2 + sigma_a^2) / sum_a 1 / (tau^2 + sigma_a^2),
    mu_a = mu + (1 - sigma_a^2 / (tau^2 + sigma_a^2)) (s_a - mu),
    with the posterior interval mu_a +- z sqrt(tau^2 sigma_a^2 / (tau^2 + sigma_a^2)).

    The interval plugs in the estimates of mu and tau^2 as if they were known, so it
    leaves out their uncertainty: where tau^2 is estimated as 0 every group's interval
    has zero width.  The hierarchical model integrates over both.

    Returns (estimate, lower, upper, tau2).
    """
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
    sd = np.sqrt(tau2 * sig_a / (tau2 + sig_a))
    z = stats.norm.ppf(0.5 + level / 2)
    return est, est - z * sd, est + z * sd, tau2
