"""Permutation test of zero correlation between a (continuous) protected attribute and a
model's error, studentized as in DiCiccio et al. (Algorithm 1) or not (FairTest's test)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._parallel import chunked_resamples, shuffled_statistic
from .._validation import SeedLike, check_flag, check_same_index, check_seed
from .._vocabulary import N_RESAMPLES
from ._pvalues import ALTERNATIVES, clopper_pearson, monte_carlo_pvalue
from .permutation import PermutationTestResult

__all__ = ["correlation_permutation_test"]


def _stat(x: np.ndarray, e: np.ndarray, studentize: bool) -> np.ndarray:
    """sqrt(n) r, or sqrt(n) r / tau with tau^2 = mu22 / (mu20 mu02) (DiCiccio and Romano),
    for e of shape (..., n) against a fixed x."""
    n = x.shape[-1]
    xc = x - x.mean()
    ec = e - e.mean(axis=-1, keepdims=True)
    sxx = np.mean(xc * xc)
    see = np.mean(ec * ec, axis=-1)
    r = np.mean(xc * ec, axis=-1) / np.sqrt(sxx * see)
    if not studentize:
        return np.sqrt(n) * r
    tau2 = np.mean((xc * xc) * (ec * ec), axis=-1) / (sxx * see)
    return np.sqrt(n) * r / np.sqrt(tau2)


def correlation_permutation_test(
    x,
    error,
    *,
    n_resamples: int = N_RESAMPLES,
    studentize: bool = True,
    alternative: str = "two-sided",
    random_state: SeedLike = None,
    n_jobs: int | None = 1,
    batch: int = 64,
) -> PermutationTestResult:
    """Test H0: corr(x, error) = 0 by permuting the errors against the attribute.

    The unstudentized statistic sqrt(n) r (FairTest) is exact only for independence;
    when the error's spread depends on x its permutation distribution has the wrong
    variance and the test over-rejects uncorrelated data.  Studentizing by
    tau^2 = mu22 / (mu20 mu02) makes the permutation test asymptotically valid for zero
    correlation (DiCiccio et al., Section 4.1).

    Parameters
    ----------
    x : array_like
        A numeric attribute, one value per row.
    error : array_like
        The model's error (or any variable), one value per row.
    n_resamples : int, default 999
    studentize : bool, default True
    alternative : {"two-sided", "greater", "less"}
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional
    n_jobs : int, optional
        Workers for joblib; results do not depend on it.
    batch : int, default 64
        Permutations evaluated together (vectorised).

    Returns
    -------
    PermutationTestResult
        ``statistic`` is the correlation.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0.1, 1, 500)
    >>> res = correlation_permutation_test(x, rng.normal(size=500) / x, random_state=0)
    >>> round(res.pvalue, 2)  # uncorrelated, though the spread depends on x
    0.98
    """
    check_same_index(x=x, error=error)
    x = np.asarray(x, float)
    e = np.asarray(error, float)
    if x.ndim != 1 or x.shape != e.shape:
        raise ValueError("`x` and `error` must be 1-d arrays of the same length")
    if not (np.isfinite(x).all() and np.isfinite(e).all()):
        raise ValueError("`x` and `error` must be finite")
    if len(x) < 3 or x.std() == 0 or e.std() == 0:
        raise ValueError("need at least 3 rows and non-constant `x` and `error`")
    check_flag(studentize, "studentize")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"`alternative` must be one of {ALTERNATIVES}, got {alternative!r}")
    obs_r = float(_stat(x, e, False)) / np.sqrt(len(x))
    obs_z = float(_stat(x, e, True))

    draw = shuffled_statistic(e, lambda perm: _stat(x, perm, studentize), batch)
    null = chunked_resamples(draw, n_resamples, check_seed(random_state), n_jobs)
    obs = obs_z if studentize else float(np.sqrt(len(x)) * obs_r)
    p, k = monte_carlo_pvalue(null, obs, alternative)
    return PermutationTestResult(
        metric="correlation",
        groups=("x", "error"),
        difference=obs_r,
        studentized_statistic=obs_z,
        pvalue=p,
        pvalue_ci=clopper_pearson(k, len(null)),
        null_distribution=null,
        estimates=pd.DataFrame(
            {
                "group": ["x", "error"],
                "value": [x.mean(), e.mean()],
                "denominator": [len(x), len(e)],
                "n": [len(x), len(e)],
            }
        ),
        studentize=studentize,
        permute="free",
        alternative=alternative,
        n_resamples=n_resamples,
    )
