"""bayesfair: audit predictive models for intersectional bias with honest uncertainty.

Data in (:class:`AuditData`), group aggregation (its per-intersection table),
fairness metrics (:mod:`bayesfair.metrics`), data sets
(:mod:`bayesfair.datasets`) and reports (:mod:`bayesfair.report`).
"""

from . import datasets as datasets  # bf.datasets.load_compas, as the docs write it
from .aggregate import aggregate_counts
from .calibration import IntervalCalibration, interval_calibration
from .data import AuditData
from .disaggregated import disaggregated_evaluation
from .empirical_audit import AuditResult, run_audit
from .frequentist import (
    auc_permutation_test,
    compare_discrimination,
    discrimination_test,
    fairness_confidence_interval,
    group_learning_curves,
    intersectional_permutation_test,
    metric_permutation_test,
    permutation_test,
)
from .full_audit import FullAuditResult, audit
from .metrics import (
    FairnessEstimate,
    bias_amplification,
    df_bias_amplification,
    empirical_fairness,
    epsilon_df,
    epsilon_df_argmax,
    gamma_sf,
    gamma_sf_argmax,
    group_auc,
    group_rates,
    sf_bias_amplification,
)
from .models import (
    DirichletMultinomial,
    HierarchicalCounts,
    HierarchicalLogisticRegression,
    LogisticRegression,
    NaiveBayes,
    NeuralNetwork,
    SamplerWarning,
    model_average,
    posterior_fairness,
)
from .report import Report
from .scan import conditional_bias_scan, posterior_bias_scan, subset_scan

__version__ = "0.1.0.dev0"

__all__ = [
    "AuditData",
    "AuditResult",
    "DirichletMultinomial",
    "FairnessEstimate",
    "FullAuditResult",
    "HierarchicalCounts",
    "HierarchicalLogisticRegression",
    "IntervalCalibration",
    "LogisticRegression",
    "NaiveBayes",
    "NeuralNetwork",
    "Report",
    "SamplerWarning",
    "__version__",
    "aggregate_counts",
    "auc_permutation_test",
    "audit",
    "bias_amplification",
    "compare_discrimination",
    "conditional_bias_scan",
    "df_bias_amplification",
    "disaggregated_evaluation",
    "discrimination_test",
    "empirical_fairness",
    "epsilon_df",
    "epsilon_df_argmax",
    "fairness_confidence_interval",
    "gamma_sf",
    "gamma_sf_argmax",
    "group_auc",
    "group_learning_curves",
    "group_rates",
    "intersectional_permutation_test",
    "interval_calibration",
    "metric_permutation_test",
    "model_average",
    "permutation_test",
    "posterior_bias_scan",
    "posterior_fairness",
    "run_audit",
    "sf_bias_amplification",
    "subset_scan",
]
