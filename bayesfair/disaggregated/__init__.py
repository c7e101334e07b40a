"""Disaggregated evaluation of small intersectional groups (Herlihy et al.)."""

from .estimators import (
    ESTIMATORS,
    EmpiricalBayes,
    HierarchicalBayes,
    JamesStein,
    Standard,
    StructuredRegression,
    empirical_bayes_caveat,
    hierarchical_bayes_caveat,
    resolve_estimators,
    structured_regression_caveat,
)
from .evaluate import DisaggregatedResult, disaggregated_evaluation
from .groups import GroupedData, pooled_sigma2
from .shrinkage import (
    empirical_bayes,
    james_stein,
    robust_critical_value,
    robust_empirical_bayes,
    standard_intervals,
)
from .structured import goodness_of_fit, group_features, structured_regression

__all__ = [
    "ESTIMATORS",
    "DisaggregatedResult",
    "EmpiricalBayes",
    "GroupedData",
    "HierarchicalBayes",
    "JamesStein",
    "Standard",
    "StructuredRegression",
    "disaggregated_evaluation",
    "empirical_bayes",
    "empirical_bayes_caveat",
    "goodness_of_fit",
    "group_features",
    "hierarchical_bayes_caveat",
    "james_stein",
    "pooled_sigma2",
    "resolve_estimators",
    "robust_critical_value",
    "robust_empirical_bayes",
    "standard_intervals",
    "structured_regression",
    "structured_regression_caveat",
]
