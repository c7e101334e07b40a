"""Frequentist companions: studentized permutation tests and discrimination tests."""

from .auc import auc_permutation_test
from .discrimination import DiscriminationTestResult, discrimination_test
from .permutation import (
    IntersectionalPermutationResult,
    PermutationTestResult,
    intersectional_permutation_test,
    minimum_detectable_difference,
    permutation_test,
    permutation_test_counts,
    required_sample_size,
)

__all__ = [
    "DiscriminationTestResult",
    "IntersectionalPermutationResult",
    "PermutationTestResult",
    "auc_permutation_test",
    "discrimination_test",
    "intersectional_permutation_test",
    "minimum_detectable_difference",
    "permutation_test",
    "permutation_test_counts",
    "required_sample_size",
]
