"""Plots for the report and for notebooks (object-oriented matplotlib, no global state)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .._plotting import literal, literals
from .._validation import check_count
from .._vocabulary import LEVEL, renamed_arguments
from ..data import AuditData
from ..metrics.rate_intervals import jeffreys_interval

__all__ = ["plot_group_rates", "plot_posterior_boxes", "plot_posterior_rates"]

#: The most intersections the report's per-intersection charts show (the largest; AuditData.table
#: and a model's summary() have every one): a quarter of an inch each, so 4,096 intersections
#: made a chart 95 feet tall and an 8 MB report at 2,400.
MAX_CHART_ROWS = 250


def chart_rows_note(n_groups: int, where: str) -> str:
    """A caption's words for a chart capped at ``MAX_CHART_ROWS`` of ``n_groups`` rows,
    saying ``where`` every one is (empty when nothing is left out)."""
    if n_groups <= MAX_CHART_ROWS:
        return ""
    return f" The {MAX_CHART_ROWS} largest of {n_groups} intersections; {where} has every one."


def plot_group_rates(
    data: AuditData, *, level: float = LEVEL, max_groups: int | None = None
) -> Figure:
    """Positive rate of the outcome (and decision) per intersection, with intervals.

    Intersections are ordered by size; the label carries the number of rows,
    and empty intersections are listed with ``n=0`` and no estimate, so the
    reader sees which groups the data cannot speak for.

    Parameters
    ----------
    data : AuditData
    level : float, default 0.9
        Mass of the Jeffreys intervals.
    max_groups : int, optional
        Show only the largest ``max_groups`` intersections (default: all; the chart
        grows by a quarter of an inch per intersection).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> from bayesfair.report import plot_group_rates
    >>> len(plot_group_rates(data).axes)
    1
    """
    targets = ["outcome"] + (["decision"] if data.has_decision else [])
    if max_groups is not None:
        check_count(max_groups, "max_groups")
    n = data.group_sizes()
    order = np.argsort(-n, kind="stable")[:max_groups]
    names = data.group_labels  # a property that rebuilds the labels: read it once
    labels = [f"{names[i]}  (n={n[i]:,})" for i in order]
    height = max(2.5, 0.28 * len(order) + 1.2)
    fig = Figure(figsize=(8.5, height))
    ax = fig.add_subplot(1, 1, 1)
    ypos = np.arange(len(order))
    offsets = {"outcome": -0.15, "decision": 0.15}
    colors = {"outcome": "#1f5fa8", "decision": "#c0392b"}
    for t in targets:
        c = data.counts(t)[order]
        k, m = c[:, 1], c.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(m > 0, k / np.maximum(m, 1), np.nan)
        lo, hi = jeffreys_interval(k, m, level)
        ax.errorbar(
            rate,
            ypos + offsets[t],
            xerr=np.vstack([rate - lo, hi - rate]),
            fmt="o",
            ms=4,
            capsize=2,
            color=colors[t],
            label=f"P({t}=1 | s), {level:.0%} Jeffreys interval",
        )
    ax.set_yticks(ypos)
    ax.set_yticklabels(literals(labels), fontsize=8)
    # largest first, half a row of margin: matplotlib's default 5% of the range is a blank
    # band of a dozen rows on a chart of hundreds of intersections
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("positive rate")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


@renamed_arguments(confidence="frequentist")
def plot_posterior_boxes(results: dict, frequentist=None) -> Figure:
    """Box plots of posterior epsilon-DF and gamma-SF per model, with O and X markers.

    Parameters
    ----------
    results : dict
        Model name -> :class:`~bayesfair.models.PosteriorFairness`.
    frequentist : FairnessConfidenceInterval, optional
        Drawn beside the models as one more column: the frequentist interval of epsilon
        and gamma (:func:`~bayesfair.frequentist.fairness_confidence_interval`), with an
        arrow where its upper end lies above the plot or is infinite.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> from bayesfair.models import DirichletMultinomial, posterior_fairness
    >>> from bayesfair.report import plot_posterior_boxes
    >>> pf = posterior_fairness(DirichletMultinomial(random_state=0).fit(data))
    >>> len(plot_posterior_boxes({"EDF": pf}).axes)  # epsilon and gamma
    2
    """
    metrics = [
        m
        for m in ("epsilon", "gamma", "df_amplification")
        if all(m in r.draws for r in results.values())
    ]
    fig = Figure(figsize=(3.4 * len(metrics) + 0.5, 3.6))
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    names = list(results)
    for ax, metric in zip(axes, metrics, strict=True):
        data = []
        for name in names:
            d = np.asarray(results[name].draws[metric]).reshape(-1)
            data.append(d[np.isfinite(d)])
        ax.boxplot(data, widths=0.5, showfliers=False)
        pos = np.arange(1, len(names) + 1)
        ax.plot(
            pos,
            [results[n].o[metric] for n in names],
            "o",
            mfc="none",
            mec="k",
            ms=8,
            label="O: point estimate",
        )
        ax.plot(
            pos,
            [results[n].x[metric] for n in names],
            "x",
            color="C3",
            ms=8,
            label="X: posterior predictive",
        )
        ticks = list(names)
        interval = None
        if frequentist is not None and metric in ("epsilon", "gamma"):
            interval = getattr(frequentist, f"{metric}_interval")
        if interval is not None:
            x = len(names) + 1
            lo, hi = interval
            top = max(ax.get_ylim()[1], 1.05 * lo)
            ax.vlines(x, lo, min(hi, top), color="C2", lw=2.5, label="frequentist CI")
            ax.plot(x, lo, "_", color="C2", ms=14)
            ax.plot(
                x, min(hi, top), "^" if hi > top else "_", color="C2", ms=10 if hi > top else 14
            )
            ticks.append(f"{frequentist.level:.0%} CI")
            pos = np.arange(1, len(ticks) + 1)
        ax.set_xticks(pos)
        ax.set_xticklabels(literals(ticks), rotation=30, ha="right", fontsize=8)
        ax.set_title(literal(metric), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_posterior_rates(model, *, level: float = LEVEL, max_groups: int | None = None) -> Figure:
    """Posterior interval of P(y=1|s) per intersection next to the empirical rate, by size.

    Parameters
    ----------
    model : FairnessModel
        A fitted model.
    level : float, default 0.9
        Mass of the highest-density intervals.
    max_groups : int, optional
        Show only the largest ``max_groups`` intersections (default: all).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> from bayesfair.models import DirichletMultinomial
    >>> from bayesfair.report import plot_posterior_rates
    >>> len(plot_posterior_rates(DirichletMultinomial(random_state=0).fit(data)).axes)
    1
    """
    if max_groups is not None:
        check_count(max_groups, "max_groups")
    s = model.summary(level)
    lo, hi = s.columns[-2], s.columns[-1]
    order = np.argsort(-s["n"].to_numpy(), kind="stable")[:max_groups]
    s = s.iloc[order]
    fig = Figure(figsize=(8.5, max(2.5, 0.28 * len(s) + 1.2)))
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(s))
    # the interval as a line, the mean as a point: a skewed posterior's mean can lie outside
    # its highest-density interval, which an error bar around the mean cannot draw
    ax.hlines(y + 0.15, s[lo], s[hi], color="#1f5fa8", lw=1.2)
    ax.plot(
        s["mean"],
        y + 0.15,
        "o",
        ms=4,
        color="#1f5fa8",
        label=literal(f"{model.name} posterior mean, {level:.0%} HDI"),
    )
    ax.plot(s["empirical"], y - 0.15, "s", ms=4, color="#888", label="empirical rate")
    ax.set_yticks(y)
    ax.set_yticklabels(
        [literal(f"{a}  (n={n:,})") for a, n in zip(s["intersection"], s["n"], strict=True)],
        fontsize=8,
    )
    ax.set_ylim(len(s) - 0.5, -0.5)  # largest first, half a row of margin
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("P(y = 1 | s)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
