"""Permutation tests of any per-group metric between two groups: means of per-row values
(mean error, calibration gap) studentized in closed form (Welch), and user callables
studentized by a bootstrap inside every permuted sample (DiCiccio et al., Algorithm 1)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from .._parallel import chunked_resamples, shuffled_statistic
from .._validation import (
    SeedLike,
    check_count,
    check_flag,
    check_no_missing_groups,
    check_resamples,
    check_same_index,
    check_seed,
)
from .._vocabulary import N_RESAMPLES, N_VARIANCE_RESAMPLES, renamed_arguments
from ..data import AuditData
from ._pvalues import ALTERNATIVES, clopper_pearson, monte_carlo_pvalue
from .permutation import PermutationTestResult, two_groups

__all__ = ["metric_permutation_test"]


def _welch(v: np.ndarray, mask: np.ndarray, studentize: bool) -> np.ndarray:
    """Mean difference (or Welch t) of v between mask and ~mask; mask has shape (..., n)."""
    na = mask.sum(axis=-1)
    nb = mask.shape[-1] - na
    sa = (v * mask).sum(axis=-1)
    sb = v.sum() - sa
    ma, mb = sa / na, sb / nb
    d = ma - mb
    if not studentize:
        return d
    qa = (v * v * mask).sum(axis=-1)
    qb = (v * v).sum() - qa
    va = (qa - na * ma**2) / (na - 1)
    vb = (qb - nb * mb**2) / (nb - 1)
    se = np.sqrt(va / na + vb / nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(se > 0, d / se, np.where(d == 0, 0.0, np.sign(d) * np.inf))


@renamed_arguments(n_bootstrap="n_variance_resamples")
def metric_permutation_test(
    values,
    group,
    metric: str | Callable = "mean",
    *,
    groups: tuple | None = None,
    n_resamples: int = N_RESAMPLES,
    studentize: bool = True,
    n_variance_resamples: int = N_VARIANCE_RESAMPLES,
    alternative: str = "two-sided",
    random_state: SeedLike = None,
    n_jobs: int | None = 1,
    batch: int = 64,
) -> PermutationTestResult:
    """Permutation test that a metric is equal in two groups.

    Parameters
    ----------
    values : array or DataFrame
        ``metric="mean"``: one value per row (an error, a loss, ``score - outcome`` for
        a calibration gap); the test compares group means, studentized by Welch's
        standard error (closed form).  A callable ``metric(rows) -> float`` gets the
        rows of ``values`` (array or DataFrame) of one group; it is studentized by the
        bootstrap standard error of the difference, recomputed inside every permuted
        sample (``n_variance_resamples`` resamples per group).
    group : array
        Two labels, one per row.
    metric : "mean" or callable, default "mean"
        See ``values``.
    groups : pair, optional
        The two groups to compare, A then B, among the values of ``group`` (their rows
        alone are tested, as in the other permutation tests); default the only two, in
        sorted order.
    n_resamples : int, default 999
    studentize : bool
        False gives the plain difference (clearly labelled: valid only for the
        hypothesis that the groups' distributions are identical).
    n_variance_resamples : int, default 200
        Bootstrap resamples per group for the standard error of a callable metric.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: metric(A) > metric(B).
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional
    n_jobs : int, optional
        Workers for joblib; results do not depend on it.
    batch : int, default 64
        Permutations evaluated together (vectorised) for ``metric="mean"``.

    Returns
    -------
    PermutationTestResult

    Notes
    -----
    Eleven parameters: the values, groups and metric; the groups compared; the
    resampling (``n_resamples``, studentization with its ``n_variance_resamples``,
    ``alternative``, ``random_state``, ``n_jobs``) named as in ``scipy.stats.permutation_test``,
    whose ``batch`` it also takes.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> g = np.repeat(["a", "b"], [200, 800])
    >>> err = rng.normal(np.where(g == "a", 0.3, 0.0), np.where(g == "a", 2.0, 1.0))
    >>> metric_permutation_test(err, g, random_state=0).pvalue < 0.1
    True
    """
    if isinstance(values, AuditData):  # the rate tests take data first; this one rows
        raise TypeError(
            "`values` is an AuditData: metric_permutation_test takes per-row values and "
            "their `group` (arrays, as scipy.stats.permutation_test); for a rate of an "
            "AuditData use permutation_test(data, 'fpr', by=...), for its AUC "
            "auc_permutation_test(data, by=...)"
        )
    check_same_index(values=values, group=group)
    g = np.asarray(group)
    check_no_missing_groups(pd.Series(g), "`group`")
    if groups is None:
        labels = sorted(pd.unique(g), key=str)
        if len(labels) != 2:
            raise ValueError(
                f"`group` must have exactly two values (or give `groups`), got {labels}"
            )
    else:  # the two named groups' rows, as in the other permutation tests
        labels = list(two_groups([str(v) for v in pd.unique(g)], groups))
        g = g.astype(str)
        keep = np.isin(g, labels)
        values, g = np.asarray(values)[keep], g[keep]
    check_flag(studentize, "studentize")
    check_count(batch, "batch")  # 0 failed in range()
    if alternative not in ALTERNATIVES:
        raise ValueError(f"`alternative` must be one of {ALTERNATIVES}, got {alternative!r}")
    is_a = g == labels[0]
    if is_a.sum() < 2 or (~is_a).sum() < 2:
        raise ValueError("each group needs at least two rows")
    if metric == "mean":
        diff, z, draw, est = _mean_difference(values, g, is_a, studentize, batch)
        name = "mean"
    elif callable(metric):
        check_resamples(n_variance_resamples, "n_variance_resamples", minimum=2)
        if len(values) != len(g):
            raise ValueError("`values` must have one row per entry of `group`")
        random_state = check_seed(random_state)
        diff, z, draw, est = _metric_difference(
            metric, values, is_a, studentize, n_variance_resamples, random_state
        )
        name = getattr(metric, "__name__", "metric")
    else:
        raise ValueError(f"`metric` must be 'mean' or a callable, got {metric!r}")
    null = chunked_resamples(draw, n_resamples, random_state, n_jobs)
    p, k = monte_carlo_pvalue(null, z if studentize else diff, alternative)
    n_a, n_b = int(is_a.sum()), int((~is_a).sum())
    return PermutationTestResult(
        metric=name,
        groups=(str(labels[0]), str(labels[1])),
        difference=diff,
        studentized_statistic=z,
        pvalue=p,
        pvalue_ci=clopper_pearson(k, len(null)),
        null_distribution=null,
        estimates=pd.DataFrame(
            {
                "group": [str(x) for x in labels],
                "value": est,
                "denominator": [n_a, n_b],
                "n": [n_a, n_b],
            }
        ),
        studentize=studentize,
        permute="free",
        alternative=alternative,
        n_resamples=n_resamples,
    )


def _mean_difference(values, g, is_a, studentize: bool, batch: int) -> tuple:
    """Difference of means (Welch-studentized or not), its permutation draws and the two
    groups' means."""
    v = np.asarray(values, float)
    if v.shape != g.shape:
        raise ValueError("`values` must have one value per row")
    if not np.isfinite(v).all():
        raise ValueError("`values` has missing or infinite values")
    diff = float(_welch(v, is_a, False))
    z = float(_welch(v, is_a, True))
    draw = shuffled_statistic(is_a, lambda m: _welch(v, m, studentize), batch)
    return diff, z, draw, [float(v[is_a].mean()), float(v[~is_a].mean())]


def _metric_difference(metric, values, is_a, studentize: bool, n_variance: int, seq) -> tuple:
    """Difference of a callable metric between the groups, studentized by the spread of
    ``n_variance`` bootstrap differences, its permutation draws and the two groups' values
    (``seq``: the test's SeedSequence, whose first child seeds the observed statistic)."""
    take = (
        (lambda idx: values.iloc[idx])
        if isinstance(values, pd.DataFrame)
        else (lambda idx: np.asarray(values)[idx])
    )

    def stat(mask: np.ndarray, rng, stud: bool) -> float:
        ia, ib = np.flatnonzero(mask), np.flatnonzero(~mask)
        d = float(metric(take(ia))) - float(metric(take(ib)))
        if not stud:
            return d
        boots = [
            float(metric(take(rng.choice(ia, len(ia)))))
            - float(metric(take(rng.choice(ib, len(ib)))))
            for _ in range(n_variance)
        ]
        se = np.nanstd(boots, ddof=1)
        return d / se if se > 0 else (0.0 if d == 0 else np.sign(d) * np.inf)

    obs_rng = np.random.default_rng(seq.spawn(1)[0])
    diff = stat(is_a, obs_rng, False)
    z = stat(is_a, obs_rng, True)

    def draw(size: int, rng) -> np.ndarray:
        return np.array([stat(rng.permutation(is_a), rng, studentize) for _ in range(size)])

    est = [float(metric(take(np.flatnonzero(is_a)))), float(metric(take(np.flatnonzero(~is_a))))]
    return diff, z, draw, est
