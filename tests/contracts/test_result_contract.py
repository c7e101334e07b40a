"""One result contract, checked over every public result type (as scikit-learn's
check_estimator checks estimators): summary() is a DataFrame, to_frame() a tidy DataFrame, a
notebook shows the summary as a table, and a summary of a sampled fit carries its sampler
diagnostics, so that a poor fit says so."""

from __future__ import annotations

import importlib
import inspect
import warnings
from html import escape

import numpy as np
import pandas as pd
import pytest

import bayesfair as bf
from bayesfair._result import ResultMixin
from bayesfair.datasets import make_gaussian_threshold
from bayesfair.scan import BayesianIhat, SubsetSearch

PUBLIC = [
    "bayesfair",
    "bayesfair.metrics",
    "bayesfair.models",
    "bayesfair.frequentist",
    "bayesfair.scan",
    "bayesfair.disaggregated",
]


def _result_types() -> set[type]:
    found = set()
    for name in PUBLIC:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if inspect.isclass(obj) and hasattr(obj, "summary") and not hasattr(obj, "fit"):
                found.add(obj)
    return found


@pytest.fixture(scope="module")
def data():
    return make_gaussian_threshold(n_rows=3000, random_state=0).audit_data()


@pytest.fixture(scope="module")
def results(data) -> dict[str, object]:
    """One instance of every public result type, built on small data without NUTS."""
    from sklearn.linear_model import LinearRegression

    from bayesfair.models import DirichletMultinomial, posterior_fairness

    rng = np.random.default_rng(0)
    x = rng.random((400, 2))
    group = rng.choice(["a", "b"], 400)
    y = x @ [1.0, 2.0] + rng.normal(0, 0.1 + 0.2 * (group == "b"), 400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dm = DirichletMultinomial(draws=200, chains=2, random_state=0).fit(data)
        cbs = bf.conditional_bias_scan(
            data,
            protected_class=("race", data.categories["race"][0]),
            scan_type="separation_recommendations",
            condition_value=0,
            attributes=["sex", "nationality"],
            search=SubsetSearch(n_restarts=5),
            n_resamples=19,
            random_state=0,
        )
        out = {
            "AuditResult": bf.run_audit(data),
            "FullAuditResult": bf.audit(data, n_resamples=9),
            "FairnessEstimate": bf.empirical_fairness(data, pseudo_count=0),
            "FairnessConfidenceInterval": bf.fairness_confidence_interval(data),
            "IntervalCalibration": bf.interval_calibration(
                data, n_replicates=20, draws=50, random_state=0
            ),
            "PermutationTestResult": bf.permutation_test(data, "fpr", by="sex", n_resamples=99),
            "IntersectionalPermutationResult": bf.intersectional_permutation_test(
                data, "fpr", n_resamples=99
            ),
            "DiscriminationTestResult": bf.discrimination_test((y - y.mean()) ** 2, group),
            "DiscriminationComparison": bf.compare_discrimination(
                (y - y.mean()) ** 2, (y - np.median(y)) ** 2, group
            ),
            "LearningCurveResult": bf.group_learning_curves(
                LinearRegression(), x, y, group, sizes=[50, 100], n_repeats=3, random_state=0
            ),
            "CBSResult": cbs,
            "ScanResult": cbs.scan,
            "PosteriorFairness": posterior_fairness(dm, random_state=0),
            "DisaggregatedResult": bf.disaggregated_evaluation(
                data, metrics=["fpr"], estimators=["standard", "james_stein"]
            ),
        }
    return out


def test_every_public_result_type_is_in_the_check(results):
    """A new result type must be added to the fixture above (and so to the contract)."""
    names = {t.__name__ for t in _result_types()} - {"PosteriorScanResult"}  # NUTS: slow, below
    assert names <= set(results), sorted(names - set(results))
    assert all(issubclass(t, ResultMixin) for t in _result_types())


RESULT_NAMES = [
    "AuditResult",
    "FullAuditResult",
    "FairnessEstimate",
    "FairnessConfidenceInterval",
    "IntervalCalibration",
    "PermutationTestResult",
    "IntersectionalPermutationResult",
    "DiscriminationTestResult",
    "DiscriminationComparison",
    "LearningCurveResult",
    "CBSResult",
    "ScanResult",
    "PosteriorFairness",
    "DisaggregatedResult",
]
#: the cases whose result reads its draws through ArviZ (make test-next runs them too)
RESULT_CASES = [
    pytest.param(n, marks=pytest.mark.bayesian) if n == "PosteriorFairness" else n
    for n in RESULT_NAMES
]


@pytest.mark.parametrize("name", RESULT_CASES)
def test_the_result_contract(results, name):
    res = results[name]
    summary = res.summary()
    assert isinstance(summary, pd.DataFrame) and len(summary) > 0
    tidy = res.to_frame()
    assert isinstance(tidy, pd.DataFrame) and len(tidy) > 0
    html = res._repr_html_()
    assert "<table" in html and name in html
    assert name in repr(res) or type(res).__name__ in repr(res)
    for note in getattr(res, "notes", None) or []:  # what its numbers do not hold, shown
        assert escape(str(note)) in html


def test_a_test_answers_first(results):
    """A result with a p-value (a test) gives it in its summary, whose first row is the
    test's answer, and so in its notebook display; the max-T test's summary names the group
    that attains its statistic, and its display keeps the per-group table."""
    tests = [n for n in RESULT_NAMES if isinstance(getattr(results[n], "pvalue", None), float)]
    assert "IntersectionalPermutationResult" in tests and len(tests) >= 5, tests
    for name in tests:
        assert results[name].summary()["pvalue"].iloc[0] == results[name].pvalue, name
    res = results["IntersectionalPermutationResult"]
    s = res.summary().iloc[0]
    g = res.groups.set_index("group")
    assert s["statistic"] == res.statistic == abs(g.loc[s["largest_gap"], "z_vs_rest"])
    assert s["groups_tested"] == g["z_vs_rest"].notna().sum()
    assert s["pvalue_lower"] <= res.pvalue <= s["pvalue_upper"]
    assert res._repr_html_().count("<table") == 2


def test_the_diagnostics_warning_shows_r_hat_to_three_decimals():
    """1.0123 reads '1.012 (above 1.01)', not '1.01 (above 1.01)'; below 1.01 no warning."""
    from bayesfair._result import diagnostics_warning

    assert "R-hat up to 1.012 (above 1.01)" in diagnostics_warning(
        pd.DataFrame({"r_hat_max": [1.0123]})
    )
    assert diagnostics_warning(pd.DataFrame({"r_hat_max": [1.005]})) is None


@pytest.mark.bayesian
def test_a_poor_fit_says_so_in_its_summary(data):
    """Too few draws: the summary carries R-hat and ESS, and the notebook display warns."""
    from bayesfair.models import LogisticRegression, posterior_fairness

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = LogisticRegression(draws=10, tune=10, chains=2, random_state=0).fit(data)
    pf = posterior_fairness(fit, random_state=0)
    s = pf.summary()
    assert {"r_hat_max", "ess_bulk_min", "divergences"} <= set(s.columns)
    assert s["ess_bulk_min"].iloc[0] == pytest.approx(fit.diagnostics_["ess_bulk_min"])
    assert s["ess_bulk_min"].iloc[0] < 400
    assert "sampler diagnostics:" in pf._repr_html_()


@pytest.mark.bayesian
def test_exact_draws_carry_no_diagnostics(results):
    s = results["PosteriorFairness"].summary()  # Dirichlet-multinomial: exact draws
    assert (
        "r_hat_max" not in s
        and "sampler diagnostics" not in results["PosteriorFairness"]._repr_html_()
    )


def test_a_pvalue_not_computed_is_said_so(data):
    """A scan without permutations has no p-value: NaN in its summary, with the way to get one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bf.conditional_bias_scan(
            data,
            protected_class=("race", data.categories["race"][0]),
            scan_type="separation_recommendations",
            condition_value=0,
            attributes=["sex", "nationality"],
            search=SubsetSearch(n_restarts=3),
            n_resamples=0,
            random_state=0,
        )
    row = res.summary().iloc[0]
    assert res.pvalue is None and np.isnan(row["pvalue"])
    assert "pass n_resamples" in row["pvalue_note"]


@pytest.mark.parametrize("name", RESULT_CASES)
def test_plot_takes_an_ax_and_returns_what_it_drew_into(results, name):
    """One convention: ``plot(ax=None)`` returns the Axes it drew into (an array of them
    for several panels), and draws into the caller's own when given."""
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    res = results[name]
    try:
        made = res.plot()
        panels = [made] if isinstance(made, Axes) else list(np.ravel(made))
        assert panels and all(isinstance(a, Axes) for a in panels)
        _, own = plt.subplots(1, len(panels), squeeze=False)
        given = own[0, 0] if len(panels) == 1 else own[0]
        back = res.plot(ax=given)
        assert back is given if len(panels) == 1 else list(back) == list(given)
        assert all(a.has_data() or a.patches for a in (own[0]))
    finally:
        plt.close("all")


@pytest.mark.parametrize("name", RESULT_CASES)
def test_interval_ends_are_lower_and_upper_beside_a_level(results, name):
    res = results[name]
    for table in (res.summary(), res.to_frame()):
        cols = [str(c) for c in table.columns]
        assert not [c for c in cols if c.endswith(("_low", "_high")) or c.startswith("hdi_")]
        if "lower" in cols:
            assert {"upper", "level"} <= set(cols), (name, cols)


@pytest.mark.slow
def test_the_posterior_scan_result_honours_the_contract(data):
    """PosteriorScanResult samples with NUTS, so it is checked in the slow suite."""
    import matplotlib.pyplot as plt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bf.posterior_bias_scan(
            data,
            protected_class=("race", data.categories["race"][0]),
            scan_type="separation_recommendations",
            condition_value=0,
            attributes=["sex", "nationality"],
            search=SubsetSearch(n_restarts=3),
            ihat=BayesianIhat(draws=100, tune=100, n_draws_scanned=20),
            random_state=0,
        )
    assert isinstance(res.summary(), pd.DataFrame) and len(res.summary())
    assert isinstance(res.to_frame(), pd.DataFrame) and "<table" in res._repr_html_()
    axes = res.plot()
    assert len(axes) == 2
    plt.close("all")
