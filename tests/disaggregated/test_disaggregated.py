"""disaggregated_evaluation: input checks, every group kept, metrics (callables, AUC), the
estimators given by name or as objects."""

from __future__ import annotations

import dataclasses
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from disaggregated_helpers import (
    _frame,
)

from bayesfair import AuditData, SamplerWarning
from bayesfair.disaggregated import (
    DisaggregatedResult,
    EmpiricalBayes,
    GroupedData,
    HierarchicalBayes,
    Standard,
    StructuredRegression,
    disaggregated_evaluation,
    empirical_bayes_caveat,
    hierarchical_bayes_caveat,
    structured_regression_caveat,
)
from bayesfair.disaggregated.evaluate import MOVED_OPTIONS
from bayesfair.metrics import RATE_DEFINITIONS, group_rates


# ------------------------------------------------------------------ data layer
def test_group_metrics_equal_group_rates():
    df = _frame()
    gd = GroupedData.from_frame(df, ["race", "sex"], "y", "d", "score")
    data = AuditData(df, ["race", "sex"], "y", decision="d")
    metrics = list(RATE_DEFINITIONS)  # every rate group_rates and the tests know
    ref = group_rates(data, metrics)
    for m in metrics:
        r = ref[ref["metric"] == m]["value"].to_numpy()
        np.testing.assert_allclose(gd.estimate(m), r)
    assert gd.n_groups == 8 and gd.sizes().sum() == len(df)


def test_bad_input_is_named():
    df = _frame(200)
    with pytest.raises(ValueError, match="'zz'"):
        disaggregated_evaluation(df, ["zz"], "y", "d", level=0.95)
    with pytest.raises(ValueError, match="outcome"):
        disaggregated_evaluation(df, ["race"], "nope", "d", level=0.95)
    with pytest.raises(ValueError, match=r"'score' must contain only 0 and 1, found \[0\.86"):
        disaggregated_evaluation(df, ["race"], "score", "d", level=0.95)
    with pytest.raises(ValueError, match="unknown estimator"):
        disaggregated_evaluation(df, ["race"], "y", "d", estimators=["magic"], level=0.95)
    with pytest.raises(ValueError, match="unknown metric"):
        disaggregated_evaluation(
            df, ["race"], "y", "d", metrics=["f1"], estimators=["standard"], level=0.95
        )
    with pytest.raises(ValueError, match="auc needs `score`: give the column or leave"):
        disaggregated_evaluation(
            df, ["race"], "y", "d", metrics=["auc"], estimators=["standard"], level=0.95
        )
    with pytest.raises(ValueError, match=r"selection_rate needs `decision` \(0/1 decisions\); fpr"):
        disaggregated_evaluation(
            df, ["race"], "y", score="score", metrics=["sel", "fpr"], level=0.95
        )
    with pytest.raises(ValueError, match="the DataFrame has no rows"):
        disaggregated_evaluation(df.iloc[:0], ["race"], "y", "d", level=0.95)  # was an empty table
    for bad in ([95], ["x"], [None], [True]):  # 'x' and None failed with '<' not supported
        with pytest.raises(
            ValueError, match=r"`level` must be a number in \(0, 1\), or a list of them"
        ):
            disaggregated_evaluation(df, ["race"], "y", "d", level=bad)
    with pytest.raises(ValueError, match="`ridge`"):
        StructuredRegression(ridge="cols")
    with pytest.raises(ValueError, match="EmpiricalBayes: `interval`"):
        EmpiricalBayes(interval="plugin")
    with pytest.raises(ValueError, match="`interval`"):
        StructuredRegression(interval="bca")
    with pytest.raises(TypeError, match=r"StructuredRegression\(ridge=\.\.\.\)"):
        disaggregated_evaluation(df, ["race"], "y", "d", sr_ridge="rows", level=0.95)
    with pytest.raises(ValueError, match="`n_resamples` must be an integer of at least 2"):
        StructuredRegression(n_resamples=0)
    with pytest.raises(ValueError, match="`n_variance_resamples` must be an integer of at least"):
        disaggregated_evaluation(df, ["race"], "y", "d", n_variance_resamples=1.0)
    for arg, bad in [("draws", 0), ("chains", True), ("tune", 0), ("tune", -1)]:
        # tune=0: nutpie panicked ('early_end < num_tune')
        with pytest.raises(ValueError, match=f"`{arg}` must be a positive integer, got {bad!r}"):
            HierarchicalBayes(**{arg: bad})
    with pytest.raises(ValueError, match="`estimators` must name at least one of"):
        disaggregated_evaluation(df, ["race"], "y", "d", estimators=[], level=0.95)
    with pytest.raises(ValueError, match="names 'standard' twice"):
        disaggregated_evaluation(df, ["race"], "y", "d", estimators=["standard", Standard()])
    with pytest.raises(TypeError, match="an estimator is a name"):
        disaggregated_evaluation(df, ["race"], "y", "d", estimators=[object()])
    with pytest.raises(ValueError, match="unknown estimator 'lasso'"):
        disaggregated_evaluation(df, ["race"], "y", "d", estimators=["lasso"])
    for bad in (1.5, 0, True, "0.9"):
        with pytest.raises(ValueError, match=r"`target_accept` must be a number in \(0, 1\)"):
            HierarchicalBayes(target_accept=bad)
    with pytest.raises(ValueError, match="protected column 'race' has 1 missing value"):
        disaggregated_evaluation(
            df.assign(race=df.race.where(df.index > 0)), ["race"], "y", "d", level=0.95
        )
    with pytest.raises(ValueError, match="'y' has 2 missing value"):
        disaggregated_evaluation(
            df.assign(y=df.y.where(df.index > 1)), ["race"], "y", "d", level=0.95
        )
    wide = pd.concat([df] * (1 + 1001 // len(df)), ignore_index=True)
    with pytest.raises(ValueError, match=r"protected column 'id' has [0-9]+ distinct values"):
        disaggregated_evaluation(
            wide.assign(id=np.arange(len(wide))), ["race", "id"], "y", "d", level=0.95
        )
    with pytest.raises(ValueError, match="decision"):
        disaggregated_evaluation(
            df.assign(d=df.d.where(df.index > 0)), ["race"], "y", "d", level=0.95
        )


@pytest.mark.bayesian
def test_base_rate_needs_no_decisions():
    """The outcome's rate per group needs only y_true (it asked for y_pred), with every
    estimator; the decision metrics still need y_pred."""
    df = _frame(400)
    res = disaggregated_evaluation(
        df,
        ["race", "sex"],
        "y",
        score="score",
        metrics=["base_rate", "auc"],
        estimators=["standard", "james_stein", HierarchicalBayes(draws=100, tune=100, chains=2)],
        random_state=0,
        level=0.95,
    )
    est = res.estimates("base_rate").set_index("group")
    truth = df.groupby(["race", "sex"], observed=True)["y"].mean()
    truth.index = [", ".join(map(str, i)) for i in truth.index]
    assert sorted(est.index) == sorted(truth.index)
    np.testing.assert_allclose(est["standard"], truth.reindex(est.index))
    assert est[["standard", "james_stein", "hierarchical"]].notna().all().all()
    with_d = disaggregated_evaluation(
        df, ["race", "sex"], "y", "d", metrics=["base_rate"], estimators=["standard"], level=0.95
    )
    np.testing.assert_allclose(with_d.estimates("base_rate")["standard"], est["standard"])


def test_auc_estimate_and_bootstrap_against_sklearn():
    """AUC per group and per bootstrap resample, computed for all groups (resamples) in one
    sort, equals scikit-learn's roc_auc_score group by group and resample by resample
    drawn as rng.choice(rows, len(rows)) draws them; ties in the scores, a group of one
    class, an empty group, a row selection."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(4)
    n = 900
    df = pd.DataFrame(
        {
            "a": rng.choice(["p", "q", "r", "s"], n, p=[0.5, 0.3, 0.15, 0.05]),
            "y": rng.integers(0, 2, n),
            "score": np.round(rng.random(n), 1),  # many ties
        }
    )
    df.loc[df.a == "s", "y"] = 1  # one class: AUC undefined
    df = df[df.a != "r"]  # an empty group through the levels
    gd = GroupedData.from_frame(
        df.assign(a=pd.Categorical(df.a, categories=["p", "q", "r", "s"])),
        ["a"],
        "y",
        score="score",
    )

    def by_hand(rows):
        out = []
        for code in range(gd.n_groups):
            r = np.flatnonzero((gd.group == code) & rows)
            ok = len(r) and len(np.unique(gd.y[r])) == 2
            out.append(roc_auc_score(gd.y[r], gd.score[r]) if ok else np.nan)
        return np.array(out)

    everything = np.ones(len(gd.group), bool)
    np.testing.assert_allclose(gd.estimate("auc"), by_hand(everything), rtol=1e-12)
    some = np.arange(len(gd.group)) % 3 == 0
    np.testing.assert_allclose(gd.estimate("auc", rows=some), by_hand(some), rtol=1e-12)
    assert np.isnan(gd.estimate("auc")[2:]).all()
    assert np.isnan(gd.estimate("auc", rows=np.zeros(len(gd.group), bool))).all()

    var = gd.bootstrap_variance("auc", 50, np.random.default_rng(9))
    draw = np.random.default_rng(9)
    for code in range(gd.n_groups):
        r = np.flatnonzero(gd.group == code)
        if len(r) < 2:
            assert np.isnan(var[code])
            continue
        vals = []
        for _ in range(50):
            b = draw.choice(r, size=len(r))
            if len(np.unique(gd.y[b])) == 2:
                vals.append(roc_auc_score(gd.y[b], gd.score[b]))
        expected = np.var(vals, ddof=1) if len(vals) > 1 else np.nan
        np.testing.assert_allclose(var[code], expected, rtol=1e-10)
    assert np.isfinite(var[:2]).all() and np.isnan(var[2:]).all()


def test_undefined_groups_are_reported_not_dropped():
    df = _frame(600)
    df.loc[(df.race == "D"), "y"] = 0  # no positives in race D: FNR undefined there
    res = disaggregated_evaluation(
        df,
        ["race", "sex"],
        "y",
        "d",
        metrics=["fnr"],
        estimators=["standard", "james_stein", StructuredRegression(n_resamples=20)],
        random_state=0,
        level=0.95,
    )
    t = res.table
    d = t[t.group.str.startswith("D")]
    assert len(d) == 2 * 3 and not d["defined"].any()
    assert d[d.estimator == "standard"]["estimate"].isna().all()
    assert d[d.estimator == "structured"]["estimate"].notna().all()  # borrowed strength
    wide = res.estimates("fnr")  # the wide table keeps the undefined groups too
    assert len(wide) == res.grouped.n_groups and wide["standard"].isna().sum() == 2
    # the summary counts them: every group listed, the undefined ones without a standard
    summ = res.summary().set_index("estimator")
    g = res.grouped.n_groups
    assert list(summ.index) == ["standard", "james_stein", "structured"]
    assert (summ["groups"] == g).all()
    assert summ.loc["standard", "with_estimate"] == g - 2
    assert summ.loc["structured", "with_estimate"] == g
    assert summ.loc["james_stein", "with_interval"] == 0
    assert summ.loc["standard", "width_vs_standard"] == 1.0
    st = t[(t.estimator == "structured") & t.defined]
    sd = t[(t.estimator == "standard") & t.defined]
    ratio = (st.upper - st.lower).mean() / (sd.upper - sd.lower).mean()
    assert summ.loc["structured", "width_vs_standard"] == pytest.approx(ratio)


def test_pos_label_codes_the_outcome_and_the_decisions():
    df = _frame(600)
    coded = df.assign(
        y=np.where(df.y == 1, ">50K", "<=50K"), d=np.where(df.d == 1, ">50K", "<=50K")
    )
    kw = dict(metrics=["fpr", "fnr"], estimators=["standard", "james_stein"], random_state=0)
    a = disaggregated_evaluation(
        coded, ["race", "sex"], "y", "d", pos_label=">50K", **kw, level=0.95
    )
    b = disaggregated_evaluation(df, ["race", "sex"], "y", "d", **kw, level=0.95)
    pd.testing.assert_frame_equal(a.table, b.table)
    # a 0/1 decision column is used as it is beside a coded outcome
    c = disaggregated_evaluation(
        coded.assign(d=df.d), ["race", "sex"], "y", "d", pos_label=">50K", **kw, level=0.95
    )
    pd.testing.assert_frame_equal(c.table, b.table)
    with pytest.raises(ValueError, match="pass pos_label"):
        disaggregated_evaluation(coded, ["race", "sex"], "y", "d", **kw, level=0.95)
    # words beside a 0/1 outcome: pos_label codes the outcome, so recode them (as AuditData)
    with pytest.raises(ValueError, match=r"`decision` column 'd'.*recode it.*df\['d'\] =="):
        disaggregated_evaluation(df.assign(d=coded.d), ["race", "sex"], "y", "d", **kw)
    with pytest.raises(ValueError, match="pos_label='yes' does not occur in `outcome`"):
        disaggregated_evaluation(
            coded, ["race", "sex"], "y", "d", pos_label="yes", **kw, level=0.95
        )
    with pytest.raises(ValueError, match="`score` column 'race' must hold numeric"):
        disaggregated_evaluation(
            df, ["sex"], "y", "d", "race", metrics=["auc"], estimators=["standard"], level=0.95
        )


@pytest.mark.parametrize("block", [2**22, 7])
def test_resampled_auc_of_small_groups_against_sklearn(monkeypatch, block):
    """The bootstrap AUC of one group's rows, counted without sorting each resample,
    equals roc_auc_score on the very resamples rng.choice(rows, len(rows)) draws: tied
    scores, resamples with one class (NaN), one row, and resamples drawn in several
    blocks (a block of 7 elements)."""
    from sklearn.metrics import roc_auc_score

    from bayesfair.disaggregated import groups

    monkeypatch.setattr(groups, "_RESAMPLE_BLOCK", block)
    rng = np.random.default_rng(11)
    for case in range(40):
        m = int(rng.integers(1, 25))
        y = (rng.random(m) < rng.uniform(0.1, 0.9)).astype(float)
        s = rng.integers(0, 4, m) / 3 if case % 2 else rng.random(m)
        got = groups._resampled_auc(y, s, 30, np.random.default_rng(case))
        draw = np.random.default_rng(case)
        for val in got:
            b = draw.choice(m, size=m)
            if len(np.unique(y[b])) < 2:
                assert np.isnan(val)
            else:
                assert val == pytest.approx(roc_auc_score(y[b], s[b]), abs=1e-12)


def test_callable_metric_and_auc_run():
    df = _frame(1500)

    def mean_score(y, d, s):
        return float(np.mean(s))

    res = disaggregated_evaluation(
        df,
        ["race", "sex"],
        "y",
        "d",
        "score",
        metrics=["auc", mean_score],
        estimators=["standard", "empirical_bayes", StructuredRegression(n_resamples=30)],
        n_variance_resamples=30,
        random_state=0,
        level=0.95,
    )
    assert set(res.table.metric) == {"auc", "mean_score"}
    assert res.estimates("auc").shape[0] == 8
    # groups are named on the axis by default; labels="size" marks them by size (the paper's)
    by_size = res.plot("auc", estimators=("standard", "structured"), labels="size")
    sizes = sorted(res.estimates("auc")["n"])
    assert [t.get_text() for t in by_size.get_xticklabels()] == [str(n) for n in sizes]
    named = res.plot("auc", estimators=("standard", "structured"))
    ticks = [t.get_text() for t in named.get_xticklabels()]
    est = res.estimates("auc").sort_values("n", kind="stable")
    assert ticks == [f"{g} (n={n})" for g, n in zip(est["group"], est["n"], strict=True)]
    with pytest.raises(ValueError, match="labels"):
        res.plot("auc", labels="names")
    # max_groups keeps the smallest groups, and the axis says how many it left out
    few = res.plot("auc", estimators=("standard", "structured"), max_groups=3, labels="size")
    assert [t.get_text() for t in few.get_xticklabels()] == [str(n) for n in sizes[:3]]
    assert few.get_xlabel().endswith("the 3 smallest of 8 groups")
    assert len(few.lines[0].get_xdata()) == 3  # the other groups' points are not drawn
    assert "smallest" not in res.plot("auc", max_groups=8).get_xlabel()
    with pytest.raises(ValueError, match="max_groups"):
        res.plot("auc", max_groups=0)
    # nothing to draw is an error, not an empty chart; the default draws what there is
    with pytest.raises(ValueError, match=r"metric 'fpr' is not in this result; it has \['auc'"):
        res.plot("fpr")
    # so are a table and a goodness-of-fit test of a metric the result lacks (the table
    # was empty; the test failed on "operands could not be broadcast")
    for method in (res.estimates, res.goodness_of_fit):
        with pytest.raises(ValueError, match=r"metric 'fpr' is not in this result"):
            method("fpr")
    with pytest.raises(ValueError, match=r"\['hierarchical'\] are not in this result"):
        res.plot("auc", estimators=("standard", "hierarchical"))
    assert [t.get_text() for t in res.plot("auc").get_legend().get_texts()] == ["standard"]
    # truth maps group labels to values: it is drawn where it names a group; one that names
    # none (a list, or a Series with row numbers) was drawn as nothing, with no word said
    groups = list(res.estimates("auc")["group"])
    drawn = res.plot("auc", truth={groups[0]: 0.7, "no such group": 0.1})
    assert drawn.collections[-1].get_offsets().shape[0] == len(groups)
    with pytest.raises(ValueError, match="`truth` names none of the result's groups"):
        res.plot("auc", truth=pd.Series([0.5] * len(groups)))
    with pytest.raises(TypeError, match="`truth` must map group labels"):
        res.plot("auc", truth=[0.5] * len(groups))
    with pytest.raises(TypeError, match="`ax` must be a matplotlib Axes"):
        res.plot("auc", ax="x")

    def broken(y, d, s):
        return y  # an array, not a number

    with pytest.raises(TypeError) as info:
        disaggregated_evaluation(df, ["race", "sex"], "y", "d", metrics=[broken], level=0.95)
    assert "raised by the metric 'broken' on" in "".join(info.value.__notes__)
    # a callable of the wrong arity is told how it is called
    with pytest.raises(TypeError) as info:
        disaggregated_evaluation(
            df, ["race", "sex"], "y", "d", metrics=[lambda rows: 0.0], level=0.95
        )
    assert "called as f(y_true, y_pred, y_score)" in "".join(info.value.__notes__)
    # two lambdas share a name: an error (one used to replace the other); a dict names them
    pair = [lambda y, d, s: float(np.mean(d)), lambda y, d, s: float(np.mean(y))]
    with pytest.raises(ValueError, match=r"more than one metric \['<lambda>'\].*dict"):
        disaggregated_evaluation(df, ["race", "sex"], "y", "d", metrics=pair, level=0.95)
    with pytest.raises(ValueError, match=r"more than one metric \['fpr'\]"):
        disaggregated_evaluation(df, ["race", "sex"], "y", "d", metrics=["fpr", "fpr"], level=0.95)
    kw = dict(estimators=["standard"], n_variance_resamples=20, random_state=0)
    named = disaggregated_evaluation(
        df, ["race", "sex"], "y", "d", metrics={"sel": pair[0], "base": pair[1]}, **kw, level=0.95
    )
    plain = disaggregated_evaluation(
        df, ["race", "sex"], "y", "d", metrics=["selection_rate", "base_rate"], **kw, level=0.95
    )
    for mine, builtin in (("sel", "selection_rate"), ("base", "base_rate")):
        np.testing.assert_allclose(
            named.estimates(mine)["standard"], plain.estimates(builtin)["standard"]
        )
    # one metric need not be a list; an infinite value is an error naming the group
    one = disaggregated_evaluation(df, ["race", "sex"], "y", "d", metrics="fpr", **kw, level=0.95)
    assert set(one.table.metric) == {"fpr"}
    with pytest.raises(ValueError, match="returned inf, not a finite number") as info:
        disaggregated_evaluation(
            df, ["race", "sex"], "y", "d", metrics=[lambda y, d, s: np.inf], level=0.95
        )
    assert "on" in "".join(info.value.__notes__) and "rows of group" in "".join(
        info.value.__notes__
    )


@pytest.mark.bayesian
def test_intervals_of_rates_and_auc_stay_in_the_unit_interval():
    """Eq. 7's interval s +- z sigma / sqrt(n) of a small group reaches past 0 and 1; for a
    rate or an AUC every estimator's interval is truncated to [0, 1] (the hierarchical
    AUC posterior projected onto it), while a user metric, whose range is unknown, keeps
    the symmetric interval of eq. 7."""
    df = _frame(600, seed=3)
    df.loc[df.index[:4], "age"] = "tiny"  # a group of a few rows

    def mean_score10(y, d, s):
        return float(np.mean(10 * s))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (UserWarning, SamplerWarning))
        res = disaggregated_evaluation(
            df,
            ["race", "sex", "age"],
            "y",
            "d",
            "score",
            metrics=["selection_rate", "fnr", "auc", mean_score10],
            level=[0.95, 0.5],
            estimators=[
                "standard",
                "james_stein",
                "empirical_bayes",
                StructuredRegression(n_resamples=30),
                HierarchicalBayes(draws=100, tune=100, chains=2),
            ],
            n_variance_resamples=30,
            random_state=0,
        )
    iv = res.intervals.dropna(subset=["lower"])
    rates = iv[iv.metric != "mean_score10"]
    assert set(rates.estimator) >= {"standard", "empirical_bayes", "structured", "hierarchical"}
    assert (rates.lower >= 0).all() and (rates.upper <= 1).all()
    std = rates[(rates.estimator == "standard") & (rates.level == 0.95)]
    assert ((std.lower == 0) | (std.upper == 1)).any()  # truncation was needed
    est = res.table[res.table.metric == "auc"]["estimate"].dropna()
    assert est.between(0, 1).all()
    user = res.table[(res.table.metric == "mean_score10") & (res.table.estimator == "standard")]
    user = user.dropna(subset=["lower"])
    np.testing.assert_allclose(user.upper - user.estimate, user.estimate - user.lower)


@pytest.mark.parametrize(
    "seed", [*range(12), 38, 117]
)  # 38, 117: a metric with no variance, one group
def test_random_small_audits_run_and_keep_every_group(seed):
    """Random audits of the kind users bring -- one to three attributes, groups of 0 to a
    few hundred rows, rare outcomes or decisions, groups all on one side -- run through
    every fast estimator without error, keep every group and metric, and report rates in
    [0, 1] with intervals that contain the standard estimate."""
    rng = np.random.default_rng(seed)
    n_attr = int(rng.integers(1, 4))
    levels = [list("pqrs"[: int(rng.integers(2, 5))]) for _ in range(n_attr)]
    n = int(rng.integers(30, 600))
    df = pd.DataFrame(
        {
            f"a{i}": rng.choice(v, n, p=rng.dirichlet(np.full(len(v), 0.7)))
            for i, v in enumerate(levels)
        }
    )
    df["y"] = (rng.random(n) < rng.choice([0.03, 0.3, 0.7])).astype(int)
    df["d"] = (rng.random(n) < rng.choice([0.02, 0.5, 0.98])).astype(int)
    df["s"] = rng.random(n) + df["y"]
    metrics = ["selection_rate", "fpr", "fnr", "ppv", "accuracy", "auc"]
    names = ["standard", "james_stein", "empirical_bayes", "structured"]
    estimators = [*names[:3], StructuredRegression(n_resamples=20)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a degenerate metric warns by name
        res = disaggregated_evaluation(
            df,
            [f"a{i}" for i in range(n_attr)],
            "y",
            "d",
            "s",
            metrics=metrics,
            estimators=estimators,
            n_variance_resamples=20,
            random_state=seed,
            level=0.95,
        )
    t = res.table
    n_groups = int(np.prod([df[f"a{i}"].nunique() for i in range(n_attr)]))
    assert len(t) == n_groups * len(metrics) * len(estimators)
    assert t.groupby(["metric", "estimator"]).size().eq(n_groups).all()
    est = t["estimate"].dropna()
    assert ((est >= -1e-12) & (est <= 1 + 1e-12)).all()
    std = t[t.estimator == "standard"]
    assert std.loc[~std.defined, "estimate"].isna().all()
    assert std.loc[std.defined, "estimate"].notna().all()
    withint = std.dropna(subset=["lower"])
    assert (withint.lower <= withint.estimate + 1e-12).all()
    assert (withint.estimate <= withint.upper + 1e-12).all()
    iv = t.dropna(subset=["lower"])
    assert ((iv.lower >= 0) & (iv.upper <= 1)).all()


@pytest.mark.parametrize("old", sorted(MOVED_OPTIONS))
def test_an_option_that_moved_into_its_estimator_fails_naming_it(old):
    """The flat options (hb_draws=, sr_ridge=, ...) fail in one line that names the
    estimator object carrying them now, before any work."""
    df = _frame(300)
    with pytest.raises(TypeError, match=re.escape(MOVED_OPTIONS[old])):
        disaggregated_evaluation(df, ["race"], "y", "d", **{old: 1})


def test_names_and_objects_are_the_same_estimators():
    """estimators=["standard", "empirical_bayes"] and their objects give the same table;
    the rows come in the package's order whatever the order given."""
    df = _frame(800)
    kw = dict(metrics=["fpr"], random_state=0, n_variance_resamples=20)
    by_name = disaggregated_evaluation(
        df, ["race", "sex"], "y", "d", estimators=["empirical_bayes", "standard"], **kw
    )
    by_object = disaggregated_evaluation(
        df, ["race", "sex"], "y", "d", estimators=[Standard(), EmpiricalBayes()], **kw
    )
    pd.testing.assert_frame_equal(by_name.table, by_object.table)
    assert by_name.table["estimator"].iloc[0] == "standard"


def test_empirical_bayes_caveat_is_in_the_result_and_its_display():
    """Empirical Bayes' default intervals are not calibrated group by group: the result's
    notes say so (the words the report gives), and so does its notebook display; without
    empirical Bayes there is no such note."""
    df = _frame(n=1500)
    kw = dict(protected=["race", "sex"], outcome="y", decision="d", metrics=["fpr"], random_state=0)
    res = disaggregated_evaluation(df, estimators=["standard", "empirical_bayes"], **kw)
    (note,) = res.notes
    assert "do not read them group by group" in note and "Prasad and Rao" in note
    assert "do not read them group by group" in res._repr_html_()
    robust = disaggregated_evaluation(
        df, estimators=["standard", EmpiricalBayes(interval="robust")], **kw
    )
    assert "robust one" in robust.notes[0]
    assert disaggregated_evaluation(df, estimators=["standard"], **kw).notes == []


def test_hierarchical_bayes_caveat_is_in_the_notes_of_a_result_with_its_intervals():
    """Hierarchical Bayes' intervals are calibrated on average over groups, not group by
    group: a result with its rows says so (after the other estimators' notes, in the words
    the report gives), for the group effects it was fitted with; one without it does not."""
    table = pd.DataFrame(
        {
            "metric": ["fpr"] * 3,
            "group": ["a"] * 3,
            "estimator": ["standard", "empirical_bayes", "hierarchical"],
        }
    )
    res = DisaggregatedResult(table=table, intervals=pd.DataFrame(), sigma2={}, level=0.9)
    eb_note, hb_note = res.notes
    assert eb_note == empirical_bayes_caveat("prasad_rao")
    assert hb_note == hierarchical_bayes_caveat() == hierarchical_bayes_caveat("size")
    assert "on average over groups" in hb_note and "grow as its rows fall" in hb_note
    exchangeable = HierarchicalBayes(group_variance="exchangeable")
    res = dataclasses.replace(res, hierarchical_estimator=exchangeable)
    hb_note = res.notes[1]
    assert hb_note == hierarchical_bayes_caveat("exchangeable")
    assert "on average over groups" in hb_note and "can miss" in hb_note
    with pytest.raises(ValueError, match="group_variance"):
        hierarchical_bayes_caveat("pooled")
    with pytest.raises(ValueError, match="group_variance"):
        HierarchicalBayes(group_variance="pooled")
    without = DisaggregatedResult(
        table=table.iloc[:2], intervals=pd.DataFrame(), sigma2={}, level=0.9
    )
    assert without.notes == [eb_note]


def test_structured_regression_caveat_follows_its_options_into_the_result_and_the_report():
    """Structured regression's intervals hold their level on average over groups, not for
    a small group that departs from the surface: the result's notes say so in the words of
    its options (departures, the published rBLPR, the conservative ridge), before empirical
    Bayes' note, and the report's section carries the same words once."""
    from bayesfair.report import Report
    from bayesfair.report.disaggregated import add_disaggregated_section

    df = _frame(n=1500)
    # seeded: in about one set in twenty the lasso's residuals show no departure, and the
    # notes then also name the metric (the next test)
    kw = dict(protected=["race", "sex"], outcome="y", decision="d", metrics=["fpr"], random_state=0)
    fast = dict(n_resamples=50, n_folds=3, n_lambdas=5)
    res = disaggregated_evaluation(
        df, estimators=["standard", StructuredRegression(**fast), "empirical_bayes"], **kw
    )
    sr_note, eb_note = res.notes
    assert sr_note == structured_regression_caveat(StructuredRegression(**fast))
    assert "departs from the surface" in sr_note and "on average over groups" in sr_note
    assert "Prasad and Rao" in eb_note
    assert "on average over groups" in res._repr_html_()
    published = disaggregated_evaluation(
        df, estimators=["standard", StructuredRegression(departures=False, **fast)], **kw
    )
    (note,) = published.notes
    assert "as published" in note and "departs from the surface" not in note
    rows = disaggregated_evaluation(
        df, estimators=["standard", StructuredRegression(ridge="rows", **fast)], **kw
    )
    (note,) = rows.notes
    assert "keeps almost all of its own deviation" in note and "can miss" not in note
    assert "keeps almost all of its own deviation" not in sr_note
    html = add_disaggregated_section(Report("t"), res).to_html()
    assert html.count("departs from the surface") == 1


def test_a_metric_without_estimated_departures_gets_its_own_note():
    """Where one evaluation set's residuals show no departure of the groups from the
    surface (departure variance 0 in both parts), structured regression's intervals of
    that metric carry the surface's uncertainty alone: the notes name the metric, after
    the caveat; a metric with a departure, and rBLPR as published (which has none by
    design), get no such note."""
    table = pd.DataFrame(
        {"metric": ["fpr", "ppv"], "group": ["a", "a"], "estimator": ["structured"] * 2}
    )
    structured = {
        "fpr": {"departure_variance": (0.0, 0.0)},
        "ppv": {"departure_variance": (0.0, 0.4)},
    }
    res = DisaggregatedResult(
        table=table, intervals=pd.DataFrame(), sigma2={}, level=0.9, structured=structured
    )
    caveat, flat = res.notes
    assert caveat == structured_regression_caveat()
    assert "intervals of fpr:" in flat and "ppv" not in flat
    assert "surface's uncertainty alone" in flat
    structured["ppv"]["departure_variance"] = [0.0, 0.0]  # as a saved result reads it back
    assert "intervals of fpr, ppv:" in res.notes[1]
    published = dataclasses.replace(
        res, structured_estimator=StructuredRegression(departures=False)
    )
    assert len(published.notes) == 1
    structured["fpr"]["departure_variance"] = (0.001, 0.0)
    structured["ppv"]["departure_variance"] = (0.0, 0.2)
    assert res.notes == [caveat]
