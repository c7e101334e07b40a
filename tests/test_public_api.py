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
