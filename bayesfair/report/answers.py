"""The report's first section: the audit's questions answered in plain words, each with its
number, its interval (kind and level) and the method that produced it, Bayesian and
frequentist side by side where both exist.

Questions: how unequal are outcomes and decisions across intersections (epsilon-DF, gamma-SF)
and do decisions amplify the labels' inequality; which error-rate gaps are largest (the
extreme intersections' FPR and FNR, their difference with a confidence and a posterior
interval, the max-T test over intersections); how unequal are error rates (epsilon-DF of
P(decision | y, s), the equalized-odds form of differential fairness); which subgroup the
conditional bias scan flags; which small groups the data cannot speak for.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .._repr import listed
from ..calibration import AMPLIFICATION, table_name
from ..frequentist._pvalues import holm_floor
from ..frequentist.fairness_bounds import intervals_from_counts
from ..metrics import epsilon_df, group_rates, outcome_probabilities
from ..metrics.rate_intervals import jeffreys_difference, newcombe_difference
from .html import Report, Section, Table, Text
from .intervals import interval_check_words
from .scan import scans_table

__all__ = ["add_answers_section", "audit_answers"]

#: intersections with fewer rows than this are "small": too few to speak for on their own
SMALL_GROUP = 30


#: why an empirical epsilon-DF is infinite, and where a finite one is
INFINITE_EDF = (
    "infinite: a rate of 0 or 1 in some intersection; the smoothed EDF in the fairness "
    "table (fairness_table(), the report) has a finite one"
)


def _fmt(x: float) -> str:
    return "inf" if x == math.inf else "-inf" if x == -math.inf else f"{x:.3g}"


def _interval(lo: float, hi: float, kind: str) -> str:
    return f"[{_fmt(lo)}, {_fmt(hi)}] ({kind})"


def _fairness_rows(result: Any, level: float) -> list[dict]:
    emp = result.empirical
    ci_kind = f"{level:.0%} CI, Clopper-Pearson projection"
    rows = []
    targets = [("outcome", "outcomes (labels)")]
    if emp.data.has_decision:
        targets.append(("decision", "decisions"))
    posterior = _posterior(result, level)
    for role, words in targets:
        est = emp.estimates[(role, "EDF")]
        ci = emp.intervals.get(role)
        for metric, value, interval in (
            ("epsilon-DF", est.epsilon, ci.epsilon_interval if ci else None),
            ("gamma-SF", est.gamma, ci.gamma_interval if ci else None),
        ):
            cal = getattr(result, "intervals", {}).get(role)
            if cal is not None:
                question = f"How unequal are {words} across intersections?"
                rows.append(_default_row(cal, metric, question, f"{metric} of {role}", level))
            rows.append(
                {
                    "question": f"How unequal are {words} across intersections?",
                    "answer": f"{metric} of {role} = {_fmt(value)}"
                    + (f", attained by {est.gamma_group}" if metric == "gamma-SF" else "")
                    + (f" ({INFINITE_EDF})" if math.isinf(value) else ""),
                    "estimate": value,
                    "interval": _interval(*interval, ci_kind) if interval else "—",
                    "method": "empirical (EDF) with frequentist interval",
                }
            )
            if (role, metric) in posterior:
                med, lo, hi = posterior[(role, metric)]
                rows.append(
                    {
                        "question": f"How unequal are {words} across intersections?",
                        "answer": f"{metric} of {role}: posterior median {_fmt(med)}",
                        "estimate": med,
                        "interval": _interval(
                            lo,
                            hi,
                            f"{level:.0%} HDI, hierarchical logistic regression, not checked "
                            "for coverage",
                        ),
                        "method": "Bayesian: hierarchical logistic regression (NUTS)",
                    }
                )
    amp = emp.amplification
    if amp is not None:
        cal = getattr(result, "intervals", {}).get(AMPLIFICATION)
        for r in amp[amp["method"] == "EDF"].itertuples(index=False):
            if cal is not None:
                question = "Do the decisions amplify the labels' inequality?"
                subject = f"{r.metric} of decisions minus labels"
                rows.append(_default_row(cal, r.metric, question, subject, level))
            lo, hi = r.lower, r.upper
            if math.isfinite(r.amplification):
                answer = f"{r.metric} of decisions minus labels = {_fmt(r.amplification)}" + (
                    " (an amplification)" if r.amplification > 0 else ""
                )
            else:
                answer = (
                    f"{r.metric} of decisions minus labels cannot be computed: the metric is "
                    f"{INFINITE_EDF}"
                )
            rows.append(
                {
                    "question": "Do the decisions amplify the labels' inequality?",
                    "answer": answer,
                    "estimate": r.amplification,
                    "interval": _interval(lo, hi, f"{level:.0%} CI, both targets' intervals"),
                    "method": "empirical (EDF) with frequentist interval",
                }
            )
    return rows


def _default_row(cal: Any, metric: str, question: str, subject: str, level: float) -> dict:
    """The answer of the audit's default interval (:func:`~bayesfair.interval_calibration`)
    to ``question``, about ``subject`` (what the metric is of)."""
    r = cal.intervals.set_index(["metric", "method"]).loc[(metric, "calibrated")]
    corrected = cal.bias_corrected[metric]
    kind = f"{level:.0%} posterior, hierarchical, calibrated: credible mass {r['credible_mass']:g}"
    if corrected:
        kind += f", bias correction {-cal.bias_correction.get(metric, 0.0):+.3g}"
    if r["lower"] == 0 and cal.role != AMPLIFICATION:  # rates: 0 where equal rates hold
        if cal.equal_rates_pvalue >= 1 - level:
            kind += f"; lower end 0: equal rates not rejected, p = {cal.equal_rates_pvalue:.2g}"
        elif corrected:
            kind += (
                f"; lower end 0 after the bias correction (equal rates rejected, "
                f"p = {cal.equal_rates_pvalue:.2g})"
            )
    path = (cal.path_lower or {}).get(metric)
    if path is not None and r["lower"] > 0 and np.isclose(r["lower"], path, rtol=0, atol=1e-12):
        kind += (
            "; lower end from the test of equal rates inverted along the path to the "
            "posterior mean (the least uneven world on it the test keeps)"
        )
    if metric == "epsilon-DF" and cal.unpooled:
        u = cal.unpooled
        kind += (
            f"; {u['intersections']} intersection(s) of at most {u['max_rows']} rows, too few "
            f"to check the hierarchy: with their rates anywhere their rows allow, "
            f"[{_fmt(u['lower'])}, {_fmt(u['upper'])}]"
        )
    short = cal.shortfall.get(metric)
    if short:
        covered = ", ".join(f"{c:.2f} ({s})" for s, c in short.items())
        kind += (
            f"; short of its level on this table's replicates even at that mass, covered "
            f"{covered}: read the Clopper-Pearson interval"
        )
    uneven = (cal.uneven or {}).get("short", {}).get(metric)
    if uneven is not None:
        kind += (
            f"; were the rates as uneven as the table's (which the hierarchy rules out, the "
            f"data do not), it would cover only {uneven:.2f}: the Clopper-Pearson interval "
            "holds either way"
        )
    median = "bias-corrected posterior median" if corrected else "posterior median"
    return {
        "question": question,
        "answer": f"{subject}: {median} {_fmt(r['estimate'])}",
        "estimate": r["estimate"],
        "interval": _interval(r["lower"], r["upper"], kind),
        "method": "Bayesian: hierarchical model of the counts (nested Laplace), its "
        + ("bias and credible mass" if corrected else "credible mass")
        + " calibrated on replicate tables, the default; "
        + interval_check_words(cal, metric),
    }


def _posterior(result: Any, level: float) -> dict:
    """(role, metric) -> (median, HDI low, HDI high) of the HLR fits, when fitted: the
    posterior's own summary (:class:`~bayesfair.models.PosteriorFairness`), which the
    report's Bayesian section shows too."""
    if result.bayesian is None:
        return {}
    from ..models import posterior_fairness

    out = {}
    fits = {"outcome": result.bayesian["labels"], "decision": result.bayesian["decisions"]}
    for role, models in fits.items():
        if not models or "HLR" not in models:
            continue
        s = posterior_fairness(models["HLR"], level=level, random_state=result.random_state)
        s = s.summary()
        s = s.set_index("metric")
        for metric, key in (("epsilon-DF", "epsilon"), ("gamma-SF", "gamma")):
            row = s.loc[key]
            lo, hi = row["lower"], row["upper"]
            if np.isfinite(row["median"]):
                out[(role, metric)] = (float(row["median"]), float(lo), float(hi))
    return out


def _error_rows(result: Any, level: float) -> list[dict]:
    data = result.data
    if not data.has_decision:
        return []
    gaps, rows = [], []  # each question's answers together: the gaps, then equalized odds
    for metric, words in (("fpr", "false positive rate"), ("fnr", "false negative rate")):
        r = group_rates(data, metric)  # every intersection, with the rate's counts
        den = r["denominator"].to_numpy(float)
        k = r["numerator"].to_numpy(float)
        ok = den >= 1
        if ok.sum() < 2:
            continue
        labels = r["intersection"].reset_index(drop=True)
        gaps.append(_gap_row(result, metric, words, labels, k, den, level))
        # epsilon-DF of P(decision | y, s): the equalized-odds form of differential fairness
        d_pos = k if metric == "fpr" else den - k  # decisions = 1 among the class
        p = np.where(ok[:, None], outcome_probabilities(d_pos / np.maximum(den, 1)), np.nan)
        eps = float(epsilon_df(p))
        given = "y = 0" if metric == "fpr" else "y = 1"
        cal = getattr(result, "intervals", {}).get(
            table_name("decision", 0 if metric == "fpr" else 1)
        )
        if cal is not None:
            question = "How unequal are error rates (equalized odds)?"
            subject = f"epsilon-DF of P(decision | {given}, s)"
            rows.append(_default_row(cal, "epsilon-DF", question, subject, level))
        try:
            ci = intervals_from_counts(
                den[ok], d_pos[ok], list(labels[ok]), level=level, role="decision", by=()
            )
            interval = _interval(
                *ci.epsilon_interval, f"{level:.0%} CI, Clopper-Pearson projection"
            )
        except ValueError:
            interval = "—"
        rows.append(
            {
                "question": "How unequal are error rates (equalized odds)?",
                "answer": f"epsilon-DF of P(decision | {given}, s) = {_fmt(eps)}",
                "estimate": eps,
                "interval": interval,
                "method": "empirical (EDF) with frequentist interval",
            }
        )
    return gaps + rows


def _gap_row(result: Any, metric: str, words: str, labels, k, den, level: float) -> dict:
    """The answer on the gap between the intersections with the highest and the lowest
    ``metric`` (rates ``k / den``), among those large enough to speak for themselves (the
    small ones are named in their own answer; all with a denominator where fewer than two
    are). The pair is the data's most extreme of all pairs, so its confidence interval is
    one that holds for every pair at once (Newcombe's at the Bonferroni level): it holds
    for the pair chosen."""
    ok = den >= 1
    rate = np.where(ok, k / np.maximum(den, 1), np.nan)
    large = den >= SMALL_GROUP
    among = large if large.sum() >= 2 else ok
    ranked = np.where(among, rate, np.nan)
    hi_i, lo_i = int(np.nanargmax(ranked)), int(np.nanargmin(ranked))
    same = ranked[hi_i] == ranked[lo_i]
    if same:  # no gap: the pair whose interval is the widest, the two smallest
        hi_i, lo_i = (int(i) for i in np.argsort(np.where(among, den, np.inf))[:2])
    scope = (
        f" (among intersections with {SMALL_GROUP}+ rows in its denominator)"
        if among is large
        else ""
    )
    args = (k[hi_i], den[hi_i], k[lo_i], den[lo_i])
    test = _max_t(result, metric)
    pairs = int(among.sum() * (among.sum() - 1) // 2)
    kind = f"{level:.0%} CI, Newcombe"
    if pairs > 1:
        kind += (
            f", simultaneous over the {pairs} pairs (Bonferroni): the pair is the data's most "
            "extreme"
        )
    alone = ", this pair alone" if pairs > 1 else ""
    if same:
        kind += f"; of the two smallest intersections, {labels[hi_i]} and {labels[lo_i]}"
        found = f"{rate[hi_i]:.3g} in every one of the {int(among.sum())} intersections, no gap"
    else:
        found = (
            f"{labels[hi_i]} {rate[hi_i]:.3g} (of {den[hi_i]:.0f}) vs "
            f"{labels[lo_i]} {rate[lo_i]:.3g} (of {den[lo_i]:.0f})"
        )
    return {
        "question": "Which error-rate gaps are largest?",
        "answer": f"{words}{scope}: {found}"
        + (f"; max-T test over intersections p = {test:.3g}" if test is not None else ""),
        "estimate": rate[hi_i] - rate[lo_i],
        "interval": _interval(*newcombe_difference(*args, 1 - (1 - level) / pairs), kind)
        + "; "
        + _interval(*jeffreys_difference(*args, level), f"{level:.0%} posterior, Jeffreys{alone}"),
        "method": "difference of the extreme intersections' rates",
    }


def _max_t(result: Any, metric: str) -> float | None:
    tests = result.tests
    if tests is None:
        return None
    every = " x ".join(result.data.protected)
    hit = tests[(tests["metric"] == metric) & (tests["groups"] == every)]
    return None if hit.empty or pd.isna(hit["pvalue"].iloc[0]) else float(hit["pvalue"].iloc[0])


def _scan_rows(result: Any) -> list[dict]:
    if not result.scans:
        return []
    s = scans_table(result.scans)
    top = s.iloc[0]
    many = len(s) > 1
    p_flag = top["pvalue_holm"] if many else top["pvalue"]
    flagged = p_flag < 0.05 and top["score"] > 0
    where = (
        f"the whole class {top['protected']}"
        if top["subgroup"] == "all values"
        else f"within {top['protected']}: {top['subgroup']}"
    )
    answer = (
        f"{where}, false positive rate "
        f"{top['rate_protected']:.3g} vs {top['rate_comparison']:.3g} outside the class"
        if flagged
        else "no subgroup with a false positive rate above its expectation at p < 0.05"
        + (f", adjusted for the {len(s)} classes scanned" if many else "")
    )
    p_text = f"p = {top['pvalue']:.3g} ({int(top['n_resamples'])} permutations)"
    if many:
        p_text += f"; {top['pvalue_holm']:.3g} adjusted for the {len(s)} classes scanned (Holm)"
        floor = holm_floor(len(s), result.n_resamples)
        if floor >= 0.05:  # a p-value must be below 0.05 to flag
            p_text += (
                f"; with {result.n_resamples} permutations no adjusted p-value can be below "
                f"{floor:.3g}: n_resamples of at least {20 * len(s)} let a scan "
                "reach 0.05"
            )
    return [
        {
            "question": "Which subgroup does the bias scan flag?",
            "answer": answer,
            "estimate": top["score"],
            "interval": p_text,
            "method": "conditional bias scan (Boxer et al.), permutation p-value"
            + (", Holm-adjusted over the classes scanned" if many else ""),
        }
    ]


def _small_rows(result: Any) -> list[dict]:
    t = result.data.table
    empty = t.loc[t["n"] == 0, "intersection"].tolist()
    small = t.loc[(t["n"] > 0) & (t["n"] < SMALL_GROUP), "intersection"].tolist()

    parts = []
    if empty:
        parts.append(f"{len(empty)} without rows ({listed(empty, 6)})")
    if small:
        parts.append(f"{len(small)} with fewer than {SMALL_GROUP} rows ({listed(small, 6)})")
    answer = "; ".join(parts) if parts else f"none: every intersection has {SMALL_GROUP}+ rows"
    if parts and result.per_group is not None:
        answer += "; see the per-group estimates, which borrow strength across groups"
    return [
        {
            "question": "Which small groups can the data not speak for?",
            "answer": answer,
            "estimate": float(len(empty) + len(small)),
            "interval": "—",
            "method": "counts of the intersections",
        }
    ]


def audit_answers(result: Any) -> pd.DataFrame:
    """The audit's questions answered: one row per answer, with its estimate, its interval
    (kind and level) and the method.

    Parameters
    ----------
    result : FullAuditResult
        From :func:`bayesfair.audit`.

    Returns
    -------
    pandas.DataFrame
        Columns ``question``, ``answer``, ``estimate``, ``interval``, ``method``.

    Examples
    --------
    >>> import bayesfair as bf
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.report import audit_answers
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> answers = audit_answers(bf.audit(data, n_resamples=19))
    >>> answers["question"].drop_duplicates().tolist()[:2]  # doctest: +NORMALIZE_WHITESPACE
    ['How unequal are outcomes (labels) across intersections?',
     'How unequal are decisions across intersections?']
    """
    level = result.empirical.level
    rows = (
        _fairness_rows(result, level)
        + _error_rows(result, level)
        + _scan_rows(result)
        + _small_rows(result)
    )
    return pd.DataFrame(rows, columns=["question", "answer", "estimate", "interval", "method"])


def add_answers_section(report: Report, result: Any) -> Report:
    """Put the answers (:func:`audit_answers`) first in ``report``.

    Parameters
    ----------
    report : Report
    result : FullAuditResult

    Returns
    -------
    Report
        ``report``, with the answers as its first section.

    Examples
    --------
    >>> import bayesfair as bf
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.report import Report, add_answers_section
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> rep = add_answers_section(Report("audit"), bf.audit(data, n_resamples=19))
    >>> rep.sections[0].title
    'Answers'
    """
    sec = Section("Answers")
    sec.add(
        Text(
            "The audit's questions, each answered with its number, its interval (kind and "
            "level) and the method; frequentist and Bayesian answers side by side where both "
            "were computed. The sections below give the details."
        )
    )
    sec.add(Table(audit_answers(result), float_format="{:.3g}", wrap=True))
    report.sections.insert(0, sec)
    return report
