"""The public API: everything in ``bayesfair.__all__`` exists, and the entry points of
every capability are reachable from the top level."""

import bayesfair as bf


def test_all_names_exist_and_are_documented():
    for name in bf.__all__:
        obj = getattr(bf, name)
        if callable(obj) and name != "__version__":
            assert obj.__doc__, f"{name} has no docstring"


def test_entry_points_of_every_capability_are_top_level():
    for name in (
        "AuditData",
        "run_audit",
        "empirical_fairness",
        "HierarchicalLogisticRegression",
        "posterior_fairness",
        "model_average",
        "disaggregated_evaluation",
        "conditional_bias_scan",
        "posterior_bias_scan",
        "permutation_test",
        "metric_permutation_test",
        "intersectional_permutation_test",
        "discrimination_test",
        "group_learning_curves",
    ):
        assert name in bf.__all__, name
    assert len(set(bf.__all__)) == len(bf.__all__), "duplicate names in __all__"


def test_result_objects_print_short():
    """A result's repr names its statistic and p-value and summarises its arrays and
    tables by shape (as scipy.stats' results do), instead of printing 9,999 null draws."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 300), "y": rng.integers(0, 2, 300)})
    df["d"] = rng.integers(0, 2, 300)
    data = bf.AuditData(df, "g", "y", decision="d")
    res = bf.permutation_test(data, "fnr", n_resamples=999, random_state=0)
    text = repr(res)
    assert len(text) < 500
    assert f"pvalue={res.pvalue:.6g}" in text
    assert "null_distribution=<array shape=(999,)>" in text
    assert "estimates=<DataFrame 2 rows x 4 columns>" in text
    est = bf.empirical_fairness(data)
    assert f"epsilon={est.epsilon:.6g}" in repr(est) and "alpha=0.0" in repr(est)
    audit = bf.run_audit(data)
    assert repr(audit).startswith("AuditResult(data=<AuditData>") and len(repr(audit)) < 500
