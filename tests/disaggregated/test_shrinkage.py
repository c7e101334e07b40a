"""The pooled variance, the standard intervals, James-Stein and empirical Bayes (Herlihy et
al., eqs. 6-7 and Appendix B), and the shrinkage oracle."""

from __future__ import annotations

import numpy as np
import pytest
from disaggregated_helpers import (
    _frame,
    _shrinkage_sim,
)

from bayesfair.disaggregated import (
    EmpiricalBayes,
    StructuredRegression,
    disaggregated_evaluation,
    empirical_bayes,
    james_stein,
    pooled_sigma2,
    robust_critical_value,
    robust_empirical_bayes,
    standard_intervals,
)


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


# ------------------------------------------------------------------ robust empirical Bayes
@pytest.mark.parametrize("m2, level", [(0.1, 0.95), (1.0, 0.95), (5.0, 0.9), (0.5, 0.8)])
def test_robust_critical_value_is_the_worst_case_of_a_brute_force_search(m2, level):
    """At the critical value, the largest non-coverage over distributions of the normalized
    bias with second moment m2 is 1 - level, and just below it the largest is more: a
    linear programme over every distribution on 4,001 squared biases (0 to 400) finds it."""
    from scipy.optimize import linprog
    from scipy.special import ndtr

    t = np.concatenate([[0.0], np.geomspace(1e-4, 400, 4000)])

    def worst(chi):
        r = ndtr(-chi - np.sqrt(t)) + ndtr(-chi + np.sqrt(t))
        lp = linprog(-r, A_eq=np.vstack([np.ones_like(t), t]), b_eq=[1, m2], bounds=(0, None))
        return -lp.fun

    (chi,) = robust_critical_value(m2, level)
    assert worst(chi) == pytest.approx(1 - level, abs=2e-4)
    assert worst(0.98 * chi) > 1 - level + 1e-3


def test_robust_critical_value_grows_from_the_normal_quantile():
    """No bias: the normal quantile. With bias it grows with m2 and is above the normal
    model's z sqrt(1 + m2) (a normal bias is one distribution among those it allows)."""
    m2 = np.array([0.0, 0.05, 0.5, 2.0, 20.0])
    cv = robust_critical_value(m2, 0.95)
    assert cv[0] == pytest.approx(1.959964, abs=1e-6)
    assert np.all(np.diff(cv) > 0)
    assert np.all(cv[1:] > 1.959964 * np.sqrt(1 + m2[1:]))


def test_robust_empirical_bayes_shrinks_by_the_spread_every_group_shows():
    """The spread is the unweighted moment estimate, kept above its noise; the shrinkage
    factors mu2 / (mu2 + sigma_a^2); undefined groups stay NaN; the intervals hold the
    estimates; EmpiricalBayes(interval="robust") runs it in an evaluation."""
    s = np.array([0.1, 0.3, 0.2, 0.25, np.nan])
    n = np.array([500.0, 10, 80, 40, 0])
    est, lo, hi, mu2 = robust_empirical_bayes(s, n, 0.2, 0.9)
    ok = slice(0, 4)
    sig = 0.2 / n[ok]
    expected_mu2 = max(
        np.mean((s[ok] - s[ok].mean()) ** 2 - sig), 2 * np.mean(sig**2) / (4 * np.mean(sig))
    )
    assert mu2 == pytest.approx(expected_mu2)
    w = mu2 / (mu2 + sig)
    np.testing.assert_allclose(est[ok], s[ok].mean() + w * (s[ok] - s[ok].mean()))
    assert np.isnan(est[4]) and np.isnan(lo[4]) and np.isnan(hi[4])
    assert np.all((lo[ok] < est[ok]) & (est[ok] < hi[ok]))
    same = empirical_bayes(s, n, 0.2, 0.9, interval="robust")
    np.testing.assert_array_equal(same[0], est)
    ev = disaggregated_evaluation(
        _frame(),
        protected=["race", "sex"],
        outcome="y",
        decision="d",
        metrics=["fpr"],
        estimators=[EmpiricalBayes(interval="robust")],
        level=0.9,
        random_state=0,
    )
    eb = ev.table[ev.table["estimator"] == "empirical_bayes"]
    assert eb["defined"].any()
    assert ((eb["lower"] <= eb["estimate"]) & (eb["estimate"] <= eb["upper"]))[eb["defined"]].all()


@pytest.mark.slow  # coverage over 100 replicates of 40 groups
def test_robust_intervals_cover_where_small_groups_spread_more():
    """Herlihy et al.'s empirical Bayes estimates the groups' spread with the large groups'
    weight; where the small groups spread more (true values 0.3 + N(0, 0.12^2) below 40 rows,
    N(0, 0.02^2) above), it shrinks them too far and its 95% intervals (Prasad-Rao) cover
    far less than 95% on average over the groups, as on the diabetes population. The robust
    intervals, whose spread counts every group alike, cover at least 0.92 (0.95 less about
    three standard errors) while narrower than the standard intervals."""
    rng = np.random.default_rng(2)
    k, sigma2 = 40, 0.2
    n = np.round(np.geomspace(5, 500, k))
    se = np.sqrt(sigma2 / n)
    cover = {"prasad_rao": [], "robust": []}
    width = []
    for _ in range(100):
        th = 0.3 + rng.normal(0, np.where(n < 40, 0.12, 0.02))
        s = th + rng.normal(0, se)
        for how in cover:
            _, lo, hi, _ = empirical_bayes(s, n, sigma2, 0.95, interval=how)
            cover[how].append(np.mean((lo <= th) & (th <= hi)))
        width.append(np.mean((hi - lo) / (2 * 1.959964 * se)))
    cover = {how: float(np.mean(c)) for how, c in cover.items()}
    print("95% coverage:", cover, "robust width / standard:", round(float(np.mean(width)), 3))
    assert cover["prasad_rao"] < 0.85
    assert cover["robust"] >= 0.92
    assert np.mean(width) < 1.0


def test_standard_intervals_eq7():
    lo, hi = standard_intervals(np.array([0.5]), np.array([25.0]), 0.25, 0.95)
    np.testing.assert_allclose(
        [lo[0], hi[0]], [0.5 - 1.959964 * 0.1, 0.5 + 1.959964 * 0.1], rtol=1e-6
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
