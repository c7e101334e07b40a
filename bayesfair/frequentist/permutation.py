"""Studentized permutation tests of a metric difference between groups (DiCiccio et al.).

For confusion-matrix rates the permutation distribution depends only on the
cell counts, so permuted tables are drawn from the (multivariate)
hypergeometric distribution: the cost does not grow with the number of rows.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from .._parallel import N_CHUNKS, chunked_resamples
from .._plotting import dot_plot, literal, new_axes
from .._repr import compact_repr, listed
from .._result import ResultMixin
from .._validation import (
    MAX_COUNT,
    SeedLike,
    check_flag,
    check_resamples,
    check_seed,
    is_whole_count,
)
from .._vocabulary import N_RESAMPLES
from .._warning_location import user_stacklevel
from ..data import AuditData, as_audit_data
from ..metrics.rates import RATE_DEFINITIONS, rate_name, unknown_rate
from ._pvalues import (
    ALTERNATIVES,
    CELLS,
    CLASS_CELLS,
    clopper_pearson,
    exact_permutation,
    holm,
    holm_floor,
    inexact_note,
    monte_carlo_pvalue,
    monte_carlo_pvalues,
)

__all__ = [
    "IntersectionalPermutationResult",
    "PermutationTestResult",
    "intersectional_permutation_test",
    "permutation_test",
    "permutation_test_counts",
]

PERMUTATIONS = ("auto", "free", "within_outcome", "within_decision")
#: The cells (indices into CELLS) of the two classes a within-class permutation keeps:
#: y = 1 (tp, fn) and y = 0 (fp, tn), or decision = 1 (tp, fp) and decision = 0 (fn, tn).
#: ``pairwise="auto"`` runs the pairwise tests up to this many pairs (46 groups).
MAX_AUTO_PAIRS = 1035
#: Pairs x resamples drawn at once by the pairwise tests (bounds their memory).
PAIR_BLOCK = 2_000_000


#: Per rate, the indices into CELLS of its numerator's and its denominator's cells.
_RATE_CELLS = {
    m: tuple([CELLS.index(c) for c in part] for part in parts)
    for m, parts in RATE_DEFINITIONS.items()
}


def _rate(cells: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Rate and denominator from cells (..., 4) ordered as CELLS."""
    num_i, den_i = _RATE_CELLS[metric]
    num, den = cells[..., num_i].sum(axis=-1), cells[..., den_i].sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, num / np.maximum(den, 1), np.nan)
    return r, den


def _stat(a: np.ndarray, b: np.ndarray, metric: str, studentize: bool) -> np.ndarray:
    """Difference of rates (a - b), studentized by the unpooled binomial standard error.

    The standard error uses one pseudo-success and one pseudo-failure per group
    (Agresti-Caffo), so it is positive even when a small group's rate is 0 or 1;
    the statistic stays finite and asymptotically equals the plain z.  (Any
    statistic gives a valid permutation test; without the pseudo-counts, small
    groups with zero variance produce infinite statistics that swamp a max-T test.)
    """
    ra, da = _rate(a, metric)
    rb, db = _rate(b, metric)
    diff = ra - rb
    if not studentize:
        return diff
    ta = (np.where(da > 0, ra * da, 0.0) + 1) / (da + 2)  # no rate (da = 0): 0 successes
    tb = (np.where(db > 0, rb * db, 0.0) + 1) / (db + 2)
    se = np.sqrt(ta * (1 - ta) / (da + 2) + tb * (1 - tb) / (db + 2))
    return diff / se


@dataclass
class PermutationTestResult(ResultMixin):  # numpydoc ignore=PR01
    """A permutation test of ``metric(A) == metric(B)``.

    Attributes
    ----------
    statistic : float
        The test statistic, on the scale of ``null_distribution`` (as in scipy): the
        studentized difference when ``studentize=True``, else the difference.
    difference : float
        Observed difference ``metric(A) - metric(B)`` (before 0.1 this was ``statistic``).
    studentized_statistic : float
        The difference divided by its standard error.
    pvalue : float
        ``(1 + #{permuted statistics at least as extreme}) / (1 + n_resamples)``.
    pvalue_ci : tuple of float
        99% Clopper-Pearson interval of the exact permutation p-value, from
        the Monte Carlo sample.
    null_distribution : numpy.ndarray
        The permuted test statistics.
    metric : str
    groups : tuple of str
        The two groups, A and B.
    estimates : pandas.DataFrame
        Per group: the metric's value, its denominator and the rows.
    studentize : bool
    permute : str
        The permutation that ran (``"auto"`` resolved).
    alternative : str
    n_resamples : int
    notes : list of str
        Caveats (for example a permutation that is not exact for the metric).
    """

    __repr__ = compact_repr

    metric: str
    groups: tuple[str, str]
    difference: float
    studentized_statistic: float
    pvalue: float
    pvalue_ci: tuple[float, float]
    null_distribution: np.ndarray
    estimates: pd.DataFrame
    studentize: bool
    permute: str
    alternative: str
    n_resamples: int
    notes: list[str] = field(default_factory=list)

    @property
    def statistic(self) -> float:
        """The test statistic, compared against ``null_distribution``."""
        return self.studentized_statistic if self.studentize else self.difference

    def summary(self) -> pd.DataFrame:
        """A one-row table: groups, rates, difference, statistic, p-value and its interval.

        Returns
        -------
        pandas.DataFrame
        """
        a, b = self.groups
        ra, rb = self.estimates["value"].tolist()
        exact = self.metric in RATE_DEFINITIONS and self.permute == exact_permutation(self.metric)
        if self.studentize:
            kind = "studentized"
        else:
            kind = "unstudentized" if exact else "UNSTUDENTIZED (not valid in general)"
        return pd.DataFrame(
            [
                {
                    "metric": self.metric,
                    "group_a": a,
                    "group_b": b,
                    "value_a": ra,
                    "value_b": rb,
                    "difference": self.difference,
                    "z": self.studentized_statistic,
                    "statistic": self.statistic,
                    "test": f"{kind}, {self.permute} permutation" + " (exact)" * exact,
                    "alternative": self.alternative,
                    "pvalue": self.pvalue,
                    "pvalue_lower": self.pvalue_ci[0],
                    "pvalue_upper": self.pvalue_ci[1],
                    "n_resamples": self.n_resamples,
                }
            ]
        )

    def plot(self, ax: Axes | None = None) -> Axes:
        """The permutation distribution with the observed statistic.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: a new figure's axes).

        Returns
        -------
        matplotlib.axes.Axes
        """
        ax = new_axes(ax, figsize=(6, 3.2))
        null = self.null_distribution[np.isfinite(self.null_distribution)]
        ax.hist(null, bins=60, color="#9ab", density=True)
        obs = self.statistic
        ax.axvline(obs, color="C3", label=f"observed ({obs:.3g}), p = {self.pvalue:.3g}")
        ax.set_xlabel(
            ("studentized " if self.studentize else "") + literal(f"difference of {self.metric}")
        )
        ax.legend(fontsize=8)
        return ax


def _group_cells(data: AuditData, by: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
    table = data.table_for(by)
    if "tp" not in table:
        raise ValueError(
            "permutation tests of rates need a decision: give `decision=` or "
            "`score=` with `threshold=` to AuditData"
        )
    return table[list(CELLS)].to_numpy(dtype=np.int64), table["intersection"].tolist()


def _as_label(group, labels: list[str]):
    """A group as its intersection label: the label itself, a value of the column
    (``1`` for ``"1"``), or a tuple of values, one per attribute (``(False, 1)`` for
    ``"False, 1"``)."""
    if isinstance(group, str) or group in labels:
        return group
    if isinstance(group, tuple):
        return ", ".join(str(v) for v in group)
    return str(group)


def _without_rows(labels: list[str], rows: Sequence[int] | None) -> list[str]:
    """The labels whose ``rows`` are 0 (none when ``rows`` is not given)."""
    return [] if rows is None else [g for g, n in zip(labels, rows, strict=True) if n == 0]


def two_groups(
    labels: list[str], groups: tuple | None, rows: Sequence[int] | None = None
) -> tuple[str, str]:
    """The two group labels to compare: ``groups`` (labels, values, or tuples of values
    of several attributes), or the only two with rows.

    ``rows`` (rows per label, optional) keeps a level without rows, such as an unused
    category of a pandas Categorical (which stays after a filter), out of the choice: a
    column filtered to two values is the two-group case, and a group named without rows is
    refused by name."""
    empty = _without_rows(labels, rows)
    seen = [g for g in labels if g not in empty]
    if groups is None:
        if len(seen) != 2:
            shown = listed([repr(x) for x in seen], 4, ", ")
            also = f" (and {len(empty)} without rows: {empty[:4]})" if empty else ""
            raise ValueError(
                f"`by` (default: every protected attribute) defines {len(seen)} groups with "
                f"rows ({shown}){also}; name the two to compare with groups=(a, b), or test "
                "them all at once with intersectional_permutation_test"
            )
        return (seen[0], seen[1])
    if not isinstance(groups, (tuple, list)):
        raise TypeError(f"`groups` must be a pair (a, b) of groups among {labels}, got {groups!r}")
    named = [_as_label(g, labels) for g in groups] if len(groups) == 2 else []
    if len(named) != 2 or named[0] == named[1] or any(g not in labels for g in named):
        raise ValueError(f"`groups` must be two distinct labels among {labels}, got {groups!r}")
    if any(g in empty for g in named):
        raise ValueError(
            f"`groups`: {[g for g in named if g in empty]} has no rows (groups with rows: "
            f"{seen}); a test compares groups that have data"
        )
    return (named[0], named[1])


def empty_groups_note(labels: list[str], rows: Sequence[int], groups: tuple | None) -> list[str]:
    """The note a two-group test carries when it chose its two groups (``groups`` None)
    and ``by`` has levels without rows: said, not dropped silently. With ``groups=``
    named, the other groups are left out by the caller's choice: no note."""
    empty = _without_rows(labels, rows) if groups is None else []
    if not empty:
        return []
    shown = listed([repr(g) for g in empty], 4, ", ")
    return [f"{len(empty)} group(s) of `by` without rows, not compared: {shown}"]


def _check_common(metric, alternative, permute) -> tuple[str, str]:
    """Validate the arguments; return the metric's name (:func:`rate_name`) and the
    permutation to run (``auto`` resolved)."""
    if not isinstance(metric, str):
        raise TypeError(
            f"`metric` must be one metric name (a str), got {metric!r}; test several metrics "
            "one call each (a loop), or all groups at once with intersectional_permutation_test"
        )
    metric = rate_name(metric)
    if metric not in RATE_DEFINITIONS:
        raise ValueError(unknown_rate(metric))
    if alternative not in ALTERNATIVES:
        raise ValueError(f"`alternative` must be one of {ALTERNATIVES}, got {alternative!r}")
    if permute not in PERMUTATIONS:
        raise ValueError(f"`permute` must be one of {PERMUTATIONS}, got {permute!r}")
    return metric, exact_permutation(metric) if permute == "auto" else permute


def _draw_split(pooled: np.ndarray, sizes: np.ndarray, permute: str, size: int, rng) -> np.ndarray:
    """Permuted cells of every group: shape (size, n_groups, 4).

    ``free``: group labels are shuffled over all rows, so group g receives
    ``sizes[g]`` rows drawn without replacement from the pooled cells.
    ``within_outcome`` / ``within_decision``: labels are shuffled within each class
    of :data:`CLASS_CELLS` (y = 1 and y = 0, or decision = 1 and 0), keeping group g's
    ``sizes[g, k]`` rows of class k.
    """
    n_groups = sizes.shape[0]
    out = np.zeros((size, n_groups, 4), dtype=np.int64)
    if permute == "free":
        remaining = np.broadcast_to(pooled, (size, 4)).copy()
        for g in range(n_groups - 1):
            draw = _mv_hypergeometric(rng, remaining, int(sizes[g]))
            out[:, g] = draw
            remaining -= draw
        out[:, -1] = remaining
        return out
    for part, cols in enumerate(CLASS_CELLS[permute]):
        remaining = np.broadcast_to(pooled[list(cols)], (size, 2)).copy()
        for g in range(n_groups - 1):
            draw = _mv_hypergeometric(rng, remaining, int(sizes[g, part]))
            out[:, g, cols[0]], out[:, g, cols[1]] = draw[:, 0], draw[:, 1]
            remaining -= draw
        out[:, -1, cols[0]], out[:, -1, cols[1]] = remaining[:, 0], remaining[:, 1]
    return out


def _two_group_null(
    a: np.ndarray, b: np.ndarray, metric: str, studentize: bool, permute: str, size: int, rng
) -> np.ndarray:
    """Permuted statistics of ``P`` independent two-group tests at once: ``a`` and ``b``
    hold the groups' cells, shape (P, 4); returns shape (size, P).

    Each test permutes the group labels of its own two groups' rows only (``free``), or
    within each class of :data:`CLASS_CELLS`; group A's permuted cells are a
    multivariate hypergeometric draw from the pair's pooled cells, group B gets the rest.
    """
    n_pairs = a.shape[0]
    pooled = np.broadcast_to(a + b, (size, n_pairs, 4)).reshape(-1, 4)
    if permute == "free":
        n_a = np.broadcast_to(a.sum(axis=1), (size, n_pairs)).reshape(-1)
        split = _mv_hypergeometric(rng, pooled, n_a)
    else:
        split = np.empty_like(pooled)
        for cols in map(list, CLASS_CELLS[permute]):
            n_a = np.broadcast_to(a[:, cols].sum(axis=1), (size, n_pairs)).reshape(-1)
            split[:, cols] = _mv_hypergeometric(rng, pooled[:, cols], n_a)
    return _stat(split, pooled - split, metric, studentize).reshape(size, n_pairs)


def _one_pair_split(a: np.ndarray, b: np.ndarray, permute: str, size: int, rng) -> np.ndarray:
    """Group A's permuted cells (size, 4) of one two-group test (``a`` and ``b``: the
    groups' cells, (4,)), as :func:`_two_group_null` draws them for one pair, in the same
    random stream (its draws, not their statistics: a caller computes the statistic once
    over all chunks' draws)."""
    pooled = a + b
    if permute == "free":
        return _mv_hypergeometric_row(rng, pooled, int(a.sum()), size)
    split = np.empty((size, 4), dtype=np.int64)
    for cols in map(list, CLASS_CELLS[permute]):
        split[:, cols] = _mv_hypergeometric_row(rng, pooled[cols], int(a[cols].sum()), size)
    return split


def _mv_hypergeometric_row(rng, colors: np.ndarray, nsample: int, size: int) -> np.ndarray:
    """:func:`_mv_hypergeometric` of one row of ``colors`` (k,) repeated ``size`` times: the
    same draws from the same stream (NumPy draws a hypergeometric element by element, from
    scalar parameters or arrays alike), with the parameters every row shares passed as
    scalars, which NumPy validates once instead of per array (a permutation test of one
    pair draws a few dozen at a time, where the validation took most of the time)."""
    k = len(colors)
    out = np.empty((size, k), dtype=np.int64)
    left: int | np.ndarray = int(nsample)
    rest = int(colors.sum())
    for j in range(k - 1):
        rest -= int(colors[j])
        draw = rng.hypergeometric(int(colors[j]), rest, left, size=size)
        out[:, j] = draw
        left = left - draw
    out[:, k - 1] = left
    return out


def _mv_hypergeometric(rng, colors: np.ndarray, nsample) -> np.ndarray:
    """Rows of ``colors`` (size, k) each sampled ``nsample`` (a count, or one per row)
    times without replacement."""
    size, k = colors.shape
    out = np.zeros((size, k), dtype=np.int64)
    left = np.broadcast_to(np.asarray(nsample, dtype=np.int64), (size,)).copy()
    rest = colors.sum(axis=1)
    for j in range(k - 1):
        rest = rest - colors[:, j]
        # hypergeometric(ngood, nbad, nsample), vectorised over rows
        draw = rng.hypergeometric(colors[:, j], rest, left) if k > 1 else left
        out[:, j] = draw
        left = left - draw
    out[:, k - 1] = left
    return out


def permutation_test(
    data: AuditData,
    metric: str = "fnr",
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
    """Test that a confusion-matrix rate is equal in two groups (DiCiccio et al., Algorithm 1).

    Parameters
    ----------
    data : AuditData
        With a decision.
    metric : str
        A rate of :data:`bayesfair.metrics.RATE_DEFINITIONS` (fnr, fpr, tpr, ppv, ...).
    by : str or list of str, optional
        Protected columns defining the groups (default: all, i.e. intersections).
    groups : pair, optional
        The two groups to compare, as labels (as in
        ``data.table_for(by)["intersection"]``), as values of the attribute (``(1,
        3)``) or as tuples of values, one per attribute of ``by`` (``((False, 1),
        (True, 1))``); required when ``by`` defines more than two groups.  Rows of
        other groups are not used.
    n_resamples : int, default 999
    studentize : bool, default True
        Divide the difference by its unpooled binomial standard error.  Under the
        exact permutation (the default) every statistic gives an exact test; under
        ``permute="free"`` for a rate over y = 1 or 0 or over decision = 1 or 0
        (FNR, PPV, ...), studentizing is what makes the test asymptotically valid
        whatever the groups' prevalences (DiCiccio et al.), and ``False`` is not
        valid in general (kept to show its failure).
    permute : {"auto", "free", "within_outcome", "within_decision"}, default "auto"
        How group labels are shuffled: over all rows (``free``, the paper's
        Algorithm 1), within y = 1 and within y = 0 (``within_outcome``, its
        Section 3.1), or within decision = 1 and within decision = 0
        (``within_decision``).  ``auto`` shuffles within the class of rows the
        rate averages over: y for FNR, FPR, TPR and TNR, the decision for PPV,
        FDR, NPV and FOR, all rows for selection rate, base rate and accuracy.
        Under the null of equal rates the indicators of that class are
        exchangeable across groups whatever else differs, so the test is exact
        at any group size; any other choice is said in the result's ``notes``.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: metric(A) > metric(B).
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
        ``.pvalue``, ``.statistic`` (studentized), ``.difference``, ``.summary()``,
        ``.plot()``.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.frequentist import permutation_test
    >>> data = make_gaussian_threshold(n_rows=3000, random_state=0).audit_data()
    >>> res = permutation_test(data, "fpr", by="sex", n_resamples=999, random_state=0)
    >>> round(res.difference, 3), round(res.pvalue, 3)  # FPR difference and its p-value
    (0.033, 0.011)
    """
    data = as_audit_data(data, roles)
    metric, _ = _check_common(metric, alternative, permute)
    cells, labels = _group_cells(data, by)
    rows = cells.sum(axis=1)
    noted = empty_groups_note(labels, rows, groups)
    groups = two_groups(labels, groups, rows)
    a, b = (cells[labels.index(g)] for g in groups)
    res = permutation_test_counts(
        a,
        b,
        metric,
        groups=(str(groups[0]), str(groups[1])),
        n_resamples=n_resamples,
        studentize=studentize,
        permute=permute,
        alternative=alternative,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    res.notes.extend(noted)
    return res


def _check_cells(cells: object, argument: str) -> np.ndarray:
    """Four non-negative whole counts (tp, fp, fn, tn), as int64; a fraction or NaN is
    refused, not truncated."""
    try:
        v = np.asarray(cells, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"`{argument}` must be four non-negative counts (tp, fp, fn, tn), got {cells!r}"
        ) from None
    if v.shape != (4,):
        raise ValueError(
            f"`{argument}` must be four non-negative counts (tp, fp, fn, tn), got shape {v.shape}"
        )
    bad = ~is_whole_count(v) | (v >= MAX_COUNT)
    if bad.any():
        raise ValueError(
            f"`{argument}` must hold non-negative whole numbers below 2**53 (tp, fp, fn, tn), "
            f"got {v.tolist()}"
        )
    return v.astype(np.int64)


def permutation_test_counts(
    cells_a: Sequence[int],
    cells_b: Sequence[int],
    metric: str = "fnr",
    *,
    groups: tuple[str, str] = ("A", "B"),
    n_resamples: int = N_RESAMPLES,
    studentize: bool = True,
    permute: str = "auto",
    alternative: str = "two-sided",
    random_state: SeedLike = None,
    n_jobs: int | None = 1,
) -> PermutationTestResult:
    """:func:`permutation_test` from the confusion-matrix cells ``(tp, fp, fn, tn)`` of two
    groups: the permutation distribution depends on nothing else, so millions of rows cost
    nothing more than their counts.

    Parameters
    ----------
    cells_a, cells_b : sequence of int
        ``(tp, fp, fn, tn)`` of groups A and B.
    metric : str
        A rate of :data:`bayesfair.metrics.RATE_DEFINITIONS`.
    groups : pair of str, default ("A", "B")
        Names of the groups in the result.
    n_resamples, studentize, permute, alternative, random_state, n_jobs
        As in :func:`permutation_test`.

    Returns
    -------
    PermutationTestResult

    Examples
    --------
    >>> from bayesfair.frequentist import permutation_test_counts
    >>> res = permutation_test_counts([40, 10, 60, 890], [20, 10, 80, 890], "fnr",
    ...                               n_resamples=1999, random_state=0)
    >>> round(res.difference, 2), bool(res.pvalue < 0.01)  # FNR 0.6 vs 0.8
    (-0.2, True)
    """
    metric, permute = _check_common(metric, alternative, permute)
    check_flag(studentize, "studentize")
    check_resamples(n_resamples)
    a = _check_cells(cells_a, "cells_a")
    b = _check_cells(cells_b, "cells_b")
    observed_diff = float(_stat(a, b, metric, False))
    observed_z = float(_stat(a, b, metric, True))
    if np.isnan(observed_diff):
        empty = [
            f"{g!r} (tp, fp, fn, tn = {', '.join(map(str, c))})"
            for g, c in zip(groups, (a, b), strict=True)
            if _rate(c, metric)[1] == 0
        ]
        raise ValueError(
            f"{metric} is undefined in group {' and '.join(empty)}: its denominator is zero"
        )

    def draw(size: int, rng) -> np.ndarray:
        return _one_pair_split(a, b, permute, size, rng)

    split = chunked_resamples(draw, n_resamples, check_seed(random_state), n_jobs)
    null = _stat(split, a + b - split, metric, studentize)
    obs = observed_z if studentize else observed_diff
    p, k = monte_carlo_pvalue(null, obs, alternative)
    ra, da = _rate(a, metric)
    rb, db = _rate(b, metric)
    estimates = pd.DataFrame(
        {
            "group": list(groups),
            "value": [float(ra), float(rb)],
            "denominator": [int(da), int(db)],
            "n": [int(a.sum()), int(b.sum())],
        }
    )
    return PermutationTestResult(
        metric=metric,
        groups=(str(groups[0]), str(groups[1])),
        difference=observed_diff,
        studentized_statistic=observed_z,
        pvalue=p,
        pvalue_ci=clopper_pearson(k, len(null)),
        null_distribution=null,
        estimates=estimates,
        studentize=studentize,
        permute=permute,
        alternative=alternative,
        n_resamples=n_resamples,
        notes=inexact_note(metric, permute),
    )


@dataclass
class IntersectionalPermutationResult(ResultMixin):  # numpydoc ignore=PR01
    """Max-type studentized permutation test over all groups, with pairwise Holm tests.

    Attributes
    ----------
    statistic : float
        ``max_g |z_g|``, the largest studentized gap of a group from the rest.
    pvalue : float
        Global p-value (is any group's rate different?).
    groups : pandas.DataFrame
        Per group: rate, z against the rest, and the single-step max-T adjusted
        p-value (family-wise error control).
    pairwise : pandas.DataFrame
        Every pair's studentized test with raw and Holm-adjusted p-values (empty
        when the pairwise tests were not run).
    notes : list of str
        Which groups took no part (their rate is undefined), what was skipped and what
        limits the pairwise p-values (also warned).
    metric : str
    permute : str
        The permutation that ran (``"auto"`` resolved).
    null_distribution : numpy.ndarray
        The permuted maxima.
    n_resamples : int
    pvalue_ci : tuple of float
        99% Clopper-Pearson interval of the exact permutation p-value, from the
        ``n_resamples`` permuted maxima (as :class:`PermutationTestResult`'s).
    """

    __repr__ = compact_repr

    metric: str
    statistic: float
    pvalue: float
    groups: pd.DataFrame
    pairwise: pd.DataFrame
    null_distribution: np.ndarray
    n_resamples: int
    permute: str
    notes: list[str] = field(default_factory=list)
    pvalue_ci: tuple[float, float] = (np.nan, np.nan)

    def to_frame(self) -> pd.DataFrame:
        """The per-group table (``groups``).

        Returns
        -------
        pandas.DataFrame
        """
        return self.groups

    def summary(self) -> pd.DataFrame:
        """A one-row table of the test over every group: its statistic (the largest
        ``|z|`` of a group against the rest), the group that attains it with its rate, the
        p-value and its interval. Per group: :meth:`to_frame` (``groups``); per pair:
        ``pairwise``.

        Returns
        -------
        pandas.DataFrame
        """
        tested = self.groups.dropna(subset=["z_vs_rest"])
        top = tested.loc[tested["z_vs_rest"].abs().idxmax()]
        exact = self.metric in RATE_DEFINITIONS and self.permute == exact_permutation(self.metric)
        test = f"max-T over groups, studentized, {self.permute} permutation"
        return pd.DataFrame(
            [
                {
                    "metric": self.metric,
                    "test": test + " (exact)" * exact,
                    "groups_tested": len(tested),
                    "groups": len(self.groups),
                    "statistic": self.statistic,
                    "largest_gap": top["group"],
                    "value": top["value"],
                    "z": top["z_vs_rest"],
                    "pvalue": self.pvalue,
                    "pvalue_lower": self.pvalue_ci[0],
                    "pvalue_upper": self.pvalue_ci[1],
                    "n_resamples": self.n_resamples,
                }
            ]
        )

    def _repr_html_(self) -> str:
        """The test's row, its notes, then the per-group table."""
        per_group = self.groups.to_html(max_rows=60, index=False, border=0)
        return super()._repr_html_() + "<p>Per group</p>" + per_group

    def plot(self, ax=None):
        """Each group's studentized gap from the rest, with the 95% quantile of the
        permuted maxima (a gap beyond it has a max-T adjusted p-value below 0.05).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: a new figure's axes).

        Returns
        -------
        matplotlib.axes.Axes
        """
        g = self.groups
        ax = new_axes(ax, figsize=(5, 0.25 * len(g) + 1.2))
        dot_plot(ax, g["group"], g["z_vs_rest"], label=f"z of {self.metric} vs the rest")
        null = self.null_distribution[np.isfinite(self.null_distribution)]
        if len(null):
            c = float(np.quantile(null, 0.95))
            for x in (-c, c):
                ax.axvline(x, color="C3", ls="--", lw=1)
        ax.axvline(0, color="0.5", lw=0.8)
        ax.set_title(f"max |z| = {self.statistic:.3g}, p = {self.pvalue:.3g}", fontsize=9)
        return ax


def _one_vs_rest(cells: np.ndarray, metric: str) -> np.ndarray:
    """Studentized gap of every group from the union of the others: (..., G)."""
    total = cells.sum(axis=-2, keepdims=True)
    return _stat(cells, total - cells, metric, True)


def _pairwise_tests(
    a: np.ndarray, b: np.ndarray, metric: str, permute: str, n_resamples: int, random_state, n_jobs
) -> pd.DataFrame:
    """Studentized two-sided permutation tests of every pair (rows of ``a`` against rows
    of ``b``), each permuting only its own two groups' rows, drawn for blocks of pairs at
    once; with raw and Holm-adjusted p-values."""
    block = max(1, PAIR_BLOCK // n_resamples)
    starts = range(0, len(a), block)
    # children 0..N_CHUNKS-1 of the seed drew the global null; the pairs use the next one
    root = check_seed(random_state).spawn(N_CHUNKS + 1)[N_CHUNKS]
    p = np.empty(len(a))
    for start, seed in zip(starts, root.spawn(len(starts)), strict=True):
        sa, sb = a[start : start + block], b[start : start + block]

        def draw(size: int, rng, sa=sa, sb=sb) -> np.ndarray:
            return _two_group_null(sa, sb, metric, True, permute, size, rng)

        null = chunked_resamples(draw, n_resamples, seed, n_jobs)
        p[start : start + block] = monte_carlo_pvalues(
            null, _stat(sa, sb, metric, True), "two-sided"
        )[0]
    return pd.DataFrame(
        {
            "difference": _stat(a, b, metric, False),
            "z": _stat(a, b, metric, True),
            "pvalue": p,
            "pvalue_holm": holm(p),
        }
    )


def _undefined_groups_note(metric: str, table: pd.DataFrame, keep: np.ndarray) -> str:
    """Which groups of the max-T test's ``table`` take no part (``~keep``: their rate is
    undefined) and why; warned."""
    left = table.loc[~keep, "group"].tolist()
    empty = int((table.loc[~keep, "n"] == 0).sum())
    why = [f"{empty} without rows"] * (empty > 0) + [
        f"{len(left) - empty} without rows in its denominator"
    ] * (len(left) > empty)
    note = (
        f"{metric} is undefined in {len(left)} of {len(table)} groups ({', '.join(why)}), "
        f"which take no part in the test: {listed(left, 5)}"
    )
    warnings.warn(note, UserWarning, stacklevel=user_stacklevel())
    return note


def intersectional_permutation_test(
    data: AuditData,
    metric: str = "fnr",
    *,
    by: str | Sequence[str] | None = None,
    n_resamples: int = N_RESAMPLES,
    permute: str = "auto",
    pairwise: bool | str = "auto",
    random_state: SeedLike = None,
    n_jobs: int | None = 1,
    **roles: Any,
) -> IntersectionalPermutationResult:
    """Is the rate equal across all groups?  A max-type studentized permutation test.

    Every group is compared with the rest of the rows by a studentized
    difference ``z_g``; the global statistic is ``max_g |z_g|``.  Permuting the
    group labels of all rows at once gives the joint null distribution, so the
    single-step adjusted p-values ``P(max* >= |z_g|)`` control the family-wise
    error rate over groups.  Groups whose rate is undefined (no rows in the
    denominator) are listed with NaN and take no part.

    ``pairwise`` adds every pair's two-group studentized test (as
    :func:`permutation_test`, with ``n_resamples`` resamples), Holm-adjusted:
    ``True`` always, ``False`` never, ``"auto"`` (default) when there are at most
    ``MAX_AUTO_PAIRS`` pairs (46 groups), and otherwise says it skipped them.  The
    number of pairs grows as the square of the number of groups, and so does the
    resolution needed: no Holm-adjusted p-value can be below ``pairs / (n_resamples
    + 1)``, which is warned about when it exceeds 0.05.

    Parameters
    ----------
    data : AuditData
        With a decision.
    metric : str
        A rate of :data:`bayesfair.metrics.RATE_DEFINITIONS`.
    by : str or list of str, optional
        Protected columns defining the groups (default: all, i.e. intersections).
    n_resamples : int, default 999
    permute : {"auto", "free", "within_outcome", "within_decision"}, default "auto"
        As in :func:`permutation_test`: ``auto`` is exact for the global null of
        one rate in every group.
    pairwise : bool or "auto"
        See above.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional
    n_jobs : int, optional
        Workers for joblib; results do not depend on it.
    **roles
        With a DataFrame as ``data``: its columns' roles, as :class:`~bayesfair.AuditData`
        takes them (``protected=``, ``outcome=``, ``decision=``, ``score=``,
        ``threshold=``, ...).

    Returns
    -------
    IntersectionalPermutationResult

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.frequentist import intersectional_permutation_test
    >>> data = make_gaussian_threshold(n_rows=3000, random_state=0).audit_data()
    >>> res = intersectional_permutation_test(data, "fpr", n_resamples=1999, random_state=0)
    >>> list(res.pairwise.columns)
    ['group_a', 'group_b', 'difference', 'z', 'pvalue', 'pvalue_holm']
    """
    data = as_audit_data(data, roles)
    metric, permute = _check_common(metric, "two-sided", permute)
    if pairwise not in (True, False, "auto"):
        raise ValueError(f"`pairwise` must be True, False or 'auto', got {pairwise!r}")
    cells, labels = _group_cells(data, by)
    _, den = _rate(cells, metric)
    keep = den > 0
    if keep.sum() < 2:
        raise ValueError(f"{metric} is defined in fewer than two groups")
    kc = cells[keep]
    klabels = [lab for lab, k in zip(labels, keep, strict=True) if k]
    z_obs = _one_vs_rest(kc, metric)
    pooled = kc.sum(axis=0)
    if permute == "free":
        sizes = kc.sum(axis=1)
    else:
        sizes = np.stack([kc[:, list(cols)].sum(axis=1) for cols in CLASS_CELLS[permute]], axis=1)

    def draw(size: int, rng) -> np.ndarray:
        z = np.abs(_one_vs_rest(_draw_split(pooled, sizes, permute, size, rng), metric))
        return np.nanmax(np.where(np.isnan(z), -np.inf, z), axis=-1)

    # one root for the global null's chunks and the pairs' (a Generator gives one seed)
    random_state = check_seed(random_state)
    null = chunked_resamples(draw, n_resamples, random_state, n_jobs)
    stat = float(np.nanmax(np.abs(z_obs)))
    p_global, hits = monte_carlo_pvalue(null, stat, "greater")
    adj = monte_carlo_pvalues(null[:, None], np.abs(z_obs), "greater")[0]  # single-step max-T
    rate, d = _rate(cells, metric)
    table = pd.DataFrame({"group": labels, "value": rate, "denominator": d, "n": cells.sum(axis=1)})
    table["z_vs_rest"] = np.nan
    table["pvalue_maxT"] = np.nan
    table.loc[keep, "z_vs_rest"] = z_obs
    table.loc[keep, "pvalue_maxT"] = adj
    n_pairs = len(klabels) * (len(klabels) - 1) // 2
    notes = inexact_note(metric, permute)
    if not keep.all():
        notes.append(_undefined_groups_note(metric, table, keep))
    run_pairs = pairwise is True or (pairwise == "auto" and n_pairs <= MAX_AUTO_PAIRS)
    if pairwise == "auto" and not run_pairs:
        notes.append(
            f"pairwise tests skipped: {len(klabels)} groups make {n_pairs} pairs, more than "
            f"the {MAX_AUTO_PAIRS} that pairwise='auto' runs; pass pairwise=True to run them"
        )
        warnings.warn(notes[-1], UserWarning, stacklevel=user_stacklevel())
    elif run_pairs and (floor := holm_floor(n_pairs, n_resamples)) > 0.05:
        notes.append(
            f"with {n_pairs} pairs and n_resamples={n_resamples}, no Holm-adjusted pairwise "
            f"p-value can be below {floor:.3g} (the smallest Monte Carlo p-value times "
            f"{n_pairs}); n_resamples of at least {20 * n_pairs} let a pair reach 0.05"
        )
        warnings.warn(notes[-1], UserWarning, stacklevel=user_stacklevel())
    pairs = pd.DataFrame(columns=["group_a", "group_b", "difference", "z", "pvalue", "pvalue_holm"])
    if run_pairs:
        ia, ib = np.triu_indices(len(klabels), k=1)  # the order of itertools.combinations
        pairs = _pairwise_tests(kc[ia], kc[ib], metric, permute, n_resamples, random_state, n_jobs)
        pairs.insert(0, "group_b", [klabels[i] for i in ib])
        pairs.insert(0, "group_a", [klabels[i] for i in ia])
    return IntersectionalPermutationResult(
        metric=metric,
        statistic=stat,
        pvalue=p_global,
        groups=table,
        pairwise=pairs,
        null_distribution=null,
        n_resamples=n_resamples,
        permute=permute,
        notes=notes,
        pvalue_ci=clopper_pearson(hits, len(null)),
    )
