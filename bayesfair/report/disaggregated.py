"""The report's per-group section: disaggregated estimates, standard beside hierarchical Bayes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from .._plotting import literal
from .._validation import check_instance
from ..disaggregated import DisaggregatedResult
from .html import Figure, Report, Table, Text, whole_numbers

__all__ = ["add_disaggregated_section"]

#: The most groups a per-group plot shows (the smallest; the table lists every group): at
#: 864 groups the plot was 242 inches wide.
MAX_PLOTTED_GROUPS = 80


def _metric_table(result: DisaggregatedResult, metric: str) -> pd.DataFrame:
    """One row per group (by size), per estimator its estimate and interval as text."""
    t = result.table[result.table["metric"] == metric]
    out = t.drop_duplicates("group")[["group", "n"]].sort_values("n", kind="stable")
    out = out.set_index("group")

    def fmt(v: float) -> str:
        return "—" if not np.isfinite(v) else f"{v:.3f}"

    for est, e in t.groupby("estimator", sort=False):
        e = e.set_index("group")
        out[est] = [fmt(v) for v in e["estimate"].reindex(out.index)]
        if e["lower"].notna().any():
            lo, hi = e["lower"].reindex(out.index), e["upper"].reindex(out.index)
            out[f"{est} interval"] = [
                "—" if not (np.isfinite(a) and np.isfinite(b)) else f"[{a:.3f}, {b:.3f}]"
                for a, b in zip(lo, hi, strict=True)
            ]
    return out.reset_index()


def add_disaggregated_section(
    report: Report,
    result: DisaggregatedResult,
    metrics: Sequence[str] | None = None,
    compare: Sequence[str] = ("standard", "hierarchical", "structured"),
) -> Report:
    """Figure-1-style plots (estimates and intervals by group, ordered by size) and a table.

    Parameters
    ----------
    report : Report
        The report to extend.
    result : DisaggregatedResult
        From :func:`~bayesfair.disaggregated_evaluation`.
    metrics : sequence of str, optional
        Metrics to show (default: all of the result's).
    compare : sequence of str
        Estimators plotted side by side (those the result has).

    Returns
    -------
    Report
        ``report``, extended.

    Examples
    --------
    >>> import bayesfair as bf
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.report import Report, add_disaggregated_section
    >>> ds = make_gaussian_threshold(n_rows=2000, random_state=0)
    >>> ev = bf.disaggregated_evaluation(ds.frame, list(ds.protected), ds.outcome,
    ...                                  ds.decision, metrics=["fpr"],
    ...                                  estimators=["standard", "james_stein"], random_state=0)
    >>> [s.title for s in add_disaggregated_section(Report("audit"), ev).sections]
    ['Per-group estimates for small groups (disaggregated evaluation)']
    """
    check_instance(report, Report, "report", "a Report")
    check_instance(result, DisaggregatedResult, "result", "a DisaggregatedResult")
    sec = report.section("Per-group estimates for small groups (disaggregated evaluation)")
    have = [e for e in compare if e in set(result.table["estimator"])]
    sec.add(
        Text(
            "Each intersectional group's metric, estimated from its own rows only ('standard', "
            f"{result.level:.0%} intervals from the pooled variance sigma^2 / n) and by "
            "estimators that borrow strength across related groups. Groups are ordered by size: "
            "where the standard interval is wide and the model-based estimate moves far from "
            "it, the data cannot speak for that group on their own."
        )
    )
    for text in _caveats(result, have):
        sec.add(Text(text))
    shown = list(metrics or dict.fromkeys(result.table["metric"]))
    _add_plots(sec, result, shown, have)
    for metric in shown:
        sec.add(Text(f"{metric}, group by group:"))
        sec.add(
            Table(
                _metric_table(result, metric),
                caption=(
                    f"{metric}: every estimator's estimate and {result.level:.0%} interval "
                    "(none for James-Stein, which has no standard interval); groups by size."
                ),
            )
        )
    _add_fit_tables(sec, result)
    return report


def _caveats(result: DisaggregatedResult, have: Sequence[str]) -> list[str]:
    """The groups without rows, for structured regression, and what the structured,
    empirical-Bayes and hierarchical intervals do not promise (the result's notes)."""
    out = []
    if "structured" in have:
        empty = result.grouped.sizes() == 0
        if empty.any():
            names = result.grouped.group_names()
            listed = "; ".join(str(names[i]) for i in np.flatnonzero(empty)[:5])
            more = f" and {int(empty.sum()) - 5} more" if empty.sum() > 5 else ""
            out.append(
                f"{int(empty.sum())} group(s) have no rows ({listed}{more}): their "
                "model-based estimates come from the other groups alone. Structured "
                "regression's interval there is the fitted surface's, widened by the "
                "departures of the smallest group with an estimate; the hierarchical model's "
                "interval includes the group's own effect, drawn from its learned scale."
            )
    out.extend(result.notes)
    return out


def _add_plots(sec, result: DisaggregatedResult, shown: Sequence[str], have: Sequence[str]):
    """Figure 1 of every metric: the estimators side by side, groups by size (at most
    :data:`MAX_PLOTTED_GROUPS`, the smallest)."""
    n_plot = min(result.grouped.n_groups, MAX_PLOTTED_GROUPS)
    left_out = (
        f" The {n_plot} smallest of {result.grouped.n_groups} groups; the result's table "
        "(DisaggregatedResult.table) has every group."
        if n_plot < result.grouped.n_groups
        else ""
    )
    for metric in shown:
        # a Figure outside pyplot's registry: a process writing many reports keeps none open
        fig = MplFigure(figsize=(max(6.0, 0.28 * n_plot), 3.4))
        ax = fig.add_subplot()
        # named groups: the reader should see *which* small groups the data cannot speak for
        result.plot(metric, estimators=have, ax=ax, labels="group", max_groups=n_plot)
        ax.set_title(literal(metric))
        sec.add(Figure(fig, caption=f"{metric}: {' vs '.join(have)} by group.{left_out}"))


def _add_fit_tables(sec, result: DisaggregatedResult) -> None:
    """The pooled variances and, when fitted, hierarchical Bayes' NUTS diagnostics."""
    sig = pd.DataFrame(
        {"metric": list(result.sigma2), "pooled sigma^2": list(result.sigma2.values())}
    )
    sec.add(
        Table(
            sig, caption="Pooled variance parameter of each metric (eq. 6).", float_format="{:.4f}"
        )
    )
    if result.diagnostics:
        diag = pd.DataFrame(result.diagnostics).T.rename_axis("hierarchical model").reset_index()
        diag = whole_numbers(diag)
        sec.add(
            Table(
                diag,
                caption=(
                    "NUTS diagnostics of the hierarchical models: divergent transitions, "
                    "largest R-hat and smallest effective sample sizes (0 divergences and "
                    "R-hat <= 1.01 expected)."
                ),
                float_format="{:.3f}",
            )
        )
