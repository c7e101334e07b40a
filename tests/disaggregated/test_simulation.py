"""Herlihy et al.'s simulation harness on Adult, on the diabetes population and on a population
of one's own."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from disaggregated_helpers import (
    _at_95,
    _simulation_estimators,
)

from bayesfair import SamplerWarning
from bayesfair.disaggregated import (
    HierarchicalBayes,
)


# ------------------------------------------------------------------ simulation (Section 5.1)
@pytest.mark.slow
@pytest.mark.data
def test_simulation_on_adult(data_home):
    """Section 5.1 rebuilt on Adult (5 draws of 5,000; the notebook runs 20).

    Asserted: hierarchical Bayes cuts the small-group mean absolute error of the standard
    estimator by at least 15% for selection rate and is more accurate for FPR; the
    standard 95% intervals (pooled variance) cover the truth in [0.92, 0.98] of group-draws
    (320 of them), and hierarchical Bayes' 95% intervals for each metric in [0.90, 0.99]
    (160 group-draws each, binomial standard error about 0.015: the issue's band widened
    by that).  The issue's 30% is not asserted because it depends on the audited model: with
    5 draws, the cut for selection rate was 39.7%, 29.9%, 33.4% and 19.4% for the models
    trained on the 25% splits of seeds 0-3 (FPR: 23.2%, 10.5%, 27.2%, 21.8%; this test's
    split 1 now gives 29.8% and 11.7%); the notebook's 20-draw run on split 0 is reported
    there.  What varies is the small population groups whose true FPR is exactly 0 (no
    referred negative among them): every sample of them has the standard
    estimate 0, so no estimator can beat it there.  On the small group-draws whose true
    value lies inside (0, 1), hierarchical Bayes cut the error by 45%, 46%, 48% and 39%
    for selection rate and 52%, 47%, 57% and 50% for FPR on splits 0-3 (5 draws each);
    that 30% cut is asserted here.  What the Adult population does not reproduce -- the
    30% cut for James-Stein, empirical Bayes and structured regression on selection rate
    and FPR -- is reported, with oracle bounds, in notebook 04 and the issue.
    """
    from bayesfair.replication import herlihy

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SamplerWarning)
        sim = herlihy.simulate(
            5,
            data_home=data_home,
            metrics=("selection_rate", "fpr"),
            # the two whose claims are asserted
            estimators=("standard", HierarchicalBayes(draws=300, tune=300, chains=2)),
            random_state=1,
        )
    diag = pd.DataFrame(sim.attrs["hb_diagnostics"])  # one binomial fit per draw
    assert list(diag["draw"]) == list(range(5)) and set(diag["model"]) == {"binomial"}
    # one summary warning, whose advice fits the problems it counts
    said = [str(w.message) for w in caught if issubclass(w.category, SamplerWarning)]
    assert len(said) == (1 if (diag.divergences > 0).any() or (diag.r_hat_max > 1.01).any() else 0)
    if said:
        assert ("HierarchicalBayes(draws" in said[0]) == (diag.r_hat_max > 1.01).any()
        assert ("target_accept" in said[0]) == (diag.divergences > 0).any()
    mae, _ = herlihy.summarise(sim)
    small = mae.set_index(["metric", "estimator"])["small"]
    cut = {
        m: round(float(1 - small[(m, "hierarchical")] / small[(m, "standard")]), 3)
        for m in ("selection_rate", "fpr")
    }
    print("hierarchical Bayes' cut of the standard estimator's small-group error:", cut)
    assert small[("selection_rate", "hierarchical")] <= 0.85 * small[("selection_rate", "standard")]
    assert small[("fpr", "hierarchical")] < small[("fpr", "standard")]
    inside = mae.set_index(["metric", "estimator"])["small_interior"]
    for m in ("selection_rate", "fpr"):
        inside_cut = 1 - inside[(m, "hierarchical")] / inside[(m, "standard")]
        print(f"{m}: cut on small group-draws with a true value inside (0, 1): {inside_cut:.3f}")
        assert inside_cut >= 0.30, (m, inside_cut)
    iv = sim[
        (sim.estimator == "standard") & (sim.level == 0.95) & sim.defined & np.isfinite(sim.truth)
    ]
    coverage = ((iv.lower <= iv.truth) & (iv.truth <= iv.upper)).mean()
    assert 0.92 <= coverage <= 0.98, coverage
    hb = sim[
        (sim.estimator == "hierarchical")
        & (sim.level == 0.95)
        & sim.defined
        & np.isfinite(sim.truth)
    ]
    hb_cov = hb.assign(c=(hb.lower <= hb.truth) & (hb.truth <= hb.upper)).groupby("metric")["c"]
    print("hierarchical Bayes 95% coverage:", hb_cov.mean().round(3).to_dict())
    assert hb_cov.size().min() >= 150
    assert hb_cov.mean().between(0.90, 0.99).all(), hb_cov.mean()


@pytest.fixture(scope="module")
def diabetes_population(data_home):
    from bayesfair.replication import herlihy

    if not (data_home / "diabetic_data.csv").is_file():
        pytest.skip(f"diabetic_data.csv is not in {data_home} (see ../shared/data/README.md)")
    return herlihy.population(data_home, 0, name="diabetes")


@pytest.mark.slow
@pytest.mark.data
def test_simulation_on_the_diabetes_population(diabetes_population):
    """Herlihy et al.'s Section 5.1 on the paper's own population (20 evaluation sets of
    5,000, the paper's size; the hierarchical model in the next test, at CI's size): on
    small groups (n <= 25) structured regression cuts the standard estimator's mean
    absolute error by at least 30% on all six metrics, James-Stein and empirical Bayes by
    at least 25% on selection rate and FPR; the standard 95% intervals cover in [0.92,
    0.98] on every metric and structured regression's are at least 15% narrower."""
    _section_5_1(diabetes_population)


def _section_5_1(pop_truth) -> pd.DataFrame:
    """Section 5.1's claims on a population (20 evaluation sets of 5,000): the small-group
    error cuts against the standard estimator (structured regression 30% on every metric,
    James-Stein and empirical Bayes 25% on selection rate and FPR), the standard 95%
    intervals' coverage in [0.92, 0.98] and structured regression's width at most 0.85 of
    theirs; returns the 95% intervals' coverage and width (``_at_95``)."""
    from bayesfair.replication import herlihy

    sim = herlihy.simulate(
        20,
        pop_truth=pop_truth,
        estimators=_simulation_estimators(
            pop_truth, "standard", "james_stein", "empirical_bayes", "structured"
        ),
        level=[0.95],
        random_state=1,
    )
    mae, _ = herlihy.summarise(sim)
    small = mae.set_index(["metric", "estimator"])["small"].unstack()
    cut = 1 - small.div(small["standard"], axis=0)
    print("small-group MAE cut against standard:\n", cut.round(3))
    assert len(cut) == 6
    assert (cut["structured"] >= 0.30).all(), cut["structured"]
    for est in ("james_stein", "empirical_bayes"):
        assert (cut.loc[["selection_rate", "fpr"], est] >= 0.25).all(), cut[est]
    at_95 = _at_95(sim)
    standard = at_95.loc["standard", "coverage"]
    print("standard 95% coverage:", standard.round(3).to_dict())
    assert standard.between(0.92, 0.98).all(), standard
    width = at_95.loc["structured", "relative_width"]
    print("structured regression's width / standard's:", width.round(3).to_dict())
    assert (width <= 0.85).all(), width
    return at_95


@pytest.mark.slow
@pytest.mark.data
def test_structured_intervals_cover_on_the_diabetes_population(diabetes_population):
    """Structured regression's default intervals on the paper's population (20 evaluation
    sets of 5,000, the issue's size; 640 group-draws per metric): with the groups'
    departures from the regression surface in the bootstrap world they cover in [0.92,
    0.98] and stay at least 15% narrower than the standard intervals; without them
    (``departures=False``, the published rBLPR) they cover less (0.89-0.91 in notebook
    07)."""
    from dataclasses import replace

    from bayesfair.replication import herlihy

    standard, structured = _simulation_estimators(diabetes_population, "standard", "structured")
    assert structured.departures  # the default
    sims = {
        dep: herlihy.simulate(
            20,
            pop_truth=diabetes_population,
            metrics=("selection_rate", "fpr"),
            estimators=(standard, replace(structured, departures=dep)),
            level=[0.95],
            random_state=1,
        )
        for dep in (True, False)
    }
    at_95 = {dep: _at_95(sim).loc["structured"] for dep, sim in sims.items()}
    coverage = at_95[True]["coverage"]
    print("structured regression's 95% coverage:", coverage.round(3).to_dict())
    print("without departures:", at_95[False]["coverage"].round(3).to_dict())
    assert coverage.between(0.92, 0.98).all(), coverage
    assert (at_95[True]["relative_width"] <= 0.85).all(), at_95[True]
    assert (coverage > at_95[False]["coverage"]).all()


@pytest.mark.slow
@pytest.mark.data
def test_hierarchical_model_on_the_diabetes_population(diabetes_population):
    """The hierarchical model on the diabetes population (5 evaluation sets, 2 x 300 draws:
    CI's size; the issue's 20 sets are measured in notebook 04): it cuts the standard
    estimator's small-group error by at least 30% on selection rate and FPR, and its 95%
    intervals cover in [0.90, 0.99] (160 group-draws per metric, binomial standard error
    about 0.017: the issue's [0.92, 0.98] widened by it) while at least 15% narrower."""
    from bayesfair.replication import herlihy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)  # counted in attrs, not asserted here
        sim = herlihy.simulate(
            5,
            pop_truth=diabetes_population,
            metrics=("selection_rate", "fpr"),
            estimators=("standard", HierarchicalBayes(draws=300, tune=300, chains=2)),
            level=[0.95],
            random_state=1,
        )
    mae, _ = herlihy.summarise(sim)
    small = mae.set_index(["metric", "estimator"])["small"].unstack()
    cut = 1 - small["hierarchical"] / small["standard"]
    print("hierarchical Bayes' small-group MAE cut:", cut.round(3).to_dict())
    assert (cut >= 0.30).all(), cut
    hb = _at_95(sim).loc["hierarchical"]
    print("hierarchical Bayes' 95% coverage:", hb["coverage"].round(3).to_dict())
    assert hb["coverage"].between(0.90, 0.99).all(), hb
    assert (hb["relative_width"] <= 0.85).all(), hb


@pytest.mark.slow
@pytest.mark.data
def test_table1_pattern_on_the_diabetes_population(diabetes_population):
    """Herlihy et al.'s Table 1 on 20 evaluation sets of 5,000 (the paper's draws): p below
    0.05 where the paper's is, above 0.05 where the paper's is above 0.1, in every cell but
    PPV's explanatory features (the open part of issue 39, reported as an expected failure
    with its p-value). That cell is the groups' outcome rate's: without it among the
    explanatory features, PPV's p is above 0.1. One set's p-value of that cell varies
    widely from set to set (the xfail says how often it is above 0.1 and above the
    paper's value), and the paper does not say that its table is over more than one set.
    The paper's F-test computes that feature on the same rows as PPV and is over-sized there
    (about 0.5 at 0.05 under a null: the slow test in test_structured.py), so its cell is a
    draw of a test that rejects too often, not a property of the population."""
    from bayesfair.replication import herlihy

    paper = herlihy.TABLE1_PAPER

    def missed(table):
        ours = table.xs("package", axis=1, level=1).loc[paper.index, paper.columns]
        kept = np.where(paper < 0.05, ours < 0.05, np.where(paper > 0.1, ours > 0.05, True))
        kept = pd.DataFrame(kept, index=paper.index, columns=paper.columns)
        return ours, [(m, c) for m in paper.index for c in paper.columns if not kept.loc[m, c]]

    table = herlihy.table1(diabetes_population, n_sets=20)
    ours, off = missed(table)
    print("Table 1, 20 sets:", ours.round(3).to_dict())
    per_set = table.attrs["per_set"]
    assert per_set.shape == (20 * len(paper.index), len(paper.columns))
    ppv = per_set.xs("ppv", level="metric")["expl vs none"]
    published = paper.loc["ppv", "expl vs none"]
    above = f"{(ppv > 0.1).sum()} of 20 sets above 0.1, {(ppv > published).sum()} above {published}"
    print("PPV's explanatory features, one set at a time:", ppv.round(3).tolist(), above)
    assert set(off) <= {("ppv", "expl vs none")}, off
    without, off_without = missed(
        herlihy.table1(diabetes_population, n_sets=20, outcome_rates=False)
    )
    print(
        f"without the outcome rate: PPV's explanatory features p = "
        f"{without.loc['ppv', 'expl vs none']:.3f}, cells off the pattern: {off_without}"
    )
    assert without.loc["ppv", "expl vs none"] > 0.1, without.loc["ppv"]
    if off:
        p = ours.loc["ppv", "expl vs none"]
        pytest.xfail(
            f"issue 39 open: PPV's explanatory features p = {p:.3f} (median of 20 sets; "
            f"{above}), paper {published}"
        )


def test_simulation_harness_runs_on_any_population():
    """simulate and lasso_path_oracle take a population of one's own: other column names,
    two attributes, a truth computed from it (checked by hand with pandas), every group of
    the population in every draw; the Adult explanatory features are left out where the
    population lacks their columns; a truth table that names no group is refused."""
    from bayesfair.replication import herlihy

    rng = np.random.default_rng(11)
    n = 5000
    pop = pd.DataFrame(
        {
            "region": rng.choice(["N", "S", "E", "W", "C"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05]),
            "gender": rng.choice(["f", "m", "x"], n, p=[0.5, 0.45, 0.05]),
        }
    )
    lin = pop["region"].map(dict(N=0.2, S=-0.3, E=0.5, W=-0.6, C=0.0)).to_numpy()
    pop["label"] = (rng.random(n) < 1 / (1 + np.exp(-lin))).astype(int)
    pop["prob"] = 1 / (1 + np.exp(-(lin + pop["label"] - 0.5 + rng.normal(0, 1, n))))
    pop["pred"] = (pop["prob"] >= 0.6).astype(int)
    roles = dict(protected=["region", "gender"], outcome="label", decision="pred")
    roles["score"] = "prob"
    truth = herlihy.population_truth(pop, **roles)
    by = pop.groupby(["region", "gender"])
    neg = pop[pop.label == 0].groupby(["region", "gender"])
    for (r, g), rows in by:
        name = f"{r}, {g}"
        assert truth.loc[name, "N"] == len(rows)
        assert truth.loc[name, "selection_rate"] == pytest.approx(rows.pred.mean(), abs=1e-12)
        assert truth.loc[name, "fpr"] == pytest.approx(neg.get_group((r, g)).pred.mean(), abs=1e-12)
    assert len(truth) == 15 and list(truth.columns) == ["N", *herlihy.METRICS]

    metrics = ("selection_rate", "fpr", "auc")
    sim = herlihy.simulate(
        2,
        pop_truth=pop,
        **roles,
        metrics=metrics,
        estimators=_simulation_estimators(
            pop, "standard", "james_stein", "structured", n_resamples=40
        ),
        n_eval=600,
        random_state=0,
    )
    assert set(sim.group) == set(truth.index) and set(sim.metric) == set(metrics)
    one = sim.drop_duplicates(["draw", "metric", "group", "estimator"])
    expected = [truth.loc[g, m] for g, m in zip(one.group, one.metric, strict=True)]
    np.testing.assert_array_equal(one.truth.to_numpy(), expected)  # NaN where undefined
    sizes = one[(one.metric == "fpr") & (one.estimator == "standard")].groupby("draw").n.sum()
    assert (abs(sizes - 600) <= 8).all()  # proportional allocation, each group's count rounded
    mae, cov = herlihy.summarise(sim)
    assert set(mae.estimator) == {"standard", "james_stein", "structured"}
    assert cov.coverage.between(0, 1).all()
    # structured regression's departure variance, one record per draw and metric
    dv = pd.DataFrame(sim.attrs["structured_departures"])
    pairs = sorted(zip(dv.draw, dv.metric, strict=True))
    assert pairs == sorted((d, m) for d in (0, 1) for m in metrics)
    assert (dv[["tau2", "phi"]] >= 0).all().all()

    # without a score column the default metrics leave AUC out (it failed: "AUC needs y_score")
    no_score = herlihy.simulate(
        1,
        pop_truth=pop.drop(columns="prob"),
        **{**roles, "score": None},
        estimators=("standard",),
        n_eval=600,
    )
    assert set(no_score.metric) == set(herlihy.METRICS) - {"auc"}
    assert no_score.attrs["structured_departures"] == []  # no structured regression
    table = herlihy.lasso_path_oracle(2, pop_truth=pop, **roles, n_eval=600, n_lambdas=8)
    assert set(table.metric) == {"selection_rate", "fpr"}
    with pytest.raises(ValueError, match="no row for 15 group"):
        herlihy.simulate(1, pop_truth=(pop, truth.reset_index(drop=True)), **roles)
    with pytest.raises(TypeError, match="pop_truth"):
        herlihy.simulate(1, pop_truth=[pop, truth], **roles)


@pytest.mark.slow
@pytest.mark.data
def test_simulation_on_the_diabetes_population_audited_by_another_model(data_home):
    """The acceptance of issue 39 on a population the package's own harness does not build:
    the diabetes data audited by gradient-boosted trees (``classifier=``) instead of the
    paper's logistic regression, the same split and 20 evaluation sets of 5,000. Asserted as
    on the paper's model: structured regression cuts the standard estimator's small-group
    error by at least 30% on all six metrics, James-Stein and empirical Bayes by 25% on
    selection rate and FPR; the standard and structured 95% intervals cover in [0.92, 0.98]
    and structured regression's are at least 15% narrower."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from bayesfair.replication import herlihy

    if not (data_home / "diabetic_data.csv").is_file():
        pytest.skip(f"diabetic_data.csv is not in {data_home} (see ../shared/data/README.md)")
    trees = HistGradientBoostingClassifier(max_iter=100, random_state=0)
    pop_truth = herlihy.population(data_home, 0, name="diabetes", classifier=trees)
    structured = _section_5_1(pop_truth).loc["structured", "coverage"]
    print("structured regression's 95% coverage:", structured.round(3).to_dict())
    assert structured.between(0.92, 0.98).all(), structured


def test_the_audited_model_of_a_population_can_be_ones_own():
    """``classifier=`` replaces the paper's logistic regression (a clone is fitted, on the
    same features, dense); the decisions are the top 20% of its scores; anything without
    ``predict_proba`` is refused by name before any data is read."""
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LinearRegression
    from sklearn.tree import DecisionTreeClassifier

    from bayesfair.replication import herlihy

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=400), "c": rng.choice(list("abc"), 400)})
    y = pd.Series((X["x"] + (X["c"] == "a") + rng.normal(size=400) > 0.5).astype(int))
    train = rng.random(400) < 0.25
    tree = DecisionTreeClassifier(max_depth=2, random_state=0)
    score, decision = herlihy._audited_model(X, y, train, ["x"], ["c"], tree)
    with pytest.raises(NotFittedError):
        tree.predict(X[["x"]])  # the caller's object is left as it was
    assert len(score) == (~train).sum() and len(np.unique(score)) <= 4  # a depth-2 tree's
    np.testing.assert_array_equal(decision, score >= np.quantile(score, 0.8))
    default, _ = herlihy._audited_model(X, y, train, ["x"], ["c"])
    assert len(np.unique(default)) > 4  # the logistic regression's scores
    with pytest.raises(TypeError, match="classifier"):
        herlihy.population(classifier=LinearRegression())
