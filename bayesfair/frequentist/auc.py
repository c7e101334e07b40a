"""Permutation test of an AUC difference between two groups, studentized by DeLong's variance.

The scores are sorted once; the observed AUCs and DeLong variances come from
cumulative sums over that order (ties count one half), and the permutation
distribution from a compiled single pass per permutation
(:mod:`bayesfair.frequentist._auc_kernel`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._parallel import chunked_resamples
from .._validation import SeedLike, check_flag, check_seed
from .._vocabulary import N_RESAMPLES
from ..data import AuditData, as_audit_data
from ..metrics.rates import regroup
from ._pvalues import ALTERNATIVES, clopper_pearson, inexact_note, monte_carlo_pvalue
from .permutation import PermutationTestResult, empty_groups_note, two_groups

__all__ = ["auc_permutation_test"]

#: when permuting within outcome classes is exact for the AUC
_WHEN_EXACT = " when each group's scores have one distribution per outcome"


class _Sorted:
    """Rows sorted by score, with the tie blocks every position belongs to."""

    def __init__(self, score: np.ndarray, y: np.ndarray) -> None:
        order = np.argsort(score, kind="stable")
        s = score[order]
        self.order = order
        self.y = y[order].astype(bool)
        n = len(s)
        new = np.empty(n, dtype=bool)
        new[0] = True
        new[1:] = s[1:] != s[:-1]
        starts = np.flatnonzero(new)
        ends = np.append(starts[1:], n) - 1
        block = np.cumsum(new) - 1
        self.first = starts[block]  # first position of each position's tie block
        self.last = ends[block]  # last position of each position's tie block

    def auc_var(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """AUC and DeLong variance of the rows in ``mask`` (shape (B, n), sorted order)."""
        pos = mask & self.y
        neg = mask & ~self.y
        n1 = pos.sum(axis=-1).astype(float)
        n0 = neg.sum(axis=-1).astype(float)
        cpos = np.cumsum(pos, axis=-1)
        cneg = np.cumsum(neg, axis=-1)

        def before(c: np.ndarray) -> np.ndarray:  # count strictly below the tie block
            out = np.take(c, np.maximum(self.first - 1, 0), axis=-1)
            return np.where(self.first > 0, out, 0)

        neg_below = before(cneg)
        neg_tie = np.take(cneg, self.last, axis=-1) - neg_below
        pos_below = before(cpos)
        pos_tie = np.take(cpos, self.last, axis=-1) - pos_below
        pos_above = n1[..., None] - pos_below - pos_tie
        with np.errstate(invalid="ignore", divide="ignore"):
            v10 = (neg_below + 0.5 * neg_tie) / n0[..., None]  # per positive
            v01 = (pos_above + 0.5 * pos_tie) / n1[..., None]  # per negative
            auc = np.where(pos, v10, 0.0).sum(axis=-1) / n1
            var10 = (np.where(pos, (v10 - auc[..., None]) ** 2, 0.0).sum(axis=-1)) / (n1 - 1)
            mean01 = np.where(neg, v01, 0.0).sum(axis=-1) / n0
            var01 = (np.where(neg, (v01 - mean01[..., None]) ** 2, 0.0).sum(axis=-1)) / (n0 - 1)
            var = var10 / n1 + var01 / n0
        return auc, var


def _stat(auc_a, var_a, auc_b, var_b, studentize: bool) -> np.ndarray:
    diff = auc_a - auc_b
    if not studentize:
        return diff
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(var_a + var_b)
        z = diff / se
    with np.errstate(invalid="ignore"):
        inf = np.sign(diff) * np.inf
    return np.where(se > 0, z, np.where(diff == 0, 0.0, inf))


def auc_permutation_test(
    data: AuditData,
    *,
    by: str | Sequence[str] | None = None,
    groups: tuple[str, str] | None = None,
    n_resamples: int = N_RESAMPLES,
    studentize: bool = True,
    permute: str = "auto",
    alternative: str = "two-sided",
    random_state: SeedLike = None,
    n_jobs: int | None = 1,
    **roles: Any,
) -> PermutationTestResult:
    """Test that the score's AUC is equal in two groups, studentized by DeLong's variance.

    By default group labels are permuted within the positives and within the negatives
    of the two groups (DiCiccio et al., Section 3.1): the test is exact when each
    group's scores have one distribution per outcome, whatever the groups' positive
    rates, and with DeLong studentization asymptotically valid for equal AUCs alone.
    The free permutation of all rows (the paper's Algorithm 1) is valid only
    asymptotically, with DeLong studentization; the unstudentized difference is not valid
    under it when the groups' positive rates differ.

    Parameters
    ----------
    data : AuditData
        With a score.
    by : str or list of str, optional
        Protected columns defining the groups (default: all, i.e. intersections).
    groups : pair, optional
        The two groups to compare (as in :func:`~bayesfair.frequentist.permutation_test`);
        required when ``by`` defines more than two groups.
    n_resamples : int, default 999
    studentize : bool, default True
        Divide the difference by DeLong's standard error.
    permute : {"auto", "within_outcome", "free"}, default "auto"
        ``auto`` is ``within_outcome``, as above.
    alternative : {"two-sided", "greater", "less"}
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional
    n_jobs : int, optional
        Workers for joblib; results do not depend on it.
    **roles
        With a DataFrame as ``data``: its columns' roles, as :class:`~bayesfair.AuditData`
        takes them (``protected=``, ``outcome=``, ``decision=``, ``score=``,
        ``threshold=``, ...).

    Returns
    -------
    PermutationTestResult

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.frequentist import auc_permutation_test
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> res = auc_permutation_test(data, by="sex", n_resamples=199, random_state=0)
    >>> round(res.difference, 3), round(res.pvalue, 3)  # AUC difference and its p-value
    (0.028, 0.075)
    """
    data = as_audit_data(data, roles)
    data.require_rows("an AUC test")
    if data.row_score is None:
        raise ValueError("an AUC test needs a score: give `score=` to AuditData")
    check_flag(studentize, "studentize")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"`alternative` must be one of {ALTERNATIVES}, got {alternative!r}")
    if permute not in ("auto", "within_outcome", "free"):
        raise ValueError(
            f"`permute` must be one of ('auto', 'within_outcome', 'free'), got {permute!r}"
        )
    permute = "within_outcome" if permute == "auto" else permute
    cols = data._check_by(by)
    labels = data.grouping(cols)["intersection"].tolist()
    code = regroup(data, cols)
    rows = np.bincount(code, minlength=len(labels))
    noted = empty_groups_note(labels, rows, groups)
    groups = two_groups(labels, groups, rows)
    ia, ib = labels.index(groups[0]), labels.index(groups[1])
    keep = (code == ia) | (code == ib)
    srt = _Sorted(data.row_score[keep], data.row_outcome[keep])
    is_a = (code[keep] == ia)[srt.order]
    auc_a, var_a = srt.auc_var(is_a[None, :])
    auc_b, var_b = srt.auc_var(~is_a[None, :])
    if np.isnan(auc_a[0]) or np.isnan(auc_b[0]):
        y, c = data.row_outcome[keep], code[keep]
        counts = {
            g: (int(y[c == i].sum()), int((y[c == i] == 0).sum()))
            for g, i in zip(groups, (ia, ib), strict=True)
        }
        which = [
            f"{g!r} ({pos} positives, {neg} negatives)"
            for g, (pos, neg) in counts.items()
            if not (pos and neg)
        ]
        raise ValueError(f"AUC is undefined in group {' and '.join(which)}: it needs both outcomes")
    diff = float(auc_a[0] - auc_b[0])
    z = float(_stat(auc_a, var_a, auc_b, var_b, True)[0])

    from ._auc_kernel import auc_null

    y_sorted = srt.y
    block_end = srt.last.astype(np.int64)
    n_a_rows, n_a_pos = int(is_a.sum()), int((is_a & y_sorted).sum())
    within = permute == "within_outcome"

    def draw(size: int, rng) -> np.ndarray:
        seed = int(rng.integers(2**31 - 1))
        return auc_null(y_sorted, block_end, n_a_rows, n_a_pos, within, size, studentize, seed)

    null = chunked_resamples(draw, n_resamples, check_seed(random_state), n_jobs)
    p, k = monte_carlo_pvalue(null, z if studentize else diff, alternative)
    n_a, n_b = int(is_a.sum()), int((~is_a).sum())
    estimates = pd.DataFrame(
        {
            "group": list(groups),
            "value": [float(auc_a[0]), float(auc_b[0])],
            "denominator": [n_a, n_b],
            "n": [n_a, n_b],
        }
    )
    return PermutationTestResult(
        metric="auc",
        groups=(str(groups[0]), str(groups[1])),
        difference=diff,
        studentized_statistic=z,
        pvalue=p,
        pvalue_ci=clopper_pearson(k, len(null)),
        null_distribution=null,
        estimates=estimates,
        studentize=studentize,
        permute=permute,
        alternative=alternative,
        n_resamples=n_resamples,
        notes=inexact_note("auc", permute, "within_outcome", _WHEN_EXACT) + noted,
    )
