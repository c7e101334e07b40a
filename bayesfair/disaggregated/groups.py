"""Per-group metric estimates, their bootstrap variances and the pooled variance model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._groups import encode_values
from .._validation import (
    check_binary,
    check_decision,
    check_group_values,
    check_no_missing_groups,
    intersection_labels,
    is_numeric_not_bool,
)
from .._vocabulary import ROLE_RENAMES, renamed_arguments
from ..metrics.rates import RATE_DEFINITIONS, grouped_auc, rate_name

__all__ = ["COUNT_METRICS", "GroupedData", "metric_name", "needed_column"]

_CELLS = ("tp", "fp", "fn", "tn")
#: count metrics (numerator / denominator cells of the confusion matrix)
COUNT_METRICS = dict(RATE_DEFINITIONS)


def needed_column(metric) -> str | None:
    """The column role a named metric needs beyond ``outcome``: ``"decision"`` for a count
    metric other than ``base_rate``, ``"score"`` for AUC; None otherwise (callables get
    whatever columns there are)."""
    if isinstance(metric, str):
        if metric in COUNT_METRICS and metric != "base_rate":
            return "decision"
        if metric == "auc":
            return "score"
    return None


def metric_name(m) -> str:
    if callable(m):
        return getattr(m, "__name__", "metric")
    return rate_name(m)


#: elements of one block of bootstrap resamples of a group's rows (AUC)
_RESAMPLE_BLOCK = 2**22


def _resampled_auc(y: np.ndarray, s: np.ndarray, n_boot: int, rng) -> np.ndarray:
    """AUC of ``n_boot`` bootstrap resamples of one group's rows (NaN where a resample
    has one class).

    The resamples are drawn as ``n_boot`` calls of ``rng.choice(rows, len(rows))`` would
    draw them, in blocks of at most ``_RESAMPLE_BLOCK`` elements.  A resample is a
    multiset of the rows, so its AUC needs no sort: with the rows sorted by score once,
    each resample's weights per block of tied scores and class give the Mann-Whitney
    count (positives above negatives, ties counting 1/2) through one cumulative sum,
    which is the rank-sum AUC of :func:`~bayesfair.metrics.rates.grouped_auc` exactly.
    """
    m = len(y)
    order = np.argsort(s, kind="stable")
    ss = s[order]
    new_block = np.r_[True, ss[1:] != ss[:-1]]
    block = np.empty(m, np.int64)
    block[order] = np.cumsum(new_block) - 1  # tie block of each row, in score order
    n_blocks = int(new_block.sum())
    cell = 2 * block + (y > 0)  # (tie block, class) of each row
    out = np.empty(n_boot)
    step = max(1, _RESAMPLE_BLOCK // m)
    for b0 in range(0, n_boot, step):
        b = min(step, n_boot - b0)
        idx = rng.integers(0, m, size=(b, m))
        key = cell[idx] + (2 * n_blocks) * np.arange(b)[:, None]
        w = np.bincount(key.ravel(), minlength=2 * n_blocks * b).reshape(b, n_blocks, 2)
        neg, pos = w[..., 0], w[..., 1]
        below = np.cumsum(neg, axis=1) - neg  # negatives with a lower score
        u = np.sum(pos * (below + 0.5 * neg), axis=1)
        n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[b0 : b0 + b] = np.where((n_pos > 0) & (n_neg > 0), u / (n_pos * n_neg), np.nan)
    return out


@dataclass
class GroupedData:  # numpydoc ignore=PR01
    """Rows with their group code; the intersection labels and levels of every attribute.

    Build it with :meth:`from_frame`; the lower-level estimators
    (:func:`~bayesfair.disaggregated.structured_regression`, ...) take it.

    Attributes
    ----------
    group : numpy.ndarray
        Group code of every row (the row of ``labels``).
    y : numpy.ndarray
        0/1 labels.
    yhat, score : numpy.ndarray or None
        0/1 decisions and scores, where given.
    labels : pandas.DataFrame
        One row per group (the Cartesian product of the attributes' values).
    frame : pandas.DataFrame
        The input rows (for user functions of the features).

    Examples
    --------
    >>> import pandas as pd
    >>> from bayesfair.disaggregated import GroupedData
    >>> df = pd.DataFrame({"a": ["x", "x", "y", "y"], "y": [1, 0, 1, 1], "d": [1, 1, 0, 1]})
    >>> gd = GroupedData.from_frame(df, ["a"], "y", "d")
    >>> gd.estimate("fpr").tolist(), gd.sizes().tolist()
    ([1.0, nan], [2, 2])
    """

    group: np.ndarray
    y: np.ndarray
    yhat: np.ndarray | None
    score: np.ndarray | None
    labels: pd.DataFrame  # one row per group: the attribute values
    frame: pd.DataFrame

    @classmethod
    @renamed_arguments(
        **ROLE_RENAMES,
    )
    def from_frame(
        cls,
        data: pd.DataFrame,
        protected: Sequence[str],
        outcome: str,
        decision: str | None = None,
        score: str | None = None,
        pos_label: object | None = None,
    ) -> GroupedData:
        """Validate and code the data.  ``outcome`` (and ``decision`` when it is coded the
        same way, not as bool or 0/1) may use any two values, with ``pos_label`` the one
        that means 1.

        Parameters
        ----------
        data : pandas.DataFrame
        protected : str or list of str
            Columns whose intersections are the groups.
        outcome : str
            Column of the labels.
        decision : str, optional
            Column of the 0/1 decisions (needed by confusion-matrix metrics).
        score : str, optional
            Column of numeric scores (needed by AUC).
        pos_label : optional
            The value of ``outcome`` that means 1.

        Returns
        -------
        GroupedData
        """
        if not isinstance(data, pd.DataFrame):
            raise TypeError(f"`data` must be a pandas DataFrame, got {type(data).__name__}")
        if len(data) == 0:
            raise ValueError("the DataFrame has no rows; a per-group evaluation needs data")
        sens = [protected] if isinstance(protected, str) else list(protected)
        if not sens:
            raise ValueError("`protected` must name at least one column")
        for role, col in (("outcome", outcome), ("decision", decision), ("score", score)):
            if col is not None and col not in data.columns:
                raise ValueError(f"`{role}` column {col!r} is not in the data")
        for c in sens:
            if c not in data.columns:
                raise ValueError(f"protected column {c!r} is not in the data")
            check_no_missing_groups(data[c], f"protected column {c!r}")
            check_group_values(data[c], f"protected column {c!r}")
        y = check_binary(data[outcome], outcome, "`outcome`", pos_label).astype(int)
        yhat = None
        if decision is not None:
            yhat = check_decision(
                data[decision], decision, "`decision`", pos_label, data[outcome]
            ).astype(int)
        scores = None
        if score is not None:
            sc = data[score]
            if not is_numeric_not_bool(sc):
                raise ValueError(
                    f"`score` column {score!r} must hold numeric scores, got dtype {sc.dtype}"
                )
            scores = sc.to_numpy(float)
            if not np.isfinite(scores).all():
                raise ValueError(
                    f"`score` column {score!r} has {int((~np.isfinite(scores)).sum())} "
                    "missing or infinite values"
                )
        levels = []
        codes = []
        for c in sens:  # the audit's own encoder: groups are ordered as in AuditData
            enc = encode_values(data[c], f"protected column {c!r}")
            levels.append(enc.categories)
            codes.append(enc.codes)
        dims = [len(v) for v in levels]
        g = np.ravel_multi_index(codes, dims)
        idx = pd.MultiIndex.from_product(levels, names=sens).to_frame(index=False)
        grouped = cls(group=g, y=y.astype(int), yhat=yhat, score=scores, labels=idx, frame=data)
        grouped.group_names()  # refuse labels that two groups would share
        return grouped

    @property
    def n_groups(self) -> int:
        """Number of groups (empty ones included)."""
        return len(self.labels)

    @property
    def attributes(self) -> list[str]:
        """The sensitive features, in order."""
        return list(self.labels.columns)

    def sizes(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Rows per group.

        Parameters
        ----------
        rows : numpy.ndarray, optional
            A row selection (boolean mask or indices); default all rows.

        Returns
        -------
        numpy.ndarray
            Shaped ``(n_groups,)``.
        """
        g = self.group if rows is None else self.group[rows]
        return np.bincount(g, minlength=self.n_groups)

    def folds(self, n_folds: int, rng: np.random.Generator) -> np.ndarray:
        """A fold number from 0 to ``n_folds - 1`` for every row, stratified by group: each
        group's rows are shuffled and dealt out in turn, so every fold holds about
        ``n_a / n_folds`` of group a's rows.

        Parameters
        ----------
        n_folds : int
        rng : numpy.random.Generator

        Returns
        -------
        numpy.ndarray
            Shaped ``(n_rows,)``.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from bayesfair.disaggregated import GroupedData
        >>> df = pd.DataFrame({"a": list("xxxxyy"), "y": [0, 1, 0, 1, 0, 1]})
        >>> gd = GroupedData.from_frame(df, ["a"], "y")
        >>> half = gd.folds(2, np.random.default_rng(0)) == 0
        >>> gd.sizes(half).tolist()
        [2, 1]
        """
        fold = np.empty(len(self.group), np.int64)
        for a in range(self.n_groups):
            idx = np.flatnonzero(self.group == a)
            fold[idx] = rng.permutation(len(idx)) % n_folds
        return fold

    def group_names(self) -> list[str]:
        """Labels of the groups, ``"value, value, ..."``.

        Returns
        -------
        list of str
        """
        return intersection_labels(self.labels.itertuples(index=False), list(self.labels.columns))

    # ------------------------------------------------------------------ metrics
    def cells(self, rows: np.ndarray | None = None) -> np.ndarray:
        """(groups, 4) counts of tp, fp, fn, tn.

        Parameters
        ----------
        rows : numpy.ndarray, optional
            A row selection (boolean mask or indices); default all rows.

        Returns
        -------
        numpy.ndarray
            Float counts shaped ``(n_groups, 4)``.  Without ``decision`` every decision
            counts as 0, so that only the outcome's counts (``base_rate``) mean anything.
        """
        g, y = self.group, self.y
        d = np.zeros_like(y) if self.yhat is None else self.yhat
        if rows is not None:
            g, y, d = g[rows], y[rows], d[rows]
        cell = np.where(d == 1, np.where(y == 1, 0, 1), np.where(y == 1, 2, 3))
        return np.bincount(g * 4 + cell, minlength=4 * self.n_groups).reshape(-1, 4).astype(float)

    @staticmethod
    def count_ratio(cells: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """Numerator and denominator counts of a count metric.

        Parameters
        ----------
        cells : numpy.ndarray, shape (..., 4)
            Counts of tp, fp, fn, tn (:meth:`cells`).
        metric : str
            A key of ``COUNT_METRICS`` (``"fpr"``, ``"selection_rate"``, ...).

        Returns
        -------
        k, m : numpy.ndarray
            Numerator and denominator, shaped like ``cells[..., 0]``.
        """
        num, den = COUNT_METRICS[metric]
        k = sum(cells[..., _CELLS.index(c)] for c in num)
        m = sum(cells[..., _CELLS.index(c)] for c in den)
        return k, m

    def estimate(self, metric, rows: np.ndarray | None = None) -> np.ndarray:
        """Standard estimate of every group (NaN where undefined).

        Parameters
        ----------
        metric : str or callable
            A count metric, ``"auc"``, or ``f(y_true, y_pred, y_score)`` called with
            one group's arrays.
        rows : numpy.ndarray, optional
            A row selection (boolean mask); default all rows.

        Returns
        -------
        numpy.ndarray
            Shaped ``(n_groups,)``.
        """
        self.check_columns(metric)
        if isinstance(metric, str) and metric in COUNT_METRICS:
            k, m = self.count_ratio(self.cells(rows), metric)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(m > 0, k / np.maximum(m, 1), np.nan)
        sel = np.arange(len(self.group)) if rows is None else np.flatnonzero(rows)
        if metric == "auc":
            return grouped_auc(self.group[sel], self.y[sel], self.score[sel], self.n_groups)[0]
        out = np.full(self.n_groups, np.nan)
        order = np.argsort(self.group[sel], kind="stable")
        sel = sel[order]
        bounds = np.searchsorted(self.group[sel], np.arange(self.n_groups + 1))
        for a in range(self.n_groups):
            r = sel[bounds[a] : bounds[a + 1]]
            if len(r):
                out[a] = self._row_metric(metric, r)
        return out

    def missing_column(self, metric) -> str | None:
        """The column a named metric needs and the data lack, or None.

        Parameters
        ----------
        metric : str or callable
            As in :meth:`estimate`.

        Returns
        -------
        str or None
            ``"`decision` (0/1 decisions)"`` for a count metric other than
            ``base_rate``, ``"`score`"`` for AUC, when that column was not given.
        """
        need = needed_column(metric)
        if need == "decision" and self.yhat is None:
            return "`decision` (0/1 decisions)"
        if need == "score" and self.score is None:
            return "`score`"
        return None

    def check_columns(self, metric) -> None:
        """Raise a ValueError naming the metric and the column it needs, if missing.

        Parameters
        ----------
        metric : str or callable
            As in :meth:`estimate`.
        """
        column = self.missing_column(metric)
        if column is not None:
            raise ValueError(f"{metric} needs {column}")

    def _row_metric(self, metric, r: np.ndarray) -> float:
        if callable(metric):
            try:
                val = metric(
                    self.y[r],
                    None if self.yhat is None else self.yhat[r],
                    None if self.score is None else self.score[r],
                )
                val = float(val) if val is not None else np.nan
                if np.isinf(val):
                    raise ValueError(f"the metric returned {val}, not a finite number")
                return val
            except Exception as err:  # say where, keep the user's exception
                group = self.group_names()[self.group[r[0]]] if len(r) else "?"
                err.add_note(
                    f"raised by the metric {metric_name(metric)!r} on {len(r)} rows of group "
                    f"'{group}' (it is called as f(y_true, y_pred, y_score) with one group's "
                    "arrays, and must return a number, or None where undefined)"
                )
                raise
        raise ValueError(
            f"unknown metric {metric!r}: use one of {sorted(COUNT_METRICS)}, 'auc' or a callable"
        )

    def bootstrap_variance(self, metric, n_boot: int, rng: np.random.Generator) -> np.ndarray:
        """Per-group bootstrap variance of the standard estimate (over defined resamples).

        Parameters
        ----------
        metric : str or callable
            As in :meth:`estimate`.
        n_boot : int
            Bootstrap replicates per group.
        rng : numpy.random.Generator

        Returns
        -------
        numpy.ndarray
            NaN for groups with fewer than two rows or two defined replicates.
        """
        self.check_columns(metric)
        n = self.sizes()
        out = np.full(self.n_groups, np.nan)
        if isinstance(metric, str) and metric in COUNT_METRICS:
            cells = self.cells()
            for a in np.flatnonzero(n > 1):
                draws = rng.multinomial(int(n[a]), cells[a] / n[a], size=n_boot)
                k, m = self.count_ratio(draws.astype(float), metric)
                ok = m > 0
                if ok.sum() > 1:
                    out[a] = np.var(k[ok] / m[ok], ddof=1)
            return out
        order = np.argsort(self.group, kind="stable")
        bounds = np.searchsorted(self.group[order], np.arange(self.n_groups + 1))
        for a in np.flatnonzero(n > 1):
            r = order[bounds[a] : bounds[a + 1]]
            if metric == "auc":
                vals = _resampled_auc(self.y[r], self.score[r], n_boot, rng)
            else:
                vals = np.array(
                    [self._row_metric(metric, rng.choice(r, size=len(r))) for _ in range(n_boot)]
                )
            vals = vals[np.isfinite(vals)]
            if len(vals) > 1:
                out[a] = np.var(vals, ddof=1)
        return out


def pooled_sigma2(n: np.ndarray, boot_var: np.ndarray) -> float:
    """Pooled variance parameter (Herlihy et al. eq. 6).

    ``sigma^2 = sum_a n_a [n_a var_a] / sum_a n_a`` over the groups with a bootstrap
    variance, so that a group's variance is modelled as ``sigma^2 / n_a``.

    Parameters
    ----------
    n : numpy.ndarray
        Group sizes (the metric's denominators).
    boot_var : numpy.ndarray
        Bootstrap variances of the standard estimates (NaN where unavailable).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.disaggregated import pooled_sigma2
    >>> pooled_sigma2(np.array([100, 25]), np.array([0.0016, 0.0064]))  # both 0.16 / n
    0.16
    """
    ok = np.isfinite(boot_var) & (n > 0)
    if not ok.any():
        raise ValueError("no group has a bootstrap variance (every group too small)")
    return float(np.sum(n[ok] * n[ok] * boot_var[ok]) / np.sum(n[ok]))


MetricLike = str | Callable
