"""Subset scanning: the fast subset scan engine and the Conditional Bias Scan."""

from .bayes import PosteriorScanResult, posterior_bias_scan
from .cbs import SCAN_TYPES, CBSResult, conditional_bias_scan
from .engine import ScanResult, describe_subgroup, subgroup_mask, subset_scan
from .ihat import expected_events
from .options import BayesianIhat, SubsetSearch, WeightedIhat

__all__ = [
    "SCAN_TYPES",
    "BayesianIhat",
    "CBSResult",
    "PosteriorScanResult",
    "ScanResult",
    "SubsetSearch",
    "WeightedIhat",
    "conditional_bias_scan",
    "describe_subgroup",
    "expected_events",
    "posterior_bias_scan",
    "subgroup_mask",
    "subset_scan",
]
