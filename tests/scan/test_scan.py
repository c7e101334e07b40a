"""Subset scan engine and Conditional Bias Scan."""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar

from bayesfair import AuditData
from bayesfair.datasets import load_compas, make_cbs_semisynthetic
from bayesfair.scan import (
    BayesianIhat,
    SubsetSearch,
    WeightedIhat,
    _kernel,
    conditional_bias_scan,
    posterior_bias_scan,
    subgroup_mask,
    subset_scan,
)
from bayesfair.scan.engine import PreparedScan, _atoms, row_codes, safe_logit


# ------------------------------------------------------------------ exact per-set maximiser
def _scipy_max(e, ehat, sign):
    """max over theta >= 0 of the Bernoulli LLR, by scipy (independent of the kernel)."""
    if sign < 0:
        e, ehat = 1 - e, 1 - ehat

    def negf(b):
        return -np.sum(e * b - np.log1p(ehat * np.expm1(b)))

    r = minimize_scalar(
        negf, bounds=(0.0, _kernel.BETA_MAX), method="bounded", options={"xatol": 1e-10}
    )
    return max(0.0, -r.fun)


@pytest.mark.parametrize("seed", range(6))
def test_set_max_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    ehat = rng.uniform(0.02, 0.98, n)
    e = (rng.random(n) < np.clip(ehat * rng.uniform(0.3, 3), 0, 1)).astype(float)
    for sign in (1, -1):
        ev = e if sign > 0 else 1 - e
        lg = sign * safe_logit(ehat)
        sp0 = np.log1p(np.exp(lg))
        f, th = _kernel.set_max(np.arange(n), _kernel.BERNOULLI, np.ones(n), ev, lg, sp0, 1.0)
        assert f == pytest.approx(_scipy_max(e, ehat, sign), rel=1e-7, abs=1e-8)
        assert th >= 0


def test_gaussian_set_max_closed_form():
    d = np.array([0.5, -0.2, 1.0])
    f, mu = _kernel.set_max(
        np.arange(3), _kernel.GAUSSIAN, np.ones(3), d, np.zeros(3), np.zeros(3), 4.0
    )
    assert mu == pytest.approx(1.3 / 3)
    assert f == pytest.approx(1.3**2 / (2 * 4.0 * 3))


# ------------------------------------------------------------------ exhaustive comparison
def test_atoms_are_the_distinct_key_tuples_in_order_of_first_row():
    """The scan's atoms against their definition, row by row: rows with equal keys (ties,
    0.0 and -0.0 alike) share an atom, atoms are numbered by their first row."""
    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.integers(0, 80))
        cell = rng.integers(0, int(rng.integers(1, 12)), n)
        lg = rng.choice(rng.normal(size=int(rng.integers(1, 5))), n)
        if trial % 5 == 0:
            lg = np.where(lg > 0, 0.0, -0.0)
        for keys in ((cell,), (cell, lg), (lg, cell)):
            seen: dict = {}
            atom = [seen.setdefault(tuple(float(k[i]) for k in keys), len(seen)) for i in range(n)]
            first = [atom.index(a) for a in range(len(seen))]
            got_atom, got_first = _atoms(*keys)
            assert got_atom.tolist() == atom and got_first.tolist() == first


def _brute_force(prep: PreparedScan, penalty: float) -> float:
    """Best penalised score over every subgroup (all non-empty value subsets; contiguous
    ranges only for ordinal attributes)."""
    sp0 = np.log1p(np.exp(prep.lg))
    per_attr = []
    for k, ordl in zip(prep.arity, prep.ordinal, strict=True):
        if ordl:
            subs = [np.arange(lo, hi) for lo in range(k) for hi in range(lo + 1, k + 1)]
        else:
            subs = [
                np.array(c) for r in range(1, k + 1) for c in itertools.combinations(range(k), r)
            ]
        per_attr.append(subs)
    best = -np.inf
    for combo in itertools.product(*per_attr):
        inside = np.ones(len(prep.m), bool)
        pen = 0.0
        for j, sub in enumerate(combo):
            inside &= np.isin(prep.atom_codes[:, j], sub)
            if len(sub) < prep.arity[j]:
                pen += penalty * len(sub)
        f, _ = _kernel.set_max(
            np.flatnonzero(inside), prep.family, prep.m, prep.s, prep.lg, sp0, prep.sig2
        )
        best = max(best, f - pen)
    return best


def _random_problem(rng, max_arity: int = 4, max_attributes: int = 4):
    M = int(rng.integers(1, max_attributes + 1))
    arity = rng.integers(2, max_arity + 1, M)
    n = int(rng.integers(40, 400))
    df = pd.DataFrame({f"x{j}": rng.integers(0, k, n) for j, k in enumerate(arity)})
    ehat = rng.uniform(0.05, 0.95, n)
    if rng.random() < 0.5:  # shared expectations within cells: atoms compress
        ehat = np.round(ehat, 1).clip(0.05, 0.95)
    boost = np.ones(n, bool)
    for j in rng.choice(M, size=min(M, 2), replace=False):
        boost &= df[f"x{j}"].isin(rng.choice(arity[j], size=max(1, arity[j] // 2), replace=False))
    shift = rng.normal(0, 1.0)
    lg = safe_logit(ehat) + shift * boost
    family = rng.choice(["bernoulli", "gaussian"])
    if family == "bernoulli":
        obs = (rng.random(n) < 1 / (1 + np.exp(-lg))).astype(float)
    else:
        obs = 1 / (1 + np.exp(-(lg + rng.normal(0, 0.5, n))))
    return df, obs, ehat, family


def _agreement_with_enumeration(rng, n_problems, choose_ordinal=None, **problem_kw):
    """Scan (20 restarts) random problems and count those whose score equals exhaustive
    enumeration; the scan must never exceed the optimum, and ranges of ordinal attributes
    (``choose_ordinal(df, rng)``) must be contiguous.  Returns (agree, worst gap)."""
    agree, worst = 0, 0.0
    for _ in range(n_problems):
        df, obs, ehat, family = _random_problem(rng, **problem_kw)
        ordinal = choose_ordinal(df, rng) if choose_ordinal else []
        direction = rng.choice(["positive", "negative"])
        penalty = float(rng.choice([0.0, 0.5, 1.0, 3.0]))
        res = subset_scan(
            df,
            list(df.columns),
            obs,
            ehat,
            score_type=family,
            direction=direction,
            penalty=penalty,
            ordinal=ordinal or None,
            n_restarts=20,
            random_state=int(rng.integers(1e6)),
        )
        for col in ordinal:
            if col in res.subgroup:
                vals = res.subgroup[col]
                assert vals == list(range(min(vals), max(vals) + 1)), (col, vals)
        codes, values = row_codes(df, list(df.columns))
        prep = PreparedScan(
            codes, values, list(df.columns), obs, ehat, family, direction, 1.0, ordinal
        )
        exact = _brute_force(prep, penalty)
        assert res.score <= exact + 1e-7 * max(1, abs(exact))  # never above the optimum
        gap = exact - res.score
        worst = max(worst, gap)
        agree += gap <= 1e-6 * max(1.0, abs(exact))
    return agree, worst


@pytest.mark.slow
def test_scan_equals_exhaustive_enumeration():
    agree, worst = _agreement_with_enumeration(np.random.default_rng(2024), 200)
    assert agree / 200 >= 0.99, (agree, worst)


@pytest.mark.slow
def test_scan_with_ordinal_attributes_equals_exhaustive_enumeration():
    """Ordinal attributes (arity up to 6) may only take contiguous ranges: the scan's
    optimum equals enumeration over ranges, and every reported range is contiguous.
    Up to 3 attributes; those with more than 4 values are always ordinal (keeps the
    enumeration small)."""
    agree, worst = _agreement_with_enumeration(
        np.random.default_rng(77),
        120,
        lambda df, rng: [c for c in df.columns if df[c].nunique() > 4 or rng.random() < 0.5],
        max_arity=6,
        max_attributes=3,
    )
    assert agree / 120 >= 0.99, (agree, worst)


def test_ordinal_attributes_auto_and_errors():
    rng = np.random.default_rng(3)
    n = 3000
    age = rng.integers(18, 80, n)
    df = pd.DataFrame(
        {"age": pd.cut(age, [0, 25, 35, 45, 55, 65, 100]), "g": rng.choice(["a", "b"], n)}
    )
    assert df["age"].cat.ordered
    # the young and the old are both under-predicted: an unordered scan may join them,
    # an ordinal scan must pick one range
    lg = np.where((age < 25) | (age >= 65), 1.2, 0.0)
    y = (rng.random(n) < 1 / (1 + np.exp(-(lg - 1)))).astype(float)
    p = np.full(n, 1 / (1 + np.e))
    free = subset_scan(df, ["age", "g"], y, p, n_restarts=10, random_state=0)
    assert len(free.subgroup["age"]) == 2  # {under 25, 65+}: not a range
    auto = subset_scan(df, ["age", "g"], y, p, ordinal="auto", n_restarts=10, random_state=0)
    cats = list(df["age"].cat.categories)
    idx = [cats.index(v) for v in auto.subgroup["age"]]
    assert idx == list(range(min(idx), max(idx) + 1))
    assert auto.score < free.score
    with pytest.raises(ValueError, match="ordinal"):
        subset_scan(df, ["age"], y, p, ordinal=["g"])
    # raw numeric ages: "auto" takes them as ordered, and leaving them unordered warns
    raw = df.assign(age=age)
    with pytest.warns(UserWarning, match=r"\['age'\] have more than 10 values"):
        unordered = subset_scan(raw, ["age", "g"], y, p, n_restarts=10, random_state=0)
    assert unordered.score >= free.score
    # 62 ordered values: the scan scores all 1,953 ranges per step, and says so
    with pytest.warns(UserWarning, match=r"ordinal scan attribute\(s\) \{'age': 62\}"):
        auto_raw = subset_scan(
            raw, ["age", "g"], y, p, ordinal="auto", n_restarts=10, random_state=0
        )
    ages = sorted(np.unique(age))
    idx = [ages.index(v) for v in auto_raw.subgroup["age"]]
    assert idx == list(range(min(idx), max(idx) + 1))
    if len(idx) > 2:  # a range reads as one
        lo, hi = auto_raw.subgroup["age"][0], auto_raw.subgroup["age"][-1]
        assert f"age = {lo} to {hi}" in auto_raw.describe()
    assert "age = (0, 25] or (65, 100]" in free.describe()  # unordered: the values
    with pytest.raises(ValueError, match="ordinal"):
        subset_scan(df, ["age"], y, p, ordinal="yes")


def test_continuous_scan_attributes_are_refused_before_any_work():
    """A column with more than 1,000 distinct values is a measurement or an identifier,
    not a category: the scan (and the CBS expectations model, one indicator per value)
    refuses it and says how to bin it, instead of building a rows x values matrix."""
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({"income": rng.normal(size=n), "g": rng.choice(["a", "b"], n)})
    y = rng.integers(0, 2, n).astype(float)
    with pytest.raises(
        ValueError, match=r"'income' has 3000 distinct values.*pd.qcut\(data\['income'\], 10\)"
    ):
        subset_scan(df, ["income", "g"], y, np.full(n, 0.5))
    df["y"], df["d"], df["s"] = y, rng.integers(0, 2, n), rng.random(n)
    kw = dict(
        protected_class=("g", "a"),
        scan_type="separation_recommendations",
        condition_value=0,
        n_resamples=0,
    )
    roles = dict(outcome="y", score="s", decision="d")
    with pytest.raises(ValueError, match="scan attribute"):
        conditional_bias_scan(df, attributes=["income"], **kw, **roles)
    df["id"], df["h"] = np.arange(n), rng.choice(["u", "v"], n)
    with pytest.raises(ValueError, match=r"`ihat.attributes` column 'id' has 3000"):
        conditional_bias_scan(
            df, attributes=["h"], ihat=WeightedIhat(attributes=["id"]), **kw, **roles
        )


def test_reported_subgroup_has_reported_score():
    rng = np.random.default_rng(5)
    df, _obs, ehat, _ = _random_problem(rng)
    res = subset_scan(
        df,
        list(df.columns),
        (rng.random(len(df)) < 0.5).astype(float),
        ehat,
        penalty=0.5,
        n_restarts=10,
        random_state=1,
    )
    member = subgroup_mask(df, res.subgroup)
    assert np.array_equal(member, res.membership)
    assert res.n == member.sum()
    assert res.score == pytest.approx(res.llr - 0.5 * sum(len(v) for v in res.subgroup.values()))


def test_scan_finds_injected_subgroup_and_is_seeded():
    rng = np.random.default_rng(0)
    n = 5000
    df = pd.DataFrame(
        {"a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n), "c": rng.integers(0, 2, n)}
    )
    p = rng.uniform(0.1, 0.6, n)
    inj = df.a.isin([1, 3]) & (df.b == 0)
    y = (rng.random(n) < np.where(inj, np.minimum(p * 2, 0.95), p)).astype(float)
    r1 = subset_scan(df, ["a", "b", "c"], y, p, penalty=1, n_restarts=10, random_state=3)
    r2 = subset_scan(df, ["a", "b", "c"], y, p, penalty=1, n_restarts=10, random_state=3)
    assert r1.subgroup == {"a": [1, 3], "b": [0]}
    assert r1.score == r2.score and r1.q > 1.5
    neg = subset_scan(
        df, ["a", "b", "c"], y, p, direction="negative", penalty=1, n_restarts=10, random_state=3
    )
    assert neg.score < r1.score and (np.isnan(neg.q) or neg.q <= 1)


def test_scan_categorical_attribute_with_an_unused_category():
    """A categorical attribute scans as its values do; a category no row has is left out
    (it built the codes through a Categorical constructor that pandas deprecates)."""
    rng = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame({"a": rng.choice(["p", "q", "r"], n), "b": rng.integers(0, 3, n)})
    p = rng.uniform(0.1, 0.6, n)
    y = (rng.random(n) < np.where(df.a == "q", np.minimum(2 * p, 0.95), p)).astype(float)
    plain = subset_scan(df, ["a", "b"], y, p, penalty=1, n_restarts=5, random_state=0)
    cat = df.assign(a=pd.Categorical(df.a, categories=["r", "unused", "q", "p"]))
    res = subset_scan(cat, ["a", "b"], y, p, penalty=1, n_restarts=5, random_state=0)
    assert res.subgroup == plain.subgroup == {"a": ["q"]}
    assert res.score == pytest.approx(plain.score)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(attributes=["zz"]), "not in the data"),
        (dict(score_type="poisson"), "`score_type` must be one of"),
        (dict(direction="up"), "direction"),
        (dict(penalty=-1), "penalty"),
        (dict(penalty=np.inf), "`penalty` must be a finite non-negative number"),
        (dict(sigma=np.inf, score_type="gaussian", observed="p"), "sigma"),
        (dict(n_restarts=0), "n_restarts"),
        (dict(observed="p"), "0/1"),
        (dict(expected="y"), None),
        (dict(sigma=0, score_type="gaussian", observed="p"), "sigma"),
        (dict(sigma="x"), "`sigma` must be a positive number or 'estimate', got 'x'"),
        (dict(sigma=np.nan), "`sigma` must be a finite positive number"),
    ],
)
def test_scan_bad_input(kwargs, match):
    df = pd.DataFrame({"a": [0, 1, 0, 1], "y": [1.0, 0, 1, 0], "p": [0.2, 0.4, 0.3, 0.5]})
    args = dict(attributes=["a"], observed="y", expected="p")
    args.update(kwargs)
    if match is None:  # 0/1 expectations are probabilities: accepted
        subset_scan(df, **args)
        return
    with pytest.raises(ValueError, match=match):
        subset_scan(df, **args)


def test_scan_score_function_is_score_type_not_the_score_column_name():
    """``score=`` names a score column everywhere else; the scan's score function is
    ``score_type=`` (as its result's attribute) and ``score=`` is refused naming it."""
    df = pd.DataFrame({"a": [0, 1, 0, 1], "y": [0.2, 0.6, 0.3, 0.5], "p": [0.2, 0.4, 0.3, 0.5]})
    res = subset_scan(df, ["a"], "y", "p", score_type="gaussian", n_restarts=2, random_state=0)
    assert res.score_type == "gaussian"
    with pytest.raises(TypeError, match=r"got `score=`, which is now called `score_type=`"):
        subset_scan(df, ["a"], "y", "p", score="gaussian")


def test_scan_warns_about_events_its_expectation_calls_impossible():
    """0/1 decisions given as the expectation: an event where it is 0 has probability 0
    under the null, the score grows without bound in q, and the scan says so; an
    expectation strictly inside (0, 1), or one that agrees with every outcome, does not
    warn."""
    rng = np.random.default_rng(1)
    n = 1000
    df = pd.DataFrame({"a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n)})
    p = rng.uniform(0.2, 0.6, n)
    y = (rng.random(n) < p).astype(float)
    hard = (p > 0.4).astype(float)
    wrong = int(((hard == 0) & (y == 1)).sum() + ((hard == 1) & (y == 0)).sum())
    with pytest.warns(UserWarning, match=rf"{wrong} of {n} rows .* probability 0"):
        res = subset_scan(df, ["a", "b"], y, hard, n_restarts=5, random_state=0)
    assert res.q > 1e6  # what the warning is about
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        subset_scan(df, ["a", "b"], y, p, n_restarts=5, random_state=0)
        subset_scan(df, ["a", "b"], y, y, n_restarts=5, random_state=0)


def test_scan_refuses_missing_attribute_values():
    df = pd.DataFrame({"a": ["u", None, "v"], "y": [1.0, 0, 1], "p": [0.2, 0.4, 0.3]})
    with pytest.raises(ValueError, match="'a' has 1 missing"):
        subset_scan(df, ["a"], "y", "p")


# ------------------------------------------------------------------ Conditional Bias Scan
def _semi(**kw):
    return make_cbs_semisynthetic(
        protected_class=("race", "African-American"), random_state=4, **kw
    )


def test_cbs_detects_injected_separation_bias():
    ds = _semi(mu_sep=1.5)
    res = conditional_bias_scan(
        ds.frame,
        protected_class="protected",
        outcome="y",
        decision="p_bin",
        scan_type="separation_recommendations",
        condition_value=0,
        attributes=list(ds.covariates),
        search=SubsetSearch(n_restarts=20),
        random_state=0,
        n_resamples=0,
    )
    truth = ds.truth["in_subgroup"]
    keep = ds.frame["y"].to_numpy() == 0
    found = subgroup_mask(ds.frame, res.subgroup) & ds.frame["protected"].to_numpy()
    inter = (found & truth & keep).sum()
    union = ((found | truth) & keep).sum()
    assert inter / union > 0.6
    assert res.rate_protected > res.expected_rate
    # in words: the subgroup among the protected class and among the rest, both with y == 0
    comp = subgroup_mask(ds.frame, res.subgroup) & ~ds.frame["protected"].to_numpy() & keep
    assert res.describe() == (
        f"{res.scan.describe()} among protected with y == 0 ({(found & keep).sum()} rows) vs "
        f"{res.scan.describe()} among the rest with y == 0 ({comp.sum()} rows)"
    )


def test_cbs_scan_types_and_validation():
    ds = _semi()
    f = ds.frame
    common = dict(
        protected_class="protected",
        outcome="y",
        score="p",
        decision="p_bin",
        attributes=list(ds.covariates),
        search=SubsetSearch(n_restarts=5),
        n_resamples=0,
        random_state=0,
    )
    for st in (
        "separation_predictions",
        "separation_recommendations",
        "sufficiency_predictions",
        "sufficiency_recommendations",
    ):
        res = conditional_bias_scan(f, scan_type=st, **common)
        assert res.score >= 0 and res.summary().shape[0] == 1
    with pytest.raises(ValueError, match="scan_type"):
        conditional_bias_scan(f, scan_type="independence", **common)
    coded = f.assign(y=np.where(f["y"] == 1, "yes", "no"))
    with pytest.raises(ValueError, match=r"`outcome` column 'y' must be binary .* recode it"):
        conditional_bias_scan(coded, scan_type="separation_recommendations", **common)
    with pytest.raises(ValueError, match=r"`score` column 'p' has 1 missing"):
        conditional_bias_scan(
            f.assign(p=f["p"].where(f.index > 0)),
            scan_type="separation_predictions",
            **common,
        )
    with pytest.raises(ValueError, match="value-conditional"):
        conditional_bias_scan(f, scan_type="sufficiency_predictions", condition_value=1, **common)
    with pytest.raises(ValueError, match="needs the `decision`"):
        conditional_bias_scan(
            f, scan_type="separation_recommendations", **{**common, "decision": None}
        )
    with pytest.raises(ValueError, match=r"boolean or 0/1; .* pass protected_class=\('race', '"):
        conditional_bias_scan(
            f, scan_type="separation_recommendations", **{**common, "protected_class": "race"}
        )
    by_value = {**common, "protected_class": ("race", "African-American")}
    del by_value["n_resamples"]  # also given to posterior_bias_scan, which has no permutations
    with pytest.raises(ValueError, match=r"'race' has 1 missing value\(s\), rows that cannot"):
        conditional_bias_scan(
            f.assign(race=f["race"].where(f.index > 0)),
            scan_type="separation_recommendations",
            **by_value,
        )
    # the scan keeps the rows with y == 1; none of them is protected: refuse, not p = 1
    no_positive = f.assign(y=np.where(f["race"] == "African-American", 0, f["y"]))
    for scan in (conditional_bias_scan, posterior_bias_scan):
        with pytest.raises(ValueError, match="no row in the protected class has y == 1"):
            scan(
                no_positive,
                scan_type="separation_recommendations",
                condition_value=1,
                **by_value,
            )
    # naming the protected attribute among the scan attributes: left out, and said so
    for scan in (conditional_bias_scan, posterior_bias_scan):
        with (
            pytest.warns(UserWarning, match="protected attribute 'race' is left out"),
            pytest.raises(ValueError, match="no scan attributes"),
        ):
            scan(f, scan_type="separation_recommendations", **{**by_value, "attributes": ["race"]})
    coded = f.assign(site=np.arange(len(f)) % 3 + 1)  # an integer column: a plain 2
    with pytest.raises(ValueError, match=r"pass protected_class=\('site', 2\)$"):
        conditional_bias_scan(
            coded, scan_type="separation_recommendations", **{**common, "protected_class": "site"}
        )
    with pytest.raises(ValueError, match="no row has"):
        conditional_bias_scan(
            f,
            scan_type="separation_recommendations",
            **{**common, "protected_class": ("race", "Martian")},
        )
    with pytest.raises(TypeError, match="protected"):
        conditional_bias_scan(
            f, scan_type="separation_recommendations", **{**common, "protected_class": 3}
        )
    # arguments are checked where they come in, each named (True was taken as 1 permutation
    # and refused as `n_resamples`; sigma is unused by a Bernoulli scan but 'x' was taken)
    recs = dict(scan_type="separation_recommendations", **common)
    del recs["n_resamples"]  # each case below sets its own (or fails before permuting)
    for kw, match in [
        (dict(n_resamples=True), "`n_resamples` must be an integer of at least 0"),
        (dict(n_resamples=-1), "`n_resamples` must be an integer of at least 0"),
        (dict(n_resamples=9, n_jobs=2.5), "`n_jobs` must be None or a non-zero integer"),
    ]:
        with pytest.raises(ValueError, match=match):
            conditional_bias_scan(f, **{**recs, **kw})


#: an FPR scan of the semi-synthetic data without permutations (the scan, not its p-value)
_FPR_SCAN = dict(
    outcome="y",
    decision="p_bin",
    scan_type="separation_recommendations",
    condition_value=0,
    attributes=["sex", "age", "charge", "priors"],
    search=SubsetSearch(n_restarts=5),
    n_resamples=0,
    random_state=0,
)


def test_a_protected_class_of_several_values_is_their_union():
    """{"race": [a, b]} takes the rows with either value as the protected class (the same
    scan as a boolean column of them), names both, and refuses a value no row has."""
    f = _semi(mu_sep=1.5).frame
    common = _FPR_SCAN
    values = ["African-American", "Hispanic"]
    both = conditional_bias_scan(f, protected_class={"race": values}, **common)
    as_column = f.assign(union=f["race"].isin(values))
    direct = conditional_bias_scan(as_column, protected_class="union", **common)
    assert both.score == direct.score and both.subgroup == direct.subgroup
    assert both.n_protected == direct.n_protected
    assert both.protected_label == "race in {African-American, Hispanic}"
    with pytest.raises(ValueError, match=r"no row has race == 'Martian' .*'Asian'"):
        conditional_bias_scan(f, protected_class=("race", ["Hispanic", "Martian"]), **common)
    with pytest.raises(ValueError, match="lists no value"):
        conditional_bias_scan(f, protected_class={"race": []}, **common)


def test_a_scan_that_finds_nothing_says_when_the_bias_runs_the_other_way():
    """Injected bias raises the protected class's false positive rate: the negative scan
    scores 0 and its summary says the class is above its expectation and names the
    direction that finds it; the positive scan finds it and has no such note."""
    f = _semi(mu_sep=1.5).frame
    kw = dict(protected_class="protected", **_FPR_SCAN)
    negative = conditional_bias_scan(f, direction="negative", **kw)
    assert negative.score == 0 and negative.rate_protected > negative.expected_rate
    note = negative.summary()["note"].iloc[0]
    assert "protected class is above it" in note and "direction='positive'" in note
    positive = conditional_bias_scan(f, **kw)
    assert positive.score > 0 and positive.summary()["note"].iloc[0] == ""


def test_scan_options_are_checked_when_built():
    """SubsetSearch, WeightedIhat and BayesianIhat refuse bad settings when constructed, as
    the per-group estimators do, each naming the option (before any data is read)."""
    for build, error, match in [
        (
            lambda: SubsetSearch(sigma="x"),
            ValueError,
            "`sigma` must be a positive number or 'estimate'",
        ),
        (
            lambda: SubsetSearch(sigma=np.nan),
            ValueError,
            "`sigma` must be a finite positive number",
        ),
        (lambda: SubsetSearch(sigma=-1.0), ValueError, "`sigma` must be a finite positive number"),
        (lambda: SubsetSearch(n_restarts=0), ValueError, "`n_restarts` must be"),
        (lambda: SubsetSearch(n_restarts=2.5), ValueError, "`n_restarts` must be"),
        (lambda: SubsetSearch(penalty=-1.0), ValueError, "`penalty` must be"),
        (lambda: SubsetSearch(ordinal="priors"), ValueError, "`ordinal` must be a list"),
        (lambda: SubsetSearch(ordinal=[1]), TypeError, "`ordinal` must contain column names"),
        (
            lambda: BayesianIhat(prior_scale=np.inf),
            ValueError,
            "`prior_scale` must be a finite positive",
        ),
        (
            lambda: BayesianIhat(tune=0),
            ValueError,
            "`tune` must be a positive integer",
        ),  # nutpie panicked
        (lambda: BayesianIhat(attributes="age"), TypeError, "`attributes` must be None or a list"),
        (lambda: WeightedIhat(attributes="age"), TypeError, "`attributes` must be None or a list"),
        (
            lambda: WeightedIhat(ihat_model=object()),
            TypeError,
            "`ihat_model` must be a scikit-learn",
        ),
        (lambda: WeightedIhat(propensity_model="lr"), TypeError, "`propensity_model` must be"),
    ]:
        with pytest.raises(error, match=match):
            build()
    # the defaults, and a resolved default number of restarts
    assert SubsetSearch().restarts(50) == 50 and SubsetSearch(n_restarts=3).restarts(50) == 3
    assert SubsetSearch(ordinal="auto").ordinal == "auto"


def test_cbs_permutation_pvalue_is_backend_independent():
    ds = _semi(mu_sep=1.0)
    kw = dict(
        protected_class="protected",
        outcome="y",
        decision="p_bin",
        scan_type="separation_recommendations",
        condition_value=0,
        attributes=list(ds.covariates),
        search=SubsetSearch(n_restarts=5),
        n_resamples=32,
        random_state=7,
    )
    r1 = conditional_bias_scan(ds.frame, n_jobs=1, **kw)
    r2 = conditional_bias_scan(ds.frame, n_jobs=2, **kw)
    np.testing.assert_array_equal(r1.null_distribution, r2.null_distribution)
    assert r1.pvalue == r2.pvalue == pytest.approx(1 / 33)
    ax = r1.plot()
    assert ax.get_xlabel() == "maximum penalised score F(S*)" and len(ax.patches) > 0
    with pytest.raises(TypeError, match="`ax` must be a matplotlib Axes, got int"):
        r1.plot(ax=3)


def test_cbs_custom_ihat_model():
    from sklearn.ensemble import RandomForestClassifier

    ds = _semi(mu_sep=1.5)
    res = conditional_bias_scan(
        ds.frame,
        protected_class="protected",
        outcome="y",
        decision="p_bin",
        scan_type="separation_recommendations",
        condition_value=0,
        attributes=list(ds.covariates),
        search=SubsetSearch(n_restarts=5),
        random_state=0,
        ihat=WeightedIhat(
            ihat_model=RandomForestClassifier(n_estimators=20, min_samples_leaf=20, random_state=0)
        ),
        n_resamples=0,
    )
    assert res.score > 0 and len(res.ihat) == res.scan.membership.shape[0]


# ------------------------------------------------------------------ COMPAS, paper Table 4
@pytest.fixture(scope="module")
def compas_cbs(data_home):
    return load_compas("cbs", data_home=data_home).frame


CBS_COMPAS = dict(
    outcome="two_year_recid",
    score="P",
    decision="high_risk",
    attributes=["sex", "age", "charge", "priors"],
    search=SubsetSearch(penalty=1.0, n_restarts=150),
    random_state=0,
)


@pytest.mark.data
@pytest.mark.parametrize("scan_type", ["separation_predictions", "separation_recommendations"])
def test_compas_black_male_defendants(compas_cbs, scan_type):
    res = conditional_bias_scan(
        compas_cbs,
        protected_class=("race", "African-American"),
        scan_type=scan_type,
        condition_value=0,
        **CBS_COMPAS,
    )
    assert res.subgroup == {"sex": ["Male"]}
    assert (res.n_protected, res.n_comparison) == (1168, 1433)
    if scan_type == "separation_recommendations":
        assert abs(res.score - 100.9) / 100.9 < 0.10
        assert round(res.rate_protected, 2) == 0.44 and round(res.rate_comparison, 2) == 0.19
    else:  # sigma = 1 (the default)
        assert abs(res.score - 41.9) / 41.9 < 0.10
        assert round(res.rate_protected, 2) == 0.45 and round(res.rate_comparison, 2) == 0.35


# ------------------------------------------------------------------ validity under the null
@pytest.mark.slow
def test_cbs_permutation_test_level_under_the_null():
    """No injected bias: the permutation test rejects at 0.05 in 2%-8% of 200 data sets.

    19 permutations per data set: the p-value (1 + #null >= observed) / 20 is exactly
    valid for any number of permutations, and rejects at 0.05 only when the observed
    score is the largest, so the expected rejection rate is exactly 0.05.
    """
    from bayesfair.replication import boxer

    out = boxer.null_level_study(200, n_resamples=19, n_rows=2000, n_restarts=5, random_state=0)
    assert 0.02 <= out["rate"] <= 0.08, out["rate"]
    # and the p-values are spread over their whole range, not piled at 1
    assert 0.3 < np.mean(out["pvalues"] > 0.5) < 0.7


def test_fast_weighted_logit_equals_scikit_learn():
    from sklearn.linear_model import LogisticRegression

    from bayesfair.scan.ihat import _WeightedLogit

    rng = np.random.default_rng(0)
    X = np.column_stack([np.eye(4)[rng.integers(0, 4, 300)], rng.normal(size=300)])
    y = (rng.random(300) < 0.4).astype(int)
    w = rng.uniform(0.1, 3, 300)
    ref = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=w)
    ours = _WeightedLogit().fit(X, y, w)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)


def test_merging_identical_rows_leaves_the_weighted_fit_unchanged():
    """I-hat's models are fitted on the distinct (feature row, class) pairs with their
    weights summed: the same fit as on every row, whether the row codes are computed or
    given, with rows of zero weight and a pattern seen in one class only."""
    from bayesfair.scan.ihat import _WeightedLogit, fit_weighted, row_groups

    rng = np.random.default_rng(5)
    X = np.eye(5)[rng.integers(0, 5, 4000)][:, :4]  # five patterns, one all-zero
    y = (rng.random(4000) < 0.2 + 0.15 * X[:, 0]).astype(float)
    y[X[:, 3] == 1] = 1.0  # a pattern of one class
    w = rng.uniform(0.1, 3, 4000)
    w[:500] = 0.0
    full = _WeightedLogit().fit(X, y, w).predict_proba(X)
    for groups in (None, row_groups(X)):
        merged = fit_weighted(None, X, y, w, True, groups)
        np.testing.assert_allclose(merged.predict_proba(X), full, rtol=1e-9, atol=1e-12)


def test_report_gains_a_scan_section(tmp_path):
    from bayesfair.cli import demo_dataset
    from bayesfair.report import Report, add_scan_section, scan_audit_data

    data = demo_dataset(4000, 1).audit_data()
    results = scan_audit_data(data, n_resamples=9, n_restarts=5)
    assert len(results) == sum(len(v) for v in data.categories.values())
    rep = add_scan_section(Report("t"), results)
    html = rep.to_html()
    assert "Subgroup scan" in html and "rate_comparison" in html


def test_report_scans_name_the_users_columns():
    """The report's scans describe their condition with the audit's own outcome column (it
    said '_y == 0'), and scan every covariate, also one whose name starts with '_' (such a
    covariate was silently left out)."""
    from bayesfair.report import scan_audit_data

    rng = np.random.default_rng(0)
    n = 1500
    df = pd.DataFrame({"a": rng.choice(["p", "q"], n), "_zone": rng.choice(["n", "s"], n)})
    df["label"] = rng.choice(["yes", "no"], n)
    df["prob"] = rng.random(n)
    data = AuditData(
        df, "a", "label", score="prob", threshold=0.5, pos_label="yes", covariates=["_zone"]
    )
    results = scan_audit_data(data, n_resamples=0, n_restarts=2)
    assert len(results) == 2
    for r in results:
        assert r.settings["attributes"] == ["_zone"]
        assert "with label == 0" in r.describe() and "_y" not in r.describe()


def test_report_scans_say_which_covariates_they_leave_out():
    """The report's scans take categorical and boolean covariates (boolean ones were left out
    as numeric) and name the numeric ones they leave out (no word was said), with the fix."""
    from bayesfair.report import scan_audit_data

    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame(
        {
            "a": rng.choice(["p", "q"], n),
            "priors": rng.integers(0, 12, n),
            "flag": rng.random(n) < 0.5,
        }
    )
    df["y"] = rng.integers(0, 2, n)
    df["d"] = (rng.random(n) < 0.3 + 0.4 * ((df.a == "p") & df.flag)).astype(int)
    data = AuditData(df, "a", "y", decision="d", covariates=["priors", "flag"])
    with pytest.warns(UserWarning, match=r"numeric covariate\(s\) \['priors'\] are not scanned"):
        results = scan_audit_data(data, n_resamples=19, n_restarts=5)
    first = results[0]
    assert first.protected_label == "a = p" and first.settings["attributes"] == ["flag"]
    assert first.describe().startswith("flag = True among a = p") and first.pvalue == 0.05
    binned = df.assign(priors=pd.cut(df.priors, [-1, 3, 7, 11]).astype(str))
    data = AuditData(binned, "a", "y", decision="d", covariates=["priors", "flag"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left out
        assert scan_audit_data(data, n_resamples=0)[0].settings["attributes"] == [
            "priors",
            "flag",
        ]


def test_report_scans_name_the_classes_without_an_fpr(tmp_path, capsys):
    """A protected class without rows of outcome 0 (or whose complement has none) has no
    FPR to scan: the scan failed and took the whole report (CLI) with it.  It is skipped
    and named, in a warning (on the command line, a line on stderr) and in the report's
    scan section; the other classes run."""
    from bayesfair.cli import main
    from bayesfair.report import scan_audit_data

    rng = np.random.default_rng(0)
    n = 800
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "race": rng.choice(["a", "b", "c"], n)})
    df["y"] = np.where(df["sex"] == "F", 1, rng.integers(0, 2, n))
    df["d"] = rng.integers(0, 2, n)
    data = AuditData(df, ["sex", "race"], "y", decision="d")
    named = r"2 protected class\(es\) not scanned: sex = F \(no row in the protected class has "
    named += r"y == 0\); sex = M \(no row outside the protected class has y == 0\)"
    with pytest.warns(UserWarning, match=named):
        results = scan_audit_data(data, n_resamples=0, n_restarts=2)
    assert [r.protected_label for r in results] == ["race = a", "race = b", "race = c"]
    csv, out = tmp_path / "d.csv", tmp_path / "r.html"
    df.to_csv(csv, index=False)
    args = ["audit", str(csv), "--protected", "sex", "race", "--outcome", "y"]
    assert main([*args, "--decision", "d", "--n-resamples", "9", "--out", str(out)]) == 0
    assert re.search("^bayesfair: warning: " + named, capsys.readouterr().err, re.M)
    assert "sex = F (no row in the protected class has y == 0)" in out.read_text()
    # a decision that never errs on y == 0 (d == y): no expectation to estimate, no scan
    exact = AuditData(df.assign(d=df["y"]), ["sex", "race"], "y", decision="d")
    # a reason is said once for all the classes it stops
    every = r"; race = a, race = b, race = c \(every row outside the protected class with y == 0 "
    every += r"has d == 0, so the"
    with pytest.warns(UserWarning, match=every + r" expected d \(I-hat\) cannot be learned\)"):
        assert scan_audit_data(exact, n_resamples=0, n_restarts=2) == []
    from bayesfair.report import Report, add_scan_section

    texts = [b.text for b in add_scan_section(Report("t"), [], notes=["why"]).sections[0].blocks]
    assert texts == ["No scan was run.", "why"]


def test_permuted_data_sets_that_cannot_be_scanned_take_no_part():
    """In a small data set some permutations of the protected labels leave I-hat a single
    class to learn from; the whole scan failed with that ValueError.  Those permutations
    are left out, said in a warning, and the p-value is over the others (still exact: the
    observed labels are uniform among the permutations that can be scanned)."""
    df = pd.DataFrame(
        {
            "g": list("FMMMFFFMFFMF"),
            "c": list("cabbbbbcbbcb"),
            "y": [0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0, 0],
            "d": [1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 0, 0],
        }
    )
    kw = dict(
        protected_class=("g", "M"),
        scan_type="separation_recommendations",
        outcome="y",
        decision="d",
        condition_value=0,
        attributes=["c"],
        search=SubsetSearch(n_restarts=2),
        random_state=0,
    )
    with pytest.warns(UserWarning, match=r"scan of g = M: \d+ of 99 permuted data sets could"):
        res = conditional_bias_scan(df, n_resamples=99, **kw)
    assert 0 < len(res.null_distribution) < 99 and np.isfinite(res.null_distribution).all()
    hits = np.sum(res.null_distribution >= res.score - 1e-9)
    assert res.pvalue == pytest.approx((1 + hits) / (1 + len(res.null_distribution)))
    # the data itself: refused, naming the columns
    with pytest.raises(
        ValueError, match="every row outside the protected class with y == 0 has d == 0"
    ):
        conditional_bias_scan(df.assign(d=0), n_resamples=9, **kw)


@pytest.mark.bayesian
def test_posterior_bias_scan_small():
    ds = _semi(mu_sep=1.5)
    bf = __import__("bayesfair")
    roles = dict(
        protected_class="protected",
        outcome="y",
        decision="p_bin",
        scan_type="separation_recommendations",
        condition_value=0,
    )
    res = bf.posterior_bias_scan(
        ds.frame,
        **roles,
        attributes=list(ds.covariates),
        search=SubsetSearch(n_restarts=5),
        ihat=BayesianIhat(draws=100, tune=200, chains=2, n_draws_scanned=10),
        random_state=0,
    )
    assert len(res.score_draws) == 10 and (res.score_draws > 0).all()
    assert res.inclusion["probability"].between(0, 1).all()
    assert res.subgroup_probability.sum() == pytest.approx(1.0)
    assert "coef" in res.idata.posterior
    assert res.summary().shape[0] == 1
    res.plot()
    with pytest.raises(TypeError, match="`ax` must be 2 matplotlib Axes"):
        res.plot(ax=res.plot()[0])
    # without `attributes`: every categorical column but the roles and the protected
    # column, as conditional_bias_scan (it used to refuse); race is dropped here so that
    # the default is the covariates
    kw = dict(
        roles,
        search=SubsetSearch(n_restarts=3),
        ihat=BayesianIhat(draws=50, tune=50, chains=2, n_draws_scanned=5),
        random_state=1,
    )
    frame = ds.frame.drop(columns="race")
    named = bf.posterior_bias_scan(frame, attributes=list(ds.covariates), **kw)
    default = bf.posterior_bias_scan(frame, **kw)
    assert list(default.inclusion["attribute"].unique()) == list(ds.covariates)
    np.testing.assert_array_equal(default.score_draws, named.score_draws)


@pytest.mark.bayesian
def test_posterior_ihat_closed_form_density_equals_pymc(pymc_reference):
    """The weighted I-hat regression's closed-form density (the sampler's) against PyMC's
    model of it, at random points: equal up to a constant, gradients equal."""
    from bayesfair.scan.bayes import _ihat_layout, _ihat_model

    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 3))
    W1, W0 = rng.uniform(0, 3, 40), rng.uniform(0, 3, 40)
    model = _ihat_model(X, W1, W0, ["a", "b", "c"], 2.5)
    lay = _ihat_layout(X, W1, W0, 2.5)
    evaluate = pymc_reference(model)
    offsets = []
    for _ in range(4):
        x = rng.normal(0, 1, lay.ndim)
        point = {"intercept": x[0], "coef": x[1:]}
        ours, grad = lay.logp(x)
        theirs, their_grad, _ = evaluate(point)
        offsets.append(ours - theirs)
        np.testing.assert_allclose(grad, their_grad, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(offsets, offsets[0], atol=1e-8)


@pytest.mark.bayesian
def test_posterior_ihat_separates_the_directions_no_pattern_sees(pymc_reference):
    """With one indicator per value beside the intercept (the scan's I-hat features) some
    directions are seen by no pattern: the sampler's layout rotates them into coordinates
    of their own.  At rotated points its density equals PyMC's model up to the same
    constant, the gradient is the rotated one, and the written intercept and coefficients
    are PyMC's values."""
    from bayesfair._nutpie import lr_expand
    from bayesfair.models._fastlogp import unidentified_rotation
    from bayesfair.scan.bayes import _ihat_layout, _ihat_model

    rng = np.random.default_rng(5)
    codes = np.column_stack([rng.integers(0, 3, 30), rng.integers(0, 2, 30)])
    X = np.hstack([np.eye(3)[codes[:, 0]], np.eye(2)[codes[:, 1]]])
    W1, W0 = rng.uniform(0, 3, 30), rng.uniform(0, 3, 30)
    names = ["a=0", "a=1", "a=2", "b=0", "b=1"]
    model = _ihat_model(X, W1, W0, names, 2.5)
    lay = _ihat_layout(X, W1, W0, 2.5)
    rot = unidentified_rotation(np.hstack([np.ones((30, 1)), X]))
    assert rot is not None and rot.shape == (6, 6)  # two unseen directions, one per attribute
    evaluate = pymc_reference(model)
    offsets = []
    for _ in range(4):
        f = rng.normal(0, 1, 6)
        point = {"intercept": f[0], "coef": f[1:]}
        ours, grad = lay.logp(rot.T @ f)
        theirs, their_grad, _ = evaluate(point)
        offsets.append(ours - theirs)
        np.testing.assert_allclose(grad, rot.T @ their_grad, rtol=1e-9, atol=1e-10)
        out = np.empty(lay.n_expanded)
        lr_expand(rot.T @ f, lay.buffer, out)
        np.testing.assert_allclose(out, f, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(offsets, offsets[0], atol=1e-8)
