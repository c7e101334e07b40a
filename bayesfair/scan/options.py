"""The options of the Conditional Bias Scan, grouped in the objects they configure.

:func:`~bayesfair.scan.conditional_bias_scan` and :func:`~bayesfair.scan.posterior_bias_scan`
ask the same question (a protected class, a scan type, its columns) and search the same
way; they differ in how the expectations I-hat are estimated.  So the search is one
object both take (``search=SubsetSearch(...)``) and each takes its own I-hat model
(``ihat=WeightedIhat(...)`` or ``ihat=BayesianIhat(...)``), as scikit-learn's estimators
carry their own options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._validation import as_column_list, check_count, check_instance, check_real
from .engine import check_ordinal, check_scan_options

__all__ = ["BayesianIhat", "SubsetSearch", "WeightedIhat"]


@dataclass(frozen=True)
class SubsetSearch:
    """How the scan searches for the most biased subgroup.

    The penalised score ``F(S) - penalty * (number of attribute values restricting S)``
    is maximised by coordinate ascent over the attributes (each step exact, by the linear
    time subset scanning property), from ``n_restarts`` random starts; the best is kept.

    Parameters
    ----------
    penalty : float, default 1
        Per included attribute value (Boxer et al. use 1).
    n_restarts : int, optional
        Random starts of the coordinate ascent; default 50 for
        :func:`~bayesfair.scan.conditional_bias_scan` and 20 for
        :func:`~bayesfair.scan.posterior_bias_scan` (which scans every posterior draw).
    sigma : float or "estimate", default 1
        Gaussian score's standard deviation of Delta = logit(I) - logit(I-hat) (the
        paper leaves it unstated and 1 reproduces its Table 4 score for Black
        defendants, 42.2 against 41.9; "estimate": the sample standard deviation).
    ordinal : list of str, "auto" or None
        Scan attributes restricted to contiguous ranges of values (see
        :func:`~bayesfair.scan.subset_scan`).

    Examples
    --------
    >>> from bayesfair.scan import SubsetSearch
    >>> SubsetSearch(n_restarts=10, ordinal=["priors"])
    SubsetSearch(penalty=1.0, n_restarts=10, sigma=1.0, ordinal=['priors'])
    """

    penalty: float = 1.0
    n_restarts: int | None = None
    sigma: float | str = 1.0
    ordinal: Sequence[str] | str | None = None

    def __post_init__(self) -> None:
        check_scan_options(
            self.penalty, 1 if self.n_restarts is None else self.n_restarts, self.sigma
        )
        check_ordinal(self.ordinal)

    def restarts(self, default: int) -> int:
        """The number of restarts: ``n_restarts``, or the calling scan's ``default``.

        Parameters
        ----------
        default : int
            The calling scan's default, used when ``n_restarts`` is not set.

        Returns
        -------
        int
        """
        return default if self.n_restarts is None else self.n_restarts


@dataclass(frozen=True)
class WeightedIhat:
    """I-hat by propensity-odds weighting (Boxer et al., Appendix A.1).

    A propensity model of membership in the protected class is fitted on all rows; the
    non-protected rows, weighted by their propensity odds ``p / (1 - p)``, fit the model
    of the event given the condition and the attributes, whose predictions for the
    protected rows are I-hat.

    Parameters
    ----------
    attributes : list of str, optional
        Attributes both models condition on; default the scan attributes.
    propensity_model, ihat_model : scikit-learn classifiers, optional
        Any classifier with ``predict_proba`` whose ``fit`` accepts ``sample_weight``;
        default an L2 logistic regression (C = 1) fitted on the distinct rows.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from bayesfair.scan import WeightedIhat
    >>> ihat = WeightedIhat(ihat_model=RandomForestClassifier(min_samples_leaf=20))
    """

    attributes: Sequence[str] | None = None
    propensity_model: Any = None
    ihat_model: Any = None

    def __post_init__(self) -> None:
        check_attribute_list(self.attributes, "attributes")
        for name in ("propensity_model", "ihat_model"):
            model = getattr(self, name)
            if model is not None and not (
                hasattr(model, "fit") and hasattr(model, "predict_proba")
            ):
                raise TypeError(
                    f"`{name}` must be a scikit-learn classifier with fit and predict_proba, "
                    f"got {type(model).__name__}"
                )


@dataclass(frozen=True)
class BayesianIhat:
    """I-hat from the posterior of a Bayesian logistic regression (fitted by NUTS).

    The weighted model of :class:`WeightedIhat` becomes a PyMC logistic regression with
    Normal(0, ``prior_scale``) priors on its intercept and coefficients; the propensity
    weights (a point estimate) enter as a power likelihood normalised to Kish's effective
    sample size (see :mod:`bayesfair.scan.bayes`).

    Parameters
    ----------
    attributes : list of str, optional
        Attributes of the propensity and I-hat models; default the scan attributes.
    prior_scale : float, default 2.5
        Scale of the Normal priors.
    draws, tune, chains : int, default 500, 500, 2
        NUTS settings (nutpie when installed).
    n_draws_scanned : int, default 200
        Posterior draws of I-hat scanned (each one full scan).

    Examples
    --------
    >>> from bayesfair.scan import BayesianIhat
    >>> BayesianIhat(draws=200, n_draws_scanned=20).chains
    2
    """

    attributes: Sequence[str] | None = None
    prior_scale: float = 2.5
    draws: int = 500
    tune: int = 500
    chains: int = 2
    n_draws_scanned: int = 200

    def __post_init__(self) -> None:
        check_attribute_list(self.attributes, "attributes")
        for name in ("n_draws_scanned", "draws", "chains", "tune"):
            check_count(getattr(self, name), name)  # nutpie panics without tuning
        check_real(self.prior_scale, "prior_scale", "positive")


def check_attribute_list(value: Any, name: str) -> None:
    """Refuse a ``value`` of option ``name`` that is not None or a list of column names
    (a single name too: the scans would read its letters as names)."""
    if isinstance(value, str) or not (value is None or isinstance(value, Sequence)):
        raise TypeError(
            f"`{name}` must be None or a list of column names, got {type(value).__name__} {value!r}"
        )
    as_column_list(value, name)


def check_option(value: Any, kind: type, argument: str) -> Any:
    """``value`` if it is a ``kind`` (``None``: the default ``kind()``), else a TypeError
    that names the argument and the class it takes."""
    value = kind() if value is None else value
    check_instance(value, kind, argument, f"a {kind.__name__}(...) (bayesfair.scan)")
    return value


#: Options of the two scans that moved into their objects, for the refusal of the old names.
MOVED_SEARCH = {
    "penalty": "search=SubsetSearch(penalty=...)",
    "n_restarts": "search=SubsetSearch(n_restarts=...)",
    "sigma": "search=SubsetSearch(sigma=...)",
    "ordinal": "search=SubsetSearch(ordinal=...)",
}
MOVED_WEIGHTED = {
    "ihat_attributes": "WeightedIhat(attributes=...)",
    "propensity_model": "WeightedIhat(propensity_model=...)",
    "ihat_model": "WeightedIhat(ihat_model=...)",
}
MOVED_BAYESIAN = {
    "ihat_attributes": "BayesianIhat(attributes=...)",
    "prior_scale": "BayesianIhat(prior_scale=...)",
    "draws": "BayesianIhat(draws=...)",
    "tune": "BayesianIhat(tune=...)",
    "chains": "BayesianIhat(chains=...)",
    "n_draws_scanned": "BayesianIhat(n_draws_scanned=...)",
}
#: What each scan refuses, with where it went.
MOVED_FROM_CBS = {**MOVED_SEARCH, **{k: "ihat=" + v for k, v in MOVED_WEIGHTED.items()}}
MOVED_FROM_POSTERIOR = {**MOVED_SEARCH, **{k: "ihat=" + v for k, v in MOVED_BAYESIAN.items()}}
