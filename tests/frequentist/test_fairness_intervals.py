"""Confidence intervals of epsilon-DF and gamma-SF (frequentist/fairness_bounds.py)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from bayesfair import AuditData, empirical_fairness, fairness_confidence_interval
from bayesfair.datasets import make_gaussian_threshold
from bayesfair.frequentist._pvalues import clopper_pearson
from bayesfair.frequentist.fairness_bounds import _max_other, epsilon_range, gamma_range
from bayesfair.metrics import epsilon_df, gamma_sf


def _audit(sizes, rates, rng, decision_noise=None):
    """Rows of intersections a x b with the given sizes and P(y=1|s)."""
    labels = [(a, b) for a in "ABCD" for b in "MF"][: len(sizes)]
    parts = []
    for (a, b), n, p in zip(labels, sizes, rates, strict=True):
        y = (rng.random(n) < p).astype(int)
        parts.append(pd.DataFrame({"a": a, "b": b, "y": y}))
    return AuditData(pd.concat(parts, ignore_index=True), ["a", "b"], "y")


def _eps(p):
    p = np.asarray(p, float)
    return float(epsilon_df(np.stack([1 - p, p], axis=-1)))


def test_max_other_is_the_largest_difference_of_two_different_entries():
    """``_max_other(a, b)``, the largest ``a[i] - b[j]`` over ``i != j``, equals the
    maximum over every pair, bit for bit: with ties (the largest of ``a`` and smallest of
    ``b`` in the same entry, or several of them), ``-inf`` in ``b`` (a rate's lower end at
    0) and tables computed at once."""
    rng = np.random.default_rng(3)
    for trial in range(300):
        g = int(rng.integers(2, 7))
        lead = [(), (4,), (2, 3)][trial % 3]
        a = rng.choice([-2.0, -1.0, -0.5, 0.0], size=(*lead, g))
        b = rng.choice([-np.inf, -2.0, -1.0, -0.5, 0.0], size=(*lead, g))
        if trial % 2:
            a, b = np.log(rng.uniform(size=(*lead, g))), np.log(rng.uniform(size=(*lead, g)))
        pairs = a[..., :, None] - b[..., None, :]
        pairs[..., np.arange(g), np.arange(g)] = -np.inf
        np.testing.assert_array_equal(_max_other(a, b), pairs.max(axis=(-2, -1)))


def test_epsilon_range_against_a_grid_of_the_box():
    rng = np.random.default_rng(0)
    for _ in range(30):
        lo = rng.uniform(0.02, 0.8, 3)
        hi = np.minimum(lo + rng.uniform(0.01, 0.3, 3), 0.99)
        e_lo, e_hi = epsilon_range(lo, hi)
        grid = np.stack(
            np.meshgrid(*[np.linspace(a, b, 13) for a, b in zip(lo, hi, strict=True)]), -1
        )
        p = grid.reshape(-1, 3)
        eps = epsilon_df(np.stack([1 - p, p], axis=-1))
        corners = [_eps(c) for c in itertools.product(*zip(lo, hi, strict=True))]
        assert e_hi == pytest.approx(max(corners), rel=1e-12)  # attained at a corner
        assert eps.max() <= e_hi * (1 + 1e-12)
        assert 0 <= e_lo <= eps.min() + 1e-12  # a valid lower end
    # overlapping intervals: the lower end is 0; disjoint ones: the gap on the log scale
    assert epsilon_range(np.array([0.2, 0.25]), np.array([0.3, 0.35]))[0] == 0
    lo, hi = np.array([0.1, 0.4]), np.array([0.2, 0.5])
    assert epsilon_range(lo, hi)[0] == pytest.approx(max(np.log(0.4 / 0.2), np.log(0.8 / 0.6)))
    # a rate that can be 0 leaves epsilon unbounded above
    assert epsilon_range(np.array([0.0, 0.3]), np.array([0.1, 0.4]))[1] == np.inf


def test_gamma_range_holds_every_point_in_the_boxes():
    rng = np.random.default_rng(1)
    for _ in range(20):
        k = 4
        share = rng.dirichlet(np.ones(k))
        s_lo, s_hi = np.clip(share - 0.05, 0, 1), np.clip(share + 0.05, 0, 1)
        lo = rng.uniform(0, 0.7, k)
        hi = lo + rng.uniform(0, 0.3, k)
        a_lo, a_hi = 0.2, 0.45
        g_lo, g_hi = gamma_range((s_lo, s_hi), (lo, hi), (a_lo, a_hi))
        hits = 0
        for _ in range(4000):
            pi = rng.dirichlet(np.ones(k))
            p = rng.uniform(lo, hi)
            if (pi < s_lo).any() or (pi > s_hi).any() or not a_lo <= pi @ p <= a_hi:
                continue
            hits += 1
            g = float(gamma_sf(p, pi))
            assert g_lo - 1e-12 <= g <= g_hi + 1e-12
        assert g_lo <= g_hi
    assert hits > 0


def test_intervals_by_hand_for_two_groups():
    rng = np.random.default_rng(2)
    y = np.r_[rng.random(400) < 0.3, rng.random(100) < 0.5].astype(int)
    data = AuditData(pd.DataFrame({"g": ["a"] * 400 + ["b"] * 100, "y": y}), "g", "y")
    ci = fairness_confidence_interval(data, level=0.9)
    (n0, n1) = data.group_sizes()
    (k0, k1) = data.counts()[:, 1]
    a = 0.05
    # upper end: the pair's 95% intervals; lower end: both in Sidak intervals at 0.95 ** 0.5
    (l0, l1), (u0, u1) = clopper_pearson([k0, k1], [n0, n1], 1 - a)
    hi = max(
        np.log(u1 / l0), np.log(u0 / l1), np.log((1 - l0) / (1 - u1)), np.log((1 - l1) / (1 - u0))
    )
    (l0, l1), (u0, u1) = clopper_pearson([k0, k1], [n0, n1], (1 - a) ** 0.5)
    lo = max(
        0,
        np.log(l1 / u0),
        np.log(l0 / u1),
        np.log((1 - u0) / (1 - l1)),
        np.log((1 - u1) / (1 - l0)),
    )
    assert ci.epsilon_interval == pytest.approx((lo, hi))
    est = empirical_fairness(data, pseudo_count=0)
    assert ci.epsilon == pytest.approx(est.epsilon) and ci.gamma == pytest.approx(est.gamma)
    assert ci.gamma_interval[0] <= ci.gamma <= ci.gamma_interval[1]
    s = ci.summary()
    assert list(s["metric"]) == ["epsilon-DF", "gamma-SF"]
    assert s.loc[0, ["lower", "upper"]].tolist() == pytest.approx(list(ci.epsilon_interval))
    # Clopper-Pearson against its definition: P(X >= k | lower) = P(X <= k | upper) = a/2
    from scipy.stats import binom

    lo1, hi1 = clopper_pearson(7, 40, 0.9)
    assert binom.sf(6, 40, lo1) == pytest.approx(0.05) and binom.cdf(7, 40, hi1) == pytest.approx(
        0.05
    )
    assert clopper_pearson(0, 10, 0.9)[0] == 0 and clopper_pearson(10, 10, 0.9)[1] == 1


def test_intervals_follow_by_and_target_and_name_bad_input():
    ds = make_gaussian_threshold(n_rows=3000, random_state=3)
    data = ds.audit_data()
    by_race = fairness_confidence_interval(data, by="race")
    assert len(by_race.groups) == 4 and by_race.by == ("race",)
    assert by_race.epsilon == pytest.approx(
        empirical_fairness(data, by="race", pseudo_count=0).epsilon
    )
    dec = fairness_confidence_interval(data, role="decision")
    assert dec.epsilon == pytest.approx(
        empirical_fairness(data, role="decision", pseudo_count=0).epsilon
    )
    with pytest.raises(TypeError, match="AuditData"):
        fairness_confidence_interval(ds.frame)
    for level in (0, 1, 1.5):
        with pytest.raises(ValueError, match="level"):
            fairness_confidence_interval(data, level=level)
    with pytest.raises(ValueError, match="role"):
        fairness_confidence_interval(data, role="score")
    one = pd.DataFrame(
        {"a": pd.Categorical(["x"] * 5, categories=["x", "y"]), "y": [0, 1] * 2 + [1]}
    )
    with pytest.raises(ValueError, match="at least two"):
        fairness_confidence_interval(AuditData(one, "a", "y"))
    frame = pd.DataFrame(
        {"a": pd.Categorical(["x", "y"] * 20, categories=["x", "y", "z"]), "y": [0, 1] * 20}
    )
    with pytest.warns(UserWarning, match="without rows"):
        ci = fairness_confidence_interval(AuditData(frame, "a", "y"))
    assert ci.excluded == ["z"] and "without rows" in ci.notes[0]


def _coverage(make_data, truth, replicates, rng):
    eps_hit, gam_hit, zero = [], [], []
    for _ in range(replicates):
        data = make_data(rng)
        ci = fairness_confidence_interval(data, level=0.9)
        e, g = truth(data)
        eps_hit.append(ci.epsilon_interval[0] <= e <= ci.epsilon_interval[1])
        gam_hit.append(ci.gamma_interval[0] <= g <= ci.gamma_interval[1])
        zero.append(ci.epsilon_interval[0] == 0)
    return np.mean(eps_hit), np.mean(gam_hit), np.mean(zero)


@pytest.mark.slow
def test_intervals_cover_fair_unfair_and_small_populations():
    """At least 90% coverage of both metrics (the construction guarantees it; 400
    replicates each), where a posterior interval of epsilon covers a fair population's
    0 in none: fair (8 groups, equal rates), small groups (240 rows, rates 0.1-0.6)
    and the Gaussian threshold model (16 groups, truth over the groups with rows)."""
    rng = np.random.default_rng(4)
    shares = rng.dirichlet(np.ones(8) * 3)
    settings = {}
    flat = np.full(8, 0.3)
    settings["fair"] = (
        lambda r: _audit(r.multinomial(2000, shares), flat, r),
        lambda d: (0.0, 0.0),
    )
    rates = np.linspace(0.1, 0.6, 8)
    settings["small groups"] = (
        lambda r: _audit(r.multinomial(240, shares), rates, r),
        lambda d: (_eps(rates[d.group_sizes() > 0]), float(gamma_sf(rates, shares))),
    )
    base = make_gaussian_threshold(n_rows=1000, random_state=5).truth["table"]
    w, p_s, p_true = base["w"].to_numpy(), base["p_s"].to_numpy(), base["p_true"].to_numpy()

    def gaussian(r):
        return make_gaussian_threshold(
            group_sizes=r.multinomial(4000, p_s), weights=w, random_state=r
        ).audit_data()

    settings["gaussian threshold"] = (
        gaussian,
        lambda d: (_eps(p_true[d.group_sizes() > 0]), float(gamma_sf(p_true, p_s))),
    )
    R = 400
    floor = 0.9 - 3 * np.sqrt(0.9 * 0.1 / R)
    for name, (make, truth) in settings.items():
        with warnings.catch_warnings():  # a small sample may miss a group; it says so
            warnings.filterwarnings("ignore", message=".*without rows", category=UserWarning)
            cov_e, cov_g, zero = _coverage(make, truth, R, rng)
        print(f"{name}: epsilon {cov_e:.3f}, gamma {cov_g:.3f}, lower end 0 in {zero:.3f}")
        assert cov_e >= floor and cov_g >= floor, name
        if name == "fair":
            assert zero >= floor
        else:
            assert zero < 1  # the intervals do tell unequal rates apart


@pytest.mark.slow
def test_amplification_intervals_cover():
    """run_audit's interval of the bias amplification (decisions' epsilon and gamma minus
    the labels') covers the truth in at least 90% of 200 replicates, where both are fair
    (amplification 0) and where the decisions amplify (epsilon by log 2)."""
    from bayesfair import run_audit

    rng = np.random.default_rng(7)
    shares = rng.dirichlet(np.ones(8) * 3)
    labels = [(a, b) for a in "ABCD" for b in "MF"]
    R = 200
    for p_y, p_d in (
        (np.full(8, 0.3), np.full(8, 0.3)),
        (np.linspace(0.2, 0.4, 8), np.linspace(0.15, 0.6, 8)),
    ):
        truth = {
            "epsilon-DF": _eps(p_d) - _eps(p_y),
            "gamma-SF": float(gamma_sf(p_d, shares)) - float(gamma_sf(p_y, shares)),
        }
        hits = {m: [] for m in truth}
        for _ in range(R):
            g = np.repeat(np.arange(8), rng.multinomial(1500, shares))
            df = pd.DataFrame(
                {
                    "a": [labels[i][0] for i in g],
                    "b": [labels[i][1] for i in g],
                    "y": (rng.random(len(g)) < p_y[g]).astype(int),
                    "d": (rng.random(len(g)) < p_d[g]).astype(int),
                }
            )
            with warnings.catch_warnings():  # a small group may have no rows; it says so
                warnings.filterwarnings("ignore", category=UserWarning)
                amp = run_audit(AuditData(df, ["a", "b"], "y", decision="d")).amplification
            edf = amp.set_index(["method", "metric"]).loc["EDF"]
            for m, t in truth.items():
                hits[m].append(edf.loc[m, "lower"] <= t <= edf.loc[m, "upper"])
        cover = {m: float(np.mean(h)) for m, h in hits.items()}
        print(f"amplification {truth}: coverage {cover}")
        assert min(cover.values()) >= 0.9 - 3 * np.sqrt(0.09 / R), cover
