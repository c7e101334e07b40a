"""One input contract: every public entry point that takes data accepts an AuditData, a
DataFrame with the column roles as keywords, and (through AuditData.from_arrays) the
fairlearn-style arrays y_true, y_pred, sensitive_features; all three give the same result."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import bayesfair as bf
from bayesfair.models import DirichletMultinomial
from bayesfair.scan import SubsetSearch


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 1200
    df = pd.DataFrame(
        {
            "race": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "sex": rng.choice(["F", "M"], n),
            "charge": rng.choice(["F", "M"], n),
            "y": rng.integers(0, 2, n),
            "p": rng.random(n),
        }
    )
    df["d"] = (df["p"] > 0.5).astype(int)
    return df


ROLES = dict(protected=["race", "sex"], outcome="y", decision="d", score="p")


def _three_ways(frame):
    """(what, data, roles): the same audit as an AuditData, a DataFrame with role keywords
    and fairlearn-style arrays."""
    return [
        ("AuditData", bf.AuditData(frame, **ROLES), {}),
        ("DataFrame", frame, ROLES),
        (
            "arrays",
            bf.AuditData.from_arrays(
                frame["y"].to_numpy(),
                frame["d"].to_numpy(),
                sensitive_features=frame[["race", "sex"]],
                y_score=frame["p"].to_numpy(),
            ),
            {},
        ),
    ]


ENTRY_POINTS = {
    "empirical_fairness": lambda d, r: bf.empirical_fairness(
        d, role="decision", **r, pseudo_count=0
    ).summary()[["metric", "value"]],
    "fairness_confidence_interval": lambda d, r: (
        bf.fairness_confidence_interval(d, **r).summary().select_dtypes("number")
    ),
    "group_rates": lambda d, r: bf.group_rates(d, "fpr", **r)[["intersection", "value"]],
    "group_auc": lambda d, r: bf.group_auc(d, **r)[["intersection", "auc"]],
    "permutation_test": lambda d, r: pd.Series(
        bf.permutation_test(d, "fpr", by="sex", n_resamples=199, random_state=0, **r).pvalue
    ),
    "intersectional_permutation_test": lambda d, r: pd.Series(
        bf.intersectional_permutation_test(d, "fnr", n_resamples=199, random_state=0, **r).pvalue
    ),
    "auc_permutation_test": lambda d, r: pd.Series(
        bf.auc_permutation_test(d, by="sex", n_resamples=199, random_state=0, **r).pvalue
    ),
    "run_audit": lambda d, r: bf.run_audit(d, **r).fairness_table().select_dtypes("number"),
    "audit": lambda d, r: bf.audit(d, n_resamples=9, random_state=0, **r).tests[
        ["statistic", "pvalue"]
    ],
    "DirichletMultinomial.fit": lambda d, r: pd.DataFrame(
        DirichletMultinomial(draws=50, chains=1, random_state=0).fit(d, **r).p_draws_[:3, :, 1]
    ),
}


@pytest.mark.parametrize(
    "name",
    [
        # the model's fit builds its InferenceData with ArviZ (make test-next runs it too)
        pytest.param(n, marks=pytest.mark.bayesian) if n == "DirichletMultinomial.fit" else n
        for n in ENTRY_POINTS
    ],
)
def test_every_entry_point_takes_the_three_forms_alike(frame, name):
    fn = ENTRY_POINTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = {what: fn(data, roles) for what, data, roles in _three_ways(frame)}
    first = results.pop("AuditData")
    for what, other in results.items():
        pd.testing.assert_frame_equal(
            pd.DataFrame(first).reset_index(drop=True),
            pd.DataFrame(other).reset_index(drop=True),
            obj=f"{name} with {what}",
        )


def test_scans_and_per_group_estimates_take_an_audit_data(frame):
    data = bf.AuditData(frame, protected=["race", "sex"], outcome="y", score="p", threshold=0.5)
    kw = dict(
        protected_class=("race", "a"),
        scan_type="separation_recommendations",
        condition_value=0,
        attributes=["sex", "charge"],
        search=SubsetSearch(n_restarts=5),
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_data = bf.conditional_bias_scan(data, **kw)
        from_frame = bf.conditional_bias_scan(frame, outcome="y", decision="d", **kw)
    assert from_data.scan.subgroup == from_frame.scan.subgroup
    assert from_data.scan.score == pytest.approx(from_frame.scan.score)
    ev_data = bf.disaggregated_evaluation(data, metrics=["fpr"], estimators=["standard"])
    ev_frame = bf.disaggregated_evaluation(
        frame, ["race", "sex"], "y", "d", metrics=["fpr"], estimators=["standard"]
    )
    cols = ["group", "estimate", "n"]
    pd.testing.assert_frame_equal(ev_data.table[cols], ev_frame.table[cols])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda f: bf.group_rates(f), "protected=\\[...\\] and outcome="),
        (lambda f: bf.run_audit(f, protected="race"), "protected=\\[...\\] and outcome="),
        (lambda f: bf.group_rates(bf.AuditData(f, "race", "y"), outcome="y"), "given with an"),
        (lambda f: bf.group_rates(f, protected="race", outcome="y", colour="d"), "colour"),
        (  # fairlearn's and scikit-learn's names: the package's are named
            lambda f: bf.audit(f, sensitive_features=["race"], y_true="y", y_pred="d"),
            r"\(sensitive_features= is protected= here; y_pred= is decision= here; y_true= is "
            r"outcome= here\)",
        ),
        (lambda f: bf.group_rates(f.to_numpy(), protected="race", outcome="y"), "ndarray"),
        (lambda f: bf.disaggregated_evaluation(f), "`protected` and `outcome`"),
        (lambda f: bf.AuditData.from_arrays([1, 0], sensitive_features=["a"]), "2 values"),
        (lambda f: bf.AuditData.from_arrays([1, 0], sensitive_features=None), "sensitive"),
    ],
)
def test_the_contract_refuses_in_one_line(frame, call, message):
    with pytest.raises(TypeError if "values" not in message else ValueError, match=message):
        call(frame)


def test_from_arrays_names_features_and_takes_several():
    data = bf.AuditData.from_arrays(
        np.array([1, 0, 1, 0]),
        sensitive_features={"race": ["a", "a", "b", "b"], "sex": ["f", "m", "f", "m"]},
    )
    assert data.protected == ("race", "sex") and data.n_intersections == 4
    unnamed = bf.AuditData.from_arrays(
        [1, 0, 1, 0], sensitive_features=np.array([["a", "f"], ["a", "m"], ["b", "f"], ["b", "m"]])
    )
    assert unnamed.protected == ("sensitive_feature_0", "sensitive_feature_1")
    series = bf.AuditData.from_arrays(
        [1, 0, 1, 0], sensitive_features=pd.Series(["a", "a", "b", "b"], index=[9, 8, 7, 6])
    )
    assert series.protected == ("sensitive_feature_0",)  # paired by position, not index
    assert series.table["positives"].tolist() == [1, 1]


def test_scores_passed_as_decisions_are_refused_with_the_way_to_pass_them():
    """Probabilities given as y_pred (a common slip with fairlearn's signature) are
    refused with how to pass them: as the score, with a threshold."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"look like scores: pass them as score= \(y_score="):
        bf.AuditData.from_arrays(
            rng.integers(0, 2, 50), rng.random(50), sensitive_features=["a", "b"] * 25
        )
    codes = pd.DataFrame({"g": ["a", "b"] * 25, "y": [0, 1] * 25, "d": [0, 2] * 25})
    with pytest.raises(ValueError, match=r"found \[2\]; recode it as 0/1"):  # not fractions
        bf.AuditData(codes, ["g"], "y", decision="d")  # (pos_label codes words, not numbers)
