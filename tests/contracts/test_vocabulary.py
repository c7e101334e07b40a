"""One vocabulary across the package: every public signature uses the same names, with the
same defaults, for the interval level, resample counts, seed, Dirichlet pseudo-count and
the columns' roles; old names fail in one line that names the new one (docs: Concepts)."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pandas as pd
import pytest

import bayesfair as bf
from bayesfair._vocabulary import (
    LEVEL,
    N_REPLICATES,
    N_RESAMPLES,
    N_VARIANCE_RESAMPLES,
    PSEUDO_COUNT,
)

MODULES = [
    "bayesfair",
    "bayesfair.metrics",
    "bayesfair.models",
    "bayesfair.frequentist",
    "bayesfair.scan",
    "bayesfair.disaggregated",
    "bayesfair.report",
    "bayesfair.datasets",
]
METHODS = ("__init__", "fit", "summary", "plot", "predictive_check", "counts", "probabilities")

#: names that are gone, each with the name that replaced it
RETIRED = {
    "prob": "level",
    "levels": "level / categories",
    "confidence": "level",
    "n_permutations": "n_resamples",
    "n_bootstrap": "n_resamples",
    "n_bootstrap_variance": "n_variance_resamples",
    "random_seed": "random_state",
    "alpha": "pseudo_count",
    "target": "role",
    "sensitive_features": "protected",
    "y_true": "outcome",
    "y_pred": "decision",
    "y_score": "score",
    "axes": "ax",
}
#: the fairlearn-style constructor keeps fairlearn's names on purpose (its whole point),
#: the learning curves scikit-learn's ``X, y``, and the power calculations' ``alpha`` is
#: the significance level (the only meaning ``alpha`` has left in the package)
ALLOWED = {
    ("AuditData.from_arrays", "y_true"),
    ("AuditData.from_arrays", "y_pred"),
    ("AuditData.from_arrays", "y_score"),
    ("AuditData.from_arrays", "sensitive_features"),
}
#: arguments that name a column's role: no public function may give one of these names
#: another meaning (subset_scan's score function was ``score="bernoulli"``); only
#: ``AuditData.from_counts`` has defaults for them, the column names of a count table as
#: ``aggregate_counts`` writes it
COLUMN_ROLES = ("protected", "outcome", "decision", "score")
DEFAULTS = {
    "level": LEVEL,
    "n_resamples": N_RESAMPLES,
    "n_variance_resamples": N_VARIANCE_RESAMPLES,
    "n_replicates": N_REPLICATES,
    "pseudo_count": PSEUDO_COUNT,
    "random_state": None,
}


def _public_callables() -> dict[str, object]:
    found = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if inspect.isclass(obj):
                for meth in METHODS:
                    if meth in vars(obj) or (meth == "__init__" and hasattr(obj, "fit")):
                        found[f"{obj.__name__}.{meth}"] = getattr(obj, meth)
                for meth in ("from_arrays", "from_counts"):
                    if meth in vars(obj):
                        found[f"{obj.__name__}.{meth}"] = getattr(obj, meth)
            elif callable(obj) and not isinstance(obj, type):
                found[f"{name}.{attr}"] = obj
    return found


CALLABLES = _public_callables()


def test_the_catalogue_covers_the_entry_points():
    assert len(CALLABLES) > 60
    for name in ("bayesfair.audit", "bayesfair.disaggregated_evaluation", "AuditData.__init__"):
        assert name in CALLABLES


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_no_retired_name_and_one_default_per_name(name):
    try:
        params = inspect.signature(CALLABLES[name]).parameters
    except (TypeError, ValueError):
        pytest.skip("no signature")
    short = name.removeprefix("bayesfair.").split(".")[-2:]
    key = ".".join(short) if name.count(".") > 1 or "." in name else name
    for p in params.values():
        if p.name in RETIRED and (key, p.name) not in ALLOWED:
            if p.name == "alpha" and "power" in (CALLABLES[name].__doc__ or "").lower():
                continue  # a significance level, the one meaning alpha keeps
            pytest.fail(f"{name} takes `{p.name}`: the vocabulary calls it {RETIRED[p.name]}")
        if p.name in COLUMN_ROLES and key != "AuditData.from_counts":
            assert p.default in (None, inspect.Parameter.empty), (
                f"{name}: `{p.name}={p.default!r}`; `{p.name}=` names a column everywhere"
            )
        if p.name in DEFAULTS and p.default is not inspect.Parameter.empty:
            assert p.default == DEFAULTS[p.name], (
                f"{name}: {p.name}={p.default!r}, the package's default is {DEFAULTS[p.name]!r}"
            )


@pytest.fixture(scope="module")
def data():
    from bayesfair.datasets import make_gaussian_threshold

    return make_gaussian_threshold(n_rows=1500, random_state=0).audit_data()


def _lower(name: str):
    """The lower-level functions and the reproduction harnesses, renamed alike."""
    from bayesfair.disaggregated import GroupedData
    from bayesfair.disaggregated.hierarchical import fit_hierarchical
    from bayesfair.disaggregated.structured import structured_regression
    from bayesfair.replication import boxer, foulds, herlihy

    return {
        "GroupedData.from_frame": GroupedData.from_frame,
        "structured_regression": structured_regression,
        "fit_hierarchical": fit_hierarchical,
        "simulate": herlihy.simulate,
        "null_level_study": boxer.null_level_study,
        "calibration_study": foulds.calibration_study,
    }[name]


@pytest.mark.parametrize(
    ("call", "old", "new"),
    [
        (lambda d, kw: bf.empirical_fairness(d, **kw), "alpha", "pseudo_count"),
        (lambda d, kw: bf.empirical_fairness(d, **kw), "target", "role"),
        (lambda d, kw: bf.fairness_confidence_interval(d, **kw), "target", "role"),
        (lambda d, kw: bf.run_audit(d, **kw), "alpha", "pseudo_count"),
        (lambda d, kw: bf.audit(d, **kw), "alpha", "pseudo_count"),
        (lambda d, kw: bf.DirichletMultinomial(**kw), "alpha", "pseudo_count"),
        (lambda d, kw: bf.DirichletMultinomial(**kw), "random_seed", "random_state"),
        (lambda d, kw: bf.LogisticRegression(**kw), "random_seed", "random_state"),
        (lambda d, kw: bf.DirichletMultinomial().fit(d, **kw), "target", "role"),
        (lambda d, kw: bf.posterior_fairness(None, **kw), "prob", "level"),
        (lambda d, kw: bf.disaggregated_evaluation(d, **kw), "levels", "level"),
        (lambda d, kw: bf.disaggregated_evaluation(d, **kw), "sensitive_features", "protected"),
        (lambda d, kw: bf.disaggregated_evaluation(d, **kw), "y_true", "outcome"),
        (lambda d, kw: bf.conditional_bias_scan(d, **kw), "protected", "protected_class"),
        (lambda d, kw: bf.conditional_bias_scan(d, **kw), "n_permutations", "n_resamples"),
        (lambda d, kw: bf.posterior_bias_scan(d, **kw), "protected", "protected_class"),
        (
            lambda d, kw: bf.metric_permutation_test([1, 2], [0, 1], **kw),
            "n_bootstrap",
            "n_variance_resamples",
        ),
        (lambda d, kw: bf.AuditData(d.frame, ["race"], "y", **kw), "levels", "categories"),
        (lambda d, kw: d.counts(**kw), "target", "role"),
        (lambda d, kw: d.probabilities(**kw), "alpha", "pseudo_count"),
        (lambda d, kw: _lower("GroupedData.from_frame")(d.frame, **kw), "y_true", "outcome"),
        (lambda d, kw: _lower("structured_regression")(None, **kw), "levels", "level"),
        (lambda d, kw: _lower("fit_hierarchical")(None, [], **kw), "random_seed", "random_state"),
        (lambda d, kw: _lower("simulate")(**kw), "sensitive_features", "protected"),
        (lambda d, kw: _lower("null_level_study")(1, **kw), "n_permutations", "n_resamples"),
        (lambda d, kw: _lower("calibration_study")({}, **kw), "prob", "level"),
    ],
)
def test_an_old_name_fails_in_one_line_naming_the_new_one(data, call, old, new):
    with pytest.raises(TypeError, match=rf"`{old}=`, which is now called `{new}=`"):
        call(data, {old: 1})


@pytest.mark.bayesian
def test_one_default_level_in_every_table(data):
    """Interval ends are ``lower``/``upper`` beside a ``level`` column, at 0.9 by default."""
    from bayesfair.models import DirichletMultinomial

    fit = DirichletMultinomial(draws=100, chains=1, random_state=0).fit(data)
    tables = {
        "model summary": fit.summary(),
        "predictive check": fit.predictive_check(),
        "posterior fairness": bf.posterior_fairness(fit, random_state=0).summary(),
        "confidence interval": bf.fairness_confidence_interval(data).summary(),
        "audit": bf.run_audit(data).fairness_table().dropna(subset=["level"]),
        "per group": bf.disaggregated_evaluation(
            data, metrics=["fpr"], estimators=["standard"], n_variance_resamples=20
        ).table,
    }
    for what, table in tables.items():
        assert {"lower", "upper", "level"} <= set(table.columns), what
        assert (table["level"] == LEVEL).all(), what
        assert not [c for c in table.columns if str(c).endswith(("_low", "_high"))], what


def test_the_statistic_is_on_the_scale_of_its_null(data):
    """scipy's convention: the statistic is what the null distribution is compared with."""
    res = bf.permutation_test(data, "fpr", by="sex", n_resamples=199, random_state=0)
    assert res.statistic == res.studentized_statistic != res.difference
    extreme = np.abs(res.null_distribution) >= abs(res.statistic) - 1e-12
    assert res.pvalue == pytest.approx((1 + extreme.sum()) / (1 + len(res.null_distribution)))
    raw = bf.permutation_test(data, "fpr", by="sex", n_resamples=199, studentize=False)
    assert raw.statistic == raw.difference


def test_an_audit_without_a_seed_records_the_one_it_drew(data):
    a = bf.audit(data, n_resamples=9)  # the seed's round trip, not the statistics
    assert isinstance(a.random_state, int)
    again = bf.audit(data, n_resamples=9, random_state=a.random_state)
    pd.testing.assert_frame_equal(a.tests, again.tests)
    (settings,) = [s for s in a.report().sections if s.title == "Settings"]
    assert f"random_state={a.random_state}" in settings.to_html()


def test_one_encoder_orders_groups_alike(data):
    """Integer values 1, 2, 10 sort as numbers in the audit and in the per-group estimates."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice([1, 2, 10], 600), "y": rng.integers(0, 2, 600)})
    df["d"] = rng.integers(0, 2, 600)
    audit_data = bf.AuditData(df, ["g"], "y", decision="d")
    per_group = bf.disaggregated_evaluation(
        df, protected=["g"], outcome="y", decision="d", metrics=["fpr"], estimators=["standard"]
    )
    assert audit_data.group_labels == ["1", "2", "10"]
    assert list(pd.unique(per_group.table["group"])) == audit_data.group_labels
