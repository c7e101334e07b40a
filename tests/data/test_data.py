"""The data layer: aggregation against brute force, empty intersections, and bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayesfair import AuditData


def _frame(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "race": rng.choice(["a", "b", "c"], n),
            "sex": rng.choice(["f", "m"], n),
            "y": rng.integers(0, 2, n),
            "s": rng.random(n),
            "d": rng.integers(0, 2, n),
            "x": rng.normal(size=n),
        }
    )


def test_table_matches_pandas_groupby():
    df = _frame()
    data = AuditData(df, ["race", "sex"], "y", score="s", decision="d")
    t = data.table.set_index(["race", "sex"])
    for (r, s), g in df.groupby(["race", "sex"]):
        row = t.loc[(r, s)]
        assert row["n"] == len(g)
        assert row["positives"] == g["y"].sum()
        assert row["decision_positives"] == g["d"].sum()
        assert row["tp"] == ((g.y == 1) & (g.d == 1)).sum()
        assert row["fp"] == ((g.y == 0) & (g.d == 1)).sum()
        assert row["fn"] == ((g.y == 1) & (g.d == 0)).sum()
        assert row["tn"] == ((g.y == 0) & (g.d == 0)).sum()
        assert row["mean_score"] == pytest.approx(g["s"].mean())
    assert t["n"].sum() == len(df)


def test_empty_intersections_are_kept_and_reported():
    df = pd.DataFrame({"a": ["x", "x", "y"], "b": ["p", "q", "p"], "y": [0, 1, 1]})
    data = AuditData(df, ["a", "b"], "y")
    assert data.n_intersections == 4
    assert data.table["n"].tolist() == [1, 1, 1, 0]
    assert data.empty_intersections["intersection"].tolist() == ["y, q"]
    assert "1 empty" in repr(data)
    assert np.isnan(data.probabilities(pseudo_count=0)[3]).all()
    assert data.probabilities(pseudo_count=1.0)[3].tolist() == [0.5, 0.5]


def test_levels_declare_unobserved_values_and_order():
    df = pd.DataFrame({"a": ["x", "y", "x"], "y": [0, 1, 1]})
    data = AuditData(df, "a", "y", categories={"a": ["y", "x", "z"]})
    assert data.categories["a"] == ["y", "x", "z"]
    assert data.table["n"].tolist() == [1, 2, 0]


def test_categorical_dtype_keeps_unobserved_categories():
    df = pd.DataFrame({"a": pd.Categorical(["x", "x"], categories=["x", "y"]), "y": [0, 1]})
    data = AuditData(df, "a", "y")
    assert data.table["n"].tolist() == [2, 0]


def test_marginal_tables_sum_the_intersections():
    df = _frame(800, seed=3)
    data = AuditData(df, ["race", "sex"], "y", decision="d")
    by_sex = data.table_for("sex").set_index("sex")
    for s, g in df.groupby("sex"):
        assert by_sex.loc[s, "n"] == len(g)
        assert by_sex.loc[s, "fp"] == ((g.y == 0) & (g.d == 1)).sum()
    # order of `by` is respected
    t = data.table_for(["sex", "race"])
    assert list(t.columns[:2]) == ["sex", "race"]
    assert (
        t.set_index(["sex", "race"])["n"].to_dict() == df.groupby(["sex", "race"]).size().to_dict()
    )


def test_threshold_derives_the_decision():
    df = _frame()
    data = AuditData(df, ["race"], "y", score="s", threshold=0.3)
    assert data.table["decision_positives"].sum() == (df["s"] >= 0.3).sum()


def test_pos_label_and_bool_outcomes():
    df = pd.DataFrame({"g": ["a", "b", "a"], "y": ["yes", "no", "no"], "b": [True, False, True]})
    assert AuditData(df, "g", "y", pos_label="yes").table["positives"].tolist() == [1, 0]
    assert AuditData(df, "g", "b").table["positives"].tolist() == [2, 0]


def test_a_decision_coded_like_the_outcome_takes_pos_label():
    """An outcome and a decision both coded "yes"/"no": pos_label codes both (as
    disaggregated_evaluation does); without it the outcome is refused first. A decision of
    words beside a 0/1 outcome cannot take pos_label, which codes the outcome: the error
    says to recode it, naming the column."""
    df = pd.DataFrame(
        {
            "g": ["a", "b", "a", "b"],
            "y": ["yes", "no", "no", "yes"],
            "d": ["yes", "yes", "no", "no"],
        }
    )
    t = AuditData(df, "g", "y", decision="d", pos_label="yes").table
    assert t["decision_positives"].tolist() == [1, 1]
    assert t["tp"].tolist() == [1, 0] and t["fp"].tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"outcome column 'y'.*pass pos_label="):
        AuditData(df, "g", "y", decision="d")
    numeric = df.assign(y=[1, 0, 0, 1])
    with pytest.raises(ValueError, match=r"decision column 'd'.*recode it.*df\['d'\] == 'yes'"):
        AuditData(numeric, "g", "y", decision="d")


def test_counts_and_probabilities_shapes():
    data = AuditData(_frame(), ["race", "sex"], "y", decision="d")
    c = data.counts("decision")
    assert c.shape == (6, 2)
    assert c.sum() == 500
    p = data.probabilities(pseudo_count=2.0)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    # an infinite prior weight has no smoothed EDF (every row was NaN)
    with pytest.raises(ValueError, match="`pseudo_count` must be a finite non-negative number"):
        data.probabilities(pseudo_count=np.inf)


# ---------------------------------------------------------------- bad input
BASE = pd.DataFrame(
    {
        "g": ["a", "b", "a", "b"],
        "h": ["u", "u", "v", "v"],
        "y": [0, 1, 1, 0],
        "s": [0.1, 0.9, 0.5, 0.2],
    }
)


def _with(**cols):
    df = BASE.copy()
    for k, v in cols.items():
        df[k] = v
    return df


BAD_INPUTS = [
    # (id, frame, kwargs, exception, message fragment)
    ("not-a-frame", BASE.to_dict(), dict(protected="g", outcome="y"), TypeError, "DataFrame"),
    ("no-protected", BASE, dict(protected=[], outcome="y"), ValueError, "at least one"),
    ("protected-not-str", BASE, dict(protected=[1], outcome="y"), TypeError, "protected"),
    ("missing-protected", BASE, dict(protected=["race"], outcome="y"), ValueError, "'race'"),
    ("missing-outcome", BASE, dict(protected="g", outcome="label"), ValueError, "'label'"),
    ("missing-score", BASE, dict(protected="g", outcome="y", score="p"), ValueError, "'p'"),
    (
        "missing-covariate",
        BASE,
        dict(protected="g", outcome="y", covariates=["age"]),
        ValueError,
        "'age'",
    ),
    (
        "nan-protected",
        _with(g=["a", None, "a", "b"]),
        dict(protected="g", outcome="y"),
        ValueError,
        "'g' has 1 missing",
    ),
    (
        "continuous-protected",
        pd.DataFrame({"inc": np.linspace(0, 1, 1001), "y": np.arange(1001) % 2}),
        dict(protected="inc", outcome="y"),
        ValueError,
        "protected column 'inc' has 1001 distinct values, more than 1000",
    ),
    (
        "nan-outcome",
        _with(y=[0, 1, np.nan, 0]),
        dict(protected="g", outcome="y"),
        ValueError,
        "'y' has 1 missing value(s); expected 0/1 for every row: remove those rows first "
        "and report how many were left out (in Python: df.dropna(subset=['y']))",
    ),
    (
        "nan-boolean-outcome",
        _with(y=pd.array([True, False, None, True], dtype="boolean")),
        dict(protected="g", outcome="y"),
        ValueError,
        "'y' has 1 missing value(s); expected True/False for every row",
    ),
    (
        "nan-outcome-of-words",
        _with(y=["yes", "no", np.nan, "no"]),
        dict(protected="g", outcome="y", pos_label="yes"),
        ValueError,
        "'y' has 1 missing value(s); expected 'yes' or another value for every row",
    ),
    (
        "non-binary-outcome",
        _with(y=[0, 1, 2, 0]),
        dict(protected="g", outcome="y"),
        ValueError,
        "only 0 and 1, found [2]; pass pos_label= (command line: --pos-label) to say which value "
        "means 1",
    ),
    (
        "string-outcome",
        _with(y=["p", "n", "p", "n"]),
        dict(protected="g", outcome="y"),
        ValueError,
        "pos_label",
    ),
    (
        "pos-label-absent",
        _with(y=["p", "n", "p", "n"]),
        dict(protected="g", outcome="y", pos_label="yes"),
        ValueError,
        "does not occur",
    ),
    (
        "three-valued-pos-label",
        _with(y=["p", "n", "q", "n"]),
        dict(protected="g", outcome="y", pos_label="p"),
        ValueError,
        "3 distinct",
    ),
    (
        "score-above-one",
        _with(s=[0.1, 1.5, 0.5, 0.2]),
        dict(protected="g", outcome="y", score="s"),
        ValueError,
        "[0, 1]",
    ),
    (
        "score-nan",
        _with(s=[0.1, np.nan, 0.5, 0.2]),
        dict(protected="g", outcome="y", score="s"),
        ValueError,
        "for every row: remove those rows first and report how many were left out (in "
        "Python: df.dropna(subset=['s']))",
    ),
    (
        "score-text",
        _with(s=["a", "b", "c", "d"]),
        dict(protected="g", outcome="y", score="s"),
        ValueError,
        "numeric",
    ),
    (
        "decision-non-binary",
        _with(d=[0, 3, 1, 0]),
        dict(protected="g", outcome="y", decision="d"),
        ValueError,
        "'d'",
    ),
    (
        "threshold-no-score",
        BASE,
        dict(protected="g", outcome="y", threshold=0.5),
        ValueError,
        "no score",
    ),
    (
        "threshold-out-of-range",
        BASE,
        dict(protected="g", outcome="y", score="s", threshold=2),
        ValueError,
        "threshold",
    ),
    (
        "threshold-not-number",
        BASE,
        dict(protected="g", outcome="y", score="s", threshold="half"),
        TypeError,
        "threshold",
    ),
    (
        "decision-and-threshold",
        _with(d=[0, 1, 1, 0]),
        dict(protected="g", outcome="y", score="s", decision="d", threshold=0.5),
        ValueError,
        "not both",
    ),
    (
        "single-value-protected",
        _with(g=["a"] * 4),
        dict(protected="g", outcome="y"),
        ValueError,
        "single value",
    ),
    (
        "unhashable-protected",
        _with(g=[[1], [2], [1], [2]]),
        dict(protected="g", outcome="y"),
        ValueError,
        "unhashable",
    ),
    ("two-roles", BASE, dict(protected=["g", "y"], outcome="y"), ValueError, "two roles"),
    (
        "duplicate-protected",
        BASE,
        dict(protected=["g", "g"], outcome="y"),
        ValueError,
        "more than once",
    ),
    ("empty-frame", BASE.iloc[:0], dict(protected="g", outcome="y"), ValueError, "no rows"),
    (
        "value-outside-levels",
        BASE,
        dict(protected="g", outcome="y", categories={"g": ["a"]}),
        ValueError,
        "not in the categories",
    ),
    (
        "levels-unknown-column",
        BASE,
        dict(protected="g", outcome="y", categories={"h": ["u", "v"]}),
        ValueError,
        "not protected",
    ),
    ("outcome-not-str", BASE, dict(protected="g", outcome=["y"]), TypeError, "outcome"),
]


@pytest.mark.parametrize(
    ("frame", "kwargs", "exc", "fragment"),
    [case[1:] for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
def test_bad_input_gets_a_clear_error(frame, kwargs, exc, fragment):
    with pytest.raises(exc) as info:
        AuditData(frame, **kwargs)
    assert fragment in str(info.value)


def test_duplicate_frame_columns_are_refused():
    df = pd.DataFrame([[0, 1, 1]], columns=["g", "g", "y"])
    with pytest.raises(ValueError, match="duplicate column"):
        AuditData(df, "g", "y")


def test_grouping_is_the_cartesian_product_of_the_categories_in_table_order():
    """Every value type a protected column may have (strings, ints, bools, floats, dates,
    an ordered categorical with an unseen value), for every subset of the columns: the
    grouping equals the reference built from pandas' ``MultiIndex.from_product``, with
    categorical columns and labels of str() joined by ", "."""
    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame(
        {
            "s": rng.choice(["x", "y", "z"], n),
            "i": rng.integers(0, 3, n),
            "b": rng.random(n) < 0.5,
            "f": rng.choice([1.5, 2.5], n),
            "t": pd.to_datetime(rng.choice(["2020-01-01", "2021-06-01"], n)),
            "o": pd.Categorical(
                rng.choice(["lo", "hi"], n), categories=["lo", "mid", "hi"], ordered=True
            ),
            "y": rng.integers(0, 2, n),
        }
    )
    for protected in (["s", "i", "b"], ["f", "t", "o"]):
        data = AuditData(frame, protected, "y")
        for by in (protected, protected[:1], protected[1:]):
            index = pd.MultiIndex.from_product([data.categories[c] for c in by], names=by)
            ref = index.to_frame(index=False)
            for c in by:
                ref[c] = pd.Categorical(ref[c], categories=data.categories[c])
            ref["intersection"] = [", ".join(map(str, r)) for r in index]
            pd.testing.assert_frame_equal(data.grouping(by), ref)


def test_two_intersections_may_not_share_a_label():
    """Labels join values with ", ", so values containing it could give two intersections
    one label (("x", "y, z") and ("x, y", "z")): tables, model coordinates and reports
    would mix them up. Refused where the data come in; harmless commas are kept."""
    from bayesfair import disaggregated_evaluation

    clash = pd.DataFrame({"a": ["x, y", "x"] * 10, "b": ["z", "y, z"] * 10, "y": [0, 1] * 10})
    clash["d"] = clash["y"]
    message = (
        r"\('x', 'y, z'\) and \('x, y', 'z'\) of \['a', 'b'\] would both be labelled 'x, y, z'"
    )
    with pytest.raises(ValueError, match=message):
        AuditData(clash, ["a", "b"], "y")
    with pytest.raises(ValueError, match=message):
        disaggregated_evaluation(clash, ["a", "b"], "y", "d", estimators=["standard"])
    fine = pd.DataFrame({"a": ["Black, non-Hispanic", "White"] * 10, "b": ["M", "F"] * 10})
    fine["y"] = [0, 1] * 10
    labels = AuditData(fine, ["a", "b"], "y").group_labels
    assert labels == ["Black, non-Hispanic, F", "Black, non-Hispanic, M", "White, F", "White, M"]
    mixed = pd.DataFrame({"a": [1, "1"] * 10, "y": [0, 1] * 10})  # an object column
    with pytest.raises(ValueError, match=r"\(1,\) and \('1',\) .* no two intersections print"):
        AuditData(mixed, "a", "y")


def test_too_many_intersections_are_refused():
    n = 60
    df = pd.DataFrame({f"a{i}": np.arange(n) % 50 for i in range(4)})
    df["y"] = np.arange(n) % 2
    with pytest.raises(ValueError, match="intersections"):
        AuditData(df, [f"a{i}" for i in range(4)], "y")


def test_bad_target_and_by():
    data = AuditData(BASE, ["g", "h"], "y")
    with pytest.raises(ValueError, match="needs a decision"):
        data.counts("decision")
    with pytest.raises(ValueError, match="role"):
        data.counts("label")
    with pytest.raises(ValueError, match="not protected"):
        data.table_for("y")
    with pytest.raises(ValueError, match="non-negative"):
        data.probabilities(pseudo_count=-1.0)


def _counted(n=3000, seed=0):
    from bayesfair import aggregate_counts
    from bayesfair.datasets import make_gaussian_threshold

    ds = make_gaussian_threshold(n_rows=n, random_state=seed)
    rows = ds.audit_data()
    table = aggregate_counts(ds.frame, list(ds.protected), "y", decision="decision", score="score")
    return ds, rows, table


@pytest.mark.bayesian
def test_from_counts_reproduces_the_audit_of_the_rows():
    import bayesfair as bf
    from bayesfair.models import DirichletMultinomial

    ds, rows, table = _counted()
    data = AuditData.from_counts(table, list(ds.protected), categories=rows.categories)
    assert not data.has_rows and data.has_decision and rows.has_rows
    assert data.n_rows == rows.n_rows and "counts only" in repr(data)
    pd.testing.assert_frame_equal(data.table, rows.table)
    # each call warns alike for both (the 3 empty intersections, few resamples): ignored
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for f in (
            lambda d: bf.empirical_fairness(d, role="decision", pseudo_count=0).summary(),
            lambda d: bf.fairness_confidence_interval(d, by="race").summary(),
            lambda d: bf.group_rates(d, ["fpr", "ppv"], by="sex"),
            lambda d: bf.intersectional_permutation_test(
                d, "fnr", n_resamples=199, random_state=0
            ).summary(),
            lambda d: bf.run_audit(d).fairness_table(),
        ):
            pd.testing.assert_frame_equal(f(data), f(rows))
        p = [
            bf.permutation_test(d, "fpr", by="sex", n_resamples=199, random_state=0).pvalue
            for d in (data, rows)
        ]
        assert p[0] == p[1]
        fits = [DirichletMultinomial(random_state=0).fit(d, role="decision") for d in (data, rows)]
    np.testing.assert_array_equal(fits[0].p_draws_, fits[1].p_draws_)
    html = bf.run_audit(data).report().to_html()
    assert "Per-intersection error rates" in html and "Per-intersection AUC" not in html
    assert "3,000 (counted: the audit has the count table only)" in html


def test_the_table_of_an_audit_round_trips_through_from_counts():
    # AuditData.table carries mean_score (NaN in empty groups), not score_sum: kept
    ds, rows, _ = _counted(1500, 2)
    again = AuditData.from_counts(rows.table, list(ds.protected), categories=rows.categories)
    pd.testing.assert_frame_equal(again.table, rows.table)
    assert again.score == "score" and again.decision == "decision"


def test_from_counts_adds_up_partial_tables():
    from bayesfair import aggregate_counts

    ds, rows, table = _counted(2000, 1)
    halves = [ds.frame.iloc[:700], ds.frame.iloc[700:]]
    parts = pd.concat(
        [aggregate_counts(h, list(ds.protected), "y", decision="decision") for h in halves]
    )
    assert len(parts) > len(table)  # the same intersection twice
    data = AuditData.from_counts(parts, list(ds.protected), categories=rows.categories)
    cols = ["n", "positives", "tp", "fp", "fn", "tn"]
    pd.testing.assert_frame_equal(data.table[cols], rows.table[cols])
    assert data.score is None and data.decision == "decision"


def test_from_counts_refuses_tables_that_are_not_counts():
    _, _, table = _counted(500)
    prot = ["race", "sex", "nationality"]
    bad = {
        "no n": (table.drop(columns="n"), r"count column\(s\) \['n'\] not found"),
        "negative": (
            table.assign(tn=table["tn"] - table["tn"].max() - 1),
            r"'tn' must hold non-negative whole numbers; \d+ row\(s\) do not \(first: -\d+\)",
        ),
        "fraction": (table.assign(positives=table["positives"] + 0.5), "'positives' must hold"),
        "NaN": (table.assign(n=table["n"].where(table.index > 0)), "'n' must hold"),
        "positives > n": (table.assign(positives=table["n"] + 1), "break positives <= n"),
        "decision_positives": (
            table.assign(decision_positives=table["decision_positives"] + 1),
            r"break tp \+ fp == decision_positives",
        ),
        "cells": (table.assign(tp=table["tp"] + 1), r"break tp \+ fp \+ fn \+ tn == n"),
        "three cells": (table.drop(columns="tn"), r"not \['tn'\]"),
        "only decision_positives": (
            table.drop(columns=["tp", "fp", "fn", "tn"]),
            "decision_positives",
        ),
        "missing value": (
            table.assign(race=table["race"].astype(object).where(table.index > 0)),
            "race",
        ),
        "empty": (table.iloc[:0], "no rows"),
        "no rows counted": (
            table.assign(n=0, positives=0, tp=0, fp=0, fn=0, tn=0, decision_positives=0),
            "counts no rows",
        ),
    }
    for t, match in bad.values():
        with pytest.raises(ValueError, match=match):
            AuditData.from_counts(t, prot)
    with pytest.raises(TypeError, match="`table` must be a pandas DataFrame"):
        AuditData.from_counts(table.to_numpy(), prot)
    with pytest.raises(ValueError, match="no tp, fp, fn, tn"):
        AuditData.from_counts(table[[*prot, "n", "positives"]], prot, decision="d")
    with pytest.raises(ValueError, match="no score_sum or mean_score"):
        AuditData.from_counts(table.drop(columns="score_sum"), prot, score="s")
    plain = table.assign(sex=table["sex"].astype(str))
    with pytest.raises(ValueError, match="protected column 'sex' has a single value"):
        AuditData.from_counts(plain[plain["sex"] == plain["sex"].iloc[0]], prot)


def test_counts_only_data_say_which_methods_need_rows():
    import bayesfair as bf
    from bayesfair.report import scan_audit_data

    ds, _, table = _counted(800)
    data = AuditData.from_counts(table, list(ds.protected))
    need = "needs the rows, and this AuditData holds per-intersection counts only"
    for call in (
        lambda: bf.group_auc(data),
        lambda: bf.auc_permutation_test(data, by="sex"),
        lambda: bf.discrimination_test("zero_one", data=data),
        lambda: scan_audit_data(data),
    ):
        with pytest.raises(ValueError, match=need):
            call()
