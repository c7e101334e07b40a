"""Frequentist companions: permutation tests (DiCiccio) and discrimination tests (Chen)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp, norm

from bayesfair import AuditData
from bayesfair.frequentist import (
    auc_permutation_test,
    discrimination_test,
    intersectional_permutation_test,
    minimum_detectable_difference,
    permutation_test,
    permutation_test_counts,
    required_sample_size,
)
from bayesfair.frequentist._pvalues import holm
from bayesfair.frequentist.permutation import (
    _draw_split,
    _mv_hypergeometric,
    _mv_hypergeometric_row,
    _one_pair_split,
    _pairwise_tests,
    _stat,
    _two_group_null,
)


def _rows(n, seed, frac=0.2, prev=(0.05, 0.5), acc=0.8):
    rng = np.random.default_rng(seed)
    g = rng.random(n) < frac
    y = rng.random(n) < np.where(g, prev[0], prev[1])
    d = np.where(rng.random(n) < acc, y, ~y)
    df = pd.DataFrame({"g": np.where(g, "A", "B"), "y": y.astype(int), "d": d.astype(int)})
    return df, AuditData(df, "g", "y", decision="d")


def _cells(rng, n, frac=0.2, prev=(0.05, 0.5), acc=0.8):
    """The confusion-matrix cells (tp, fp, fn, tn) of both groups, drawn like rows would be."""
    na = rng.binomial(n, frac)
    out = []
    for m, p in ((na, prev[0]), (n - na, prev[1])):
        pos = rng.binomial(m, p)
        neg = m - pos
        tp, tn = rng.binomial(pos, acc), rng.binomial(neg, acc)
        out.append([tp, neg - tn, pos - tp, tn])
    return out


def test_permuted_tables_keep_the_margins():
    rng = np.random.default_rng(0)
    pooled = np.array([30, 20, 10, 40])
    free = _draw_split(pooled, np.array([35, 65]), "free", 500, rng)
    assert (free.sum(axis=1) == pooled).all()
    assert (free[:, 0].sum(axis=1) == 35).all()
    within = _draw_split(pooled, np.array([[12, 23], [28, 37]]), "within_outcome", 500, rng)
    assert (within.sum(axis=1) == pooled).all()
    assert (within[:, 0, 0] + within[:, 0, 2] == 12).all()  # group A keeps its positives
    assert (within[:, 0, 1] + within[:, 0, 3] == 23).all()
    by_decision = _draw_split(pooled, np.array([[14, 21], [36, 29]]), "within_decision", 500, rng)
    assert (by_decision.sum(axis=1) == pooled).all()
    assert (by_decision[:, 0, 0] + by_decision[:, 0, 1] == 14).all()  # A keeps its decisions
    assert (by_decision[:, 0, 2] + by_decision[:, 0, 3] == 21).all()
    assert len({tuple(t) for t in by_decision[:, 0]}) > 5  # and the rest is shuffled


def _z_by_hand(xa, na, xb, nb):
    """Studentized difference of two rates x/n (Agresti-Caffo pseudo-counts)."""
    ta, tb = (xa + 1) / (na + 2), (xb + 1) / (nb + 2)
    return (xa / na - xb / nb) / np.sqrt(ta * (1 - ta) / (na + 2) + tb * (1 - tb) / (nb + 2))


@pytest.mark.parametrize(
    ("metric", "scheme"), [("fnr", "within_outcome"), ("ppv", "within_decision")]
)
def test_default_permutation_is_the_exact_test(metric, scheme):
    """The default (auto) permutes group labels within the class of rows the rate
    averages over (y = 1 for FNR, decision = 1 for PPV): its p-value is the exact one
    found by enumerating all C(12, 5) = 792 ways to give group A its 5 rows of that
    class, whatever the rows of the other class (here unbalanced on purpose)."""
    from itertools import combinations

    # the class's 12 rows: 1 = the rate's event (a miss for FNR, a true positive for PPV)
    event = np.array([1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0])
    obs = _z_by_hand(event[:5].sum(), 5, event[5:].sum(), 7)
    exact = np.mean(
        [
            abs(_z_by_hand(event[list(c)].sum(), 5, event.sum() - event[list(c)].sum(), 7))
            >= abs(obs) - 1e-12
            for c in combinations(range(12), 5)
        ]
    )
    hits, other = int(event[:5].sum()), int(event[5:].sum())
    if metric == "fnr":  # cells (tp, fp, fn, tn); the other class: negatives
        a, b = [5 - hits, 30, hits, 2], [7 - other, 3, other, 40]
    else:  # the other class: decision = 0
        a, b = [hits, 5 - hits, 30, 2], [other, 7 - other, 3, 40]
    res = permutation_test_counts(a, b, metric, n_resamples=19_999, random_state=0)
    assert res.permute == scheme and res.notes == []
    assert res.studentized_statistic == pytest.approx(obs)
    assert abs(res.pvalue - exact) < 4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4
    free = permutation_test_counts(a, b, metric, permute="free", n_resamples=999, random_state=0)
    assert free.permute == "free" and "is exact for" in free.notes[0]


def test_null_distribution_matches_a_row_shuffle():
    df, data = _rows(3000, 1)
    res = permutation_test(
        data, "fnr", n_resamples=4000, studentize=False, permute="free", random_state=0
    )
    rng = np.random.default_rng(2)
    g = df["g"].to_numpy() == "A"
    pos = df["y"].to_numpy() == 1
    miss = df["d"].to_numpy() == 0
    brute = []
    for _ in range(4000):
        p = rng.permutation(g)
        brute.append(miss[p & pos].mean() - miss[~p & pos].mean())
    brute = np.array(brute)
    assert abs(res.null_distribution.mean() - brute.mean()) < 0.01
    assert res.null_distribution.std() == pytest.approx(brute.std(), rel=0.08)
    p_brute = (np.sum(np.abs(brute) >= abs(res.statistic)) + 1) / 4001
    assert abs(res.pvalue - p_brute) < 0.03


def test_result_object_and_alternatives():
    _, data = _rows(5000, 3, acc=0.8)
    two = permutation_test(data, "fpr", n_resamples=1999, random_state=1)
    s = two.summary()
    assert list(s["group_a"]) == ["A"]
    # the two-sided p-value counts the permuted statistics at least as far from 0
    hits = np.sum(np.abs(two.null_distribution) >= abs(two.studentized_statistic) - 1e-9)
    assert two.pvalue == pytest.approx((1 + hits) / 2000)
    assert two.pvalue_ci[0] <= two.pvalue <= two.pvalue_ci[1] + 1 / 2000
    greater = permutation_test(data, "fpr", n_resamples=1999, alternative="greater", random_state=1)
    less = permutation_test(data, "fpr", n_resamples=1999, alternative="less", random_state=1)
    # the same draws: every permuted statistic counts once, ties with the observed twice
    np.testing.assert_array_equal(greater.null_distribution, less.null_distribution)
    ties = np.sum(np.isclose(less.null_distribution, two.studentized_statistic, rtol=0, atol=1e-9))
    assert greater.pvalue + less.pvalue == pytest.approx((2 + 1999 + ties) / 2000)
    # the unstudentized difference is valid under the exact permutation (the default) only
    free = permutation_test(data, "fpr", n_resamples=99, studentize=False, permute="free")
    assert free.summary()["test"][0] == "UNSTUDENTIZED (not valid in general), free permutation"
    assert free.notes and "permute='within_outcome' (the default, 'auto') is exact" in free.notes[0]
    exact = permutation_test(data, "fpr", n_resamples=99, studentize=False)
    assert exact.summary()["test"][0] == "unstudentized, within_outcome permutation (exact)"
    assert exact.notes == [] and two.notes == [] and two.permute == "within_outcome"
    ax = two.plot()
    assert len(ax.figure.axes) == 1 and ax.lines[0].get_xdata()[0] == two.statistic
    # the statistic is on the scale of its null distribution (scipy's convention)
    assert two.statistic == two.studentized_statistic and exact.statistic == exact.difference


def test_a_real_difference_is_detected():
    rng = np.random.default_rng(4)
    a = [60, 10, 40, 90]  # FNR 0.4
    b = [160, 20, 40, 180]  # FNR 0.2
    res = permutation_test_counts(a, b, n_resamples=1999, random_state=rng.integers(1000))
    assert res.pvalue < 0.01 and res.difference == pytest.approx(0.2)


def test_results_do_not_depend_on_n_jobs():
    _, data = _rows(4000, 5)
    one = permutation_test(data, "fnr", n_resamples=2000, random_state=42, n_jobs=1)
    two = permutation_test(data, "fnr", n_resamples=2000, random_state=42, n_jobs=2)
    np.testing.assert_array_equal(one.null_distribution, two.null_distribution)
    assert one.pvalue == two.pvalue


def test_permutation_errors():
    _, data = _rows(500, 6)
    with pytest.raises(ValueError, match="unknown metric"):
        permutation_test(data, "fp_rate")
    with pytest.raises(ValueError, match="alternative"):
        permutation_test(data, "fnr", alternative="bigger")
    with pytest.raises(ValueError, match="permute"):
        permutation_test(data, "fnr", permute="rows")
    with pytest.raises(ValueError, match="two distinct labels"):
        permutation_test(data, "fnr", groups=("A", "C"))
    # joblib's n_jobs: None or a non-zero integer (2.5 and True were taken, inf overflowed)
    for bad in (0, 2.5, True, np.inf, "2"):
        with pytest.raises(ValueError, match="`n_jobs` must be None or a non-zero integer"):
            permutation_test(data, "fnr", groups=("A", "B"), n_resamples=99, n_jobs=bad)
    three = AuditData(
        pd.DataFrame({"g": list("abcabc"), "y": [1, 0, 1, 0, 1, 0], "d": [1, 1, 0, 0, 1, 0]}),
        "g",
        "y",
        decision="d",
    )
    with pytest.raises(ValueError, match=r"3 groups with rows \('a', 'b', 'c'\); name the two"):
        permutation_test(three, "fnr")
    # groups by their values: a number for an integer-coded column, a tuple of values
    # for an intersection of several attributes
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "g": rng.integers(1, 4, 300),
            "h": rng.random(300) < 0.5,
            "y": rng.integers(0, 2, 300),
            "d": rng.integers(0, 2, 300),
        }
    )
    coded = AuditData(frame, ["g", "h"], "y", decision="d")
    kw = dict(n_resamples=99, random_state=0)
    by_value = permutation_test(coded, "fpr", by="g", groups=(1, 3), **kw)
    assert by_value.pvalue == permutation_test(coded, "fpr", by="g", groups=("1", "3"), **kw).pvalue
    by_tuple = permutation_test(coded, "fpr", groups=((1, True), (3, True)), **kw)
    assert (
        by_tuple.pvalue
        == permutation_test(coded, "fpr", groups=("1, True", "3, True"), **kw).pvalue
    )
    with pytest.raises(ValueError, match=r"among \['1', '2', '3'\], got \(1, 4\)"):
        permutation_test(coded, "fpr", by="g", groups=(1, 4))
    # group 'b' has no positives: its FNR is undefined, and the message says which group
    no_pos = AuditData(
        pd.DataFrame({"g": list("aabb"), "y": [1, 0, 0, 0], "d": [1, 1, 0, 1]}),
        "g",
        "y",
        decision="d",
    )
    with pytest.raises(
        ValueError, match=r"fnr is undefined in group 'b' \(tp, fp, fn, tn = 0, 1, 0, 1\)"
    ):
        permutation_test(no_pos, "fnr")
    no_decision = AuditData(pd.DataFrame({"g": list("abab"), "y": [1, 0, 1, 0]}), "g", "y")
    with pytest.raises(ValueError, match="need a decision"):
        permutation_test(no_decision, "fnr")
    with pytest.raises(ValueError, match="four non-negative"):
        permutation_test_counts([1, 2, 3], [1, 2, 3, 4])


def test_holm_by_hand():
    p = np.array([0.01, 0.04, 0.03, 0.2])
    np.testing.assert_allclose(holm(p), [0.04, 0.09, 0.09, 0.2])
    # a test without a p-value is left out of the count and stays NaN
    np.testing.assert_allclose(holm(np.append(p, np.nan)), [0.04, 0.09, 0.09, 0.2, np.nan])
    # a step down: never below an earlier adjusted p-value, never above 1
    np.testing.assert_allclose(holm(np.array([0.4, 0.6, 0.7])), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(holm(np.array([0.6, 0.2])), [0.6, 0.4])


def test_intersectional_max_t():
    rng = np.random.default_rng(8)
    n = 6000
    df = pd.DataFrame(
        {
            "r": rng.choice(["a", "b", "c"], n),
            "s": rng.choice(["f", "m"], n),
            "y": rng.integers(0, 2, n),
        }
    )
    bad = (df["r"] == "c") & (df["s"] == "m")
    p_miss = np.where(bad, 0.45, 0.2)
    df["d"] = np.where(df["y"] == 1, rng.random(n) > p_miss, rng.random(n) < 0.2).astype(int)
    data = AuditData(df, ["r", "s"], "y", decision="d")
    res = intersectional_permutation_test(data, "fnr", n_resamples=1999, random_state=0)
    assert res.pvalue < 0.01 and res.permute == "within_outcome" and res.notes == []
    free = intersectional_permutation_test(
        data, "fnr", n_resamples=99, permute="free", pairwise=False, random_state=0
    )
    assert free.permute == "free" and "permute='within_outcome'" in free.notes[0]
    ppv = intersectional_permutation_test(
        data, "ppv", n_resamples=99, pairwise=False, random_state=0
    )
    assert ppv.permute == "within_decision" and ppv.notes == []
    g = res.groups.set_index("group")
    assert g["pvalue_maxT"].idxmin() == "c, m"
    assert (g["pvalue_maxT"] >= 1 / 2000).all()
    assert len(res.pairwise) == 15
    assert (res.pairwise["pvalue_holm"] >= res.pairwise["pvalue"]).all()


@pytest.mark.parametrize("permute", ["free", "within_outcome", "within_decision"])
def test_one_pair_draws_are_the_array_draws(permute):
    """A two-group test draws its permuted cells from one pooled row with scalar
    parameters (:func:`_mv_hypergeometric_row`): the same draws, from the same stream, as
    the array draws of :func:`_two_group_null` that every other test of the module uses,
    and the generator ends in the same state, so later chunks do not shift; on counts from
    0 to tens of thousands (NumPy's hypergeometric switches algorithms with the sample)."""
    rng = np.random.default_rng(11)
    for case in range(200):
        scale = (2, 40, 3000, 60_000)[case % 4]
        a, b = rng.integers(0, scale, 4), rng.integers(0, scale, 4)
        a[case % 4] += 1
        size, seed = int(rng.integers(1, 40)), int(rng.integers(2**31))
        one = np.random.default_rng(seed)
        split = _one_pair_split(a, b, permute, size, one)
        for metric in ("ppv", "npv"):  # (tp, fp) and (tn, fn): every cell is compared
            arrays = np.random.default_rng(seed)
            z = _two_group_null(a[None], b[None], metric, True, permute, size, arrays)[:, 0]
            assert np.array_equal(_stat(split, a + b - split, metric, True), z, equal_nan=True)
            assert one.bit_generator.state == arrays.bit_generator.state
    row, first, second = np.array([5, 0, 7, 3]), np.random.default_rng(0), np.random.default_rng(0)
    shared = _mv_hypergeometric_row(first, row, 9, 50)
    assert np.array_equal(shared, _mv_hypergeometric(second, np.tile(row, (50, 1)), 9))
    assert (shared.sum(axis=1) == 9).all() and (shared <= row).all()


def test_pairwise_tests_are_the_two_group_tests():
    """The pairs, drawn for blocks of pairs at once, are each pair's own permutation
    test: same statistics, p-values equal up to Monte Carlo error (different streams)."""
    rng = np.random.default_rng(3)
    n = 3000
    df = pd.DataFrame({"r": rng.choice(list("abcde"), n), "y": rng.integers(0, 2, n)})
    miss = np.where(df["r"] == "e", 0.35, 0.2)
    df["d"] = np.where(df["y"] == 1, rng.random(n) > miss, rng.random(n) < 0.2).astype(int)
    data = AuditData(df, "r", "y", decision="d")
    res = intersectional_permutation_test(data, "fnr", n_resamples=4999, random_state=0)
    assert len(res.pairwise) == 10 and res.notes == []
    for row in res.pairwise.itertuples():
        one = permutation_test(
            data, "fnr", groups=(row.group_a, row.group_b), n_resamples=4999, random_state=1
        )
        assert row.difference == pytest.approx(one.difference, abs=1e-12)
        assert row.z == pytest.approx(one.studentized_statistic, abs=1e-12)
        se = np.sqrt(2 * one.pvalue * (1 - one.pvalue) / 4999) + 1e-3
        assert abs(row.pvalue - one.pvalue) < 4 * se, (row, one.pvalue)
    assert res.pairwise.set_index(["group_a", "group_b"]).loc[("a", "e"), "pvalue"] < 0.01


@pytest.mark.parametrize("permute", ["free", "within_outcome"])
def test_pairwise_tests_hold_their_level(permute):
    """600 null pairs (equal FNR, prevalences 5% and 50%) tested in one call: about 5%
    are rejected at 0.05, and the Holm-adjusted p-values reject none."""
    rng = np.random.default_rng(11)
    cells = np.array([_cells(rng, 20_000) for _ in range(600)])
    out = _pairwise_tests(cells[:, 0], cells[:, 1], "fnr", permute, 399, 0, 1)
    rate = float(np.mean(out["pvalue"] <= 0.05))
    assert 0.03 <= rate <= 0.075, rate
    assert (out["pvalue_holm"] >= out["pvalue"]).all() and (out["pvalue_holm"] > 0.05).all()


def test_pairwise_auto_skips_many_pairs_and_says_so():
    rng = np.random.default_rng(5)
    n = 20_000
    df = pd.DataFrame({"r": rng.integers(0, 50, n).astype(str), "y": rng.integers(0, 2, n)})
    df["d"] = rng.integers(0, 2, n)
    data = AuditData(df, "r", "y", decision="d")
    with pytest.warns(UserWarning, match="50 groups make 1225 pairs.*pairwise=True"):
        res = intersectional_permutation_test(data, "fnr", n_resamples=99, random_state=0)
    assert res.pairwise.empty and "skipped" in res.notes[0]
    assert res.groups["pvalue_maxT"].notna().all()
    with pytest.warns(UserWarning, match=r"1225 pairs and n_resamples=99.*at least 24500"):
        res = intersectional_permutation_test(
            data, "fnr", n_resamples=99, pairwise=True, random_state=0
        )
    assert len(res.pairwise) == 1225 and (res.pairwise["pvalue_holm"] == 1).all()
    with pytest.raises(ValueError, match="`pairwise` must be True, False or 'auto'"):
        intersectional_permutation_test(data, "fnr", pairwise="yes")


def test_intersectional_test_names_the_groups_it_leaves_out():
    """A group whose rate is undefined (here FPR where every row is positive) and an
    intersection without rows take no part in the max-T test; the table lists them
    with NaN and a note (also warned) names them."""
    rng = np.random.default_rng(2)
    n = 2000
    df = pd.DataFrame({"r": rng.choice(["a", "b", "c"], n), "s": rng.choice(["f", "m"], n)})
    df["y"] = rng.integers(0, 2, n)
    df.loc[(df["r"] == "c") & (df["s"] == "f"), "y"] = 1  # no negatives: FPR undefined
    df = df[~((df["r"] == "b") & (df["s"] == "m"))]  # an empty intersection
    df["d"] = rng.integers(0, 2, len(df))
    data = AuditData(df, ["r", "s"], "y", decision="d")
    with pytest.warns(UserWarning, match=r"fpr is undefined in 2 of 6 groups \(1 without rows, 1"):
        res = intersectional_permutation_test(data, "fpr", n_resamples=199, random_state=0)
    assert len(res.notes) == 1 and res.notes[0].endswith("test: b, m; c, f")
    g = res.groups.set_index("group")
    assert g.loc[["b, m", "c, f"], "z_vs_rest"].isna().all()
    assert g["z_vs_rest"].notna().sum() == 4 and len(res.pairwise) == 6
    # only one kind of left-out group: the note does not count the other kind as 0
    with pytest.warns(UserWarning, match=r"undefined in 1 of 6 groups \(1 without rows\), which"):
        intersectional_permutation_test(data, "fnr", n_resamples=199, random_state=0)


def test_sample_size_helpers_are_inverse():
    d = minimum_detectable_difference(0.2, 400, 800)
    n_a, n_b = required_sample_size(0.2, d, ratio=2.0)
    assert abs(n_a - 400) <= 1 and abs(n_b - 800) <= 2
    with pytest.raises(ValueError, match="`difference` must be a finite positive number"):
        required_sample_size(0.2, 0.0)
    # a rate of 1.5 gave negative sample sizes, 0 gave (0, 0), ratio 0 divided by zero,
    # alpha 2 overflowed, and n_a = 0 divided by zero
    for kw, match in [
        (dict(rate=1.5), r"`rate` must be a number in \(0, 1\), got 1.5"),
        (dict(rate=0.0), r"`rate` must be a number in \(0, 1\)"),
        (dict(ratio=0), "`ratio` must be a finite positive number, got 0"),
        (dict(alpha=2), r"`alpha` must be a number in \(0, 1\)"),
        (dict(power=1.0), r"`power` must be a number in \(0, 1\)"),
        (dict(difference=np.nan), "`difference` must be a finite positive number"),
    ]:
        with pytest.raises(ValueError, match=match):
            required_sample_size(**{"rate": 0.2, "difference": 0.1, **kw})
    for args, match in [((1.5, 100, 100), "`rate`"), ((0.2, 0, 100), "`n_a` must be a posi")]:
        with pytest.raises(ValueError, match=match):
            minimum_detectable_difference(*args)


def test_discrimination_test_by_hand():
    a = np.array([1, 0, 0, 1, 0, 0, 0, 0, 1, 0], float)
    b = np.array([1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1], float)
    g = np.array(["a"] * 10 + ["b"] * 12)
    res = discrimination_test(np.r_[a, b], g, level=0.95)
    diff = a.mean() - b.mean()
    z = diff / np.sqrt(a.var(ddof=1) / 10 + b.var(ddof=1) / 12)
    assert res.discrimination == pytest.approx(abs(diff)) and res.z == pytest.approx(z)
    assert res.statistic == res.z

    def newcombe(zc):  # Newcombe (1998), method 10, from Wilson's score intervals
        def wilson(k, n):
            c, h = k + zc**2 / 2, zc * np.sqrt(k * (n - k) / n + zc**2 / 4)
            return (c - h) / (n + zc**2), (c + h) / (n + zc**2)

        (la, ua), (lb, ub) = wilson(a.sum(), 10), wilson(b.sum(), 12)
        pa, pb = a.mean(), b.mean()
        return diff - np.sqrt((pa - la) ** 2 + (ub - pb) ** 2), diff + np.sqrt(
            (ua - pa) ** 2 + (pb - lb) ** 2
        )

    assert res.interval == pytest.approx(newcombe(norm.isf(0.025)))
    assert res.interval[0] < diff < res.interval[1] and res.method == "Newcombe hybrid score"
    # a binary loss's p-value is the level at which Newcombe's interval reaches 0
    assert newcombe(norm.isf(res.pvalue / 2))[1] == pytest.approx(0, abs=1e-9)
    assert res.pvalue != pytest.approx(2 * norm.sf(abs(z)), rel=0.05)  # not the z-test's
    for level in (0.9, 0.95, 0.99):  # so test and interval agree at every level
        lo, hi = discrimination_test(np.r_[a, b], g, level=level).interval
        assert (res.pvalue <= 1 - level) == (hi < 0 or lo > 0)
    assert discrimination_test(np.r_[a, a], np.repeat(["a", "b"], 10)).pvalue == 1.0
    loss = np.r_[a, b] + 0.5 * np.arange(22) / 22  # not binary: the z-test and Wald
    cont = discrimination_test(loss, g)
    ca, cb = loss[:10], loss[10:]
    zc = (ca.mean() - cb.mean()) / np.sqrt(ca.var(ddof=1) / 10 + cb.var(ddof=1) / 12)
    assert cont.method == "Wald" and cont.z == pytest.approx(zc)
    assert cont.pvalue == pytest.approx(2 * norm.sf(abs(zc)))
    with pytest.raises(ValueError, match="exactly two"):
        discrimination_test(np.zeros(3), np.array(["a", "b", "c"]))
    for bad in (0, 1, 2, 95):
        with pytest.raises(ValueError, match=r"`level` must be a number in \(0, 1\)"):
            discrimination_test(np.r_[a, b], g, level=bad)


def test_discrimination_test_of_two_named_groups_among_more():
    """groups=(a, b) compares two of several groups, in the order named: the same test
    as on their rows alone; a group no row has, or a pair that is not one, is refused."""
    rng = np.random.default_rng(1)
    g = rng.choice(["w", "m", "x"], 600, p=[0.45, 0.5, 0.05])
    loss = (rng.random(600) < np.where(g == "w", 0.3, 0.2)).astype(float)
    res = discrimination_test(loss, g, groups=("w", "m"))
    keep = np.isin(g, ["w", "m"])
    alone = discrimination_test(loss[keep], g[keep])  # sorted: m, then w
    assert res.groups == ("w", "m") and res.difference == pytest.approx(-alone.difference)
    assert res.pvalue == pytest.approx(alone.pvalue) and res.n == alone.n
    with pytest.raises(ValueError, match=r"got 3: .*; name the two to compare with groups"):
        discrimination_test(loss, g)
    unknown = r"two distinct labels among \[.*'x'.*\], got \('w', 'z'\)"  # the labels named
    with pytest.raises(ValueError, match=unknown):
        discrimination_test(loss, g, groups=("w", "z"))
    with pytest.raises(ValueError, match=r"two distinct labels among .*, got \('w', 'w'\)"):
        discrimination_test(loss, g, groups=("w", "w"))


def test_discrimination_test_needs_two_rows_per_group():
    loss = np.r_[1.0, np.full(9, 0.5)]
    with pytest.raises(ValueError, match="group 'a' has 1 row: the test needs at least two"):
        discrimination_test(loss, np.array(list("abbbbbbbbb")))
    with pytest.raises(ValueError, match=r"`group` must have exactly two values, got 3: \['a'"):
        discrimination_test(np.ones(9), np.array(list("aaabbbccc")))
    # groups from data and by are named as such, not as the argument group the call left out
    three = AuditData(pd.DataFrame({"r": list("aaabbbccc"), "y": [0, 1, 1] * 3}), "r", "y")
    with pytest.raises(ValueError, match=r"the groups of by='r' must have exactly two values"):
        discrimination_test(np.ones(9), data=three, by="r")
    # a missing group label is refused, not turned into a group 'nan' or 'None'
    with pytest.raises(ValueError, match="`group` has 1 missing value"):
        discrimination_test(np.ones(9), np.array(["a"] * 4 + [None] + ["b"] * 4))
    # an infinite loss is refused (it gave NaN results and numpy's RuntimeWarning)
    with pytest.raises(ValueError, match="`loss` has 2 missing or infinite values"):
        discrimination_test(np.r_[np.inf, np.nan, np.ones(7)], np.array(list("aaaabbbbb")))


def test_discrimination_test_named_losses_equal_the_arrays():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"g": rng.choice(["a", "b"], 200), "y": rng.integers(0, 2, 200)})
    frame["s"] = np.clip(0.3 + 0.4 * frame.y + rng.normal(0, 0.2, 200), 0, 1)
    frame["d"] = (frame.s > 0.5).astype(int)
    data = AuditData(frame, "g", "y", score="s", decision="d")
    y, p, g = frame.y.to_numpy(float), frame.s.to_numpy(), frame.g.to_numpy()
    q = np.clip(p, 1e-15, 1 - 1e-15)
    arrays = {
        "zero_one": (frame.y != frame.d).to_numpy(float),
        "brier": (y - p) ** 2,
        "log": -(y * np.log(q) + (1 - y) * np.log1p(-q)),
    }
    for name, loss in arrays.items():
        got, want = discrimination_test(name, data=data), discrimination_test(loss, g)
        assert got.z == pytest.approx(want.z) and got.pvalue == pytest.approx(want.pvalue)
    with pytest.raises(ValueError, match=r"one of \['zero_one', 'brier', 'log'\], got 'squared'"):
        discrimination_test("squared", data=data)
    with pytest.raises(ValueError, match="loss='brier' needs `data` with a score"):
        discrimination_test("brier", data=AuditData(frame, "g", "y", decision="d"))
    with pytest.raises(ValueError, match="loss='log' needs `data` with a score"):
        discrimination_test("log", g)


def test_discrimination_test_takes_the_groups_of_by_as_the_permutation_tests_do():
    """With two protected columns, ``by`` names the one whose values are the groups (the
    same test as on that column's labels); by default every protected column, whose four
    intersections need ``groups=``; ``by`` without ``data``, or beside ``group``, is
    refused, and so is data given first, where the loss goes."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {"sex": rng.choice(["f", "m"], 300), "age": rng.choice(["old", "young"], 300)}
    )
    frame["y"] = rng.integers(0, 2, 300)
    frame["d"] = rng.integers(0, 2, 300)
    data = AuditData(frame, ["sex", "age"], "y", decision="d")
    loss = (frame.y != frame.d).to_numpy(float)
    got = discrimination_test("zero_one", data=data, by="sex")
    want = discrimination_test(loss, frame.sex.to_numpy())
    assert got.groups == want.groups == ("f", "m") and got.z == pytest.approx(want.z)
    assert discrimination_test(loss, data=data, by="sex").z == pytest.approx(want.z)
    pair = discrimination_test("zero_one", data=data, groups=("f, old", "m, young"))
    keep = np.isin(frame.sex + ", " + frame.age, ["f, old", "m, young"])
    alone = discrimination_test(loss[keep], (frame.sex + ", " + frame.age)[keep].to_numpy())
    assert pair.pvalue == pytest.approx(alone.pvalue) and pair.n == alone.n
    with pytest.raises(ValueError, match=r"got 4: .*name the two to compare with groups"):
        discrimination_test("zero_one", data=data)
    with pytest.raises(ValueError, match="`by` chooses the groups among the protected columns"):
        discrimination_test(loss, frame.sex.to_numpy(), by="sex")
    with pytest.raises(ValueError, match=r"`by` names \[.race.\], which are not protected"):
        discrimination_test("zero_one", data=data, by="race")
    for first in (data, frame):  # data first, as the other entry points take it
        with pytest.raises(TypeError, match=r"takes the per-row loss first.*data=data, by="):
            discrimination_test(first, by="sex")


# ------------------------------------------------------------------ validity (slow)
@pytest.mark.slow
def test_studentized_permutation_test_holds_its_level():
    """DiCiccio et al. Section 4.2: different positive rates (5% vs 50%), equal FNR (0.2).

    20% of 20,000 rows are in the low-prevalence group (about 200 positives): the regime
    where the asymptotics apply. 4,000 data sets drawn as their cell counts.
    """
    rng = np.random.default_rng(2024)
    reps = 4000
    rej = {"studentized": 0, "unstudentized": 0, "within": 0}
    for r in range(reps):
        a, b = _cells(rng, 20_000)
        kw = dict(n_resamples=199, random_state=r, permute="free")  # the paper's Algorithm 1
        rej["studentized"] += permutation_test_counts(a, b, **kw).pvalue <= 0.05
        rej["unstudentized"] += permutation_test_counts(a, b, studentize=False, **kw).pvalue <= 0.05
        kw["permute"] = "within_outcome"
        rej["within"] += permutation_test_counts(a, b, **kw).pvalue <= 0.05
    rate = {k: v / reps for k, v in rej.items()}
    print("FNR test rejection rates at 0.05:", rate)  # shown with pytest -s
    assert 0.04 <= rate["studentized"] <= 0.06, rate
    assert rate["unstudentized"] > 0.3, rate  # anti-conservative
    assert 0.035 <= rate["within"] <= 0.06, rate  # exact (at most 0.05 up to Monte Carlo error)


@pytest.mark.slow
def test_default_permutation_holds_its_level_in_small_groups():
    """Equal FNR (0.4) and equal PPV (0.6) in a group of 150 rows and one of 1,500 whose
    shares of positives (or of positive decisions) are 20% and 70%, and whose other rates
    differ: about 30 rows of the small group's class.  The default (exact) permutation
    rejects at most 5% of 4,000 null data sets; the studentized free permutation, valid
    only asymptotically, rejects more (measured: 0.037 and 0.062 for FNR)."""
    rng = np.random.default_rng(2026)
    reps = 4000
    rej = {"fnr": 0, "ppv": 0, "fnr_free": 0}
    for r in range(reps):
        cells = {"fnr": [], "ppv": []}
        for n, share, other in ((150, 0.2, 0.8), (1500, 0.7, 0.5)):
            k = rng.binomial(n, share)  # rows of the rate's class
            hit, rest = rng.binomial(k, 0.6), rng.binomial(n - k, other)
            cells["fnr"].append([hit, n - k - rest, k - hit, rest])  # class y = 1
            cells["ppv"].append([hit, k - hit, n - k - rest, rest])  # class decision = 1
        kw = dict(n_resamples=199, random_state=r)
        for metric in ("fnr", "ppv"):
            rej[metric] += permutation_test_counts(*cells[metric], metric, **kw).pvalue <= 0.05
        free = permutation_test_counts(*cells["fnr"], "fnr", permute="free", **kw)
        rej["fnr_free"] += free.pvalue <= 0.05
    rate = {k: v / reps for k, v in rej.items()}
    print("rejection rates at 0.05, small groups:", rate)  # shown with pytest -s
    assert 0.03 <= rate["fnr"] <= 0.058 and 0.03 <= rate["ppv"] <= 0.058, rate
    assert rate["fnr_free"] > max(0.055, rate["fnr"] + 0.015), rate


@pytest.mark.slow
def test_max_t_test_default_holds_its_level_for_ppv_in_small_groups():
    """Six groups of 40 to 1,200 rows, equal PPV (0.6) but selection rates from 0.15 to 0.7
    and unequal NPVs: the max-T test with the default permutation (within decision)
    rejects at most 5% of 500 null data sets; the free permutation rejected 0.094."""
    rng = np.random.default_rng(9)
    sizes = {"a": 40, "b": 80, "c": 150, "d": 300, "e": 600, "f": 1200}
    sel = {"a": 0.15, "b": 0.7, "c": 0.3, "d": 0.5, "e": 0.2, "f": 0.6}
    g = np.repeat(list(sizes), list(sizes.values()))
    npv = np.where(np.isin(g, ["a", "c"]), 0.9, 0.6)
    rej = {"auto": 0, "free": 0}
    reps = 500
    for r in range(reps):
        d = (rng.random(g.size) < np.array([sel[x] for x in g])).astype(int)
        y = np.where(d == 1, rng.random(g.size) < 0.6, rng.random(g.size) > npv).astype(int)
        data = AuditData(pd.DataFrame({"g": g, "y": y, "d": d}), "g", "y", decision="d")
        for perm in rej:
            res = intersectional_permutation_test(
                data, "ppv", n_resamples=199, pairwise=False, permute=perm, random_state=r
            )
            rej[perm] += res.pvalue <= 0.05
    rate = {k: v / reps for k, v in rej.items()}
    print("max-T rejection rates at 0.05 (PPV):", rate)  # shown with pytest -s
    assert 0.015 <= rate["auto"] <= 0.06 and rate["free"] > 0.07, rate


@pytest.mark.slow
def test_discrimination_test_level_in_small_groups():
    """A binary loss of rate 0.1 in groups of 20 and 200 rows: the p-value (from Newcombe's
    interval) rejects at most 5% of 4,000 null data sets, where the z-test rejects 12%."""
    rng = np.random.default_rng(17)
    reps, rej, rej_z = 4000, 0, 0
    g = np.repeat(["a", "b"], [20, 200])
    for _ in range(reps):
        res = discrimination_test((rng.random(220) < 0.1).astype(float), g)
        rej += res.pvalue <= 0.05
        rej_z += 2 * norm.sf(abs(res.z)) <= 0.05
    print("small groups, rejection rates at 0.05:", rej / reps, "z-test:", rej_z / reps)
    assert 0.02 <= rej / reps <= 0.058 and rej_z / reps > 0.09


@pytest.mark.slow
def test_discrimination_z_test_level_with_unequal_groups():
    rng = np.random.default_rng(7)
    reps, rej = 4000, 0
    g = np.repeat(["a", "b"], [150, 1500])
    for _ in range(reps):
        loss = (rng.random(1650) < 0.3).astype(float)
        rej += discrimination_test(loss, g).pvalue <= 0.05
    print("Chen z-test rejection rate at 0.05:", rej / reps)  # shown with pytest -s
    assert 0.04 <= rej / reps <= 0.06


def _delong_brute(y, s):
    pos, neg = s[y == 1], s[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return psi.mean(), v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg)


def test_auc_test_matches_brute_force_delong():
    rng = np.random.default_rng(3)
    n = 600
    g = rng.choice(["A", "B"], n, p=[0.3, 0.7])
    y = (rng.random(n) < np.where(g == "A", 0.2, 0.6)).astype(int)
    s = np.round(rng.random(n) * 0.6 + 0.3 * y, 1)  # ties
    data = AuditData(pd.DataFrame({"g": g, "y": y, "s": s}), "g", "y", score="s")
    res = auc_permutation_test(data, n_resamples=499, random_state=0)
    a, va = _delong_brute(y[g == "A"], s[g == "A"])
    b, vb = _delong_brute(y[g == "B"], s[g == "B"])
    assert res.estimates["value"].tolist() == pytest.approx([a, b])
    assert res.studentized_statistic == pytest.approx((a - b) / np.sqrt(va + vb))
    # the compiled pass behind the null distribution gives the same AUC and variance: with
    # every row drawn into group A (needed = remaining = all rows), A's are those of all
    # rows, and the empty group B has neither
    from bayesfair.frequentist._auc_kernel import _fused_permutation
    from bayesfair.frequentist.auc import _Sorted

    srt = _Sorted(s.astype(float), y)
    every = np.array([n, 0], np.int64)
    out, _ = _fused_permutation(
        srt.y, srt.last.astype(np.int64), every.copy(), every.copy(), False, np.uint64(1)
    )
    assert out[:2].tolist() == pytest.approx(_delong_brute(y, s))
    assert np.isnan(out[2:]).all()
    # the null distribution matches a brute-force shuffle of the studentized statistic:
    # of all rows' labels (free), or within the positives and within the negatives (default)
    assert res.permute == "within_outcome" and res.notes == []
    free = auc_permutation_test(data, n_resamples=1999, permute="free", random_state=0)
    assert free.permute == "free" and "is exact for auc only under the strong null" in free.notes[0]
    within = auc_permutation_test(data, n_resamples=1999, random_state=0)
    for result, scheme in ((free, "free"), (within, "within_outcome")):
        brute = []
        for _ in range(400):
            if scheme == "free":
                p = rng.permutation(g)
            else:
                p = g.copy()
                for cls in (0, 1):
                    p[y == cls] = rng.permutation(g[y == cls])
            a_, va_ = _delong_brute(y[p == "A"], s[p == "A"])
            b_, vb_ = _delong_brute(y[p == "B"], s[p == "B"])
            brute.append((a_ - b_) / np.sqrt(va_ + vb_))
        assert ks_2samp(result.null_distribution, brute).pvalue > 0.01, scheme
    one = auc_permutation_test(data, n_resamples=300, random_state=1, n_jobs=1)
    two = auc_permutation_test(data, n_resamples=300, random_state=1, n_jobs=2)
    np.testing.assert_array_equal(one.null_distribution, two.null_distribution)


def test_auc_test_names_the_group_without_both_outcomes():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": np.repeat(["A", "C"], 50), "p": rng.random(100)})
    df["y"] = np.r_[rng.integers(0, 2, 50), np.ones(50, int)]
    data = AuditData(df, "g", "y", score="p")
    with pytest.raises(ValueError, match=r"group 'C' \(50 positives, 0 negatives\)"):
        auc_permutation_test(data, n_resamples=99)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "permute", "bounds"),
    [
        (1500, "free", (0.03, 0.07)),  # about 45 positives in group A: asymptotically valid
        (1500, "auto", (0.03, 0.058)),  # within outcome: exact
        (500, "auto", (0.03, 0.058)),  # about 15 positives: still exact
    ],
)
def test_auc_delong_test_holds_its_level_with_different_positive_rates(n, permute, bounds):
    """Equal AUC (same score model) but positive rates 10% vs 50%: 4,000 data sets.  The
    free permutation holds its level where group A has about 45 positives; the default
    permutation within outcome is exact, also with about 15 (where the free one rejected
    0.089 of 1,000 data sets, a one-off check)."""
    rng = np.random.default_rng(11)
    reps, rej = 4000, 0
    for r in range(reps):
        g = np.where(rng.random(n) < 0.3, "A", "B")
        y = (rng.random(n) < np.where(g == "A", 0.1, 0.5)).astype(int)
        s = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.2 * y)))
        data = AuditData(pd.DataFrame({"g": g, "y": y, "s": s}), "g", "y", score="s")
        res = auc_permutation_test(data, n_resamples=199, permute=permute, random_state=r)
        rej += res.pvalue <= 0.05
    print(f"AUC DeLong test ({permute}, n={n}) rejection rate at 0.05:", rej / reps)
    assert bounds[0] <= rej / reps <= bounds[1]


def test_max_t_keeps_power_when_a_tiny_group_has_a_zero_rate():
    """A group whose rate is 0 has zero plain variance; the statistic must stay finite,
    or permuted tiny groups give infinite maxima and the test loses all power."""
    rng = np.random.default_rng(9)
    n = 6000
    r = rng.choice(["a", "b", "c"], n).astype(object)
    r[:12] = "tiny"
    df = pd.DataFrame({"r": r, "y": rng.integers(0, 2, n)})
    df.loc[:11, "y"] = 1
    miss = np.where(df["r"] == "c", 0.45, 0.2)
    miss[:12] = 0.0  # the tiny group: FNR exactly 0
    df["d"] = np.where(df["y"] == 1, rng.random(n) > miss, rng.random(n) < 0.2).astype(int)
    data = AuditData(df, "r", "y", decision="d")
    res = intersectional_permutation_test(
        data, "fnr", n_resamples=1999, pairwise=False, random_state=0
    )
    assert np.isfinite(res.statistic)
    g = res.groups.set_index("group")
    assert g.loc["tiny", "value"] == 0.0
    assert g.loc["c", "pvalue_maxT"] < 0.01


def test_correlation_test_statistics_by_hand():
    from bayesfair.frequentist import correlation_permutation_test

    rng = np.random.default_rng(4)
    x = rng.uniform(0.1, 1, 300)
    e = rng.normal(size=300) / x
    res = correlation_permutation_test(x, e, n_resamples=199, random_state=0)
    xc, ec = x - x.mean(), e - e.mean()
    r = np.mean(xc * ec) / np.sqrt(np.mean(xc**2) * np.mean(ec**2))
    tau2 = np.mean(xc**2 * ec**2) / (np.mean(xc**2) * np.mean(ec**2))
    assert res.difference == pytest.approx(r)
    assert res.studentized_statistic == pytest.approx(np.sqrt(300) * r / np.sqrt(tau2))
    with pytest.raises(ValueError, match="same length"):
        correlation_permutation_test(x, e[:10])
    with pytest.raises(ValueError, match="non-constant"):
        correlation_permutation_test(np.ones(10), np.arange(10.0))


@pytest.mark.slow
def test_studentized_correlation_test_is_valid_where_fairtest_is_not():
    """DiCiccio et al. Table 1, 'uncorrelated' row, high-leverage design (400 data sets)."""
    from bayesfair.frequentist import correlation_permutation_test

    rng = np.random.default_rng(5)
    rej = {True: 0, False: 0}
    sims = 400
    for i in range(sims):
        x = (rng.random(2000) < 0.01).astype(float)
        e = rng.normal(size=2000) * np.where(x == 1, 20.0, 1.0)
        for st in (True, False):
            rej[st] += (
                correlation_permutation_test(
                    x, e, studentize=st, n_resamples=99, random_state=i
                ).pvalue
                <= 0.05
            )
    assert 0.02 <= rej[True] / sims <= 0.08
    assert rej[False] / sims > 0.5  # FairTest's unstudentized test: far above the level


def test_metric_permutation_test_mean_and_callable():
    from bayesfair.frequentist import metric_permutation_test

    rng = np.random.default_rng(6)
    g = np.repeat(["a", "b"], [150, 450])
    v = rng.normal(np.where(g == "a", 0.4, 0.0), np.where(g == "a", 2.0, 1.0))
    res = metric_permutation_test(v, g, n_resamples=499, random_state=0)
    a, b = v[g == "a"], v[g == "b"]
    welch = (a.mean() - b.mean()) / np.sqrt(a.var(ddof=1) / 150 + b.var(ddof=1) / 450)
    assert res.difference == pytest.approx(a.mean() - b.mean())
    assert res.studentized_statistic == pytest.approx(welch)
    same = metric_permutation_test(v, g, n_resamples=499, random_state=0, n_jobs=2)
    np.testing.assert_array_equal(res.null_distribution, same.null_distribution)
    # a callable (the median) studentized by the bootstrap
    med = metric_permutation_test(
        v, g, np.median, n_resamples=99, n_variance_resamples=30, random_state=0
    )
    assert med.difference == pytest.approx(np.median(a) - np.median(b))
    assert np.isfinite(med.studentized_statistic)
    # two-sided: the share of |null| at least |statistic|, the observed counted once
    hits = np.sum(np.abs(med.null_distribution) >= abs(med.statistic) - 1e-12)
    assert med.pvalue == pytest.approx((1 + hits) / (1 + len(med.null_distribution)))
    with pytest.raises(ValueError, match="exactly two"):
        metric_permutation_test(v, np.arange(600) % 3)
    with pytest.raises(ValueError, match="`group` has 1 missing value"):
        metric_permutation_test(v, np.where(np.arange(600) == 5, None, g))
    with pytest.raises(ValueError, match="'mean' or a callable"):
        metric_permutation_test(v, g, "median")
    # one bootstrap difference has no spread: the standard error would be NaN
    for stud in (True, False):
        with pytest.raises(
            ValueError, match="`n_variance_resamples` must be an integer of at least 2"
        ):
            metric_permutation_test(v, g, np.median, n_variance_resamples=1, studentize=stud)
    with pytest.raises(ValueError, match="`batch` must be a positive integer, got 0"):
        metric_permutation_test(v, g, batch=0)  # failed in range()
    # data first, as the rate tests take it: told which test takes data
    data = AuditData(pd.DataFrame({"g": g, "y": (v > 0).astype(int)}), "g", "y")
    with pytest.raises(TypeError, match=r"takes per-row values .*permutation_test\(data, 'fpr'"):
        metric_permutation_test(data, g)


def test_metric_permutation_test_of_two_named_groups_among_more():
    """groups=(a, b) tests the two named groups' rows among more, as the other permutation
    tests and discrimination_test do (it refused such a group column), in the order named;
    integer labels are named as values; an unknown or repeated group is refused."""
    from bayesfair.frequentist import metric_permutation_test

    rng = np.random.default_rng(8)
    g = rng.choice([1, 2, 3], 900, p=[0.3, 0.6, 0.1])
    v = rng.normal(np.where(g == 1, 0.3, 0.0), 1.0)
    res = metric_permutation_test(v, g, groups=(2, 1), n_resamples=199, random_state=0)
    keep = g != 3
    alone = metric_permutation_test(
        v[keep],
        np.where(g[keep] == 2, "2", "1"),
        groups=("2", "1"),
        n_resamples=199,
        random_state=0,
    )
    assert res.groups == ("2", "1")
    assert res.difference == pytest.approx(v[g == 2].mean() - v[g == 1].mean())
    assert res.pvalue == alone.pvalue and res.difference == alone.difference
    with pytest.raises(ValueError, match=r"two distinct labels among .*, got \(1, 4\)"):
        metric_permutation_test(v, g, groups=(1, 4))
    with pytest.raises(ValueError, match="two distinct labels"):
        metric_permutation_test(v, g, groups=(1, 1))


@pytest.mark.slow
def test_welch_permutation_test_level_with_unequal_variances():
    """Equal means, variances 4 vs 1, groups of 40 and 400: studentized holds the level,
    the unstudentized difference does not (1,000 data sets)."""
    from bayesfair.frequentist import metric_permutation_test

    rng = np.random.default_rng(8)
    rej = {True: 0, False: 0}
    sims = 1000
    g = np.repeat(["a", "b"], [40, 400])
    for i in range(sims):
        v = rng.normal(0, np.where(g == "a", 2.0, 1.0))
        for st in (True, False):
            rej[st] += (
                metric_permutation_test(v, g, studentize=st, n_resamples=199, random_state=i).pvalue
                <= 0.05
            )
    assert 0.03 <= rej[True] / sims <= 0.07
    assert rej[False] / sims > 0.12


def test_two_group_tests_leave_out_a_category_without_rows_and_say_so():
    """A pandas Categorical keeps its unused levels after a filter: a column with rows in two
    levels is the two-group case for the permutation and AUC tests, which note the level left
    out; the same test as on a column without that level; naming it is refused by name."""
    rng = np.random.default_rng(3)
    n = 400
    sex = rng.choice(["f", "m"], n)
    df = pd.DataFrame(
        {
            "sex": pd.Categorical(sex, categories=["f", "m", "x"]),
            "y": (rng.random(n) < 0.4).astype(int),
            "score": rng.random(n),
        }
    )
    df["d"] = (df["score"] > 0.5).astype(int)
    kept = AuditData(df, protected="sex", outcome="y", decision="d", score="score")
    plain = AuditData(df.assign(sex=sex), protected="sex", outcome="y", decision="d", score="score")
    for test in (permutation_test, auc_permutation_test):
        res = test(kept, by="sex", n_resamples=99, random_state=0)
        ref = test(plain, by="sex", n_resamples=99, random_state=0)
        assert res.groups == ref.groups == ("f", "m")
        assert res.pvalue == ref.pvalue and res.difference == ref.difference
        assert any("without rows, not compared: 'x'" in note for note in res.notes), res.notes
        assert not any("without rows" in note for note in ref.notes)
        named = test(kept, by="sex", groups=("m", "f"), n_resamples=99, random_state=0)
        assert named.groups == ("m", "f")  # named: the others are not compared, by choice
        assert not any("without rows" in note for note in named.notes)
        with pytest.raises(
            ValueError, match=r"\['x'\] has no rows \(groups with rows: \['f', 'm'\]"
        ):
            test(kept, by="sex", groups=("f", "x"), n_resamples=99, random_state=0)
    # with three levels with rows, the refusal counts those and names the empty one apart
    third = df.assign(sex=pd.Categorical(rng.choice(["f", "m", "x"], n), ["f", "m", "x", "u"]))
    data = AuditData(third, protected="sex", outcome="y", decision="d")
    with pytest.raises(
        ValueError, match=r"3 groups with rows \('f', 'm', 'x'\) \(and 1 without rows: \['u'\]\)"
    ):
        permutation_test(data, by="sex", random_state=0)
