"""Bayesian models of P(y | s) fitted on the per-intersection table, and what they estimate.

Every model takes ``method`` ("nuts", "advi" or "map"; conjugate models draw
exactly, HierarchicalCounts by nested Laplace), returns itself from
``fit(data, role=...)``, and then holds an
``arviz.InferenceData`` (``idata_``) and draws of P(y=1|s) (``p_draws_``,
dims chain x draw x intersection).
"""

from .._sampling import SamplerWarning
from ._design import Design, design_from
from .averaging import ModelAverage, model_average
from .base import FairnessModel
from .conjugate import DirichletMultinomial, NaiveBayes
from .evaluation import negative_cross_entropy
from .fairness import PosteriorFairness, posterior_fairness
from .glm import HierarchicalLogisticRegression, LogisticRegression, NeuralNetwork
from .hierarchical_counts import HierarchicalCounts

__all__ = [
    "Design",
    "DirichletMultinomial",
    "FairnessModel",
    "HierarchicalCounts",
    "HierarchicalLogisticRegression",
    "LogisticRegression",
    "ModelAverage",
    "NaiveBayes",
    "NeuralNetwork",
    "PosteriorFairness",
    "SamplerWarning",
    "design_from",
    "model_average",
    "negative_cross_entropy",
    "posterior_fairness",
]
