"""Per-intersection counts from a pandas or a Dask DataFrame, in one groupby.

For data that do not fit in memory: the groupby runs where the data live (a Dask
cluster), and only the per-intersection table -- the sufficient statistic of every
count-based method (epsilon-DF, gamma-SF, the Dirichlet and binomial models, the
hypergeometric permutation tests) -- comes back.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["aggregate_counts", "cells_for"]


def aggregate_counts(
    frame,
    protected: str | Sequence[str],
    outcome: str,
    *,
    decision: str | None = None,
    score: str | None = None,
) -> pd.DataFrame:
    """Tidy per-intersection table (protected columns, n, positives and, with a decision,
    decision_positives, tp, fp, fn, tn; with a score, score_sum).

    ``frame`` is a pandas DataFrame or a ``dask.dataframe.DataFrame``; outcome and
    decision must be 0/1 and a score finite (rows that are not, missing ones included,
    are counted and refused).  Intersections with no rows do not appear (a groupby cannot
    see them); rows with a missing protected value are refused.

    Parameters
    ----------
    frame : pandas.DataFrame or dask.dataframe.DataFrame
        One row per individual.
    protected : str or list of str
        Protected columns; their intersections are the table's rows.
    outcome : str
        Column of the 0/1 label.
    decision : str, optional
        Column of the 0/1 decision; adds the confusion-matrix cells.
    score : str, optional
        Column of a score; adds its sum per intersection (``score_sum``).

    Returns
    -------
    pandas.DataFrame
        One row per intersection that has rows (computed in memory for dask input).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"g": ["a", "a", "b"], "y": [1, 0, 1], "d": [1, 1, 0]})
    >>> aggregate_counts(df, "g", "y", decision="d")[["g", "n", "tp", "fp", "fn", "tn"]]
       g  n  tp  fp  fn  tn
    0  a  2   1   1   0   0
    1  b  1   0   0   1   0
    """
    if not hasattr(frame, "columns") or not hasattr(frame, "groupby"):
        raise TypeError(f"`frame` must be a pandas or Dask DataFrame, got {type(frame).__name__}")
    prot = [protected] if isinstance(protected, str) else list(protected)
    cols = prot + [outcome] + [c for c in (decision, score) if c]
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        roles = dict.fromkeys(prot, "protected") | {
            outcome: "outcome",
            decision: "decision",
            score: "score",
        }
        named = ", ".join(f"{roles.get(c, 'a')} column {c!r}" for c in missing)
        raise ValueError(f"{named} not in the data; available: {list(frame.columns)[:20]}")
    is_dask = type(frame).__module__.startswith("dask")
    f = frame[cols]
    # rows whose outcome or decision is not 0/1 (0.5 was truncated to 0, 2 and -1 gave
    # impossible counts, NaN failed in pandas' int cast) or whose score is not a finite
    # number are counted and refused (for dask in the same computation as the table)
    bad = {
        (role, col, "0/1"): (~((f[col] == 0) | (f[col] == 1))).sum()
        for role, col in (("outcome", outcome), ("decision", decision))
        if col is not None
    }
    if score is not None:
        bad[("score", score, "a finite number")] = (~(f[score].abs() < np.inf)).sum()
    if not is_dask:
        _refuse_bad_rows(bad)
    y = f[outcome].fillna(0).astype("int64")
    parts = {"n": y * 0 + 1, "positives": y}
    if decision is not None:
        d = f[decision].fillna(0).astype("int64")
        parts.update(
            decision_positives=d,
            tp=y * d,
            fp=(1 - y) * d,
            fn=y * (1 - d),
            tn=(1 - y) * (1 - d),
        )
    if score is not None:
        parts["score_sum"] = f[score].astype("float64")
    work = f[prot].assign(**parts)
    na = work[prot].isna().sum()
    na = na.compute() if is_dask else na
    if int(np.asarray(na).sum()):
        raise ValueError(f"protected columns have missing values: {dict(na[na > 0])}")
    out = work.groupby(prot, observed=True).sum()
    if is_dask:
        import dask

        out, bad = dask.compute(out, bad)
        _refuse_bad_rows(bad)
    out = out.reset_index()
    return out.sort_values(prot, kind="stable").reset_index(drop=True)


def _refuse_bad_rows(bad: dict) -> None:
    for (role, col, expected), count in bad.items():
        if int(count):
            raise ValueError(
                f"{role} column {col!r}: {int(count)} row(s) are missing or not {expected}; "
                f"expected {expected} for every row"
            )


def cells_for(table: pd.DataFrame, mask) -> np.ndarray:
    """(tp, fp, fn, tn) summed over the rows of an aggregated table selected by ``mask``."""
    sub = table.loc[np.asarray(mask, bool)]
    return sub[["tp", "fp", "fn", "tn"]].sum().to_numpy(np.int64)
