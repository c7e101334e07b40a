"""Fairness metrics: hand-computed values, properties, and brute force."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import roc_auc_score

from bayesfair import AuditData, run_audit
from bayesfair.metrics import (
    bias_amplification,
    df_bias_amplification,
    empirical_fairness,
    epsilon_df,
    epsilon_df_argmax,
    gamma_sf,
    gamma_sf_argmax,
    group_auc,
    group_rates,
    outcome_probabilities,
    sf_bias_amplification,
)


def _brute_epsilon(p):
    """Definition 2.1 by enumeration of every (y, s_i, s_j)."""
    present = [i for i in range(len(p)) if not np.isnan(p[i]).any()]
    best = 0.0
    for y in range(p.shape[1]):
        for i, j in itertools.product(present, present):
            a, b = p[i, y], p[j, y]
            if a == 0 and b == 0:
                continue
            r = math.inf if b == 0 else math.log(a / b) if a > 0 else -math.inf
            best = max(best, r)
    return best


def _brute_gamma(p1, ps):
    ps = np.asarray(ps, float) / np.sum(ps)
    overall = sum(a * b for a, b in zip(p1, ps, strict=True) if b > 0)
    return max(abs(overall - a) * b if b > 0 else 0.0 for a, b in zip(p1, ps, strict=True))


# ------------------------------------------------------------ hand-computed values
def test_epsilon_hand_values():
    # rates 0.2 and 0.5: max(log(0.5/0.2), log(0.8/0.5)) = log 2.5
    p = outcome_probabilities([0.2, 0.5])
    assert float(epsilon_df(p)) == pytest.approx(math.log(2.5))
    i, j, y = (int(v) for v in epsilon_df_argmax(p))
    assert (i, j, y) == (1, 0, 1)
    # three outcomes
    p3 = [[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]
    assert float(epsilon_df(p3)) == pytest.approx(math.log(2.0))


def test_epsilon_edge_cases():
    assert float(epsilon_df([[0.3, 0.7]])) == 0.0  # one group: vacuous
    assert float(epsilon_df([[0.0, 1.0], [0.5, 0.5]])) == math.inf
    assert float(epsilon_df([[0.0, 1.0], [0.0, 1.0]])) == 0.0
    # absent rows (NaN) take no part
    p = np.array([[0.2, 0.8], [np.nan, np.nan], [0.4, 0.6]])
    assert float(epsilon_df(p)) == pytest.approx(math.log(2.0))


def test_epsilon_rejects_bad_arrays():
    with pytest.raises(ValueError, match="shaped"):
        epsilon_df([0.2, 0.8])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        epsilon_df([[1.2, -0.2], [0.5, 0.5]])
    with pytest.raises(ValueError, match="sum to 1"):
        epsilon_df([[0.2, 0.2], [0.5, 0.5]])
    # the same with an absent intersection (the checks without NaN take a shorter path)
    absent = [np.nan, np.nan]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        epsilon_df([[1.2, -0.2], absent, [0.5, 0.5]])
    with pytest.raises(ValueError, match="sum to 1"):
        epsilon_df([[0.2, 0.2], absent, [0.5, 0.5]])
    with pytest.raises(ValueError, match="NaN for some outcomes"):
        epsilon_df([[0.2, np.nan], [0.5, 0.5]])


def test_gamma_hand_values():
    # P(s) = (0.25, 0.75), rates (0.2, 0.6): overall 0.5; both terms 0.3*0.25 = 0.1*0.75
    assert float(gamma_sf([0.2, 0.6], [1, 3])) == pytest.approx(0.075)
    # rates (0.1, 0.5, 0.9), P(s) (0.5, 0.3, 0.2): overall 0.38; terms 0.14, 0.036, 0.104
    assert float(gamma_sf([0.1, 0.5, 0.9], [0.5, 0.3, 0.2])) == pytest.approx(0.14)
    assert int(gamma_sf_argmax([0.1, 0.5, 0.9], [0.5, 0.3, 0.2])) == 0
    # a NaN rate with P(s) = 0 is allowed and ignored
    assert float(gamma_sf([0.2, np.nan, 0.6], [1, 0, 3])) == pytest.approx(0.075)
    with pytest.raises(ValueError, match="NaN"):
        gamma_sf([0.2, np.nan], [1, 1])


def test_draw_dimensions_broadcast():
    rng = np.random.default_rng(0)
    p1 = rng.uniform(0.05, 0.95, size=(3, 50, 6))  # (chain, draw, group)
    ps = rng.dirichlet(np.ones(6))
    eps = epsilon_df(outcome_probabilities(p1))
    gam = gamma_sf(p1, ps)
    assert eps.shape == gam.shape == (3, 50)
    for c, d in [(0, 0), (2, 49), (1, 17)]:
        assert eps[c, d] == pytest.approx(_brute_epsilon(outcome_probabilities(p1[c, d])))
        assert gam[c, d] == pytest.approx(_brute_gamma(p1[c, d], ps))
    i, j, y = epsilon_df_argmax(outcome_probabilities(p1))
    assert i.shape == j.shape == y.shape == (3, 50)
    amp = df_bias_amplification(outcome_probabilities(p1), outcome_probabilities(p1[..., ::-1]))
    np.testing.assert_allclose(amp, 0.0, atol=1e-12)  # epsilon ignores group order
    np.testing.assert_allclose(sf_bias_amplification(p1, p1, ps), 0.0)


# ------------------------------------------------------------ properties
rates = arrays(np.float64, st.integers(2, 12), elements=st.floats(0.001, 0.999))


@settings(max_examples=200, deadline=None)
@given(rates, st.randoms(use_true_random=False))
def test_epsilon_properties(p1, rnd):
    p = outcome_probabilities(p1)
    eps = float(epsilon_df(p))
    assert eps >= 0
    assert eps == pytest.approx(_brute_epsilon(p))
    perm = list(range(len(p1)))
    rnd.shuffle(perm)
    assert float(epsilon_df(p[perm])) == eps  # invariant to group order
    assert (eps == 0.0) == bool(np.all(p1 == p1[0]))  # zero exactly when all rates equal


def test_gamma_refuses_fractions_that_are_not_shares():
    """Shares must add up to 1; [0.9, 0.9] is a mistake, not a distribution to normalise
    (counts, whole numbers, are normalised)."""
    assert float(gamma_sf([0.2, 0.6], [3, 5])) == pytest.approx(
        float(gamma_sf([0.2, 0.6], [3 / 8, 5 / 8]))
    )
    with pytest.raises(ValueError, match=r"add up to 1.*adding up to 1\.8"):
        gamma_sf([0.2, 0.6], [0.9, 0.9])


@settings(max_examples=100, deadline=None)
@given(st.floats(0.001, 0.999), st.integers(2, 10))
def test_epsilon_zero_for_equal_rates(r, k):
    assert float(epsilon_df(outcome_probabilities(np.full(k, r)))) == 0.0
    assert float(gamma_sf(np.full(k, r), np.ones(k))) == pytest.approx(0.0, abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(rates, st.data())
def test_gamma_properties(p1, data):
    # P(s) as counts (whole numbers) or as shares that add up to 1
    ps = data.draw(arrays(np.int64, p1.shape, elements=st.integers(0, 10))).astype(float)
    if ps.sum() <= 0:
        ps[0] = 1.0
    if data.draw(st.booleans()):
        ps = ps / ps.sum()
    g = float(gamma_sf(p1, ps))
    assert 0 <= g <= 1
    assert g == pytest.approx(_brute_gamma(p1, ps), abs=1e-12)
    perm = np.argsort(ps)
    assert float(gamma_sf(p1[perm], ps[perm])) == pytest.approx(g, abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(
    arrays(np.int64, st.integers(2, 10), elements=st.integers(0, 30)),
    st.data(),
    st.floats(0.01, 5.0),
)
def test_smoothed_edf_is_finite_with_empty_and_zero_count_groups(n, data, alpha):
    k = np.array([data.draw(st.integers(0, int(v))) for v in n])
    if n.sum() == 0:
        n[0], k[0] = 1, 0
    groups = np.repeat(np.arange(len(n)), n)
    y = np.concatenate([np.r_[np.ones(a), np.zeros(b - a)] for a, b in zip(k, n, strict=True)])
    df = pd.DataFrame({"g": pd.Categorical(groups, categories=range(len(n))), "y": y.astype(int)})
    d = AuditData(df, "g", "y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for include in (False, True):
            est = empirical_fairness(d, pseudo_count=alpha, include_empty=include)
            assert math.isfinite(est.epsilon) and est.epsilon >= 0
            assert math.isfinite(est.gamma)


# ------------------------------------------------------------ estimates from tables
def test_edf_matches_counts_and_lists_exclusions():
    df = pd.DataFrame(
        {
            "a": pd.Categorical(["x"] * 10 + ["y"] * 10, categories=["x", "y", "z"]),
            "y": [1] * 2 + [0] * 8 + [1] * 5 + [0] * 5,
        }
    )
    d = AuditData(df, "a", "y")
    with pytest.warns(UserWarning, match="empty intersection"):
        est = empirical_fairness(d, pseudo_count=0)
    assert est.epsilon == pytest.approx(math.log(0.5 / 0.2))
    assert est.epsilon_pair == ("y", "x", 1)
    assert est.excluded == ["z"]
    assert est.gamma == pytest.approx(0.15 * 0.5)
    with pytest.warns(UserWarning):
        sm = empirical_fairness(d, pseudo_count=1.0)
    assert sm.epsilon == pytest.approx(math.log((6 / 12) / (3 / 12)))
    inc = empirical_fairness(d, pseudo_count=1.0, include_empty=True)
    assert inc.excluded == [] and bool(inc.groups["in_epsilon"].all())
    with pytest.raises(ValueError, match="pseudo_count > 0"):
        empirical_fairness(d, include_empty=True, pseudo_count=0)
    # alpha is checked where it comes in (inf failed deep inside: '`p1` is NaN ...')
    for bad in (np.inf, -1.0, np.nan):
        with pytest.raises(ValueError, match="`pseudo_count` must be a finite non-negative number"):
            empirical_fairness(d, pseudo_count=bad)
    with pytest.raises(ValueError, match="`pseudo_count` must be a finite non-negative number"):
        run_audit(d, pseudo_count=np.inf)
    assert list(est.summary()["metric"]) == ["epsilon-DF", "gamma-SF"]


def test_bias_amplification_of_estimates():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"g": rng.choice(list("abc"), 400), "y": rng.integers(0, 2, 400)})
    df["d"] = np.where(df["g"] == "a", 1, df["y"])
    d = AuditData(df, "g", "y", decision="d")
    e_y, e_d = (
        empirical_fairness(d, pseudo_count=0),
        empirical_fairness(d, role="decision", pseudo_count=0),
    )
    amp = bias_amplification(e_d, e_y).set_index("metric")
    assert amp.loc["epsilon-DF", "amplification"] == pytest.approx(e_d.epsilon - e_y.epsilon)
    # the pair is named by the rate it compares: the labels' P(y|s), the decisions' P(d|s)
    assert e_y.summary()["attained_by"][0].startswith("P(y=")
    assert e_d.summary()["attained_by"][0].startswith("P(d=")
    with pytest.raises(ValueError, match="different methods"):
        bias_amplification(empirical_fairness(d, pseudo_count=1.0, role="decision"), e_y)


def test_group_rates_against_brute_force():
    rng = np.random.default_rng(1)
    n = 3000
    df = pd.DataFrame(
        {
            "r": rng.choice(["a", "b", "c"], n, p=[0.6, 0.39, 0.01]),
            "s": rng.choice(["f", "m"], n),
            "y": rng.integers(0, 2, n),
            "d": rng.integers(0, 2, n),
        }
    )
    data = AuditData(df, ["r", "s"], "y", decision="d")
    rates = group_rates(data).set_index(["intersection", "metric"])["value"]
    for (r, s), g in df.groupby(["r", "s"]):
        y, d = g["y"].to_numpy(), g["d"].to_numpy()
        lab = f"{r}, {s}"
        expected = {
            "selection_rate": d.mean(),
            "accuracy": (y == d).mean(),
            "tpr": d[y == 1].mean(),
            "fnr": 1 - d[y == 1].mean(),
            "fpr": d[y == 0].mean(),
            "tnr": 1 - d[y == 0].mean(),
            "ppv": y[d == 1].mean(),
            "fdr": 1 - y[d == 1].mean(),
            "npv": 1 - y[d == 0].mean(),
            "for": y[d == 0].mean(),
            "base_rate": y.mean(),
        }
        for m, v in expected.items():
            assert rates[(lab, m)] == pytest.approx(v), (lab, m)


def test_group_rates_undefined_rate_is_nan_not_dropped():
    df = pd.DataFrame({"g": ["a", "a", "b", "b"], "y": [1, 1, 0, 1], "d": [1, 0, 0, 1]})
    r = group_rates(AuditData(df, "g", "y", decision="d"), ["fpr"])
    assert len(r) == 2
    assert np.isnan(r.loc[r["intersection"] == "a", "value"]).all()
    with pytest.raises(ValueError, match=r"unknown metric 'fp_rate'.*'false_positive_rate'"):
        group_rates(AuditData(df, "g", "y", decision="d"), ["fp_rate"])
    with pytest.raises(ValueError, match="need a decision"):
        group_rates(AuditData(df, "g", "y"), ["fpr"])


def test_group_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(2)
    n = 4000
    g = rng.choice(["a", "b", "c", "d"], n)
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n) * 0.5 + 0.3 * y, 1)  # coarse scores: many ties
    df = pd.DataFrame({"g": g, "h": rng.choice(["u", "v"], n), "y": y, "s": s})
    df.loc[df["g"] == "d", "y"] = 1  # a group with one class only
    data = AuditData(df, ["g", "h"], "y", score="s")
    auc = group_auc(data, by="g").set_index("g")["auc"]
    for lev in "abc":
        m = df["g"] == lev
        assert auc[lev] == pytest.approx(roc_auc_score(df.loc[m, "y"], df.loc[m, "s"]))
    assert np.isnan(auc["d"])
    full = group_auc(data)
    m = (df["g"] == "b") & (df["h"] == "v")
    got = full.loc[full["intersection"] == "b, v", "auc"].item()
    assert got == pytest.approx(roc_auc_score(df.loc[m, "y"], df.loc[m, "s"]))


def test_every_long_name_of_a_rate_is_that_rate_in_every_entry_point():
    """fairlearn's and scikit-learn's names (``"false_positive_rate"``, ``"recall"``) and
    the paper's (``"sel"``) are the rates they name: the same table, test and per-group
    estimates, under the package's short name."""
    from bayesfair import disaggregated_evaluation, permutation_test
    from bayesfair.metrics import RATE_ALIASES, RATE_DEFINITIONS

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 300), "y": rng.integers(0, 2, 300)})
    df["d"] = rng.integers(0, 2, 300)
    data = AuditData(df, "g", "y", decision="d")
    assert set(RATE_ALIASES.values()) <= set(RATE_DEFINITIONS)
    long, short = list(RATE_ALIASES), list(RATE_ALIASES.values())
    pd.testing.assert_frame_equal(group_rates(data, long), group_rates(data, short))
    for alias in ("false_positive_rate", "recall"):
        got = permutation_test(data, alias, n_resamples=99, random_state=0)
        want = permutation_test(data, RATE_ALIASES[alias], n_resamples=99, random_state=0)
        assert got.metric == want.metric == RATE_ALIASES[alias]
        assert got.pvalue == want.pvalue
    per_group = disaggregated_evaluation(
        df, "g", "y", "d", metrics=["false_negative_rate", "sel"], estimators=["standard"]
    )
    assert per_group.summary()["metric"].tolist() == ["fnr", "selection_rate"]
