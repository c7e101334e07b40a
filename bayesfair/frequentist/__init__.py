"""Frequentist companions: studentized permutation tests, discrimination tests and
confidence intervals of epsilon-DF and gamma-SF."""

from .auc import auc_permutation_test
from .correlation import correlation_permutation_test
from .discrimination import DiscriminationTestResult, discrimination_test
from .fairness_bounds import FairnessConfidenceInterval, fairness_confidence_interval
from .generic import metric_permutation_test
from .learning import (
    DiscriminationComparison,
    LearningCurveResult,
    bias_variance_decomposition,
    compare_discrimination,
    group_learning_curves,
)
from .permutation import (
    IntersectionalPermutationResult,
    PermutationTestResult,
    intersectional_permutation_test,
    permutation_test,
    permutation_test_counts,
)
from .power import minimum_detectable_difference, required_sample_size

__all__ = [
    "DiscriminationComparison",
    "DiscriminationTestResult",
    "FairnessConfidenceInterval",
    "IntersectionalPermutationResult",
    "LearningCurveResult",
    "PermutationTestResult",
    "auc_permutation_test",
    "bias_variance_decomposition",
    "compare_discrimination",
    "correlation_permutation_test",
    "discrimination_test",
    "fairness_confidence_interval",
    "group_learning_curves",
    "intersectional_permutation_test",
    "metric_permutation_test",
    "minimum_detectable_difference",
    "permutation_test",
    "permutation_test_counts",
    "required_sample_size",
]
