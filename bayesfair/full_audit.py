"""The whole audit in one call: what ``bayesfair audit`` runs, as a Python result.

:func:`audit` runs the empirical audit (:func:`~bayesfair.run_audit`), and, as the data
allow, the permutation tests of error rates, the conditional bias scans of false positive
rates, the per-group estimates for small groups and (``bayes=True``) the Bayesian models of
labels and decisions.  A part that cannot run is named with the reason and the argument that
would enable it, in :meth:`FullAuditResult.summary` and in the report; nothing is left out
silently.  The command line is a thin shell over it, so the two give the same report.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._output import raise_if_stopped
from ._repr import compact_repr
from ._result import ResultMixin, diagnostics_warning, worst_diagnostics
from ._validation import SeedLike, check_count, check_flag, check_n_jobs, check_seed
from ._vocabulary import LEVEL, N_RESAMPLES, PSEUDO_COUNT, renamed_arguments
from .calibration import AMPLIFICATION, interval_calibration, table_name
from .data import AuditData, as_audit_data
from .empirical_audit import AuditResult, run_audit
from .report import (
    Report,
    Text,
    add_answers_section,
    add_bayesian_section,
    add_disaggregated_section,
    add_frequentist_section,
    add_interval_section,
    add_scan_section,
    frequentist_tests,
    scan_audit_data,
    scans_table,
)

__all__ = ["FullAuditResult", "audit"]

#: replicate tables per scenario of each interval check in an audit (at most; a coverage
#: of 0.9 to within 0.03), which runs four checks: labels, decisions, and the decisions
#: given each outcome
AUDIT_REPLICATES = 100

#: the parts of the whole audit, in the report's order
PARTS = ("fairness", "bayesian", "tests", "scans", "per_group")
_PART_TITLES = {
    "fairness": "epsilon-DF and gamma-SF of labels and decisions, error rates (empirical)",
    "bayesian": "Bayesian models of labels and decisions (Dirichlet-multinomial, HLR)",
    "tests": "permutation tests of error rates (frequentist)",
    "scans": "conditional bias scans of false positive rates",
    "per_group": "per-group estimates for small groups",
}


@dataclass
class FullAuditResult(ResultMixin):  # numpydoc ignore=PR01
    """Everything :func:`audit` computed; ``report()`` renders it as ``bayesfair audit`` does.

    Attributes
    ----------
    empirical : AuditResult
        The empirical audit (fairness table, rates, intervals).
    intervals : dict
        ``{table: IntervalCalibration}``: the default intervals of epsilon-DF and gamma-SF
        of the labels (``"outcome"``), the decisions (``"decision"``) and the decisions
        among the rows of each outcome (``"decision | outcome = 0"`` and ``= 1``: the
        error rates), and of the amplification (``"amplification"``: decisions minus
        labels), with their coverage on replicate tables
        (:func:`~bayesfair.interval_calibration`); empty with fewer than two
        intersections with rows.
    interval_notes : list of str
        Tables on which no interval could be put, and why.
    bayesian : dict or None
        ``{"labels": {name: model}, "decisions": {name: model} or None}``: fitted models.
    tests : pandas.DataFrame or None
        The permutation tests (:func:`~bayesfair.report.frequentist_tests`).
    scans : list or None
        Conditional bias scan results (:func:`~bayesfair.report.scan_audit_data`).
    scan_notes : list of str
        Protected classes or covariates the scans left out, and why.
    per_group : DisaggregatedResult or None
        Per-group estimates (:func:`~bayesfair.disaggregated_evaluation`).
    not_run : dict
        Part -> why it did not run and what would run it.
    n_resamples : int
        Resamples of each test, scan and bootstrap.
    random_state : int or None
        The seed the audit ran with (drawn at random when none was given): pass it as
        ``random_state`` to run the same audit again.
    """

    __repr__ = compact_repr

    empirical: AuditResult
    intervals: dict[str, Any] = field(default_factory=dict)
    interval_notes: list[str] = field(default_factory=list)
    bayesian: dict[str, Any] | None = None
    tests: pd.DataFrame | None = None
    scans: list | None = None
    scan_notes: list[str] = field(default_factory=list)
    per_group: Any = None
    not_run: dict[str, str] = field(default_factory=dict)
    n_resamples: int = N_RESAMPLES
    random_state: int | None = None

    @property
    def data(self) -> AuditData:
        """The audited data."""
        return self.empirical.data

    def fairness_table(self) -> pd.DataFrame:
        """The empirical fairness table (:meth:`AuditResult.fairness_table`).

        Returns
        -------
        pandas.DataFrame
        """
        return self.empirical.fairness_table()

    def not_run_lines(self) -> list[str]:
        """The parts that did not run, those stopped by the same reason on one line: their
        titles, then the reason and what would run them (the report's "Not run" section and
        the command line's last lines).

        Returns
        -------
        list of str
        """
        by_reason: dict[str, list[str]] = {}
        for part, why in self.not_run.items():
            by_reason.setdefault(why, []).append(_PART_TITLES[part])
        lines = ["; ".join(titles) + f": {why}" for why, titles in by_reason.items()]
        return [line[:1].upper() + line[1:] for line in lines]  # not str.capitalize: "HLR"

    def summary(self) -> pd.DataFrame:
        """Which parts of the audit ran, and for those that did not, why and how to run them.

        Returns
        -------
        pandas.DataFrame
            Columns ``part``, ``what``, ``ran`` and ``detail``.
        """
        rows = []
        for part in PARTS:
            ran = part not in self.not_run
            detail = self._headline(part) if ran else self.not_run[part]
            rows.append({"part": part, "what": _PART_TITLES[part], "ran": ran, "detail": detail})
        return pd.DataFrame(rows)

    def _headline(self, part: str) -> str:
        if part == "fairness":
            return self._fairness_headline()
        if part == "tests":
            return f"{len(self.tests)} tests, {self.n_resamples} permutations each"
        if part == "scans":
            words = f"{len(self.scans)} protected classes scanned"
            t = scans_table(self.scans) if self.scans else None
            if t is not None and t["pvalue"].notna().any():
                top = t.iloc[0]
                words += f"; smallest p = {top['pvalue']:.3g}"
                if len(t) > 1:
                    words += f", {top['pvalue_holm']:.3g} adjusted for the {len(t)} (Holm)"
            return words
        if part == "per_group":
            return f"{self.per_group.table['group'].nunique()} groups"
        fits = [*self.bayesian["labels"].values(), *(self.bayesian["decisions"] or {}).values()]
        worst = worst_diagnostics(getattr(m, "diagnostics_", {}) for m in fits)
        words = diagnostics_warning(pd.DataFrame([worst])) if worst else None
        names = [_MODEL_NAMES.get(name, name) for name in self.bayesian["labels"]]
        return " and ".join(names) + " fitted" + (f"; {words}" if words else "")

    def _fairness_headline(self) -> str:
        """epsilon-DF of labels and decisions: the default (calibrated) estimate and
        interval where the audit computed it, marked where it fell short of its level;
        else the EDF."""
        t = self.fairness_table()
        edf = t[(t["method"] == "EDF") & (t["metric"] == "epsilon-DF")]
        parts = []
        for r in edf.itertuples():
            cal = self.intervals.get(r.role)
            if cal is None:
                parts.append(f"{r.role}: epsilon-DF {r.value:.3g} (EDF)")
                continue
            c = cal.intervals.set_index(["metric", "method"]).loc[("epsilon-DF", "calibrated")]
            short = ""
            if "epsilon-DF" in cal.shortfall:
                short = "; short of its level, see the answers"
            elif "epsilon-DF" in (cal.uneven or {}).get("short", {}):
                short = "; short were the rates as uneven as the table's, see the answers"
            parts.append(
                f"{r.role}: epsilon-DF {c['estimate']:.3g} [{c['lower']:.3g}, {c['upper']:.3g}] "
                f"(default {cal.level:.0%} interval{short})"
            )
        return "; ".join(parts)

    def to_frame(self) -> pd.DataFrame:
        """The audit's answers (:func:`~bayesfair.report.audit_answers`): one row per answer
        with its estimate, interval and method.

        Returns
        -------
        pandas.DataFrame
        """
        from .report import audit_answers

        return audit_answers(self)

    def plot(self, ax=None):
        """The empirical audit's plot (:meth:`AuditResult.plot`): every intersection's rate
        of outcomes and of decisions.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: a new figure's axes).

        Returns
        -------
        matplotlib.axes.Axes
        """
        return self.empirical.plot(ax)

    def report(self, report: Report | None = None) -> Report:
        """The audit's report: the sections ``bayesfair audit`` writes, in its order.

        Parameters
        ----------
        report : Report, optional
            A report to extend.

        Returns
        -------
        Report
            Call ``.save(path)`` for a self-contained HTML file.
        """
        rep = self.empirical.report(report)
        add_answers_section(rep, self)
        if self.intervals:
            add_interval_section(rep, self.intervals, notes=self.interval_notes)
        if self.bayesian is not None:
            add_bayesian_section(
                rep,
                self.bayesian["labels"],
                self.bayesian["decisions"],
                level=self.empirical.level,
                random_state=self.random_state,
            )
        if self.tests is not None:
            add_frequentist_section(rep, tests=self.tests, n_resamples=self.n_resamples)
        if self.scans is not None:
            add_scan_section(rep, self.scans, notes=self.scan_notes)
        if self.per_group is not None:
            add_disaggregated_section(rep, self.per_group)
        if self.not_run:
            sec = rep.section("Not run")
            for line in self.not_run_lines():
                sec.add(Text(line))
        rep.section("Settings").add(
            Text(
                f"Intervals at {self.empirical.level:.0%}; {self.n_resamples} resamples per "
                f"permutation test, scan and bootstrap; random_state={self.random_state} "
                "(pass it to bf.audit, or --random-state on the command line, to repeat this "
                "audit)."
            )
        )
        return rep


def _print_step(line: str) -> None:
    """``progress=True``: a step of the audit on stderr, as the command line prints it."""
    print(f"bayesfair: {line}", file=sys.stderr, flush=True)


def _calibrated_intervals(
    data: AuditData,
    level: float,
    seed: int,
    n_resamples: int,
    progressbar: bool = False,
    n_jobs: int | None = 1,
) -> tuple[dict, list[str]]:
    """The default intervals of labels and decisions, of the decisions given each outcome
    (error rates) and of the amplification (decisions minus labels), with their coverage
    on replicates; the tables on which no interval can be put, with the reason."""
    tables = [("outcome", None)]
    if data.has_decision:
        tables += [("decision", None), ("decision", 0), ("decision", 1), (AMPLIFICATION, None)]
    reps = max(10, min(n_resamples, AUDIT_REPLICATES))
    out, notes = {}, []
    for i, (role, given) in enumerate(tables):
        key = table_name(role, given)
        try:
            out[key] = interval_calibration(
                data,
                role=role,
                given_outcome=given,
                level=level,
                n_replicates=reps,
                random_state=seed + i,
                progressbar=progressbar,
                n_jobs=n_jobs,
            )
        except ValueError as err:
            notes.append(f"{key}: no interval ({err})")
    return out, notes


#: the Bayesian fits' keys (Foulds et al.'s names) in words
_MODEL_NAMES = {"EDF": "Dirichlet-multinomial", "HLR": "hierarchical logistic regression"}


def _bayesian_fits(data: AuditData, seed: int, draws: int) -> dict:
    """Dirichlet-multinomial and HLR fits of the labels (and of the decisions, if any)."""
    from .models import DirichletMultinomial, HierarchicalLogisticRegression

    def fits(role: str, offset: int) -> dict:
        return {
            "EDF": DirichletMultinomial(draws=draws, random_state=seed + offset).fit(data, role),
            "HLR": HierarchicalLogisticRegression(
                draws=draws, tune=draws, random_state=seed + offset + 1
            ).fit(data, role),
        }

    labels = fits("outcome", 0)
    decisions = fits("decision", 10) if data.has_decision else None
    return {"labels": labels, "decisions": decisions}


def _per_group(
    data: AuditData,
    bayes: bool,
    seed: int,
    draws: int,
    hb_main_effects: str,
    n_resamples: int,
    level: float = LEVEL,
):
    from .disaggregated import HierarchicalBayes, StructuredRegression, disaggregated_evaluation

    est = [
        "standard",
        "james_stein",
        "empirical_bayes",
        StructuredRegression(n_resamples=n_resamples),
    ]
    if bayes:
        est.append(HierarchicalBayes(draws=draws, tune=draws, main_effects=hb_main_effects))
    return disaggregated_evaluation(
        data,
        metrics=["selection_rate", "fpr", "fnr"],
        estimators=est,
        level=level,
        random_state=seed,
    )


def _scans(
    data: AuditData, seed: int, n_resamples: int, n_jobs: int | None = 1
) -> tuple[list, list[str]]:
    """The scans, and the warnings they gave (classes or covariates left out), which are
    said again on stderr as before and kept for the report."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        scans = scan_audit_data(data, n_resamples=n_resamples, random_state=seed, n_jobs=n_jobs)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return scans, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def _audit_seed(random_state: SeedLike) -> int:
    """An integer seed for the audit's steps: the one given, or one drawn (and then
    reported) when none was, so that every audit can be repeated exactly."""
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        return check_count(random_state, "random_state", minimum=0)
    seq = check_seed(random_state)  # None: fresh entropy
    return int(seq.generate_state(1)[0])


def _not_run(data: AuditData, bayes: bool) -> dict[str, str]:
    """The parts that cannot run on these data, with the reason and the fix."""
    out = {}
    if not bayes:
        out["bayesian"] = "not asked for; pass bayes=True (command line: --bayes)"
    if not data.has_decision:
        why = (
            "the data have no decision; give decision= (a 0/1 column) or score= with "
            "threshold= to AuditData (command line: --decision, or --score with --threshold)"
        )
        out.update(tests=why, scans=why, per_group=why)
    elif not data.has_rows:
        why = (
            "the data are a per-intersection count table; the scans and per-group estimates "
            "need the rows (give AuditData the rows instead of from_counts)"
        )
        out.update(scans=why, per_group=why)
    return out


@renamed_arguments(alpha="pseudo_count")
def audit(
    data: AuditData,
    *,
    bayes: bool = False,
    level: float = LEVEL,
    pseudo_count: float = PSEUDO_COUNT,
    name: str | None = None,
    truth: Mapping[str, Any] | None = None,
    n_resamples: int = N_RESAMPLES,
    random_state: SeedLike = None,
    draws: int = 1000,
    hb_main_effects: str = "auto",
    progress: bool | Callable[[str], None] | None = None,
    n_jobs: int | None = 1,
    **roles: Any,
) -> FullAuditResult:
    """Run the whole audit: the empirical fairness of labels and decisions with confidence
    intervals, and as the data allow, the permutation tests of error rates, the conditional
    bias scans of false positive rates, the per-group estimates for small groups and
    (``bayes=True``) the Bayesian models of labels and decisions.

    What needs a decision (tests, scans, per-group estimates) or the rows (scans, per-group
    estimates) is not run without it, and the result says so, with the argument that would
    run it; ``bayesfair audit`` is this call from the shell.

    Parameters
    ----------
    data : AuditData
    bayes : bool, default False
        Fit the Bayesian models (Dirichlet-multinomial and HLR by NUTS) and add hierarchical
        Bayes to the per-group estimates; minutes on large data.
    level : float, default 0.9
        Level of the confidence intervals of epsilon-DF and gamma-SF.
    pseudo_count : float, default 0.5
        Dirichlet pseudo-count of the smoothed EDF.
    name : str, optional
        The report's title.
    truth : mapping, optional
        Known truth of synthetic data (``epsilon``, ``gamma``).
    n_resamples : int, default 999
        Resamples of each permutation test and scan, bootstrap replicates of the
        per-group intervals, and replicate tables (at most 100 per scenario) of
        the interval checks (:func:`~bayesfair.interval_calibration`).
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, default None
        Seeds every random step: permutations, the scans' restarts and permutations,
        bootstraps, samplers.  Without one, a seed is drawn and kept in the result
        (``random_state``) and the report, so that any audit can be run again exactly.
    draws : int, default 1000
        NUTS draws (and tuning steps) per chain of the HLR fits and hierarchical Bayes.
    hb_main_effects : {"auto", "non-centred", "centred"}, default "auto"
        Coordinates of hierarchical Bayes' main effects.
    progress : bool or callable, optional
        ``True`` prints each step to stderr as it starts, with the time since the start,
        as the command line does; a callable is called with those lines instead. Several
        sections are an expensive computation (the interval checks refit hundreds of
        replicate tables); with either, the interval checks also show a progress bar over
        their replicate tables.
    n_jobs : int, optional
        Chunks of replicate tables (interval checks) and of permutations (tests and scans)
        run at once through joblib (-1: every core); the result does not depend on it.
    **roles
        With a DataFrame as ``data``: its columns' roles, as :class:`~bayesfair.AuditData`
        takes them (``protected=``, ``outcome=``, ``decision=``, ``score=``,
        ``threshold=``, ...).

    Returns
    -------
    FullAuditResult
        ``.summary()``, ``.fairness_table()``, ``.report()``.

    Notes
    -----
    Twelve parameters: the options of the parts the audit runs, so that one call gives what
    the command line gives; each has the command line's default.

    Examples
    --------
    >>> import bayesfair as bf
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> res = bf.audit(data, n_resamples=19)
    >>> res.summary().set_index("part")["ran"].to_dict()
    {'fairness': True, 'bayesian': False, 'tests': True, 'scans': True, 'per_group': True}
    """
    data = as_audit_data(data, roles)
    bayes = check_flag(bayes, "bayes")
    n_resamples = check_count(n_resamples, "n_resamples")
    seed = _audit_seed(random_state)
    draws = check_count(draws, "draws")
    check_n_jobs(n_jobs)
    if hb_main_effects not in ("auto", "non-centred", "centred"):
        raise ValueError(
            f"`hb_main_effects` must be 'auto', 'non-centred' or 'centred', got {hb_main_effects!r}"
        )
    if progress is True:  # the command line's lines, on stderr
        progress = _print_step
    elif progress is False:
        progress = None
    if progress is not None and not callable(progress):
        raise TypeError(
            f"`progress` must be True, False or a callable taking a str, got {progress!r}"
        )
    t0 = time.perf_counter()

    def step(what: str) -> None:
        raise_if_stopped()  # a sampler may have swallowed an interrupt
        if progress is not None:
            progress(f"[{time.perf_counter() - t0:6.1f} s] {what}")

    empirical = run_audit(data, pseudo_count=pseudo_count, name=name, truth=truth, level=level)
    out = FullAuditResult(
        empirical, not_run=_not_run(data, bayes), n_resamples=n_resamples, random_state=seed
    )
    if empirical.intervals:  # as run_audit: at least two intersections with rows
        step("intervals of epsilon-DF and gamma-SF, checked on replicate tables")
        out.intervals, out.interval_notes = _calibrated_intervals(
            data, level, seed, n_resamples, progressbar=progress is not None, n_jobs=n_jobs
        )
    if bayes:
        step("Bayesian models of the labels and decisions (Dirichlet-multinomial, HLR by NUTS)")
        out.bayesian = _bayesian_fits(data, seed, draws)
    if "tests" not in out.not_run:
        step("permutation tests")
        out.tests = frequentist_tests(
            data, n_resamples=n_resamples, random_state=seed, n_jobs=n_jobs
        )
    if "scans" not in out.not_run:
        step("conditional bias scans of false positive rates")
        out.scans, out.scan_notes = _scans(data, seed, n_resamples, n_jobs)
    if "per_group" not in out.not_run:
        step("per-group estimates" + (" (with hierarchical Bayes)" if bayes else ""))
        out.per_group = _per_group(data, bayes, seed, draws, hb_main_effects, n_resamples, level)
    step("writing the report")
    return out
