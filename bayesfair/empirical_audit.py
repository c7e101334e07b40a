"""The main job: from an AuditData to tables, fairness estimates and a report."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._plotting import dot_plot, literal, new_axes
from ._repr import compact_repr
from ._result import ResultMixin
from ._validation import check_open_probability
from ._vocabulary import LEVEL, PSEUDO_COUNT, renamed_arguments
from .data import AuditData, as_audit_data
from .frequentist import FairnessConfidenceInterval, fairness_confidence_interval
from .frequentist.fairness_bounds import amplification_bounds
from .metrics import (
    FairnessEstimate,
    bias_amplification,
    empirical_fairness,
    group_auc,
    group_rates,
)
from .report import Figure, KeyValues, Report, Table, Text, plot_group_rates
from .report import plots as _plots

__all__ = ["AuditResult", "run_audit"]


@dataclass
class AuditResult(ResultMixin):  # numpydoc ignore=PR01
    """Everything the empirical audit computed; ``report()`` renders it.

    Attributes
    ----------
    data : AuditData
    name : str
        Title of the audit.
    pseudo_count : float
        The smoothed EDF's Dirichlet concentration.
    estimates : dict
        ``{(role, method): FairnessEstimate}`` for role ``"outcome"`` and,
        with a decision, ``"decision"``; methods ``"EDF"`` and ``"smoothed"``.
    amplification : pandas.DataFrame or None
        Bias amplification (decision minus outcome) for both methods, with its
        confidence interval on the EDF rows.
    rates : pandas.DataFrame or None
        Confusion-matrix rates per intersection (with a decision).
    auc : pandas.DataFrame or None
        AUC per intersection (with a score).
    truth : dict
        Known ground truth of synthetic data (``epsilon``, ``gamma``), if given.
    notes : list of str
        What was excluded and why.
    intervals : dict
        ``{role: FairnessConfidenceInterval}``: confidence intervals of the
        population's epsilon-DF and gamma-SF at ``level``.
    level : float
        Their confidence level.
    """

    __repr__ = compact_repr

    data: AuditData
    name: str
    pseudo_count: float
    estimates: dict[tuple[str, str], FairnessEstimate]
    amplification: pd.DataFrame | None
    rates: pd.DataFrame | None
    auc: pd.DataFrame | None
    truth: Mapping[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    intervals: dict[str, FairnessConfidenceInterval] = field(default_factory=dict)
    level: float = LEVEL

    def fairness_table(self) -> pd.DataFrame:
        """epsilon-DF and gamma-SF for every role and method, with where they are attained.

        Returns
        -------
        pandas.DataFrame
            One row per role, method and metric (:meth:`FairnessEstimate.summary`
            rows); the EDF rows carry the confidence interval of the population's value
            (``lower``, ``upper`` and ``level``; see
            :func:`~bayesfair.frequentist.fairness_confidence_interval`), and the known
            truth of synthetic data is added where given.
        """
        rows = []
        for (role, method), est in self.estimates.items():
            s = est.summary()
            s.insert(0, "role", s.pop("role"))
            ci = self.intervals.get(role) if method == "EDF" else None
            s["lower"] = [ci.epsilon_interval[0], ci.gamma_interval[0]] if ci else np.nan
            s["upper"] = [ci.epsilon_interval[1], ci.gamma_interval[1]] if ci else np.nan
            s["level"] = self.level if ci else np.nan
            rows.append(s)
        out = pd.concat(rows, ignore_index=True)
        if self.truth:
            truth = {"epsilon-DF": self.truth.get("epsilon"), "gamma-SF": self.truth.get("gamma")}
            out["truth (outcome)"] = [
                truth[m] if t == "outcome" else None
                for m, t in zip(out["metric"], out["role"], strict=True)
            ]
        return out

    def summary(self) -> pd.DataFrame:
        """The audit's headline table: :meth:`fairness_table`.

        Returns
        -------
        pandas.DataFrame
        """
        return self.fairness_table()

    def plot(self, ax=None):
        """P(outcome=1 | s) and, with decisions, P(decision=1 | s) of every intersection
        (EDF): how unequal each is, and what the decisions add to the labels.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: a new figure's axes).

        Returns
        -------
        matplotlib.axes.Axes
        """
        g = self.estimates[("outcome", "EDF")].groups
        names = g["intersection"]
        ax = new_axes(ax, figsize=(5, 0.3 * len(g) + 1.2))
        dot_plot(ax, names, g["p"], label="P(outcome=1 | s)")
        if ("decision", "EDF") in self.estimates:
            d = self.estimates[("decision", "EDF")].groups.set_index("intersection")["p"]
            dot_plot(
                ax, names, d.reindex(names), label="P(decision=1 | s)", color="C1", offset=0.25
            )
        ax.legend(fontsize=7, loc="best")
        ax.set_title(literal(self.name), fontsize=9)
        return ax

    def report(self, report: Report | None = None) -> Report:
        """Add this audit's sections to ``report`` (a new one by default) and return it.

        Parameters
        ----------
        report : Report, optional
            A report to extend (for example with Bayesian or scan sections).

        Returns
        -------
        Report
            Call ``.save(path)`` for a self-contained HTML file.
        """
        rep = report or Report(f"bayesfair audit: {self.name}")
        d = self.data
        sec = rep.section("Data and intersections")
        sec.add(
            KeyValues(
                {
                    "rows": f"{d.n_rows:,}"
                    + ("" if d.has_rows else " (counted: the audit has the count table only)"),
                    "protected attributes": ", ".join(
                        f"{c} ({len(d.categories[c])} values)" for c in d.protected
                    ),
                    "intersections": f"{d.n_intersections} ({len(d.empty_intersections)} empty)",
                    "outcome": d.outcome,
                    "score": d.score or "—",
                    "decision": d.decision
                    or (f"score >= {d.threshold:g}" if d.threshold is not None else "—"),
                }
            )
        )
        for note in self.notes:
            sec.add(Text(note))
        sec.add(Table(d.table, caption="Per-intersection counts (the sufficient statistic)."))
        sec.add(
            Figure(
                plot_group_rates(d, max_groups=_plots.MAX_CHART_ROWS),
                caption="Positive rate per intersection, largest groups first, with 90% "
                "Jeffreys intervals; the width shows how little small groups say."
                + _plots.chart_rows_note(d.n_intersections, "AuditData.table"),
            )
        )
        sec = rep.section("Intersectional fairness: epsilon-DF and gamma-SF")
        sec.add(
            Text(
                "epsilon-DF is the largest log-ratio of P(y|s) between two intersections "
                "(0 is perfectly fair); gamma-SF the largest |P(y=1) - P(y=1|s)| P(s). EDF uses "
                f"raw frequencies; smoothed EDF a Dirichlet prior ({self.pseudo_count:g} "
                "per outcome; Foulds et al. eqs. 3-4). Both estimates lean upwards: a largest "
                "difference of noisy rates is rarely 0, even where the population's rates are "
                f"equal. The {self.level:.0%} confidence interval beside EDF covers the "
                "population's value at any group size, a fair population's 0 included "
                "(Clopper-Pearson intervals of the rates and shares, projected; conservative)."
            )
        )
        sec.add(Table(self.fairness_table(), float_format="{:.4f}"))
        if self.amplification is not None:
            sec.add(
                Text(
                    "Bias amplification: the decision's unfairness minus the data's. Its "
                    f"{self.level:.0%} confidence interval (beside EDF) takes the two targets' "
                    f"intervals at {1 - (1 - self.level) / 2:.1%} each and their far ends."
                )
            )
            sec.add(Table(self.amplification, float_format="{:.4f}"))
        if self.rates is not None:
            sec = rep.section("Per-intersection error rates")
            wide = self.rates.pivot_table(
                index="intersection", columns="metric", values="value", sort=False, dropna=False
            ).reset_index()
            wide.insert(1, "n", d.group_sizes())
            sec.add(Table(wide, float_format="{:.3f}"))
        if self.auc is not None:
            sec = rep.section("Per-intersection AUC")
            sec.add(Table(self.auc, float_format="{:.3f}"))
        return rep


def _amplification_interval(data: AuditData, level: float) -> np.ndarray:
    """Intervals of the amplification ``mechanism - data`` of epsilon-DF and gamma-SF
    (:func:`~bayesfair.frequentist.fairness_bounds.amplification_bounds`)."""
    labels, decisions = data.counts("outcome"), data.counts("decision")
    return amplification_bounds(labels.sum(axis=1), labels[:, 1], decisions[:, 1], level)


def _check_truth(truth: object) -> dict:
    """The known truth of synthetic data: a mapping (``epsilon``, ``gamma``, ...) or None."""
    if truth is None:
        return {}
    if not isinstance(truth, Mapping):
        raise TypeError(
            f"`truth` must be a mapping such as {{'epsilon': 0.5, 'gamma': 0.01}}, got "
            f"{type(truth).__name__}"
        )
    return dict(truth)


@renamed_arguments(alpha="pseudo_count")
def run_audit(
    data: AuditData,
    *,
    pseudo_count: float = PSEUDO_COUNT,
    name: str | None = None,
    truth: Mapping[str, Any] | None = None,
    level: float = LEVEL,
    **roles: Any,
) -> AuditResult:
    """Run the empirical audit of ``data``: EDF and smoothed EDF of the labels and decisions,
    bias amplification, per-intersection rates and AUC.

    Parameters
    ----------
    data : AuditData
        The audited data; rates need a decision (or score and threshold), AUC a score.
    pseudo_count : float, default 0.5
        Dirichlet concentration of the smoothed EDF.
    name : str, optional
        Title of the report.
    truth : mapping, optional
        Known ``epsilon`` and ``gamma`` of synthetic data, shown beside the estimates.
    level : float, default 0.9
        Confidence level of the intervals of epsilon-DF and gamma-SF
        (:func:`~bayesfair.frequentist.fairness_confidence_interval`).
    **roles
        With a DataFrame as ``data``: its columns' roles, as :class:`~bayesfair.AuditData`
        takes them (``protected=``, ``outcome=``, ``decision=``, ``score=``,
        ``threshold=``, ...).

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> from bayesfair import run_audit
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> ds = make_gaussian_threshold(n_rows=3000, random_state=0)
    >>> result = run_audit(ds.audit_data(), truth=ds.truth)
    >>> sorted(set(result.fairness_table()["role"]))
    ['decision', 'outcome']
    """
    data = as_audit_data(data, roles)
    targets = ["outcome"] + (["decision"] if data.has_decision else [])
    notes: list[str] = []
    empty = data.empty_intersections
    if len(empty):
        notes.append(
            f"{len(empty)} intersection(s) have no rows and are left out of epsilon-DF (the "
            "definition covers intersections with P(s) > 0): " + "; ".join(empty["intersection"])
        )
    level = check_open_probability(level, "level")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"`name` must be a string (the report's title), got {name!r}")
    estimates, intervals = {}, {}
    seen = int((data.group_sizes() > 0).sum())
    if seen < 2:
        notes.append(
            f"{seen} intersection has rows: no confidence interval of epsilon-DF or gamma-SF, "
            "which compare at least two"
        )
    with warnings.catch_warnings():
        # The exclusion is reported once, in `notes`, instead of once per estimate.
        warnings.filterwarnings("ignore", message=".*empty intersection", category=UserWarning)
        warnings.filterwarnings("ignore", message=".*without rows", category=UserWarning)
        for t in targets:
            estimates[(t, "EDF")] = empirical_fairness(data, role=t, pseudo_count=0.0)
            estimates[(t, "smoothed")] = empirical_fairness(data, role=t, pseudo_count=pseudo_count)
            if seen >= 2:
                intervals[t] = fairness_confidence_interval(data, role=t, level=level)
    amp = None
    if "decision" in targets:
        parts = []
        for method in ("EDF", "smoothed"):
            a = bias_amplification(estimates[("decision", method)], estimates[("outcome", method)])
            a.insert(0, "method", estimates[("outcome", method)].method)
            has_ci = method == "EDF" and bool(intervals)
            a[["lower", "upper"]] = _amplification_interval(data, level) if has_ci else np.nan
            a["level"] = level if has_ci else np.nan
            parts.append(a)
        amp = pd.concat(parts, ignore_index=True)
    rates = group_rates(data) if "decision" in targets else None
    auc = group_auc(data) if data.has_rows and data.row_score is not None else None
    return AuditResult(
        data=data,
        name=name or "audit",
        pseudo_count=float(pseudo_count),
        estimates=estimates,
        amplification=amp,
        rates=rates,
        auc=auc,
        truth=_check_truth(truth),
        notes=notes,
        intervals=intervals,
        level=level,
    )
