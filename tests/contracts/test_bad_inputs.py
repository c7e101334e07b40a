"""Every bad input is refused before any work, by a ValueError or TypeError that names the
argument or column at fault.

The catalogue below is built argument by argument: each public entry point, each of its
arguments, each kind of wrong value (wrong type, out of range, NaN or inf, a missing
column, an empty or one-row input...).  A case passes only when the call raises a
ValueError or TypeError whose message names what to change; any other exception, a
message that names nothing, or a call that returns, fails it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

import bayesfair as bf
from bayesfair.disaggregated import EmpiricalBayes, HierarchicalBayes, StructuredRegression
from bayesfair.frequentist import permutation_test_counts
from bayesfair.models import (
    DirichletMultinomial,
    HierarchicalLogisticRegression,
    LogisticRegression,
    NaiveBayes,
)
from bayesfair.report import Report, Table
from bayesfair.scan import BayesianIhat, SubsetSearch, WeightedIhat


def _frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "race": rng.choice(["a", "b", "c"], n),
            "sex": rng.choice(["F", "M"], n),
            "age": rng.choice(["young", "old"], n),
            "y": rng.integers(0, 2, n),
            "p": rng.random(n),
        }
    )
    df["d"] = (df["p"] > 0.5).astype(int)
    return df


DF = _frame()


def _data(**kw) -> bf.AuditData:
    return bf.AuditData(DF, ["race", "sex"], "y", score="p", decision="d", **kw)


DATA = _data()
COUNTS = bf.aggregate_counts(DF, ["race", "sex"], "y", decision="d", score="p")


@dataclass
class Case:
    name: str
    call: Callable[[], object]
    names: tuple[str, ...]  # the message must contain one of these
    bayesian: bool = False  # reaches ArviZ or PyMC (make test-next runs it too)


CASES: list[Case] = []


def case(name: str, call: Callable[[], object], *names: str, bayesian: bool = False) -> None:
    CASES.append(Case(name, call, names, bayesian))


def with_column(column: str, values) -> pd.DataFrame:
    df = DF.copy()
    df[column] = values
    return df


# values of the wrong kind for each kind of argument
BAD_LEVELS = [0, 1, -0.1, 1.5, float("nan"), "0.9", None, True, [0.9]]
BAD_COUNTS = [0, -1, 1.5, "100", True, None, 10**9]
BAD_SEEDS = [-1, "x", 1.5, [1.5]]
BAD_JOBS = [0, "2", True, 1.5]
BAD_POSITIVE = [0, -1.0, float("nan"), float("inf"), "1", None]
BAD_NONNEG = [-1.0, float("nan"), float("inf"), "1", None]

# ------------------------------------------------------------------ AuditData
for bad, label in [
    ([1, 2], "list"),
    ({"race": ["a"]}, "dict"),
    (np.zeros((3, 3)), "ndarray"),
    (None, "None"),
    (DF["race"], "Series"),
]:
    case(f"AuditData-frame-{label}", lambda bad=bad: bf.AuditData(bad, ["race"], "y"), "frame")
for bad, label in [
    ("nope", "missing"),
    (["race", "nope"], "one-missing"),
    ([], "empty"),
    (["race", "race"], "twice"),
    (3, "int"),
    ([3], "int-in-list"),
    (None, "None"),
    ("y", "is-outcome"),
]:
    case(
        f"AuditData-protected-{label}",
        lambda bad=bad: bf.AuditData(DF, bad, "y"),
        "protected",
        "nope",
        "y",
    )
for col, values, label in [
    ("y", np.where(np.arange(300) % 2, 2, 0), "values-0-2"),
    ("y", np.where(np.arange(300) % 3 == 0, np.nan, 1.0), "nan"),
    ("y", np.array(["yes", "no"] * 150), "strings"),
    ("y", np.arange(300) % 3, "three-values"),
    ("y", np.ones(300), "constant-ok"),
]:
    if label == "constant-ok":
        continue
    case(
        f"AuditData-outcome-{label}",
        lambda col=col, values=values: bf.AuditData(with_column(col, values), ["race"], "y"),
        "'y'",
    )
case("AuditData-outcome-missing", lambda: bf.AuditData(DF, ["race"], "nope"), "nope")
case("AuditData-outcome-int", lambda: bf.AuditData(DF, ["race"], 3), "outcome")
for values, label in [
    (np.linspace(-0.5, 1.5, 300), "out-of-range"),
    (np.where(np.arange(300) == 5, np.nan, 0.5), "nan"),
    (np.where(np.arange(300) == 5, np.inf, 0.5), "inf"),
    (np.array(["0.5"] * 300), "strings"),
    (np.ones(300, dtype=bool), "bool"),
]:
    case(
        f"AuditData-score-{label}",
        lambda values=values: bf.AuditData(with_column("p", values), ["race"], "y", score="p"),
        "'p'",
    )
case("AuditData-score-missing", lambda: bf.AuditData(DF, ["race"], "y", score="nope"), "nope")
for values, label in [
    (np.arange(300) % 3, "three-values"),
    (np.where(np.arange(300) == 1, np.nan, 1.0), "nan"),
    (np.array(["x", "y"] * 150), "strings"),
]:
    case(
        f"AuditData-decision-{label}",
        lambda values=values: bf.AuditData(with_column("d", values), ["race"], "y", decision="d"),
        "'d'",
    )
for bad in [-0.1, 1.5, float("nan"), "0.5", True, [0.5]]:
    case(
        f"AuditData-threshold-{bad!r}",
        lambda bad=bad: bf.AuditData(DF, ["race"], "y", score="p", threshold=bad),
        "threshold",
    )
case(
    "AuditData-threshold-without-score",
    lambda: bf.AuditData(DF, ["race"], "y", threshold=0.5),
    "threshold",
    "score",
)
case(
    "AuditData-threshold-and-decision",
    lambda: bf.AuditData(DF, ["race"], "y", score="p", decision="d", threshold=0.5),
    "threshold",
    "decision",
)
case("AuditData-pos_label-absent", lambda: bf.AuditData(DF, ["race"], "y", pos_label=7), "7")
case(
    "AuditData-covariates-missing",
    lambda: bf.AuditData(DF, ["race"], "y", covariates=["nope"]),
    "nope",
)
case(
    "AuditData-covariates-is-protected",
    lambda: bf.AuditData(DF, ["race"], "y", covariates=["race"]),
    "race",
)
case(
    "AuditData-categories-unknown-column",
    lambda: bf.AuditData(DF, ["race"], "y", categories={"nope": ["a"]}),
    "nope",
)
case(
    "AuditData-categories-missing-value",
    lambda: bf.AuditData(DF, ["race"], "y", categories={"race": ["a", "b"]}),
    "race",
)
case(
    "AuditData-categories-not-mapping",
    lambda: bf.AuditData(DF, ["race"], "y", categories=["a"]),
    "categories",
)
case(
    "AuditData-protected-nan",
    lambda: bf.AuditData(with_column("race", [None] + ["a"] * 299), ["race"], "y"),
    "race",
)
case(
    "AuditData-protected-identifier",
    lambda: bf.AuditData(
        pd.DataFrame({"id": np.arange(3000), "y": np.arange(3000) % 2}), ["id"], "y"
    ),
    "id",
)
case("AuditData-empty-frame", lambda: bf.AuditData(DF.iloc[:0], ["race"], "y"), "row", "empty")
case(
    "AuditData-duplicate-column-names",
    lambda: bf.AuditData(pd.concat([DF, DF[["race"]]], axis=1), ["race"], "y"),
    "race",
)


# ------------------------------------------------------------------ AuditData.from_counts
def counts_with(**changes) -> pd.DataFrame:
    t = COUNTS.copy()
    for col, values in changes.items():
        if values is None:
            t = t.drop(columns=col)
        else:
            t[col] = values
    return t


G = len(COUNTS)
for col in ["n", "positives", "tp", "fp", "fn", "tn"]:
    for bad, label in [(-1, "negative"), (1.5, "fraction"), (np.nan, "nan"), ("x", "text")]:
        values = COUNTS[col].astype(object).copy()
        values.iloc[0] = bad
        case(
            f"from_counts-{col}-{label}",
            lambda values=values, col=col: bf.AuditData.from_counts(
                counts_with(**{col: values}), ["race", "sex"]
            ),
            f"'{col}'",
        )
case(
    "from_counts-positives-above-n",
    lambda: bf.AuditData.from_counts(
        counts_with(positives=COUNTS["n"] + 1, tp=COUNTS["tp"] + 1), ["race", "sex"]
    ),
    "positives <= n",
)
case(
    "from_counts-cells-do-not-add-up",
    lambda: bf.AuditData.from_counts(counts_with(tn=COUNTS["tn"] + 1), ["race", "sex"]),
    "tp + fp + fn + tn == n",
)
case(
    "from_counts-three-cells",
    lambda: bf.AuditData.from_counts(counts_with(tn=None), ["race", "sex"]),
    "tn",
)
for bad, label in [(-3.0, "negative"), (1e9, "above-n"), (np.nan, "nan"), (np.inf, "inf")]:
    case(
        f"from_counts-score_sum-{label}",
        lambda bad=bad: bf.AuditData.from_counts(
            counts_with(score_sum=np.r_[bad, COUNTS["score_sum"].iloc[1:]]), ["race", "sex"]
        ),
        "score_sum",
    )
for bad, label in [(5.0, "five"), (-2.0, "negative"), (np.inf, "inf")]:
    case(
        f"from_counts-mean_score-{label}",
        lambda bad=bad: bf.AuditData.from_counts(
            counts_with(score_sum=None, mean_score=np.full(G, bad)), ["race", "sex"]
        ),
        "mean_score",
    )
case(
    "from_counts-above-2-53",
    lambda: bf.AuditData.from_counts(
        counts_with(n=COUNTS["n"].astype(object) + 2**60, tn=COUNTS["tn"].astype(object) + 2**60),
        ["race", "sex"],
    ),
    "2**53",
)
case("from_counts-not-frame", lambda: bf.AuditData.from_counts([1, 2], "race"), "table")
case("from_counts-no-n", lambda: bf.AuditData.from_counts(counts_with(n=None), ["race"]), "'n'")
case(
    "from_counts-missing-protected",
    lambda: bf.AuditData.from_counts(COUNTS, ["nope"]),
    "nope",
)
case("from_counts-empty", lambda: bf.AuditData.from_counts(COUNTS.iloc[:0], ["race"]), "row")

# ------------------------------------------------------------------ array metrics
for bad, label in [
    (DATA, "AuditData"),
    ("0.5", "text"),
    ([[0.5, 1.5]], "above-1"),
    ([[-0.1, 1.1]], "negative"),
    (np.array([[np.nan, 1.0]]), "nan"),
    (0.5, "scalar"),
    ([["a", "b"]], "strings"),
]:
    case(f"epsilon_df-{label}", lambda bad=bad: bf.epsilon_df(bad), "`p`")
for p1, ps, label in [
    ([0.2, 0.6], [0.9, 0.9], "shares-not-1"),
    ([0.2, 0.6], [-1, 2], "negative-share"),
    ([0.2, 0.6], [np.nan, 1], "nan-share"),
    ([0.2, 0.6], [np.inf, 1], "inf-share"),
    ([0.2, 0.6], [0, 0], "zero-total"),
    ([0.2, 1.6], [0.5, 0.5], "p1-above-1"),
    ([np.nan, 0.6], [0.5, 0.5], "p1-nan"),
    ([0.2, 0.6], [0.2, 0.3, 0.5], "shape"),
    (DATA, [0.5, 0.5], "AuditData"),
]:
    case(f"gamma_sf-{label}", lambda p1=p1, ps=ps: bf.gamma_sf(p1, ps), "`p1`", "`p_s`")

# ------------------------------------------------------------------ empirical fairness, intervals
for bad in [-1.0, float("nan"), float("inf"), "1", None]:
    case(
        f"empirical_fairness-pseudo_count-{bad!r}",
        lambda bad=bad: bf.empirical_fairness(DATA, pseudo_count=bad),
        "pseudo_count",
    )
for bad in ["nope", 3, "decisions"]:
    case(
        f"empirical_fairness-role-{bad!r}",
        lambda bad=bad: bf.empirical_fairness(DATA, role=bad, pseudo_count=0),
        "role",
    )
    case(
        f"fairness_confidence_interval-role-{bad!r}",
        lambda bad=bad: bf.fairness_confidence_interval(DATA, role=bad),
        "role",
    )
for bad in ["nope", ["race", "nope"], 5, []]:
    case(
        f"empirical_fairness-by-{bad!r}",
        lambda bad=bad: bf.empirical_fairness(DATA, by=bad, pseudo_count=0),
        "by",
    )
    case(
        f"fairness_confidence_interval-by-{bad!r}",
        lambda bad=bad: bf.fairness_confidence_interval(DATA, by=bad),
        "by",
    )
for bad in BAD_LEVELS:
    case(
        f"fairness_confidence_interval-level-{bad!r}",
        lambda bad=bad: bf.fairness_confidence_interval(DATA, level=bad),
        "level",
    )
    case(f"run_audit-level-{bad!r}", lambda bad=bad: bf.run_audit(DATA, level=bad), "level")
for bad in [-1.0, float("nan"), "1", None, float("inf")]:
    case(
        f"run_audit-pseudo_count-{bad!r}",
        lambda bad=bad: bf.run_audit(DATA, pseudo_count=bad),
        "pseudo_count",
    )
case("run_audit-name-int", lambda: bf.run_audit(DATA, name=5), "name")
case(
    "empirical_fairness-no-decision",
    lambda: bf.empirical_fairness(bf.AuditData(DF, ["race"], "y"), role="decision", pseudo_count=0),
    "decision",
)
for fn_name in ["run_audit", "empirical_fairness", "fairness_confidence_interval", "group_rates"]:
    for bad, label in [(None, "None"), ([1, 2], "list"), ("data.csv", "path")]:
        case(
            f"{fn_name}-data-{label}",
            lambda fn_name=fn_name, bad=bad: getattr(bf, fn_name)(bad),
            "data",
        )

# ------------------------------------------------------------------ rates and permutation tests
for bad in ["nope", 3, ["fpr", "nope"]]:
    case(
        f"group_rates-metrics-{bad!r}", lambda bad=bad: bf.group_rates(DATA, bad), "nope", "metric"
    )
case("group_rates-by-missing", lambda: bf.group_rates(DATA, by="nope"), "by")
for test_name in ["permutation_test", "intersectional_permutation_test"]:
    entry = getattr(bf, test_name)
    kw = {"by": "sex"} if test_name == "permutation_test" else {}
    for bad in ["nope", 3, None, ["fpr", "fnr"]]:
        case(f"{test_name}-metric-{bad!r}", lambda e=entry, bad=bad: e(DATA, bad), "metric")
    for bad in BAD_COUNTS:
        case(
            f"{test_name}-n_resamples-{bad!r}",
            lambda e=entry, bad=bad, kw=kw: e(DATA, "fpr", n_resamples=bad, **kw),
            "n_resamples",
        )
    for bad in BAD_SEEDS:
        case(
            f"{test_name}-random_state-{bad!r}",
            lambda e=entry, bad=bad, kw=kw: e(DATA, "fpr", n_resamples=9, random_state=bad, **kw),
            "random_state",
        )
    for bad in BAD_JOBS:
        case(
            f"{test_name}-n_jobs-{bad!r}",
            lambda e=entry, bad=bad, kw=kw: e(DATA, "fpr", n_resamples=9, n_jobs=bad, **kw),
            "n_jobs",
        )
    for bad in ["sideways", 3]:
        case(
            f"{test_name}-permute-{bad!r}",
            lambda e=entry, bad=bad, kw=kw: e(DATA, "fpr", n_resamples=9, permute=bad, **kw),
            "permute",
        )
    for bad in ["nope", 3]:
        case(
            f"{test_name}-by-{bad!r}",
            lambda e=entry, bad=bad: e(DATA, "fpr", by=bad, n_resamples=9),
            "by",
        )
for bad in ["bigger", 1, None]:
    case(
        f"permutation_test-alternative-{bad!r}",
        lambda bad=bad: bf.permutation_test(DATA, "fpr", by="sex", alternative=bad),
        "alternative",
    )
    case(
        f"auc_permutation_test-alternative-{bad!r}",
        lambda bad=bad: bf.auc_permutation_test(DATA, by="sex", alternative=bad),
        "alternative",
    )
for bad in [("a",), ("a", "nope"), ("a", "a"), "ab", 5]:
    case(
        f"permutation_test-groups-{bad!r}",
        lambda bad=bad: bf.permutation_test(DATA, "fpr", by="race", groups=bad, n_resamples=9),
        "groups",
    )
case(
    "permutation_test-three-groups-without-groups",
    lambda: bf.permutation_test(DATA, "fpr", by="race", n_resamples=9),
    "groups",
)
for bad in [None, "yes", 1]:
    case(
        f"permutation_test-studentize-{bad!r}",
        lambda bad=bad: bf.permutation_test(DATA, "fpr", by="sex", studentize=bad, n_resamples=9),
        "studentize",
    )
for bad in BAD_COUNTS:
    case(
        f"auc_permutation_test-n_resamples-{bad!r}",
        lambda bad=bad: bf.auc_permutation_test(DATA, by="sex", n_resamples=bad),
        "n_resamples",
    )
case(
    "auc_permutation_test-no-score",
    lambda: bf.auc_permutation_test(bf.AuditData(DF, ["sex"], "y", decision="d"), by="sex"),
    "score",
)
case(
    "auc_permutation_test-counts-only",
    lambda: bf.auc_permutation_test(bf.AuditData.from_counts(COUNTS, ["race", "sex"]), by="sex"),
    "rows",
)
for bad, label in [
    ([1.7, 2, 3, 4], "fraction"),
    ([np.nan, 2, 3, 4], "nan"),
    ([-1, 2, 3, 4], "negative"),
    ([1, 2, 3], "three"),
    (["a", 2, 3, 4], "text"),
    ([np.inf, 2, 3, 4], "inf"),
    (None, "None"),
]:
    case(
        f"permutation_test_counts-cells_a-{label}",
        lambda bad=bad: permutation_test_counts(bad, [5, 5, 5, 5], "fnr", n_resamples=9),
        "cells_a",
    )
    case(
        f"permutation_test_counts-cells_b-{label}",
        lambda bad=bad: permutation_test_counts([5, 5, 5, 5], bad, "fnr", n_resamples=9),
        "cells_b",
    )
for bad in BAD_COUNTS:
    case(
        f"permutation_test_counts-n_resamples-{bad!r}",
        lambda bad=bad: permutation_test_counts([5, 5, 5, 5], [4, 6, 5, 5], n_resamples=bad),
        "n_resamples",
    )
for bad in BAD_COUNTS:
    case(
        f"metric_permutation_test-n_resamples-{bad!r}",
        lambda bad=bad: bf.metric_permutation_test(DF["p"], DF["sex"], n_resamples=bad),
        "n_resamples",
    )
case(
    "metric_permutation_test-length-mismatch",
    lambda: bf.metric_permutation_test(DF["p"].to_numpy(), DF["sex"].to_numpy()[:10]),
    "group",
    "values",
)
case(
    "metric_permutation_test-metric-unknown",
    lambda: bf.metric_permutation_test(DF["p"], DF["sex"], "nope"),
    "metric",
)
for bad in BAD_LEVELS:
    if bad is None:
        continue
    case(
        f"discrimination_test-level-{bad!r}",
        lambda bad=bad: bf.discrimination_test(DF["p"].to_numpy(), DF["sex"].to_numpy(), level=bad),
        "level",
    )
case(
    "discrimination_test-length-mismatch",
    lambda: bf.discrimination_test(DF["p"].to_numpy(), DF["sex"].to_numpy()[:5]),
    "group",
    "loss",
)

# ------------------------------------------------------------------ models
for cls, arg, bads in [
    (DirichletMultinomial, "pseudo_count", BAD_POSITIVE),
    (NaiveBayes, "a_y", BAD_POSITIVE),
    (NaiveBayes, "a_s", BAD_POSITIVE),
    (LogisticRegression, "sigma", BAD_POSITIVE),
    (LogisticRegression, "mu", [float("nan"), float("inf"), "0", None]),
    (HierarchicalLogisticRegression, "lam", BAD_POSITIVE),
    (HierarchicalLogisticRegression, "sigma1", BAD_POSITIVE),
    (LogisticRegression, "effects", ["none", 3]),
    (LogisticRegression, "method", ["gibbs", 3]),
    (DirichletMultinomial, "draws", [0, -1, 1.5, "10", True]),
    (DirichletMultinomial, "chains", [0, -1, 1.5, "4"]),
    (LogisticRegression, "draws", [0, -1, 1.5]),
    (LogisticRegression, "tune", [-1, 1.5]),
    (LogisticRegression, "chains", [0, 1.5]),
    (LogisticRegression, "target_accept", [0, 1, 1.5, "0.9"]),
    (LogisticRegression, "sampler", ["emcee", 3]),
    (DirichletMultinomial, "random_state", BAD_SEEDS),
]:
    for bad in bads:
        case(
            f"{cls.__name__}-{arg}-{bad!r}",
            lambda cls=cls, arg=arg, bad=bad: cls(**{arg: bad}).fit(DATA),
            arg,
        )
for cls in [DirichletMultinomial, NaiveBayes, LogisticRegression, HierarchicalLogisticRegression]:
    case(f"{cls.__name__}-fit-frame", lambda cls=cls: cls().fit(DF), "data")
    case(f"{cls.__name__}-fit-role", lambda cls=cls: cls().fit(DATA, "nope"), "role")
    case(
        f"{cls.__name__}-fit-no-decision",
        lambda cls=cls: cls().fit(bf.AuditData(DF, ["race"], "y"), "decision"),
        "decision",
    )
case(
    "DirichletMultinomial-both-seeds",
    lambda: DirichletMultinomial(random_state=1, random_seed=2).fit(DATA),
    "random_seed",
    "random_state",
)

# ------------------------------------------------------------------ scans
OBS, EXP = DF["y"].to_numpy(float), DF["p"].to_numpy()
for bad, label in [
    (lambda: bf.subset_scan(DF.iloc[:0], ["race"], OBS[:0], EXP[:0]), "empty-frame"),
    (lambda: bf.subset_scan(DF, ["nope"], OBS, EXP), "missing-attribute"),
    (lambda: bf.subset_scan(DF, [], OBS, EXP), "no-attributes"),
    (lambda: bf.subset_scan(DF, ["race"], OBS[:10], EXP), "short-observed"),
    (lambda: bf.subset_scan(DF, ["race"], OBS, EXP * 2), "expected-above-1"),
    (lambda: bf.subset_scan(DF, ["race"], OBS, EXP, score_type="poisson"), "score_type"),
    (lambda: bf.subset_scan(DF, ["race"], OBS, EXP, direction="up"), "direction"),
    (lambda: bf.subset_scan(DF, ["race"], OBS, EXP, penalty=-1), "penalty"),
    (lambda: bf.subset_scan(DF, ["race"], OBS, EXP, penalty=np.nan), "penalty-nan"),
    (lambda: bf.subset_scan(DF, ["race"], OBS, EXP, n_restarts=0), "n_restarts"),
    (lambda: bf.subset_scan(DF, ["race"], OBS, EXP, random_state=-1), "random_state"),
    (lambda: bf.subset_scan(DF, ["race"], OBS * 2, EXP), "observed-not-events"),
    (lambda: bf.subset_scan(DF.values, ["race"], OBS, EXP), "not-frame"),
    (
        lambda: bf.subset_scan(DF, ["race"], OBS, EXP, score_type="gaussian", sigma=-1),
        "sigma",
    ),
    (lambda: bf.subset_scan(DF, ["race"], OBS, EXP, ordinal=["nope"]), "ordinal"),
]:
    case(
        f"subset_scan-{label}",
        bad,
        "data",
        "attributes",
        "observed",
        "expected",
        "score",
        "direction",
        "penalty",
        "n_restarts",
        "random_state",
        "sigma",
        "ordinal",
        "nope",
    )
SCAN = dict(
    protected_class=("race", "a"),
    scan_type="separation_recommendations",
    condition_value=0,
    outcome="y",
    score="p",
    decision="d",
    attributes=["sex", "age"],
    search=SubsetSearch(n_restarts=2),
)
IHAT_MODELS = {"conditional_bias_scan": WeightedIhat, "posterior_bias_scan": BayesianIhat}
for fn_name, ihat in IHAT_MODELS.items():
    fn = getattr(bf, fn_name)
    for key, bad in [
        ("protected_class", "race"),
        ("protected_class", ("nope", "a")),
        ("protected_class", ("race", "zzz")),
        ("scan_type", "nope"),
        ("outcome", "nope"),
        ("score", "nope"),
        ("decision", "nope"),
        ("attributes", ["nope"]),
        ("condition_value", 5),
        ("direction", "up"),
        ("random_state", -1),
    ]:
        case(
            f"{fn_name}-{key}-{bad!r}",
            lambda fn=fn, key=key, bad=bad: fn(DF, **{**SCAN, key: bad}),
            key,
            "nope",
            "zzz",
        )
    # the options are built in the call: a bad one is refused when constructed
    for key, option, name in [
        ("search", lambda: SubsetSearch(n_restarts=0), "n_restarts"),
        ("search", lambda: SubsetSearch(penalty=-1.0), "penalty"),
        ("ihat", lambda ihat=ihat: ihat(attributes=["nope"]), "ihat.attributes"),
        ("search", lambda: {"n_restarts": 2}, "search"),
        (
            "ihat",
            lambda ihat=ihat: (WeightedIhat if ihat is BayesianIhat else BayesianIhat)(),
            "ihat",
        ),
    ]:
        case(
            f"{fn_name}-{key}-{name}",
            lambda fn=fn, key=key, option=option: fn(DF, **{**SCAN, key: option()}),
            name,
            "nope" if name == "ihat.attributes" else name,
        )
    case(
        f"{fn_name}-moved-option",
        lambda fn=fn: fn(DF, **SCAN, n_restarts=2),
        "n_restarts",
        "search=SubsetSearch(n_restarts=...)",
    )
    case(f"{fn_name}-empty", lambda fn=fn: fn(DF.iloc[:0], **SCAN), "data", "row")
    case(f"{fn_name}-not-frame", lambda fn=fn: fn([1, 2], **SCAN), "data")
for bad in [-1, 1.5, "10", 10**9]:
    case(
        f"conditional_bias_scan-n_resamples-{bad!r}",
        lambda bad=bad: bf.conditional_bias_scan(DF, **SCAN, n_resamples=bad),
        "n_resamples",
    )

# ------------------------------------------------------------------ disaggregated evaluation
DIS = dict(protected=["race", "sex"], outcome="y", decision="d", score="p")
for key, bad in [
    ("protected", ["nope"]),
    ("protected", []),
    ("outcome", "nope"),
    ("decision", "nope"),
    ("score", "nope"),
    ("metrics", ["nope"]),
    ("metrics", []),
    ("estimators", ["nope"]),
    ("estimators", []),
    ("n_variance_resamples", 1),
    ("n_variance_resamples", "x"),
    ("random_state", -1),
    ("level", 1.5),
    ("level", 0),
]:
    case(
        f"disaggregated_evaluation-{key}-{bad!r}",
        lambda key=key, bad=bad: bf.disaggregated_evaluation(
            DF, **{**DIS, key: bad} if key in DIS else DIS, **({} if key in DIS else {key: bad})
        ),
        key,
        "nope",
    )
case(
    "disaggregated_evaluation-not-frame",
    lambda: bf.disaggregated_evaluation([1, 2], **DIS),
    "data",
)

# ------------------------------------------------------------------ reports
case("Table-not-frame", lambda: Table([1, 2]), "frame")
case("Report-save-folder", lambda: Report("x").save("/tmp"), "path")
case("Report-save-device", lambda: Report("x").save("/dev/null"), "path")


# ------------------------------------------------------------------ more entry points
def _fitted_dm():
    return DirichletMultinomial(draws=20, chains=1, random_state=0).fit(DATA)


for key, bad in [("level", 2), ("level", 0), ("p_s", "nope"), ("by", "nope"), ("random_state", -1)]:
    case(
        f"posterior_fairness-{key}-{bad!r}",
        lambda key=key, bad=bad: bf.posterior_fairness(_fitted_dm(), **{key: bad}),
        key,
        bayesian=True,
    )
case("posterior_fairness-model-str", lambda: bf.posterior_fairness("dm"), "model")
case(
    "posterior_fairness-unfitted",
    lambda: bf.posterior_fairness(DirichletMultinomial()),
    "not fitted",
)
case(
    "model_average-method",
    lambda: bf.model_average([_fitted_dm()] * 2, method="x"),
    "method",
    bayesian=True,
)
case("model_average-str", lambda: bf.model_average(["x", "y"]), "models")
case("bias_amplification-str", lambda: bf.bias_amplification("a", "b"), "mechanism")
case("aggregate_counts-list", lambda: bf.aggregate_counts([1], ["race"], "y"), "frame")
case("aggregate_counts-missing", lambda: bf.aggregate_counts(DF, ["nope"], "y"), "nope")
case(
    "aggregate_counts-missing-decision",
    lambda: bf.aggregate_counts(DF, ["race"], "y", decision="nope"),
    "decision column 'nope'",
)
case(
    "aggregate_counts-outcome-nan",
    lambda: bf.aggregate_counts(DF.assign(y=np.nan), ["race"], "y"),
    "'y'",
)
for key in ["mu_sep", "mu_suf", "delta"]:
    for bad in [float("nan"), float("inf"), "1"]:
        case(
            f"make_cbs_semisynthetic-{key}-{bad!r}",
            lambda key=key, bad=bad: bf.datasets.make_cbs_semisynthetic(**{key: bad}),
            key,
        )
case(
    "make_gaussian_threshold-n_rows",
    lambda: bf.datasets.make_gaussian_threshold(n_rows=-1),
    "n_rows",
)
case("load_compas-coding", lambda: bf.datasets.load_compas("nope"), "coding")
case("load_adult-split", lambda: bf.datasets.load_adult("nope"), "split")
case("run_audit-truth-str", lambda: bf.run_audit(DATA, truth="x"), "truth")
for bad in [0, -1, 1.5, True]:
    case(f"Table-max_rows-{bad!r}", lambda bad=bad: Table(DF, max_rows=bad), "max_rows")
for bad in ["{:q}", "{0[1]}", 5]:
    case(f"Table-float_format-{bad!r}", lambda bad=bad: Table(DF, float_format=bad), "float_format")
case("KeyValues-list", lambda: bf.report.KeyValues([1, 2]), "items")
case("Figure-str", lambda: bf.report.Figure("x"), "figure")
case("Report-save_tables-file", lambda: Report("x").save_tables("/etc/passwd"), "is a file")
for method, arg in [("table_for", "nope"), ("group_sizes", "nope")]:
    case(f"AuditData.{method}-by", lambda m=method, a=arg: getattr(DATA, m)(a), "by")
for method in ["counts", "probabilities"]:
    case(f"AuditData.{method}-role", lambda m=method: getattr(DATA, m)("nope"), "role")
# the per-group estimators' options, checked where they are given (their objects)
for cls, key, bad in [
    (HierarchicalBayes, "draws", 0),
    (HierarchicalBayes, "main_effects", "x"),
    (HierarchicalBayes, "target_accept", 1.5),
    (HierarchicalBayes, "chains", 0),
    (HierarchicalBayes, "point_estimate", "x"),
    (EmpiricalBayes, "interval", "x"),
    (StructuredRegression, "ridge", "x"),
    (StructuredRegression, "interval", "x"),
    (StructuredRegression, "n_resamples", 1),
    (StructuredRegression, "n_resamples", 10**9),
    (StructuredRegression, "n_resamples", "x"),
    (StructuredRegression, "explanatory", [1]),
]:
    case(
        f"{cls.__name__}-{key}-{bad!r}",
        lambda cls=cls, key=key, bad=bad: cls(**{key: bad}),
        key,
    )
for cls, key, bad in [
    (HierarchicalLogisticRegression, "parameterization", "x"),
    (HierarchicalLogisticRegression, "point_estimate", "x"),
    (bf.NeuralNetwork, "hidden", (0,)),
    (bf.NeuralNetwork, "hidden", "x"),
    (LogisticRegression, "advi_iterations", 0),
]:
    case(f"{cls.__name__}-{key}-{bad!r}", lambda c=cls, k=key, b=bad: c(**{k: b}).fit(DATA), key)
case(
    "intersectional_permutation_test-pairwise",
    lambda: bf.intersectional_permutation_test(DATA, "fpr", pairwise="x", n_resamples=9),
    "pairwise",
)
case(
    "empirical_fairness-include_empty",
    lambda: bf.empirical_fairness(DATA, include_empty="yes", pseudo_count=0),
    "include_empty",
)


# ------------------------------------------------------------------ the test
def test_the_catalogue_is_large():
    assert len(CASES) >= 300
    assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.name, marks=pytest.mark.bayesian if c.bayesian else ()) for c in CASES],
)
def test_bad_input_is_refused_by_name(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, TypeError)) as info:
            case.call()
    message = str(info.value)
    assert any(name.lower() in message.lower() for name in case.names), (
        f"{type(info.value).__name__}: {message!r} names none of {case.names}"
    )


# ------------------------------------------------------------------ the command line
CLI_CASES = [
    (["demo", "--n-rows", "-5"], "--n-rows"),
    (["demo", "--n-rows", "x"], "--n-rows"),
    (["demo", "--seed", "-1"], "--seed"),
    (["demo", "--draws", "0"], "--draws"),
    (["demo", "--pseudo-count", "-1", "--no-bayes"], "pseudo"),
    (["demo", "--alpha", "x"], "--alpha"),
    (["demo", "--hb-main-effects", "sideways"], "--hb-main-effects"),
    (["audit"], "source"),
    (["audit", "{csv}"], "--protected"),
    (["audit", "{csv}", "--protected", "race"], "--outcome"),
    (["audit", "{csv}", "--protected", "nope", "--outcome", "y"], "nope"),
    (["audit", "{csv}", "--protected", "race", "--outcome", "p"], "'p'"),
    (
        [
            "audit",
            "{csv}",
            "--protected",
            "race",
            "--outcome",
            "y",
            "--score",
            "p",
            "--threshold",
            "2",
        ],
        "threshold",
    ),
    (
        ["audit", "{csv}", "--protected", "race", "--outcome", "y", "--threshold", "0.5"],
        "threshold",
    ),
    (["audit", "{csv}", "--protected", "race", "--outcome", "y", "--pos-label", "7"], "7"),
    (
        ["audit", "{csv}", "--protected", "race", "--outcome", "y", "--pseudo-count", "nan"],
        "pseudo",
    ),
    (
        ["audit", "{csv}", "--protected", "race", "--outcome", "y", "--data-home", "/x"],
        "--data-home",
    ),
    (["audit", "{csv}", "--protected", "race", "--outcome", "y", "--encoding", "nope"], "nope"),
    (["audit", "{csv}", "--counts", "--protected", "race"], "'n'"),
    (["audit", "{csv}", "--counts"], "--protected"),
    (["audit", "{csv}", "--counts", "--protected", "race", "--threshold", "0.5"], "--threshold"),
    (["audit", "{missing}", "--protected", "race", "--outcome", "y"], "does not exist"),
    (["audit", "{tmp}", "--protected", "race", "--outcome", "y"], "not a file"),
    (["audit", "{empty}", "--protected", "race", "--outcome", "y"], "empty"),
    (["reproduce", "{missing}"], "missing"),
    (["reproduce", "{csv}"], "TOML"),
    (["frob"], "frob"),
]


@pytest.mark.parametrize(
    "argv, named", CLI_CASES, ids=[" ".join(a).replace("/", "_") for a, _ in CLI_CASES]
)
def test_cli_refuses_bad_arguments_in_one_line(tmp_path, capsys, argv, named):
    from bayesfair.cli import main

    csv = tmp_path / "data.csv"
    DF.to_csv(csv, index=False)
    (tmp_path / "empty.csv").write_text("")
    paths = dict(
        csv=csv, missing=tmp_path / "missing.csv", tmp=tmp_path, empty=tmp_path / "empty.csv"
    )
    argv = [a.format(**paths) for a in argv] + ["--out", str(tmp_path / "r.html")] * (
        argv[0] in ("demo", "audit") and len(argv) > 1
    )
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's usage errors
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert named in err, err
