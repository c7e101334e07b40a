"""Per-group confusion-matrix rates and AUC as tidy DataFrames."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data import AuditData, as_audit_data

__all__ = ["RATE_ALIASES", "RATE_DEFINITIONS", "group_auc", "group_rates"]

#: metric -> (numerator cells, denominator cells) of the confusion matrix.
RATE_DEFINITIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "base_rate": (("tp", "fn"), ("tp", "fp", "fn", "tn")),
    "selection_rate": (("tp", "fp"), ("tp", "fp", "fn", "tn")),
    "accuracy": (("tp", "tn"), ("tp", "fp", "fn", "tn")),
    "tpr": (("tp",), ("tp", "fn")),
    "fnr": (("fn",), ("tp", "fn")),
    "fpr": (("fp",), ("fp", "tn")),
    "tnr": (("tn",), ("fp", "tn")),
    "ppv": (("tp",), ("tp", "fp")),
    "fdr": (("fp",), ("tp", "fp")),
    "npv": (("tn",), ("tn", "fn")),
    "for": (("fn",), ("tn", "fn")),
}

#: other names of the rates: fairlearn's and scikit-learn's, and the disaggregated
#: evaluation paper's abbreviations
RATE_ALIASES: dict[str, str] = {
    "false_positive_rate": "fpr",
    "false_negative_rate": "fnr",
    "true_positive_rate": "tpr",
    "true_negative_rate": "tnr",
    "positive_predictive_value": "ppv",
    "negative_predictive_value": "npv",
    "false_discovery_rate": "fdr",
    "false_omission_rate": "for",
    "precision": "ppv",
    "recall": "tpr",
    "sensitivity": "tpr",
    "specificity": "tnr",
    "precision_score": "ppv",
    "recall_score": "tpr",
    "accuracy_score": "accuracy",
    "sel": "selection_rate",
    "acc": "accuracy",
}


def rate_name(metric: Any) -> Any:
    """The package's name of a rate named otherwise (:data:`RATE_ALIASES`: fairlearn's
    ``"false_positive_rate"`` is ``"fpr"``); any other value unchanged.

    Examples
    --------
    >>> from bayesfair.metrics.rates import rate_name
    >>> rate_name("false_positive_rate"), rate_name("fpr")
    ('fpr', 'fpr')
    """
    return RATE_ALIASES.get(metric, metric) if isinstance(metric, str) else metric


def unknown_rate(metric: Any) -> str:
    """The refusal of an unknown rate name, with the names there are."""
    return (
        f"unknown metric {metric!r}; choose from {list(RATE_DEFINITIONS)} (or their long "
        "names, as fairlearn's 'false_positive_rate')"
    )


def group_rates(
    data: AuditData,
    metrics: Sequence[str] | None = None,
    *,
    by: str | Sequence[str] | None = None,
    **roles: Any,
) -> pd.DataFrame:
    """Confusion-matrix rates of every group, one row per (group, metric).

    Parameters
    ----------
    data : AuditData
        Must carry a decision (``decision=`` or ``score=`` with ``threshold=``),
        except for ``"base_rate"`` alone.
    metrics : list of str, optional
        Names from :data:`RATE_DEFINITIONS` (default: all): base_rate,
        selection_rate, accuracy, tpr, fnr, fpr, tnr, ppv, fdr, npv, for; or their
        long names (:data:`RATE_ALIASES`, fairlearn's ``"false_positive_rate"``).
    by : str or list of str, optional
        Protected columns defining the groups (default: all, i.e. intersections).
    **roles
        With a DataFrame as ``data``: its columns' roles, as :class:`~bayesfair.AuditData`
        takes them (``protected=``, ``outcome=``, ``decision=``, ``score=``,
        ``threshold=``, ...).

    Returns
    -------
    pandas.DataFrame
        Columns: the ``by`` columns, ``intersection``, ``metric``, ``value``,
        ``numerator``, ``denominator``, ``n``.  A rate whose denominator is 0
        is NaN; no group is dropped.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.metrics import group_rates
    >>> data = make_gaussian_threshold(n_rows=1000, random_state=1).audit_data()
    >>> rates = group_rates(data, ["fpr", "fnr"], by="sex")
    >>> rates[["intersection", "metric"]].head(2).values.tolist()
    [['1', 'fpr'], ['1', 'fnr']]
    """
    data = as_audit_data(data, roles)
    if isinstance(metrics, str):  # one metric: "fpr", not the letters f, p, r
        metrics = [metrics]
    if metrics is not None and not isinstance(metrics, (list, tuple)):
        raise TypeError(
            f"`metrics` must be a metric name or a list of them, got {type(metrics).__name__}"
        )
    names = list(RATE_DEFINITIONS) if metrics is None else [rate_name(m) for m in metrics]
    unknown = [m for m in names if m not in RATE_DEFINITIONS]
    if unknown:
        raise ValueError(f"`metrics`: {unknown_rate(unknown[0])}")
    table = data.table_for(by)
    if "tp" not in table:
        if names != ["base_rate"]:
            raise ValueError(
                "confusion-matrix rates need a decision: give `decision=` or `score=` with "
                "`threshold=` to AuditData"
            )
        table = table.assign(tp=table["positives"], fn=0, fp=table["n"] - table["positives"], tn=0)
    keys = [c for c in table.columns if c in data.protected] + ["intersection"]
    frames = []
    for name in names:
        num_cells, den_cells = RATE_DEFINITIONS[name]
        num = table[list(num_cells)].sum(axis=1).to_numpy()
        den = table[list(den_cells)].sum(axis=1).to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(den > 0, num / np.maximum(den, 1), np.nan)
        part = table[keys].copy()
        part["metric"] = name
        part["value"] = value
        part["numerator"] = num
        part["denominator"] = den
        part["n"] = table["n"].to_numpy()
        frames.append(part)
    out = pd.concat(frames, ignore_index=True)
    # Group-major order: all metrics of a group together.
    order = np.argsort(np.tile(np.arange(len(table)), len(names)), kind="stable")
    return out.iloc[order].reset_index(drop=True)


def group_auc(
    data: AuditData, *, by: str | Sequence[str] | None = None, **roles: Any
) -> pd.DataFrame:
    """Area under the ROC curve of the score within every group.

    Computed for all groups at once from one sort of the rows (Mann-Whitney
    statistic with mid-ranks for ties), so it costs ``O(n log n)`` whatever the
    number of groups.

    Parameters
    ----------
    data : AuditData
        With a score.
    by : str or list of str, optional
        Protected columns defining the groups (default: all, i.e. intersections).
    **roles
        With a DataFrame as ``data``: its columns' roles, as :class:`~bayesfair.AuditData`
        takes them (``protected=``, ``outcome=``, ``decision=``, ``score=``,
        ``threshold=``, ...).

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, ``intersection``, ``auc``, ``n``, ``n_pos``,
        ``n_neg``.  AUC is NaN for a group without both outcomes.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.metrics import group_auc
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=1).audit_data()
    >>> bool((group_auc(data, by="sex")["auc"] > 0.5).all())
    True
    """
    data = as_audit_data(data, roles)
    data.require_rows("group AUC")
    if data.row_score is None:
        raise ValueError("group AUC needs a score: give `score=` to AuditData")
    cols = data._check_by(by)
    group = regroup(data, cols)
    n_groups = int(np.prod([len(data.categories[c]) for c in cols]))
    auc, n_pos, n_neg = grouped_auc(group, data.row_outcome, data.row_score, n_groups)
    out = data.grouping(cols)
    out["auc"] = auc
    out["n"] = n_pos + n_neg
    out["n_pos"] = n_pos
    out["n_neg"] = n_neg
    return out


def regroup(data: AuditData, cols: Sequence[str]) -> np.ndarray:
    """Row-level group index for a subset of the protected columns."""
    if list(cols) == list(data.protected):
        return data.row_group
    codes = np.unravel_index(data.row_group, data.shape_)
    pos = [data.protected.index(c) for c in cols]
    return np.ravel_multi_index(tuple(codes[i] for i in pos), tuple(data.shape_[i] for i in pos))


def grouped_auc(
    group: np.ndarray, y: np.ndarray, score: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(group)
    if n == 0:  # no rows: every group's AUC undefined
        return np.full(n_groups, np.nan), np.zeros(n_groups, np.int64), np.zeros(n_groups, np.int64)
    order = np.lexsort((score, group))
    g, s, yy = group[order], score[order], y[order]
    # Blocks of equal (group, score): ties share their mid-rank.
    new_block = np.empty(n, dtype=bool)
    new_block[0] = True
    new_block[1:] = (g[1:] != g[:-1]) | (s[1:] != s[:-1])
    block = np.cumsum(new_block) - 1
    starts = np.flatnonzero(new_block)
    ends = np.append(starts[1:], n)
    group_start = np.zeros(n_groups + 1, dtype=np.int64)
    np.add.at(group_start, g + 1, 1)
    group_start = np.cumsum(group_start)[:-1]
    # 1-based rank within the group, averaged over ties.
    mid = (starts + ends - 1) / 2.0 - group_start[g[starts]] + 1.0
    ranks = mid[block]
    n_pos = np.bincount(g, weights=yy, minlength=n_groups)
    n_tot = np.bincount(g, minlength=n_groups)
    n_neg = n_tot - n_pos
    rank_sum = np.bincount(g, weights=ranks * yy, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    auc = np.where((n_pos > 0) & (n_neg > 0), auc, np.nan)
    return auc, n_pos.astype(np.int64), n_neg.astype(np.int64)
