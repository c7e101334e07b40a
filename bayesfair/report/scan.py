"""The report's "subgroup scan" section: Conditional Bias Scans of the audited data."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pandas as pd
from matplotlib.figure import Figure as MplFigure

from .._repr import listed
from .._validation import SeedLike, check_instance, is_numeric_not_bool
from .._vocabulary import N_RESAMPLES
from .._warning_location import user_stacklevel
from ..data import AuditData
from ..frequentist._pvalues import holm
from ..scan import CBSResult, SubsetSearch, conditional_bias_scan
from ..scan.ihat import Inestimable
from .html import Figure, Report, Table, Text

__all__ = ["add_scan_section", "scan_audit_data", "scans_table"]


def scan_audit_data(
    data: AuditData,
    *,
    n_resamples: int = N_RESAMPLES,
    n_restarts: int = 20,
    penalty: float = 1.0,
    random_state: SeedLike = None,
    n_jobs: int | None = 1,
) -> list[CBSResult]:
    """FPR scans (separation scan for recommendations, Y = 0, higher FPR) with each value of
    each protected attribute as the protected class, over the other protected attributes and
    the covariates that are categorical (or boolean).  A class without rows of outcome 0,
    or whose complement has none or only one decision among them, cannot be scanned and
    is named in a warning.  Numeric covariates are left out, with a warning that names
    them: a subgroup is a set of values, and a numeric column (the audited score, say)
    would give ranges of its own; bin one (``pd.cut``) to scan it, or call
    :func:`~bayesfair.scan.conditional_bias_scan` with ``ordinal``.

    Parameters
    ----------
    data : AuditData
        With a decision.
    n_resamples : int, default 999
    n_restarts : int, default 20
    penalty : float, default 1
        As in :func:`~bayesfair.scan.conditional_bias_scan`.
    random_state : None, int or numpy SeedSequence, Generator or RandomState, default None
    n_jobs : int, optional
        Permutation chunks run at once through joblib (-1: every core); the p-values do
        not depend on it.

    Returns
    -------
    list of CBSResult

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> from bayesfair.report import scan_audit_data
    >>> results = scan_audit_data(data, n_resamples=19, n_restarts=2)
    >>> len(results)  # one scan per value of race (4), sex (2) and nationality (2)
    8
    """
    check_instance(data, AuditData, "data", "an AuditData")
    data.require_rows("a bias scan")
    if data.row_decision is None:
        raise ValueError("a scan of recommendations needs a decision (or a score and threshold)")
    numeric = [c for c in data.covariates if is_numeric_not_bool(data.frame[c])]
    if numeric:
        warnings.warn(
            f"numeric covariate(s) {numeric} are not scanned (a subgroup is a set of values); "
            "bin them, e.g. with pd.cut, to scan them, or call conditional_bias_scan with "
            "ordinal=[...]",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    attrs = list(data.protected) + [c for c in data.covariates if c not in numeric]
    # named after the audit's own columns, which the results' descriptions show
    f, outcome, decision = data._coded_frame(attrs)
    f[attrs] = f[attrs].astype(str)
    out: list[CBSResult] = []
    skipped: dict[str, list[str]] = {}  # reason -> the classes it stopped
    for attr in data.protected:
        if len(attrs) < 2:
            break
        for value in data.categories[attr]:
            prot = (f[attr] == str(value)).to_numpy()
            if prot.all() or not prot.any():
                continue
            try:
                out.append(
                    conditional_bias_scan(
                        f,
                        protected_class=(attr, str(value)),
                        scan_type="separation_recommendations",
                        outcome=outcome,
                        decision=decision,
                        condition_value=0,
                        attributes=[a for a in attrs if a != attr],
                        search=SubsetSearch(penalty=penalty, n_restarts=n_restarts),
                        n_resamples=n_resamples,
                        random_state=random_state,
                        n_jobs=n_jobs,
                    )
                )
            except Inestimable as err:  # the scan's own reason, with the columns' names
                skipped.setdefault(str(err), []).append(f"{attr} = {value}")
    if skipped:
        total = sum(map(len, skipped.values()))
        warnings.warn(
            f"{total} protected class(es) not scanned: "
            + "; ".join(f"{listed(names, 8, ', ')} ({why})" for why, names in skipped.items()),
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return out


def scans_table(results: Sequence[CBSResult]) -> pd.DataFrame:
    """One row per scan (:meth:`CBSResult.summary`), with its p-value adjusted for the
    number of scans (``pvalue_holm``).

    Each scan's permutation p-value accounts for its search over subgroups, within one
    protected class. An audit scans every value of every protected attribute, and the
    smallest of several p-values is small by chance more often than each is: Holm's (1979)
    step-down adjustment keeps the chance of flagging any class wrongly at most the level,
    whatever the scans' dependence.

    Parameters
    ----------
    results : sequence of CBSResult

    Returns
    -------
    pandas.DataFrame
        The summaries' columns and ``pvalue_holm``, the most significant scan first (by
        p-value, then score; scans without a p-value last).

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.report import scan_audit_data, scans_table
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> t = scans_table(scan_audit_data(data, n_resamples=19, n_restarts=2))
    >>> bool((t["pvalue_holm"] >= t["pvalue"]).all())
    True
    """
    table = pd.concat([r.summary() for r in results], ignore_index=True)
    table["pvalue_holm"] = holm(table["pvalue"].to_numpy(float))
    return table.sort_values(
        ["pvalue", "score"], ascending=[True, False], na_position="last", ignore_index=True
    )


def add_scan_section(
    report: Report, results: Sequence[CBSResult], *, notes: Sequence[str] = ()
) -> Report:
    """A table of Conditional Bias Scan results (Table-4 layout) and their null distributions.

    Parameters
    ----------
    report : Report
        The report to extend.
    results : sequence of CBSResult
        For example from :func:`scan_audit_data`.
    notes : sequence of str, optional
        What was not scanned and why (for example the warnings of
        :func:`scan_audit_data`), shown under the table.

    Returns
    -------
    Report
        ``report``, extended.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> from bayesfair.report import Report, add_scan_section, scan_audit_data
    >>> rep = add_scan_section(Report("audit"), scan_audit_data(data, n_resamples=19))
    >>> [s.title for s in rep.sections]
    ['Subgroup scan (Conditional Bias Scan)']
    """
    check_instance(report, Report, "report", "a Report")
    if isinstance(results, CBSResult):
        results = [results]
    for r in results if isinstance(results, Sequence) else [results]:
        check_instance(r, CBSResult, "results", "a list of CBSResult (conditional_bias_scan)")
    sec = report.section("Subgroup scan (Conditional Bias Scan)")
    notes = [notes] if isinstance(notes, str) else list(notes)
    if not results:
        why = "." if notes else " (it needs a decision and at least two attributes)."
        sec.add(Text("No scan was run" + why))
        for note in notes:
            sec.add(Text(note))
        return report
    sec.add(
        Text(
            "For each protected class, the subgroup (a set of values of the other attributes) "
            "whose observed rate deviates most from what it would be under no bias, I-hat, "
            "estimated from the non-protected class reweighted to resemble the protected class "
            "(Boxer et al.). 'rate_comparison' is the same subgroup in the non-protected class. "
            "p-values come from re-running the whole scan on data with the protected labels "
            "permuted, so they account for the search over subgroups"
            + (
                f"; 'pvalue_holm' also for the {len(results)} classes scanned (Holm's "
                "step-down adjustment: a class is flagged at 0.05 if it is below 0.05)."
                if len(results) > 1
                else "."
            )
        )
    )
    table = scans_table(results)
    if len(results) == 1:
        table = table.drop(columns="pvalue_holm")
    table = table.sort_values("score", ascending=False)
    if (table["pvalue_note"] == "").all():  # every p-value computed: nothing to say
        table = table.drop(columns="pvalue_note")
    sec.add(Table(table, float_format="{:.3f}"))
    for note in notes:
        sec.add(Text(note))
    best = max(results, key=lambda r: r.score)
    if len(best.null_distribution):
        # a Figure outside pyplot's registry: a process writing many reports keeps none open
        fig = MplFigure(figsize=(5.5, 3))
        best.plot(ax=fig.add_subplot())
        sec.add(
            Figure(
                fig,
                caption=f"Highest-scoring scan ({best.describe()}): observed score against "
                "the maximum scores of the permuted data sets.",
            )
        )
    return report
