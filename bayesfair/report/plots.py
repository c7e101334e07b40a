"""Plots for the report and for notebooks (object-oriented matplotlib, no global state)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from scipy.stats import beta

from ..data import AuditData

__all__ = ["jeffreys_interval", "plot_group_rates"]


def jeffreys_interval(
    k: np.ndarray, n: np.ndarray, prob: float = 0.9
) -> tuple[np.ndarray, np.ndarray]:
    """Jeffreys interval for binomial proportions (NaN where n = 0)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    a = (1 - prob) / 2
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, beta.ppf(a, k + 0.5, n - k + 0.5), 0.0)
        hi = np.where(k < n, beta.ppf(1 - a, k + 0.5, n - k + 0.5), 1.0)
    return np.where(n > 0, lo, np.nan), np.where(n > 0, hi, np.nan)


def plot_group_rates(data: AuditData, *, prob: float = 0.9) -> Figure:
    """Positive rate of the outcome (and decision) per intersection, with intervals.

    Intersections are ordered by size; the label carries the number of rows,
    and empty intersections are listed with ``n=0`` and no estimate, so the
    reader sees which groups the data cannot speak for.
    """
    targets = ["outcome"] + (["decision"] if data.row_decision is not None else [])
    n = data.group_sizes()
    order = np.argsort(-n, kind="stable")
    labels = [f"{data.group_labels[i]}  (n={n[i]:,})" for i in order]
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
        lo, hi = jeffreys_interval(k, m, prob)
        ax.errorbar(
            rate,
            ypos + offsets[t],
            xerr=np.vstack([rate - lo, hi - rate]),
            fmt="o",
            ms=4,
            capsize=2,
            color=colors[t],
            label=f"P({t}=1 | s), {prob:.0%} Jeffreys interval",
        )
    ax.set_yticks(ypos)
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("positive rate")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig
