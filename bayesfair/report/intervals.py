"""The report's section on the intervals of epsilon-DF and gamma-SF: the default
(calibrated) interval beside the others, and how often each covered on replicate tables
of the audited one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt

from .._table_intervals import CALIBRATION_SCENARIOS
from ..calibration import AMPLIFICATION, SMOOTHED
from .html import Figure, Report, Table, Text

__all__ = ["add_interval_section", "interval_check_words"]

_SCENARIO_WORDS = {
    "posterior": "rates drawn from the hierarchical posterior",
    "observed": "the observed rates (smoothed)",
    "shrunk": "the rates with their noise shrunk away",
    "fair": "equal rates",
}
_SMOOTHED_WORDS = "the smoothed rates themselves, as uneven as the table"


def interval_check_words(cal: Any, metric: str) -> str:
    """One sentence: how the default interval of ``metric`` was checked on this audit (its
    coverage in the scenarios on which it was chosen is marked in-sample).

    Parameters
    ----------
    cal : IntervalCalibration
    metric : {"epsilon-DF", "gamma-SF"}

    Returns
    -------
    str

    Examples
    --------
    >>> import bayesfair as bf
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.report import interval_check_words
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> cal = bf.interval_calibration(data, n_replicates=20, random_state=0)
    >>> interval_check_words(cal, "gamma-SF").startswith("covered ")
    True
    """
    c = cal.coverage
    c = c[(c["method"] == "calibrated") & (c["metric"] == metric)]
    parts = ", ".join(
        f"{r.coverage:.2f} ({r.scenario}"
        f"{', in-sample' if r.scenario in CALIBRATION_SCENARIOS else ''})"
        for r in c.itertuples()
    )
    return f"covered {parts} of {cal.n_replicates} replicate tables each"


def add_interval_section(
    report: Report, intervals: Mapping[str, Any], notes: Sequence[str] = ()
) -> Report:
    """Add the intervals of epsilon-DF and gamma-SF and their measured coverage.

    Parameters
    ----------
    report : Report
    intervals : mapping
        ``{table: IntervalCalibration}`` (:func:`~bayesfair.interval_calibration`).
    notes : sequence of str
        Tables on which no interval could be put, and why.

    Returns
    -------
    Report
        ``report``, with the section added.

    Examples
    --------
    >>> import bayesfair as bf
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.report import Report, add_interval_section
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> cal = bf.interval_calibration(data, n_replicates=20, random_state=0)
    >>> add_interval_section(Report("audit"), {"outcome": cal}).sections[0].title
    'Intervals of epsilon-DF and gamma-SF, and how often they cover'
    """
    sec = report.section("Intervals of epsilon-DF and gamma-SF, and how often they cover")
    first = next(iter(intervals.values()))
    sec.add(
        Text(
            f"The default {first.level:.0%} interval (calibrated) is a posterior interval "
            "of a hierarchical model of the counts (bayesfair.HierarchicalCounts: attribute "
            "effects and intersection deviations, a small intersection's allowed to depart "
            "as far as its own rows' noise, nested Laplace), with its lower end at 0 "
            "where a test of equal rates does not reject at the "
            f"{1 - first.level:.0%} level (where it rejects, at most the same test inverted "
            "along the path from equal rates to the posterior mean), epsilon-DF's moved "
            "down by the bias its median "
            "showed on replicate tables drawn from the posterior (not the amplification's), "
            "at the credible mass whose "
            f"intervals held the truth in {first.level:.0%} of the replicate tables of the "
            "posterior and observed scenarios (the 'hierarchical' rows are the same "
            "posterior, uncorrected, at the nominal mass). Every "
            "interval was recomputed on replicate tables "
            "with this table's intersection sizes and checked against the replicate's truth, "
            "in four scenarios: "
            + "; ".join(f"{k}: {v}" for k, v in _SCENARIO_WORDS.items())
            + ". Where the hierarchical posterior rules the smoothed rates out as a truth, "
            "the observed scenario draws from constrained-Bayes rates instead, and a fifth, "
            f"{SMOOTHED}: {_SMOOTHED_WORDS}, checks the interval against them out of sample. "
            "The calibrated interval's coverage in the posterior and observed scenarios "
            "is in-sample. "
            "A coverage far from the level says the interval cannot be read at face value "
            "if the population looks like that scenario. The amplification's table (decisions "
            "minus labels) models the labels and the decisions given each label, so the "
            "difference keeps the correlation of two columns of the same rows; its interval "
            "may hold negative values and its lower end is not set to 0."
        )
    )
    for role, cal in intervals.items():
        table = cal.summary().drop(columns=["level"])
        sec.add(
            Table(
                table,
                caption=f"{role}: intervals and their coverage (equal rates"
                + (" of decisions" if role == AMPLIFICATION else "")
                + f": p = {cal.equal_rates_pvalue:.3g})",
                float_format="{:.3g}",
            )
        )
        fig, ax = plt.subplots(figsize=(6, 4))
        cal.plot(ax=ax)
        sec.add(Figure(fig, caption=f"{role}: coverage of each interval by scenario"))
        plt.close(fig)
        for note in cal.notes:
            sec.add(Text(f"{role}: {note}."))
    for note in notes:
        sec.add(Text(note))
    return report
