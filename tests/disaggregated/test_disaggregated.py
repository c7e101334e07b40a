"""Disaggregated evaluation: hand-computed estimators, limits, and the simulation."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re
import warnings

import arviz as az
import numpy as np
import pandas as pd
import pytest

from bayesfair import AuditData, SamplerWarning, _arviz
from bayesfair.disaggregated import (
    EmpiricalBayes,
    GroupedData,
    HierarchicalBayes,
    Standard,
    StructuredRegression,
    disaggregated_evaluation,
    empirical_bayes,
    goodness_of_fit,
    group_features,
    james_stein,
    pooled_sigma2,
    standard_intervals,
    structured_regression,
)
from bayesfair.disaggregated._lasso import _columns, lambda_max, lasso_cd
from bayesfair.disaggregated.evaluate import MOVED_OPTIONS
from bayesfair.metrics import group_rates

#: a short hierarchical fit for tests that compare its output, not its accuracy
SMALL_HB = dict(estimators=[HierarchicalBayes(draws=200, tune=300, chains=2)], random_state=0)


def _simulation_estimators(pop_truth, *names: str, n_resamples: int = 200) -> list:
    """herlihy.simulation_estimators of a population (structured regression with its
    explanatory features and interactions), those named."""
    from bayesfair.replication import herlihy

    pop = pop_truth[0] if isinstance(pop_truth, tuple) else pop_truth
    found = herlihy.simulation_estimators(pop, n_resamples=n_resamples)
    return [e for e in found if e.name in names]


def _frame(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "race": rng.choice(list("ABCD"), n, p=[0.6, 0.2, 0.15, 0.05]),
            "sex": rng.choice(["F", "M"], n),
            "age": rng.choice(["young", "old"], n, p=[0.7, 0.3]),
        }
    )
    df["y"] = (rng.random(n) < 0.3 + 0.1 * (df.race == "B")).astype(int)
    df["score"] = np.clip(0.2 + 0.4 * df.y + rng.normal(0, 0.2, n), 0, 1)
    df["d"] = (df.score > 0.45).astype(int)
    return df


# ------------------------------------------------------------------ hand-computed formulas
def test_pooled_variance_eq6():
    n = np.array([10.0, 40.0, 50.0])
    v = np.array([0.02, 0.005, np.nan])  # the third group has no bootstrap variance
    assert pooled_sigma2(n, v) == pytest.approx((10 * 10 * 0.02 + 40 * 40 * 0.005) / 50)


def test_james_stein_hand_computed():
    s = np.array([0.1, 0.2, 0.4, 0.5, np.nan])
    n = np.array([10.0, 20.0, 30.0, 40.0, 0.0])
    sigma2 = 0.5
    mu0 = (1 + 4 + 12 + 20) / 100
    dist = sum(nn * (ss - mu0) ** 2 / sigma2 for ss, nn in zip(s[:4], n[:4], strict=True))
    shrink = max(0.0, 1 - (4 - 3) / dist)
    out = james_stein(s, n, sigma2)
    np.testing.assert_allclose(out[:4], mu0 + shrink * (s[:4] - mu0))
    assert np.isnan(out[4])
    # no spread at all: everything shrinks to the weighted mean
    np.testing.assert_allclose(james_stein(np.full(4, 0.3), n[:4], sigma2), 0.3)
    # three groups or fewer: |A| - 3 <= 0 would expand away from the mean; they stay put
    np.testing.assert_allclose(james_stein(s[:3], n[:3], sigma2), s[:3])
    np.testing.assert_allclose(james_stein(s[:2], n[:2], sigma2), s[:2])


def test_empirical_bayes_hand_computed():
    s = np.array([0.1, 0.3, 0.35, 0.6])
    n = np.array([5.0, 50.0, 100.0, 20.0])
    sigma2 = 0.2
    N = n.sum()
    mu0 = np.sum(n * s) / N
    tau2 = max(0.0, (np.sum(n * (s - mu0) ** 2) - 3 * sigma2) / (N - np.sum(n**2) / N))
    sa = sigma2 / n
    mu = np.sum(s / (tau2 + sa)) / np.sum(1 / (tau2 + sa))
    expect = mu + tau2 / (tau2 + sa) * (s - mu)
    est, _lo, hi, t2 = empirical_bayes(s, n, sigma2, level=0.9)
    assert t2 == pytest.approx(tau2)
    np.testing.assert_allclose(est, expect)
    np.testing.assert_allclose(hi - est, 1.6448536 * np.sqrt(tau2 * sa / (tau2 + sa)), rtol=1e-6)
    # small groups move more than large ones
    assert abs(est[0] - s[0]) > abs(est[2] - s[2])


def test_dersimonian_laird_variance_matches_monte_carlo():
    """The variance of eq. 13's moment estimator of tau^2 (untruncated), which Prasad and
    Rao's interval needs, against 20,000 simulated normal data sets per tau^2."""
    from bayesfair.disaggregated.shrinkage import dersimonian_laird_variance

    rng = np.random.default_rng(0)
    k, sigma2 = 30, 0.2
    n = np.round(np.geomspace(5, 500, k))
    D, N = sigma2 / n, n.sum()
    for tau2 in (0.0, 0.002, 0.01):
        th = 0.3 + rng.normal(0, np.sqrt(tau2), (20_000, k))
        s = th + rng.normal(0, np.sqrt(D), (20_000, k))
        mu0 = (s * n).sum(1, keepdims=True) / N
        est = (np.sum(n * (s - mu0) ** 2, 1) - (k - 1) * sigma2) / (N - np.sum(n**2) / N)
        mc = est.var()  # relative standard error of a variance from 20,000 draws: about 1-2%
        assert dersimonian_laird_variance(tau2, 1 / D) == pytest.approx(mc, rel=0.06)


def test_prasad_rao_intervals_cover_where_posterior_intervals_do_not():
    """Normal groups (30 of sizes 5-500) whose true spread tau^2 is 0 or small: the paper's
    plug-in posterior interval, which takes the estimated mean and spread as known, covers
    far below 95% (zero width when tau^2 is estimated as 0); Prasad and Rao's adds their
    uncertainty.  600 replicates x 30 groups per tau^2."""
    rng = np.random.default_rng(1)
    k, sigma2 = 30, 0.2
    n = np.round(np.geomspace(5, 500, k))
    D = sigma2 / n
    cover = {}
    for tau2 in (0.0, 0.002, 0.01):
        hits = {"posterior": 0.0, "prasad_rao": 0.0}
        for _ in range(600):
            th = 0.3 + rng.normal(0, np.sqrt(tau2), k)
            s = th + rng.normal(0, np.sqrt(D))
            for how in hits:
                _, lo, hi, _ = empirical_bayes(s, n, sigma2, 0.95, interval=how)
                hits[how] += np.mean((lo <= th) & (th <= hi)) / 600
        cover[tau2] = hits
    print("95% coverage by tau^2:", cover)
    assert cover[0.0]["posterior"] < 0.6 and cover[0.002]["posterior"] < 0.91
    for tau2, hits in cover.items():
        assert hits["prasad_rao"] > hits["posterior"]
        assert 0.91 <= hits["prasad_rao"] <= 1.0, (tau2, hits)
    with pytest.raises(ValueError, match="interval"):
        empirical_bayes(s, n, sigma2, interval="exact")


def test_standard_intervals_eq7():
    lo, hi = standard_intervals(np.array([0.5]), np.array([25.0]), 0.25, 0.95)
    np.testing.assert_allclose(
        [lo[0], hi[0]], [0.5 - 1.959964 * 0.1, 0.5 + 1.959964 * 0.1], rtol=1e-6
    )


def test_lasso_column_index_lists_every_nonzero_in_row_order():
    """The lasso's sweeps read the features through their nonzeros by column; brute force
    on a sparse C-ordered matrix with empty columns and a dense one."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 25)) * (rng.random((40, 25)) < 0.2)
    X[:, 3] = 0.0
    X[:, 7] = rng.normal(size=40)
    start, rows, vals = _columns(X)
    assert start[0] == 0 and start[-1] == np.count_nonzero(X)
    for j in range(X.shape[1]):
        nz = np.flatnonzero(X[:, j])
        np.testing.assert_array_equal(rows[start[j] : start[j + 1]], nz)
        np.testing.assert_array_equal(vals[start[j] : start[j + 1]], X[nz, j])


def test_lasso_matches_scikit_learn():
    from sklearn.linear_model import Lasso

    rng = np.random.default_rng(1)
    X = rng.normal(size=(32, 12))
    y = X[:, 0] - 0.5 * X[:, 3] + rng.normal(0, 0.3, 32)
    w = rng.uniform(0.5, 3, 32)
    for lam in (0.01, 0.1, 0.5):
        ref = Lasso(alpha=lam, tol=1e-12, max_iter=100_000).fit(X, y, sample_weight=w)
        b0, th = lasso_cd(X, y, w, lam, np.zeros(12))
        np.testing.assert_allclose(th, ref.coef_, atol=1e-6)
        assert b0 == pytest.approx(ref.intercept_, abs=1e-6)
    b0, th = lasso_cd(X, y, w, lambda_max(X, y, w) * 1.0001, np.zeros(12))
    assert np.all(th == 0)
    # the sweeps visit only a column's nonzeros, with the intercept profiled out: indicators
    # beside dense columns far from mean 0 and a constant column, from a warm start that
    # gives the constant column a coefficient, still solve scikit-learn's problem
    Xm = np.column_stack([np.eye(4)[rng.integers(0, 4, 32)], 50 + X[:, :3], np.full(32, 2.0)])
    theta0 = rng.normal(size=Xm.shape[1])
    for lam in (0.005, 0.05):
        ref = Lasso(alpha=lam, tol=1e-12, max_iter=100_000).fit(Xm, y, sample_weight=w)
        b0, th = lasso_cd(Xm, y, w, lam, theta0)
        np.testing.assert_allclose(b0 + Xm @ th, ref.predict(Xm), atol=1e-6)
        assert th[-1] == 0


def _lasso_kkt_gap(X, y, w, lam, b0, th):
    """Largest violation of the lasso's optimality conditions (weights normalised):
    |x_j' W r| <= lam where theta_j = 0, x_j' W r = lam sign(theta_j) elsewhere."""
    ws = w / w.sum()
    r = y - b0 - X @ th
    grad = (X - ws @ X).T @ (ws * r)
    on = th != 0
    return max(
        np.max(np.abs(grad[on] - lam * np.sign(th[on])), initial=0.0),
        np.max(np.abs(grad[~on]) - lam, initial=0.0),
    )


def test_lasso_converges_on_collinear_group_indicators():
    """Structured regression's features are exactly collinear (an attribute value's
    indicator is the sum of its groups' identities).  At small penalties plain coordinate
    descent crawls there (it stops at its sweep cap far from optimal); the extrapolated
    sweeps reach the lasso's optimality conditions, with the objective of a run 40 times
    longer, and on a well-conditioned problem change nothing."""
    rng = np.random.default_rng(2)
    codes = np.array(list(itertools.product(range(3), repeat=4)))  # 81 groups
    X = np.hstack([np.eye(81)] + [np.eye(3)[codes[:, a]] for a in range(4)])
    y = 0.3 + 0.05 * (codes == 2).sum(1) + rng.normal(0, 0.02, 81)
    w = rng.uniform(20, 400, 81)
    lam = lambda_max(X, y, w) * 1e-4
    b0, th = lasso_cd(X, y, w, lam, np.zeros(X.shape[1]))
    plain = lasso_cd(X, y, w, lam, np.zeros(X.shape[1]), 10_000, 1e-10, 10**9)
    scale = lam
    assert _lasso_kkt_gap(X, y, w, lam, b0, th) < 1e-4 * scale
    assert _lasso_kkt_gap(X, y, w, lam, *plain) > 1e-2 * scale  # the cap, not optimality

    def objective(b, t):
        ws = w / w.sum()
        return 0.5 * np.sum(ws * (y - b - X @ t) ** 2) + lam * np.abs(t).sum()

    long_run = lasso_cd(X, y, w, lam, np.zeros(X.shape[1]), 400_000, 1e-13, 10**9)
    assert objective(b0, th) <= objective(*long_run) * (1 + 1e-9)
    np.testing.assert_allclose(b0 + X @ th, long_run[0] + X @ long_run[1], atol=1e-6)
    # where plain descent converges quickly the extrapolation never starts
    Z = rng.normal(size=(32, 12))
    yz = Z[:, 0] + rng.normal(0, 0.3, 32)
    wz = rng.uniform(0.5, 3, 32)
    fast = lasso_cd(Z, yz, wz, 0.05, np.zeros(12))
    slow = lasso_cd(Z, yz, wz, 0.05, np.zeros(12), 10_000, 1e-10, 10**9)
    np.testing.assert_array_equal(fast[1], slow[1])


# ------------------------------------------------------------------ data layer
def test_group_metrics_equal_group_rates():
    df = _frame()
    gd = GroupedData.from_frame(df, ["race", "sex"], "y", "d", "score")
    data = AuditData(df, ["race", "sex"], "y", decision="d")
    ref = group_rates(data, ["fpr", "selection_rate"])
    for m in ("fpr", "selection_rate"):
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


# ------------------------------------------------------------------ structured regression
def test_structured_regression_limits():
    df = _frame(4000)
    gd = GroupedData.from_frame(df, ["race", "sex", "age"], "y", "d")
    s = gd.estimate("selection_rate")
    n = gd.sizes().astype(float)
    rng = np.random.default_rng(0)
    sigma2 = pooled_sigma2(n, gd.bootstrap_variance("selection_rate", 100, rng))
    ok = np.isfinite(s)
    tiny = structured_regression(
        gd, "selection_rate", s, sigma2, lam=1e-10, n_resamples=10, rng=rng
    )
    np.testing.assert_allclose(tiny["estimate"][ok], s[ok], atol=1e-6)  # lambda -> 0
    huge = structured_regression(gd, "selection_rate", s, sigma2, lam=1e6, n_resamples=10, rng=rng)
    wmean = np.sum(n[ok] * s[ok]) / np.sum(n[ok])
    np.testing.assert_allclose(huge["estimate"], wmean, atol=1e-10)  # lambda -> infinity
    cv = structured_regression(gd, "selection_rate", s, sigma2, n_resamples=50, level=0.95, rng=rng)
    assert cv["lambdas"].min() <= cv["lam"] <= cv["lambdas"].max()
    lo, hi = cv["intervals"][0.95]
    assert np.all(lo <= hi)


def _additive_population(seed: int, n_rows: int = 2000):
    """32 groups (4 x 2 x 4) of very unequal size (5 to 370 rows) whose decision rates are
    additive in the attributes: structured regression's features hold the truth."""
    rng = np.random.default_rng(seed)
    levels = pd.MultiIndex.from_product([list("abcd"), ["f", "m"], list("1234")]).to_frame(
        index=False
    )
    share = np.einsum(
        "i,j,k->ijk", [0.70, 0.15, 0.10, 0.05], [0.45, 0.55], [0.3, 0.35, 0.25, 0.10]
    ).ravel()
    eff = (
        np.array([0.0, -0.05, 0.05, -0.03])[:, None, None]
        + np.array([-0.06, 0.06])[None, :, None]
        + np.array([-0.12, 0.02, 0.08, 0.05])[None, None, :]
    )
    p = (0.22 + eff).ravel()
    g = np.repeat(np.arange(32), np.round(n_rows * share).astype(int))
    df = pd.DataFrame(
        {
            "race": levels[0].to_numpy()[g],
            "sex": levels[1].to_numpy()[g],
            "age": levels[2].to_numpy()[g],
            "y": rng.integers(0, 2, len(g)),
            "d": (rng.random(len(g)) < p[g]).astype(int),
        }
    )
    truth = dict(zip(map(tuple, levels.to_numpy()), p, strict=True))
    return df, truth


@pytest.mark.slow
def test_rblpr_intervals_cover_when_the_features_hold_the_truth():
    """rBLPR 95% and 80% intervals of structured regression, 40 replicates of a population
    whose group rates are additive in the attributes (1,280 group-replicates): coverage
    within [0.92, 0.99] and [0.75, 0.92] with the default partial ridge, narrower than the
    standard intervals; the conservative ``ridge="rows"`` covers at least as often with
    wider intervals.  (Where the features miss real differences, as on the Adult
    simulation, the default under-covers: notebook 04.)"""
    rng0 = np.random.default_rng(2024)
    hits = {"groups": {0.95: [], 0.8: []}, "rows": {0.95: [], 0.8: []}}
    width = {"groups": [], "rows": []}
    for _ in range(40):
        seed = int(rng0.integers(2**31))
        df, truth = _additive_population(seed)
        gd = GroupedData.from_frame(df, ["race", "sex", "age"], "y", "d")
        s, n = gd.estimate("selection_rate"), gd.sizes().astype(float)
        rng = np.random.default_rng(seed)
        sigma2 = pooled_sigma2(n, gd.bootstrap_variance("selection_rate", 100, rng))
        tr = np.array([truth[tuple(r)] for r in gd.labels.itertuples(index=False)])
        std_w = 2 * 1.959964 * np.sqrt(sigma2 / n)
        feats = group_features(gd)
        for ridge in hits:
            out = structured_regression(
                gd,
                "selection_rate",
                s,
                sigma2,
                features=feats,
                level=(0.95, 0.8),
                n_resamples=200,
                ridge=ridge,
                rng=np.random.default_rng(seed + 1),
            )
            for level, (lo, hi) in out["intervals"].items():
                hits[ridge][level].extend((lo <= tr) & (tr <= hi))
            lo, hi = out["intervals"][0.95]
            width[ridge].extend((hi - lo) / std_w)
    cov = {r: {lv: float(np.mean(h)) for lv, h in d.items()} for r, d in hits.items()}
    rel = {r: float(np.mean(w)) for r, w in width.items()}
    print("rBLPR coverage:", cov, "width relative to standard:", rel)
    assert len(hits["groups"][0.95]) == 1280
    assert 0.92 <= cov["groups"][0.95] <= 0.99
    assert 0.75 <= cov["groups"][0.8] <= 0.92
    assert rel["groups"] < 0.9
    assert cov["rows"][0.95] >= cov["groups"][0.95] and rel["rows"] > rel["groups"]


def test_partial_ridge_argument_is_checked():
    df = _frame(800)
    gd = GroupedData.from_frame(df, ["race", "sex"], "y", "d")
    s = gd.estimate("selection_rate")
    for bad, err in (
        ("cols", ValueError),
        (-1.0, ValueError),
        (np.inf, ValueError),
        ([1], TypeError),
    ):
        with pytest.raises(err, match="ridge"):
            structured_regression(
                gd,
                "selection_rate",
                s,
                0.2,
                lam=0.01,
                n_resamples=5,
                ridge=bad,
                rng=np.random.default_rng(0),
            )


@pytest.mark.parametrize("lam2", [0.0, 1e-5, 0.01])
def test_partial_ridge_equals_the_penalised_least_squares_solution(lam2):
    """rBLPR's partial ridge (Woodbury updates of one inverse for few selected coefficients,
    the dense solve otherwise) against the minimiser of sum_i w_i (y_i - c0 - x_i c)^2 +
    lam2 sum_{j not selected} c_j^2 (+ 1e-10 |c|^2) by least squares on the augmented system:
    more features than rows (one identity feature per group), collinear columns, and
    selections of every size."""
    from bayesfair.disaggregated._lasso import PartialRidge

    rng = np.random.default_rng(0)
    for n, p, n_sel in [(40, 60, 3), (40, 60, 0), (40, 60, 35), (80, 20, 5), (30, 45, 12)]:
        X = np.column_stack([np.eye(n)[:, : min(n, p)], rng.normal(size=(n, max(0, p - n)))])
        X[:, -1] = X[:, -2] + X[:, -3]  # a collinear column
        w = rng.uniform(0.5, 5.0, n)
        ridge, dense = PartialRidge(X, w), PartialRidge(X, w, dense=True)
        for _ in range(3):
            y = rng.normal(size=n)
            sel = np.zeros(p, bool)
            sel[rng.choice(p, n_sel, replace=False)] = True
            ws = w / w.sum()
            xa = np.column_stack([np.ones(n), X])
            pen = np.concatenate([[0.0], np.where(sel, 0.0, lam2)]) + 1e-10
            aug = np.vstack([np.sqrt(ws)[:, None] * xa, np.diag(np.sqrt(pen))])
            want = np.linalg.lstsq(aug, np.concatenate([np.sqrt(ws) * y, np.zeros(p + 1)]))[0]
            for fit in (ridge, dense):
                c0, c = fit.fit(y, sel, lam2)
                got = np.concatenate([[c0], c])
                np.testing.assert_allclose(xa @ got, xa @ want, atol=1e-7)
                np.testing.assert_allclose(got, want, atol=1e-5 * max(1.0, np.abs(want).max()))
        # the update, not its fallback, solved every case with few selected and lam2 > 0
        assert ridge.dense_solves == (3 if lam2 == 0 or 2 * (n_sel + 1) >= p + 1 else 0)
        assert dense.dense_solves == 3


def test_cross_validation_computes_features_from_each_training_fold():
    """Group means of the data (the outcome rate, explanatory features) are recomputed from
    each fold's training rows: the held-out rows' outcomes must not reach the training fit
    through the features.  The folds split every group's rows about evenly."""
    df = _frame(3000)
    gd = GroupedData.from_frame(df, ["race", "sex"], "y", "d")
    s = gd.estimate("fpr")
    seen = []

    def features(rows=None):
        if rows is not None:
            seen.append(np.asarray(rows).copy())
        return group_features(gd, rows=rows, outcome_rates=True)

    structured_regression(
        gd,
        "fpr",
        s,
        0.2,
        features=features(),
        fold_features=features,
        n_resamples=10,
        rng=np.random.default_rng(0),
    )
    assert len(seen) == 10
    held_out = np.vstack([~rows for rows in seen])
    assert (held_out.sum(axis=0) == 1).all()  # every row is held out exactly once
    for rows in seen:
        kept = gd.sizes(rows) / gd.sizes()
        assert np.all(np.abs(kept - 0.9) <= 0.1)
    # the training fold's outcome rate is not the full data's
    full = group_features(gd, outcome_rates=True)["P(Y=1)"]
    assert not np.allclose(group_features(gd, rows=seen[0], outcome_rates=True)["P(Y=1)"], full)
    # disaggregated_evaluation runs an explanatory function once, not per metric and fold
    calls = []

    def mean_score(frame):
        calls.append(1)
        return frame["score"].to_numpy()

    res = disaggregated_evaluation(
        df,
        ["race", "sex"],
        "y",
        "d",
        metrics=["fpr", "fnr"],
        estimators=[StructuredRegression(explanatory={"mean_score": mean_score}, n_resamples=10)],
        random_state=0,
        level=0.95,
    )
    assert len(calls) == 1
    assert "expl:mean_score" in res.structured["fpr"]["coef"].index
    with pytest.raises(ValueError, match="must return the columns of `features`"):
        structured_regression(
            gd,
            "fpr",
            s,
            0.2,
            features=features(),
            fold_features=lambda rows: group_features(gd, rows=rows),
            n_resamples=10,
            rng=np.random.default_rng(0),
        )


def test_features_and_goodness_of_fit():
    df = _frame(4000)
    rng = np.random.default_rng(3)
    df["d"] = (rng.random(len(df)) < np.where(df.race == "B", 0.6, 0.2)).astype(int)
    gd = GroupedData.from_frame(df, ["race", "sex"], "y", "d")
    f = group_features(
        gd,
        interactions=True,
        outcome_rates=True,
        explanatory={"mean_score": lambda d: d["score"].to_numpy()},
    )
    assert "group[A, F]" in f and "race=A x sex=F" in f and "expl:mean_score" in f
    # a feature returned as a Series in another row order was paired with the rows by
    # position; the same values aligned give the same feature
    aligned = group_features(gd, explanatory={"m": lambda d: d["score"]})["expl:m"]
    np.testing.assert_allclose(aligned, f["expl:mean_score"])
    with pytest.raises(ValueError, match="`data` and `explanatory feature 'm'` are pandas"):
        group_features(gd, explanatory={"m": lambda d: d["score"].sort_values()})
    # a feature with missing values failed in the lasso's SVD ('did not converge'); one of
    # strings with numpy's message alone
    gap = {"m": lambda d: d["score"].where(d.index > 2).to_numpy()}
    with pytest.raises(ValueError, match="feature 'm' returned 3 missing or infinite value"):
        group_features(gd, explanatory=gap)
    with pytest.raises(ValueError, match="feature 'm' must return numbers"):
        group_features(gd, explanatory={"m": lambda d: np.full(len(d), "a")})
    s = gd.estimate("selection_rate")
    n = gd.sizes().astype(float)
    sigma2 = pooled_sigma2(
        n, gd.bootstrap_variance("selection_rate", 100, np.random.default_rng(0))
    )
    sens = group_features(gd, identity=False)
    gof = goodness_of_fit(
        gd,
        s,
        sigma2,
        {"intercept": pd.DataFrame(index=sens.index), "sens": sens},
        [("sens", "intercept")],
    )
    # race B has a higher outcome rate, so the decision rate differs by race: sens helps
    assert gof["pvalue"].iloc[0] < 0.01
    # independent check of the F statistic by weighted least squares
    w = n / sigma2
    X1 = np.column_stack([np.ones(8), sens.to_numpy()])
    r1 = s - X1 @ np.linalg.lstsq(X1 * np.sqrt(w)[:, None], s * np.sqrt(w), rcond=None)[0]
    r0 = s - np.sum(w * s) / np.sum(w)
    rss1, rss0 = np.sum(w * r1**2), np.sum(w * r0**2)
    p1 = np.linalg.matrix_rank(X1)
    F = ((rss0 - rss1) / (p1 - 1)) / (rss1 / (8 - p1))
    assert gof["F"].iloc[0] == pytest.approx(F)


def test_features_that_copy_the_metric_are_found():
    from bayesfair.disaggregated.structured import target_copies

    df = _frame(3000)
    df["y_again"] = df["y"]
    gd = GroupedData.from_frame(df, ["race", "sex", "age"], "y", "y_again")
    feats = group_features(
        gd,
        outcome_rates=True,
        explanatory={"mean_score": lambda d: d["score"].to_numpy()},
    )
    feats["P(Y=0)"] = 1 - feats["P(Y=1)"]  # an affine copy is a copy too
    ok = np.isfinite(gd.estimate("base_rate")) & (gd.sizes() > 0)
    for metric in ("base_rate", "selection_rate"):  # decisions equal to the outcome
        assert target_copies(feats, gd.estimate(metric), ok) == ["P(Y=1)", "P(Y=0)"]
    # indicators (the design) and a feature that merely correlates are kept
    assert target_copies(feats, gd.estimate("accuracy"), ok) == []
    assert target_copies(feats.iloc[:3], gd.estimate("base_rate")[:3], ok[:3]) == []


def _abc_groups() -> pd.DataFrame:
    """24 groups: A (4 values) x B (2) x C (3)."""
    return pd.MultiIndex.from_product(
        [["a1", "a2", "a3", "a4"], ["b1", "b2"], ["c1", "c2", "c3"]], names=list("ABC")
    ).to_frame(index=False)


def _rows_of(groups: pd.DataFrame, rng, smallest: int, largest: int):
    """Group sizes log-uniform in [smallest, largest]; each row's group code and attributes."""
    sizes = np.round(np.exp(rng.uniform(np.log(smallest), np.log(largest), len(groups))))
    g = np.repeat(np.arange(len(groups)), sizes.astype(int))
    return g, groups.iloc[g].reset_index(drop=True)


def _truth_of(groups: pd.DataFrame, values) -> dict:
    """Group label (as disaggregated_evaluation writes it) -> true value."""
    return dict(zip([", ".join(t) for t in groups.itertuples(index=False)], values, strict=True))


@pytest.mark.slow
def test_structured_intervals_of_the_base_rate_cover_without_the_outcome_rate_feature():
    """With the default features, the base rate's own outcome-rate feature let the lasso fit
    every group exactly: small groups' 95% intervals covered the truth in 0.50 of
    group-draws (20 populations of 24 groups whose rates ignore the attributes, sizes 3 to
    400), against 0.92 for the standard intervals.  Left out, it is 0.92 for both."""
    cover = {"standard": [], "structured": []}
    groups = _abc_groups()
    for r in range(20):
        rng = np.random.default_rng(r)
        p = 1 / (1 + np.exp(-rng.normal(-1, 0.8, len(groups))))
        g, df = _rows_of(groups, rng, 3, 400)
        df["y"] = (rng.random(len(g)) < p[g]).astype(int)
        df["d"] = (rng.random(len(g)) < 0.5).astype(int)
        with pytest.warns(UserWarning, match=r"left out the feature\(s\) \['P\(Y=1\)'\]"):
            res = disaggregated_evaluation(
                df,
                list("ABC"),
                "y",
                "d",
                metrics=["base_rate"],
                estimators=["standard", "structured"],
                random_state=r,
                level=0.95,
            )
        assert res.structured["base_rate"]["dropped"] == ["P(Y=1)"]
        truth = _truth_of(groups, p)
        t = res.table[res.table["n"] <= 25]
        inside = (t["lower"] <= t["group"].map(truth)) & (t["group"].map(truth) <= t["upper"])
        for est in cover:
            cover[est].extend(inside[t["estimator"] == est])
    rates = {est: float(np.mean(v)) for est, v in cover.items()}
    print(f"small groups' 95% coverage of the base rate over 20 populations: {rates}")
    assert len(cover["structured"]) > 150
    assert rates["structured"] >= 0.85, rates
    assert abs(rates["structured"] - rates["standard"]) < 0.06, rates
    # the goodness of fit does not test the metric against itself either
    with pytest.warns(UserWarning, match="goodness of fit of 'base_rate'"):
        gof = res.goodness_of_fit("base_rate")
    # (it was F = inf, p = 0); with no explanatory feature left there is no test
    assert np.isnan(gof.set_index("model").loc["expl", "pvalue"])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["additive", "unstructured"])
def test_hierarchical_intervals_cover_on_synthetic_populations(kind):
    """Hierarchical Bayes' 95% intervals of the selection rate, over 20 samples (sizes 5 to
    300 per group) of a population of 24 groups whose true rates are additive in the
    attributes' log-odds or ignore the attributes: measured coverage small / large groups
    0.973 / 0.939 (additive) and 0.929 / 0.943 (unstructured), at 0.61 and 0.78 of the
    standard intervals' width on the small groups (``pytest -s`` prints them)."""
    rng0 = np.random.default_rng(7)
    groups = _abc_groups()
    if kind == "additive":
        codes = {c: pd.Categorical(groups[c]).codes for c in "ABC"}
        eta = -0.8 + sum(rng0.normal(0, 0.5, groups[c].nunique())[codes[c]] for c in "ABC")
        eta = eta + rng0.normal(0, 0.2, len(groups))
    else:
        eta = rng0.normal(-0.8, 0.7, len(groups))
    p = 1 / (1 + np.exp(-eta))
    truth = _truth_of(groups, p)
    rows = []
    for r in range(20):
        rng = np.random.default_rng(100 + r)
        g, df = _rows_of(groups, rng, 5, 300)
        df["d"] = (rng.random(len(g)) < p[g]).astype(int)
        df["y"] = rng.integers(0, 2, len(g))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)  # short chains; coverage is the test
            res = disaggregated_evaluation(
                df,
                list("ABC"),
                "y",
                "d",
                metrics=["selection_rate"],
                estimators=["standard", HierarchicalBayes(draws=500, chains=2)],
                random_state=r,
                level=0.95,
            )
        rows.append(res.table)
    t = pd.concat(rows)
    t["truth"] = t["group"].map(truth)
    t["cover"] = (t["lower"] <= t["truth"]) & (t["truth"] <= t["upper"])
    t["width"] = t["upper"] - t["lower"]
    t["small"] = t["n"] <= 25
    out = t.groupby(["estimator", "small"])[["cover", "width"]].mean()
    print(kind, out.round(3).to_dict())
    hb = out.loc["hierarchical"]
    assert (t.loc[t["estimator"] == "hierarchical", "small"]).sum() > 150
    assert hb["cover"].between(0.89, 0.99).all(), out
    assert hb.loc[True, "width"] < 0.85 * out.loc[("standard", True), "width"], out


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
    with pytest.raises(ValueError, match="pos_label='yes' does not occur in `outcome`"):
        disaggregated_evaluation(
            coded, ["race", "sex"], "y", "d", pos_label="yes", **kw, level=0.95
        )
    with pytest.raises(ValueError, match="`score` column 'race' must hold numeric"):
        disaggregated_evaluation(
            df, ["sex"], "y", "d", "race", metrics=["auc"], estimators=["standard"], level=0.95
        )


def test_a_metric_with_no_pooled_variance_warns_and_keeps_every_group():
    # every group's decisions miss every positive: FNR is 1 wherever it is defined, the
    # bootstrap variances are all 0 and so is sigma^2; nothing may divide by it
    df = _frame(400)
    df["d"] = 0
    df.loc[df.race == "D", "y"] = 0  # and FNR is undefined in race D
    with (
        pytest.warns(
            UserWarning,
            match=r"'fnr': no group's bootstrap resamples vary .*pooled variance \(eq. 6\) is 0",
        ),
        # with no positive decision, accuracy is 1 - P(Y=1): the outcome-rate feature is
        # the metric itself and leaves structured regression
        pytest.warns(UserWarning, match=r"structured regression of 'accuracy': left out"),
    ):
        res = disaggregated_evaluation(
            df,
            ["race", "sex"],
            "y",
            "d",
            metrics=["fnr", "accuracy"],
            estimators=[
                "standard",
                "james_stein",
                "empirical_bayes",
                StructuredRegression(n_resamples=20),
            ],
            random_state=0,
            level=0.95,
        )
    assert res.structured["accuracy"]["dropped"] == ["P(Y=1)"]
    assert res.sigma2["fnr"] == 0 and res.sigma2["accuracy"] > 0
    t = res.table[res.table.metric == "fnr"]
    assert len(t) == 4 * res.grouped.n_groups
    defined = t[t.defined]
    assert (defined["estimate"] == 1.0).all() and len(defined) == 4 * 6
    assert t[~t.defined]["estimate"].isna().all()
    assert t[["lower", "upper"]].isna().all().all()  # no zero-width interval claims certainty
    acc = res.table[res.table.metric == "accuracy"]
    assert acc["estimate"].notna().all()
    assert acc[acc.estimator != "james_stein"][["lower", "upper"]].notna().all().all()
    # a constant score: every group's AUC is 0.5 (all ties), and no resample varies
    with pytest.warns(UserWarning, match=r"'auc': no group's bootstrap resamples vary"):
        res = disaggregated_evaluation(
            df.assign(s=0.5),
            ["race", "sex"],
            "y",
            score="s",
            metrics=["auc"],
            estimators=["standard", "empirical_bayes"],
            random_state=0,
            level=0.95,
        )
    defined = res.table[res.table.defined]
    assert res.sigma2["auc"] == 0 and (defined["estimate"] == 0.5).all()


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


def test_hierarchical_runs_and_shrinks():
    df = _frame(2000)
    res = disaggregated_evaluation(
        df,
        ["race", "sex"],
        "y",
        "d",
        "score",
        metrics=["selection_rate", "auc"],
        estimators=["standard", HierarchicalBayes(draws=200, tune=300, chains=2)],
        random_state=0,
        level=0.95,
    )
    hb = res.estimates("selection_rate")
    assert hb["hierarchical"].between(0, 1).all()
    assert "binomial" in res.idata and "fay_herriot" in res.idata
    t = res.table[res.table.estimator == "hierarchical"]
    assert (t["lower"] <= t["estimate"]).all() and (t["estimate"] <= t["upper"]).all()


def test_hierarchical_leaves_out_a_count_metric_without_denominator_rows():
    """Every outcome positive: FPR has no row of its denominator in any group. The
    hierarchical model would fit it from its prior alone, so it gets no estimate (as
    every other estimator), while FNR in the same call is fitted."""
    df = _frame(600).assign(y=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        with pytest.warns(UserWarning, match=r"'fpr': no group has an estimate"):
            res = disaggregated_evaluation(
                df, ["race", "sex"], "y", "d", metrics=["fpr", "fnr"], **SMALL_HB, level=0.95
            )
    hb = res.table[res.table.estimator == "hierarchical"].set_index("metric")
    assert hb.loc["fpr", ["estimate", "lower", "upper"]].isna().all().all()
    assert hb.loc["fnr", ["estimate", "lower", "upper"]].notna().all().all()
    assert list(res.idata["binomial"].posterior["measure"].values) == ["fnr"]


def test_hierarchical_point_estimate_is_the_chosen_posterior_summary():
    """``hb_point_estimate`` picks the posterior mean (default) or median of theta; the
    posterior itself does not change with it (same seed)."""
    df = _frame(2000)
    kw = dict(metrics=["selection_rate"], random_state=0, level=0.95)
    hb = HierarchicalBayes(draws=200, tune=300, chains=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        mean = disaggregated_evaluation(df, ["race", "sex"], "y", "d", estimators=[hb], **kw)
        med = disaggregated_evaluation(
            df,
            ["race", "sex"],
            "y",
            "d",
            estimators=[dataclasses.replace(hb, point_estimate="median")],
            **kw,
        )
    for res, how in ((mean, "mean"), (med, "median")):
        th = res.idata["binomial"].posterior["theta"].sel(measure="selection_rate")
        want = getattr(th, how)(("chain", "draw")).to_numpy()
        got = res.estimates("selection_rate")["hierarchical"].to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not np.allclose(
        mean.estimates("selection_rate")["hierarchical"],
        med.estimates("selection_rate")["hierarchical"],
    )
    with pytest.raises(ValueError, match="`point_estimate` must be 'mean' or 'median'"):
        HierarchicalBayes(point_estimate="mode")


def test_hierarchical_interval_reaches_the_boundary_when_every_row_is_on_one_side():
    """A group in which no negative is referred (FPR 0 of m) gets the one-sided interval
    [0, 95% quantile], of the same posterior mass as the central one; others stay central."""
    df = _frame(2000, seed=3)
    none = (df.race == "D") & (df.sex == "F")
    df.loc[none & (df.y == 0), "d"] = 0  # no false positives in that group
    res = disaggregated_evaluation(
        df,
        ["race", "sex"],
        "y",
        "d",
        metrics=["fpr"],
        estimators=[HierarchicalBayes(draws=300, tune=300, chains=2)],
        level=[0.95, 0.5],
        random_state=0,
    )
    t = res.table.set_index("group")
    iv = res.intervals.set_index(["group", "level"])
    target = next(g for g in t.index if "D" in g and "F" in g)
    assert iv.loc[(target, 0.95), "lower"] == 0.0
    assert iv.loc[(target, 0.5), "lower"] == 0.0
    upper_95, upper_50 = iv.loc[(target, 0.95), "upper"], iv.loc[(target, 0.5), "upper"]
    assert 0 < upper_50 < upper_95 < 1
    others = [(g, 0.95) for g in t.index if g != target]
    assert (iv.loc[others, "lower"] > 0).all()


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


def _at_95(sim: pd.DataFrame) -> pd.DataFrame:
    """summarise's coverage and relative width of the 95% intervals, by estimator, metric."""
    from bayesfair.replication import herlihy

    _, cov = herlihy.summarise(sim)
    return cov[cov["level"] == 0.95].set_index(["estimator", "metric"])


@pytest.mark.slow
@pytest.mark.data
def test_simulation_on_the_diabetes_population(diabetes_population):
    """Herlihy et al.'s Section 5.1 on the paper's own population (20 evaluation sets of
    5,000, the paper's size; the hierarchical model in the next test, at CI's size): on
    small groups (n <= 25) structured regression cuts the standard estimator's mean
    absolute error by at least 30% on all six metrics, James-Stein and empirical Bayes by
    at least 25% on selection rate and FPR; the standard 95% intervals cover in [0.92,
    0.98] on every metric and structured regression's are at least 15% narrower."""
    from bayesfair.replication import herlihy

    sim = herlihy.simulate(
        20,
        pop_truth=diabetes_population,
        estimators=_simulation_estimators(
            diabetes_population, "standard", "james_stein", "empirical_bayes", "structured"
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


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.xfail(
    strict=True,
    reason="open (issue 39): structured regression's default rBLPR intervals under-cover small "
    "groups on the diabetes population (0.89 FPR, 0.91 selection rate at 95%); documented in "
    "disaggregated_evaluation and the report",
)
def test_structured_intervals_cover_on_the_diabetes_population(diabetes_population):
    from bayesfair.replication import herlihy

    sim = herlihy.simulate(
        10,
        pop_truth=diabetes_population,
        metrics=("selection_rate", "fpr"),
        estimators=_simulation_estimators(diabetes_population, "standard", "structured"),
        level=[0.95],
        random_state=1,
    )
    coverage = _at_95(sim).loc["structured", "coverage"]
    print("structured regression's 95% coverage:", coverage.round(3).to_dict())
    assert coverage.between(0.92, 0.98).all(), coverage


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


def _shrinkage_sim(seed, n_draws=6, n_groups=14):
    """Simulation-shaped frame: standard, James-Stein and empirical-Bayes estimates of
    small groups (sizes 3-25) whose true rates spread from 0.02 to 0.6."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.02, 0.6, n_groups)
    n = rng.integers(3, 26, n_groups)
    rows = []
    for d in range(n_draws):
        s = rng.binomial(n, truth) / n
        sigma2 = float(np.sum(n * s * (1 - s)) / np.sum(n))
        assert sigma2 > 0  # true rates 0.02-0.6 in 14 groups: some estimate is inside (0, 1)
        ests = {
            "standard": s,
            "james_stein": james_stein(s, n, sigma2),
            "empirical_bayes": empirical_bayes(s, n, sigma2)[0],
        }
        for est, v in ests.items():
            for a in range(n_groups):
                rows.append(
                    {
                        "draw": d,
                        "metric": "rate",
                        "group": f"g{a}",
                        "estimator": est,
                        "n": int(n[a]),
                        "defined": True,
                        "estimate": v[a],
                        "truth": truth[a],
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(5))
def test_shrinkage_oracle_bounds_james_stein_and_empirical_bayes(seed):
    """The oracles search families that contain James-Stein (a common factor towards one
    centre) and empirical Bayes (a factor n rho / (1 + n rho) towards one centre), per draw
    and knowing the truth: they can never be worse than the actual estimators (up to the
    grid: half a centre step for the common factor, exact in c; the ratio grid adds at
    most 0.006 per group), and they agree with a brute-force search over dense grids."""
    from bayesfair.replication.herlihy import shrinkage_oracle

    sim = _shrinkage_sim(seed)
    o = shrinkage_oracle(sim).set_index("estimator")["small"]
    assert o["oracle: common factor"] <= o["james_stein"] + 0.5 / 400
    assert o["oracle: factor by size"] <= o["empirical_bayes"] + 0.5 / 400 + 0.006
    assert (
        o["oracle: common factor"] <= o["standard"] and o["oracle: factor by size"] <= o["standard"]
    )
    # brute force: centres x factors on dense grids, per draw
    std = sim[sim.estimator == "standard"]
    m = np.linspace(0, 1, 201)[:, None, None]
    c = np.linspace(0, 1, 501)[None, :, None]
    rho = np.concatenate([[0], np.geomspace(1e-4, 1e4, 801)])[None, :, None]
    brute_c = brute_k = 0.0
    for _, d in std.groupby("draw"):
        e, t, n = (d[k].to_numpy(float)[None, None, :] for k in ("estimate", "truth", "n"))
        brute_c += np.abs(m + c * (e - m) - t).sum(-1).min()
        k = np.concatenate([n * rho / (1 + n * rho), np.ones_like(e)], axis=1)
        brute_k += np.abs(m + k * (e - m) - t).sum(-1).min()
    brute_c, brute_k = brute_c / len(std), brute_k / len(std)
    # the oracle's grid of centres is finer and its c exact: never worse, and close
    assert o["oracle: common factor"] <= brute_c + 1e-12
    assert brute_c - o["oracle: common factor"] < 0.005
    assert abs(o["oracle: factor by size"] - brute_k) < 0.005


def test_shrinkage_oracle_needs_standard_rows():
    from bayesfair.replication.herlihy import shrinkage_oracle

    sim = _shrinkage_sim(0)
    with pytest.raises(ValueError, match="standard"):
        shrinkage_oracle(sim[sim.estimator != "standard"])


def _herlihy_like_population(seed, n=6000):
    """A population with the simulation's columns (race x sex x age band, y, score,
    decision at the top 20% of scores), groups from a few rows to thousands, and its
    true metric table, as :func:`bayesfair.replication.herlihy.population` returns."""
    from bayesfair.replication.herlihy import AGE_BANDS, SENSITIVE

    rng = np.random.default_rng(seed)
    pop = pd.DataFrame(
        {
            "race": rng.choice(["W", "B", "A", "O"], n, p=[0.8, 0.12, 0.05, 0.03]),
            "sex": rng.choice(["M", "F"], n, p=[0.65, 0.35]),
            "age_band": rng.choice(AGE_BANDS, n, p=[0.3, 0.35, 0.25, 0.1]),
        }
    )
    lin = (
        pop["sex"].map({"M": 0.6, "F": -0.6}).to_numpy()
        + pop["age_band"].map(dict(zip(AGE_BANDS, [-1.5, 0.3, 0.6, 0.2], strict=True))).to_numpy()
        + pop["race"].map({"W": 0.2, "B": -0.4, "A": 0.3, "O": -0.3}).to_numpy()
    )
    pop["y"] = (rng.random(n) < 1 / (1 + np.exp(1.2 - lin))).astype(int)
    pop["score"] = 1 / (1 + np.exp(-(lin + 1.5 * pop["y"] - 1.5 + rng.normal(0, 1, n))))
    pop["decision"] = (pop["score"] >= np.quantile(pop["score"], 0.8)).astype(int)
    gd = GroupedData.from_frame(pop, SENSITIVE, "y", "decision", "score")
    truth = pd.DataFrame(
        {m: gd.estimate(m) for m in ("selection_rate", "fpr")}, index=gd.group_names()
    )
    return pop, truth


def test_lasso_path_oracle_matches_structured_regression_and_simulate():
    """The oracle fits the evaluation sets of simulate() (its standard row equals
    summarise's small-group error of the same draws), its path at every penalty is the
    error of structured_regression at that penalty (brute force, one draw), and its
    per-draw choice is never worse than one penalty for all draws, which is never worse
    than any point of the path; summarise's small_interior leaves out true values of 0
    or 1 and only those."""
    from bayesfair.replication import herlihy

    pt = _herlihy_like_population(3)
    kw = dict(n_eval=800, pop_truth=pt, random_state=4)
    table, path = herlihy.lasso_path_oracle(
        3, return_path=True, n_lambdas=12, explanatory=None, **kw
    )
    t = table.set_index(["metric", "estimator"])
    sim = herlihy.simulate(3, estimators=("standard",), metrics=("selection_rate", "fpr"), **kw)
    mae, _ = herlihy.summarise(sim)
    for m in ("selection_rate", "fpr"):
        std = mae.set_index(["metric", "estimator"]).loc[(m, "standard")]
        assert t.loc[(m, "standard"), "small"] == pytest.approx(std["small"], abs=1e-12)
        per_draw = t.loc[(m, "lasso: best lambda per draw"), "small"]
        common = t.loc[(m, "lasso: best lambda for all draws"), "small"]
        assert per_draw <= common + 1e-12
        assert common == pytest.approx(path[path.metric == m]["small"].min(), abs=1e-12)
        # small_interior by hand
        one = sim[(sim.metric == m) & (sim.estimator == "standard") & (sim.n <= 25)]
        one = one.drop_duplicates(["draw", "group"])
        one = one[one.defined & (one.truth > 0) & (one.truth < 1)]
        assert std["small_interior"] == pytest.approx(
            (one.estimate - one.truth).abs().mean(), abs=1e-12
        )
    with pytest.raises(ValueError, match="no true values"):
        herlihy.lasso_path_oracle(1, metrics=("ppv",), **kw)
    # brute force on the first draw: structured_regression at each penalty of the grid
    _, one_path = herlihy.lasso_path_oracle(1, return_path=True, n_lambdas=12, **kw)
    ev = herlihy._stratified(
        pt[0], 800, np.random.default_rng(np.random.SeedSequence(4).spawn(1)[0])
    )
    gd = GroupedData.from_frame(ev, herlihy.SENSITIVE, "y", "decision", "score")
    feats = group_features(gd, interactions=True, outcome_rates=True)
    n = gd.sizes()
    for m in ("selection_rate", "fpr"):
        s = gd.estimate(m)
        tr = pt[1].loc[gd.group_names(), m].to_numpy()
        ok = np.isfinite(s) & (n > 0)
        keep = ok & (n <= 25)
        from bayesfair.disaggregated.structured import standardise_features

        lmax = lambda_max(standardise_features(feats.to_numpy(float))[0][ok], s[ok], n[ok])
        for ratio, small in one_path[one_path.metric == m][["lambda_ratio", "small"]].to_numpy():
            sr = structured_regression(
                gd,
                m,
                s,
                1.0,
                features=feats,
                lam=lmax * ratio,
                n_resamples=2,
                rng=np.random.default_rng(0),
            )
            est = np.clip(sr["estimate"], 0, 1)
            assert small == pytest.approx(np.abs(est[keep] - tr[keep]).mean(), abs=1e-7)


@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("binomial", [True, False])
@pytest.mark.parametrize("interactions", [True, False, "one attribute", "150 cells"])
def test_hierarchical_closed_form_density_equals_pymc(binomial, interactions, centred):
    """The sampler's hand-written density and gradient (disaggregated/_hb_logp.py) against
    PyMC's for the same hierarchical model, at random points; and theta / eta and the
    standardized effects z.  With one attribute a count model has no group effect besides
    the main effect.  ``centred``: the attribute and pair blocks sampled centred for the
    first measure and with centring weight 0.4 for the second (default: as chosen).
    "150 cells": a pair of attributes with 3 x 50 values, whose cell index overflowed
    pandas' int8 codes past 127 cells (both densities then indexed the wrong cells, and
    differed from each other)."""
    from bayesfair._nutpie import hb_expand
    from bayesfair.disaggregated.hierarchical import _Problem

    labels = pd.DataFrame(
        {"a": ["x", "x", "y", "y", "z", "z", "x"], "b": ["u", "v", "u", "v", "u", "v", "w"]}
    )
    if interactions == "one attribute":
        labels, interactions = pd.DataFrame({"a": ["x", "y", "z", "w"]}), True
    if interactions == "150 cells":
        labels = pd.MultiIndex.from_product([["x", "y", "z"], range(50)], names=["a", "b"])
        labels, interactions = labels.to_frame(index=False), True
    rng = np.random.default_rng(2)
    G, M = len(labels), 2
    if binomial:
        m = rng.integers(0, 40, (M, G)).astype(float)
        k = np.floor(m * rng.uniform(0, 1, (M, G)))
        prob = _Problem(labels, ["sel", "fpr"], k, m, None, None, interactions)
    else:
        s = rng.uniform(0.5, 0.95, (M, G))
        se = rng.uniform(0.01, 0.2, (M, G))
        s[1, 3] = np.nan  # undefined for one group: out of the likelihood
        prob = _Problem(labels, ["auc", "user"], None, None, s, se, interactions)
    if centred:  # centred for the first measure, partially non-centred for the second
        prob.centring = {name: np.array([1.0, 0.4]) for name in prob.centring}
    model, lay = prob.pymc_model(), prob.layout()
    if len(labels) == 150:  # every group its own cell of the pair block, in product order
        np.testing.assert_array_equal(lay.blocks[2][2], np.arange(150))
    names = [v.name for v in model.value_vars]
    assert ("sigma_group_log__" in names) == (len(labels.columns) > 1 or not binomial)
    start = model.initial_point()
    sizes = [int(np.prod(start[n].shape)) for n in names]
    assert sum(sizes) == lay.ndim
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    out_var = "theta" if binomial else "eta"
    graph = next(v for v in model.unobserved_value_vars if v.name == out_var)
    value = model.compile_fn(graph, inputs=model.value_vars, on_unused_input="ignore")
    offsets = []
    for _ in range(4):
        x = rng.normal(0.0, 0.7, lay.ndim)
        parts = np.split(x, np.cumsum(sizes)[:-1])
        point = {n: p.reshape(start[n].shape) for n, p in zip(names, parts, strict=True)}
        ours, grad = lay.logp(x)
        offsets.append(ours - float(logp(point)))
        np.testing.assert_allclose(grad, dlogp(point), rtol=1e-7, atol=1e-9)
        out = np.empty(sum(int(np.prod(sh)) for sh in lay.variables()[1]))
        hb_expand(x, lay.buffer, out)
        np.testing.assert_allclose(out[-M * G :], np.ravel(value(point)), rtol=1e-10)
        for c in prob.centring:  # the standardized effects, in whichever coordinates
            z = next(v for v in model.unobserved_value_vars if v.name == f"z_{c}")
            z_value = model.compile_fn(z, inputs=model.value_vars, on_unused_input="ignore")
            at = lay.variables()[0].index(f"z_{c}")
            o = sum(int(np.prod(sh)) for sh in lay.variables()[1][:at])
            n_z = int(np.prod(lay.variables()[1][at]))
            np.testing.assert_allclose(out[o : o + n_z], np.ravel(z_value(point)), rtol=1e-10)
    np.testing.assert_allclose(offsets, offsets[0], rtol=0, atol=1e-8 * abs(offsets[0]) + 1e-8)


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


def test_hierarchical_value_without_rows_is_drawn_as_a_new_level():
    """An attribute value no row carries (an unused category) is left out of the
    hierarchical fit: the seen groups' posterior is exactly the one without that value,
    and its groups get draws as new levels, finite and wider than any seen group's."""
    df = _frame(2000)
    declared = df.assign(race=pd.Categorical(df.race, categories=list("ABCDE")))
    kw = dict(metrics=["selection_rate", "auc"], **SMALL_HB)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        base = disaggregated_evaluation(df, ["race", "sex"], "y", "d", "score", **kw, level=0.95)
        res = disaggregated_evaluation(
            declared, ["race", "sex"], "y", "d", "score", **kw, level=0.95
        )
    for metric in ("selection_rate", "auc"):
        got = res.table[(res.table.metric == metric)].set_index("group")
        want = base.table[(base.table.metric == metric)].set_index("group")
        seen = got.loc[want.index]
        np.testing.assert_allclose(seen.estimate, want.estimate, rtol=1e-12)
        np.testing.assert_allclose(seen.upper - seen.lower, want.upper - want.lower, rtol=1e-12)
        new = got[got.race == "E"]
        assert len(new) == 2 and (new.n == 0).all()
        assert np.isfinite(new[["estimate", "lower", "upper"]].to_numpy()).all()
        assert (new.upper - new.lower).min() > (seen.upper - seen.lower).max()
    groups = res.idata["binomial"].posterior["theta"].coords["group"].to_numpy()
    assert len(groups) == 8 and set(groups) <= set(range(10))
    # an attribute whose rows all have one value: no effect to fit (it is the model
    # without that attribute), and its unseen value's scale comes from the prior
    site = df.assign(site=pd.Categorical(["s1"] * len(df), categories=["s1", "s2"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        one = disaggregated_evaluation(site, ["race", "site"], "y", "d", "score", **kw, level=0.95)
        alone = disaggregated_evaluation(df, ["race"], "y", "d", "score", **kw, level=0.95)
    assert "sigma_site" not in one.idata["binomial"].posterior
    for metric in ("selection_rate", "auc"):
        got = one.table[one.table.metric == metric]
        want = alone.table[alone.table.metric == metric]
        np.testing.assert_allclose(
            got[got.site == "s1"].estimate, want.estimate.to_numpy(), rtol=1e-12
        )
        new = got[got.site == "s2"]
        assert np.isfinite(new.estimate).all() and (new.upper > new.lower).all()


@pytest.mark.slow
def test_hierarchical_new_level_draws_match_the_model_with_the_value():
    """Brute force: with one attribute, the draws for a value without rows equal in
    distribution those of the model that keeps the value (sampled long, at
    target_accept 0.99, across the ridge the value adds)."""
    from bayesfair._sampling import sample_nuts
    from bayesfair.disaggregated._hb_logp import hierarchical_nutpie_model
    from bayesfair.disaggregated.hierarchical import _Problem, fit_hierarchical

    rng = np.random.default_rng(3)
    labels = pd.DataFrame({"a": list("vwxyz")})
    m = np.array([[40.0, 25.0, 60.0, 15.0, 0.0]])
    k = rng.binomial(m.astype(int), [[0.2, 0.35, 0.3, 0.5, 0.4]]).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        _, new = fit_hierarchical(labels, ["r"], k=k, m=m, draws=4000, chains=4, random_seed=1)
        prob = _Problem(labels, ["r"], k, m, None, None, True)
        idata = sample_nuts(
            prob.pymc_model,
            lambda: hierarchical_nutpie_model(prob.layout()),
            draws=4000,
            tune=2000,
            chains=4,
            seed=2,
            target_accept=0.99,
        )
    full = idata.posterior["theta"].to_numpy().reshape(-1, 1, 5)
    q = [0.05, 0.25, 0.5, 0.75, 0.95]
    got, want = np.quantile(new[:, 0, 4], q), np.quantile(full[:, 0, 4], q)
    print("new level:", got.round(3), "model with the value:", want.round(3))
    np.testing.assert_allclose(got, want, atol=0.03)
    np.testing.assert_allclose(new[:, 0, :4].mean(0), full[:, 0, :4].mean(0), atol=0.01)


@pytest.mark.slow
def test_hierarchical_main_effects_mix_when_the_data_pin_them_down():
    """27 groups of 2,000 rows with main effects of log-odds scale 0.5: sampled
    non-centred, an attribute's scale mixes slowly (sigma z is fixed, sigma is not) and
    the warning suggests ``hb_main_effects="centred"``; centred, and partially centred
    (the default "auto"), the scales' bulk ESS is more than 5 times larger.  The model is
    the same (``-k closed_form_density`` checks the densities): the group estimates agree
    within Monte Carlo error."""
    levels = list(itertools.product("xyz", "xyz", "xyz"))
    hb = HierarchicalBayes(draws=500, tune=500, chains=2)
    advised = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        eff = rng.normal(0.0, 0.5, (3, 3))
        rows = np.repeat(np.arange(27), 2000)
        codes = np.array([["xyz".index(v) for v in lv] for lv in levels])[rows]
        eta = -0.5 + eff[np.arange(3), codes].sum(1)
        df = pd.DataFrame(codes, columns=["a", "b", "c"]).replace({0: "x", 1: "y", 2: "z"})
        df["y"] = rng.integers(0, 2, len(df))
        df["d"] = (rng.random(len(df)) < 1 / (1 + np.exp(-eta))).astype(int)
        ess, fits = {}, {}
        for how in ("non-centred", "centred", "auto"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SamplerWarning)
                res = disaggregated_evaluation(
                    df,
                    ["a", "b", "c"],
                    "y",
                    "d",
                    metrics=["selection_rate"],
                    estimators=[dataclasses.replace(hb, main_effects=how)],
                    random_state=seed,
                    level=0.95,
                )
            idata = res.idata["binomial"]
            centred = json.loads(idata.posterior.attrs["centred_main_effects"])
            assert centred == ([] if how == "non-centred" else ["a", "b", "c"]), (how, centred)
            diag = az.summary(
                idata, var_names=["sigma_a", "sigma_b", "sigma_c"], kind="diagnostics"
            )
            ess[how], fits[how] = diag.ess_bulk.min(), res.estimates("selection_rate")
            said = " ".join(str(w.message) for w in caught)
            if how == "non-centred":
                if _arviz_worst_is_main_effect(idata):
                    assert "HierarchicalBayes(main_effects='centred')" in said, said
                    advised += 1
            else:
                # the main effects mix: their scales' R-hat, and any R-hat the warning
                # blames on a main effect, stay within R-hat's own noise at 2 x 500 draws
                # (other variables, interaction scales, reach 1.022 on the PyMC 5 stack)
                assert diag.r_hat.max() <= 1.02, diag
                if "main effect" in said:
                    worst = [float(r) for r in re.findall(r"R-hat up to ([0-9.]+)", said)]
                    assert max(worst, default=1.0) <= 1.02, said
        print(f"seed {seed}: main-effect scales' bulk ESS", ess)
        assert ess["centred"] >= 400
        for how in ("centred", "auto"):
            assert ess[how] >= 5 * ess["non-centred"]
        a = fits["non-centred"].set_index("group")["hierarchical"]
        for how in ("centred", "auto"):
            b = fits[how].set_index("group")["hierarchical"]
            np.testing.assert_allclose(a, b.loc[a.index], atol=0.003)
    print("fits whose warning suggested centring:", advised)
    assert advised >= 2  # the worst R-hat was a main effect's in every seed tried


def _arviz_worst_is_main_effect(idata) -> bool:
    summ = az.summary(idata, var_names=["~theta"], kind="diagnostics")
    worst = summ.r_hat.idxmax().split("[")[0]
    return summ.r_hat.max() > 1.01 and worst in {f"{p}_{c}" for p in ("sigma", "z") for c in "abc"}


def test_centring_is_suggested_only_for_attributes_with_three_well_filled_values():
    from bayesfair.disaggregated.evaluate import pinned_down

    values = pd.Series(["x", "y", "z", "x", "y", "z"])
    assert pinned_down(values, np.full(6, 600))  # 1,200 rows per value
    assert not pinned_down(values, np.array([600, 600, 600, 600, 600, 300]))  # z: 900
    assert not pinned_down(pd.Series(["x", "y"] * 3), np.full(6, 5000))  # two values


def test_sampler_advice_names_the_slow_variable_and_suggests_more_draws():
    """An R-hat problem without divergences, not in a well-filled attribute's main effect
    (the case of COMPAS' race x sex x age at the default 4 x 1,000 draws), gets the advice
    of more draws and the variable's name; with divergences, a larger target acceptance."""
    from bayesfair.disaggregated.evaluate import _sampler_advice

    rng = np.random.default_rng(0)
    shift = np.array([0.0, 0.0, 0.0, 1.0])[:, None]  # one chain elsewhere: R-hat >> 1.01
    idata = _arviz.from_draws(
        {
            "sigma_race": np.abs(rng.normal(1.0, 0.3, (4, 200)) + shift),
            "alpha": rng.normal(0.0, 1.0, (4, 200)),
            "theta": rng.uniform(0, 1, (4, 200, 3)) + shift[:, :, None],
        }
    )
    labels = pd.DataFrame({"race": ["x", "y", "z"], "sex": ["f", "m", "f"]})
    kw = dict(target_accept=0.95, main_effects="non-centred", draws=1000)
    said = _sampler_advice(idata, {"divergences": 0}, labels, np.full(3, 50), **kw)
    assert "`sigma_race`" in said and "HierarchicalBayes(draws=...), now 1000" in said
    assert "target_accept" not in said and "centred" not in said
    said = _sampler_advice(idata, {"divergences": 3}, labels, np.full(3, 50), **kw)
    assert "HierarchicalBayes(target_accept=...), now 0.95" in said and "draws" not in said
    # the same R-hat where every race has thousands of rows: centring, not more draws
    said = _sampler_advice(idata, {"divergences": 0}, labels, np.full(3, 5000), **kw)
    assert "HierarchicalBayes(main_effects='centred')" in said and "draws" not in said
    assert "non-centred" not in said  # the user's choice was non-centred
    # under "auto" (partially centred already) either way out, with when each helps
    said = _sampler_advice(
        idata, {"divergences": 0}, labels, np.full(3, 5000), **dict(kw, main_effects="auto")
    )
    assert "main_effects='centred') usually mixes it better where the groups" in said
    assert "'non-centred' where they do (interactions, group effects)" in said
    # nothing to advise when R-hat is fine
    calm = _arviz.from_draws({"sigma_race": rng.normal(1.0, 0.3, (4, 500))})
    assert _sampler_advice(calm, {"divergences": 0}, labels, np.full(3, 50), **kw) == ""
    # divergences where "auto" sampled race's main effects partially centred (the fit
    # records which in the posterior's attributes)
    part = _arviz.from_draws({"sigma_race": rng.normal(1.0, 0.3, (4, 500))})
    part.posterior.attrs["centred_main_effects"] = '["race"]'
    auto = dict(kw, main_effects="auto")
    said = _sampler_advice(part, {"divergences": 5}, labels, np.full(3, 5000), **auto)
    assert "HierarchicalBayes(target_accept=...), now 0.95" in said
    assert "main effects of ['race'] are sampled partially centred" in said
    assert "HierarchicalBayes(main_effects='non-centred')" in said
    for quiet in (dict(auto, main_effects="centred"), kw):  # not auto: nothing partial
        assert "non-centred" not in _sampler_advice(
            part, {"divergences": 5}, labels, np.full(3, 5000), **quiet
        )
    assert "non-centred" not in _sampler_advice(
        calm, {"divergences": 5}, labels, np.full(3, 5000), **auto
    )


def test_main_effects_is_checked():
    with pytest.raises(ValueError, match="`main_effects` must be one of"):
        HierarchicalBayes(main_effects="centered")


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


def test_auto_centring_weights_follow_information_and_spread():
    """hb_main_effects="auto": an attribute with three or more values, each with 1,000
    rows or more, gets the partial-centring weight I s^2 / (1 + I s^2) per metric (s^2 a
    lower confidence bound of its values' spread): near 1 for well-measured,
    well-separated effects, 0 where the values do not differ beyond their noise, smaller
    with fewer rows.  A two-valued attribute, or one with a value under 1,000 rows, stays
    non-centred (0)."""
    from bayesfair.disaggregated.hierarchical import _partial_centring, _Problem

    labels = pd.DataFrame(
        list(itertools.product("xyz", "xyz", "fm")), columns=["three", "flat", "two"]
    )
    codes = {c: labels[c].map({v: i for i, v in enumerate(sorted(set(labels[c])))}) for c in labels}
    eta = -0.5 + np.array([-0.6, 0.0, 0.6])[codes["three"]] + np.array([-0.6, 0.6])[codes["two"]]
    p = 1 / (1 + np.exp(-np.asarray(eta, float)))
    weights = {}
    for rows in (20_000, 400, 100):  # rows per group; each value has 6 groups
        sizes = np.full(len(labels), rows)
        m = sizes[None, :].astype(float)
        k = np.round(m * p)
        prob = _Problem(labels, ["rate"], k, m, None, None, True)
        w = _partial_centring(prob, k, m, None, None, sizes)
        weights[rows] = {c: float(v[0]) for c, v in w.items()}
    big, mid, few = weights[20_000], weights[400], weights[100]
    assert big["three"] > 0.95 and 0.3 < mid["three"] < big["three"]
    assert big["flat"] == mid["flat"] == 0.0  # no spread beyond noise
    assert big["two"] == mid["two"] == 0.0  # one contrast: non-centred
    assert few == {"three": 0.0, "flat": 0.0, "two": 0.0}  # 600 rows per value
    # "auto" makes these the weights of the fit; the other modes are 0 and 1
    sizes = np.full(len(labels), 400)
    m = sizes[None, :].astype(float)
    k = np.round(m * p)
    auto = _Problem(labels, ["rate"], k, m, None, None, True, "auto", sizes).centring
    assert {c: float(w[0]) for c, w in auto.items()} == mid
    centred = _Problem(labels, ["r"], k, m, None, None, True, "centred").centring
    assert all(w[0] == 1.0 for w in centred.values())
    # Fay-Herriot: the same from standard estimates and their standard errors
    s_est, se = p[None, :], np.full((1, len(labels)), 0.01)
    fh = _Problem(labels, ["auc"], None, None, s_est, se, True)
    w_fh = _partial_centring(fh, None, None, s_est, se, np.full(len(labels), 20_000))
    assert w_fh["three"][0] > 0.9 and w_fh["flat"][0] == 0.0 and w_fh["two"][0] == 0.0
    # the same rows spread over groups with their own effects (spread 0.6 on the
    # log-odds): the values' effects are pinned down far less than their row counts say
    # (the demo's data, whose weights 0.47-0.88 without this gave divergences)
    rng = np.random.default_rng(1)
    m = np.full((1, len(labels)), 20_000.0)
    hetero = []
    for _ in range(20):
        ph = 1 / (1 + np.exp(-(np.asarray(eta, float) + rng.normal(0, 0.6, len(labels)))))
        k = rng.binomial(20_000, ph)[None, :].astype(float)
        prob = _Problem(labels, ["rate"], k, m, None, None, True)
        hetero.append(_partial_centring(prob, k, m, None, None, m[0])["three"][0])
    assert np.median(hetero) < 0.3 < big["three"]


def test_residual_variance_is_the_groups_spread_beyond_main_effects():
    """_residual_variance (the DerSimonian-Laird moment estimate behind "auto"'s
    information) recovers the variance of group effects added to an additive logit, on
    average over replicates, and is about 0 without them; the same from standard
    estimates and standard errors (Fay-Herriot)."""
    from bayesfair.disaggregated.hierarchical import _Problem, _residual_variance

    labels = pd.DataFrame(list(itertools.product("xyz", "uvw", "fm")), columns=["a", "b", "c"])
    codes = {c: labels[c].map({v: i for i, v in enumerate(sorted(set(labels[c])))}) for c in labels}
    eta0 = np.asarray(-0.5 + np.array([-0.6, 0.0, 0.6])[codes["a"]] + 0.4 * codes["c"], float)
    m = np.full((1, len(labels)), 2000.0)
    rng = np.random.default_rng(0)
    for tau in (0.0, 0.3, 0.6):
        est = []
        for _ in range(200):
            p = 1 / (1 + np.exp(-(eta0 + rng.normal(0, tau, len(labels)))))
            k = rng.binomial(2000, p)[None, :].astype(float)
            prob = _Problem(labels, ["rate"], k, m, None, None, True)
            pg = (k[0] + 0.5) / (m[0] + 1)
            est.append(_residual_variance(prob, np.log(pg / (1 - pg)), m[0] * pg * (1 - pg)))
        if tau == 0:
            assert np.mean(est) < 0.002  # noise only: the floor at 0 leaves a small bias
        else:
            assert np.mean(est) == pytest.approx(tau**2, rel=0.15)
    # Fay-Herriot: standard estimates with known standard errors, some groups unseen
    se = np.full(len(labels), 0.02)
    prec = np.where(np.arange(len(labels)) % 5 == 0, 0.0, 1 / se**2)
    fh = _Problem(labels, ["auc"], None, None, eta0[None, :] / 10, se[None, :], True)
    est = [
        _residual_variance(
            fh, eta0 / 10 + rng.normal(0, 0.05, len(labels)) + rng.normal(0, se), prec
        )
        for _ in range(200)
    ]
    assert np.mean(est) == pytest.approx(0.05**2, rel=0.15)


def test_hierarchical_identity_basis_is_not_stored_and_gives_the_same_density():
    """The group block's identity basis is flagged instead of stored (O(G) per evaluation
    instead of O(G^2)); the density, gradient and output equal those of the stored one."""
    from bayesfair._nutpie import hb_expand
    from bayesfair.disaggregated import _hb_logp
    from bayesfair.disaggregated.hierarchical import _Problem

    labels = pd.DataFrame(list(itertools.product("xyz", "uvw", "pq")), columns=["a", "b", "c"])
    rng = np.random.default_rng(4)
    m = rng.integers(0, 50, (2, 18)).astype(float)
    prob = _Problem(
        labels, ["r", "s"], np.floor(m * rng.uniform(0, 1, m.shape)), m, None, None, True
    )
    flagged = prob.layout()
    orig = _hb_logp.HBLayout
    try:
        _hb_logp.HBLayout = functools.partial(orig, store_identity=True)
        stored = prob.layout()
    finally:
        _hb_logp.HBLayout = orig
    assert len(stored.buffer) - len(flagged.buffer) == 18 * 18
    n_out = sum(int(np.prod(sh)) for sh in flagged.variables()[1])
    for _ in range(3):
        x = rng.normal(0.0, 0.7, flagged.ndim)
        (lp1, g1), (lp2, g2) = flagged.logp(x), stored.logp(x)
        assert lp1 == lp2 and np.array_equal(g1, g2)
        o1, o2 = np.empty(n_out), np.empty(n_out)
        hb_expand(x, flagged.buffer, o1)
        hb_expand(x, stored.buffer, o2)
        assert np.array_equal(o1, o2)


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

    # without a score column the default metrics leave AUC out (it failed: "AUC needs y_score")
    no_score = herlihy.simulate(
        1,
        pop_truth=pop.drop(columns="prob"),
        **{**roles, "score": None},
        estimators=("standard",),
        n_eval=600,
    )
    assert set(no_score.metric) == set(herlihy.METRICS) - {"auc"}
    table = herlihy.lasso_path_oracle(2, pop_truth=pop, **roles, n_eval=600, n_lambdas=8)
    assert set(table.metric) == {"selection_rate", "fpr"}
    with pytest.raises(ValueError, match="no row for 15 group"):
        herlihy.simulate(1, pop_truth=(pop, truth.reset_index(drop=True)), **roles)
    with pytest.raises(TypeError, match="pop_truth"):
        herlihy.simulate(1, pop_truth=[pop, truth], **roles)
