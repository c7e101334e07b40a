"""The report's "frequentist companions" section: permutation tests of error-rate disparities."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._validation import SeedLike, check_instance
from .._vocabulary import N_RESAMPLES
from ..data import AuditData
from ..frequentist import intersectional_permutation_test, permutation_test
from ..metrics.rate_intervals import probability_higher, rate_and_rest
from ..metrics.rates import RATE_DEFINITIONS, rate_name, unknown_rate
from .html import Report, Table, Text

__all__ = ["add_frequentist_section", "frequentist_tests"]


def _flagged(data: AuditData, metric: str, by, group: str) -> dict:
    """The flagged group, its rate and the other rows' rate, and the posterior probability
    that its rate is the higher one."""
    (kg, ng), (kr, nr) = counts = rate_and_rest(data.table_for(by), metric, group)
    return {
        "flagged group": group,
        "its rate": kg / ng if ng else np.nan,
        "rest's rate": kr / nr if nr else np.nan,
        "P(flagged rate higher | data)": probability_higher(*counts),
    }


def frequentist_tests(
    data: AuditData,
    metrics: Sequence[str] = ("fpr", "fnr"),
    *,
    n_resamples: int = N_RESAMPLES,
    random_state: SeedLike = None,
    n_jobs: int | None = 1,
) -> pd.DataFrame:
    """The permutation tests of :func:`add_frequentist_section`, as a table.

    Parameters
    ----------
    data : AuditData
        With a decision.
    metrics : sequence of str, default ("fpr", "fnr")
    n_resamples : int, default 999
    random_state : None, int or numpy SeedSequence, Generator or RandomState, default None
    n_jobs : int, optional
        Permutation chunks run at once through joblib (-1: every core); the p-values do
        not depend on it.

    Returns
    -------
    pandas.DataFrame
        One row per metric and grouping (each protected attribute, and all of them):
        the test, its statistic and p-value, the flagged group and the posterior
        probability that its rate is higher; a test that cannot run says why.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.report import frequentist_tests
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> frequentist_tests(data, ["fpr"], n_resamples=99)["groups"].tolist()
    ['race', 'sex', 'nationality', 'race x sex x nationality']
    """
    check_instance(data, AuditData, "data", "an AuditData")
    rows = []
    for metric in map(rate_name, metrics):
        if metric not in RATE_DEFINITIONS:
            raise ValueError(unknown_rate(metric))
        for by in [[a] for a in data.protected] + (
            [list(data.protected)] if len(data.protected) > 1 else []
        ):
            label = " x ".join(by)
            table = data.table_for(by)
            groups = table["intersection"].tolist()
            den = table[list(RATE_DEFINITIONS[metric][1])].sum(axis=1).to_numpy()
            undefined = [g for g, d in zip(groups, den, strict=True) if d == 0]
            if len(groups) - len(undefined) < 2 or (len(groups) == 2 and undefined):
                # no test to run: say why in the table instead of failing the report
                rows.append(
                    {
                        "metric": metric,
                        "groups": label,
                        "test": f"not run: {metric} is undefined in "
                        f"{'; '.join(map(str, undefined))} (no rows in its denominator)",
                        "statistic": np.nan,
                        "pvalue": np.nan,
                    }
                )
                continue
            if len(groups) == 2:
                r = permutation_test(
                    data,
                    metric,
                    by=by,
                    n_resamples=n_resamples,
                    random_state=random_state,
                    n_jobs=n_jobs,
                )
                rows.append(
                    {
                        "metric": metric,
                        "groups": label,
                        "test": f"two groups, studentized, {r.permute} permutation",
                        "statistic": r.studentized_statistic,
                        "pvalue": r.pvalue,
                        **_flagged(
                            data,
                            metric,
                            by,
                            r.estimates.loc[r.estimates["value"].idxmax(), "group"],
                        ),
                    }
                )
            else:
                with warnings.catch_warnings():
                    # the groups left out are counted in the "test" column instead
                    warnings.filterwarnings("ignore", "[a-z]+ is undefined in", UserWarning)
                    r = intersectional_permutation_test(
                        data,
                        metric,
                        by=by,
                        n_resamples=n_resamples,
                        pairwise=False,
                        random_state=random_state,
                        n_jobs=n_jobs,
                    )
                g = r.groups.dropna(subset=["z_vs_rest"])
                # the group that attains the max-T statistic (p-values tie at their floor)
                worst = g.loc[g["z_vs_rest"].abs().idxmax(), "group"]
                over = f"{len(g)} groups"
                if len(g) < len(r.groups):
                    over = f"{len(g)} of {len(r.groups)} groups ({metric} undefined in the rest)"
                rows.append(
                    {
                        "metric": metric,
                        "groups": label,
                        "test": f"max-T over {over}, studentized, {r.permute} permutation",
                        "statistic": r.statistic,
                        "pvalue": r.pvalue,
                        **_flagged(data, metric, by, worst),
                    }
                )
    return pd.DataFrame(rows)


def add_frequentist_section(
    report: Report,
    data: AuditData | None = None,
    metrics: Sequence[str] = ("fpr", "fnr"),
    *,
    n_resamples: int = N_RESAMPLES,
    random_state: SeedLike = None,
    tests: pd.DataFrame | None = None,
) -> Report:
    """Studentized permutation tests of each metric across the groups of every protected
    attribute and across all intersections (max-T, family-wise error controlled).

    Parameters
    ----------
    report : Report
        The report to extend.
    data : AuditData
        With a decision (not needed with ``tests``).
    metrics : sequence of str, default ("fpr", "fnr")
    n_resamples : int, default 999
    random_state : None, int or numpy SeedSequence, Generator or RandomState, default None
    tests : pandas.DataFrame, optional
        The tests, computed already by :func:`frequentist_tests` (with ``n_resamples``).

    Returns
    -------
    Report
        ``report``, extended.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> from bayesfair.report import Report, add_frequentist_section
    >>> rep = add_frequentist_section(Report("audit"), data, ["fpr"], n_resamples=199)
    >>> [s.title for s in rep.sections]
    ['Frequentist companions: permutation tests']
    """
    check_instance(report, Report, "report", "a Report")
    if tests is None:
        tests = frequentist_tests(data, metrics, n_resamples=n_resamples, random_state=random_state)
    rows = tests
    sec = report.section("Frequentist companions: permutation tests")
    sec.add(
        Text(
            "Studentized permutation tests (DiCiccio et al.): the null hypothesis is that the "
            f"metric is equal across the groups; {n_resamples} permutations drawn as "
            "hypergeometric tables. Group labels are permuted within the rows the metric "
            "averages over (y = 1 or y = 0 for error rates given the outcome, decision = 1 or 0 "
            "for predictive values, all rows for selection rate and accuracy), which makes each "
            "test exact at any group size. "
            "For more than two groups the statistic is the largest studentized gap of a group from "
            "the rest, which controls the family-wise error over groups. Flagged group: the one "
            "with the higher rate (two groups) or the one whose gap attains the max-T statistic, "
            "whether its rate is higher or lower than the rest's (both rates are shown). Beside "
            "each p-value, the posterior probability (Jeffreys priors) that the flagged group's "
            "rate is higher than that of the other rows: the Bayesian reading of the same data."
        )
    )
    sec.add(Table(rows, float_format="{:.4g}"))
    return report
