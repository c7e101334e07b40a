"""The per-group estimators of :func:`~bayesfair.disaggregated.disaggregated_evaluation`,
each carrying its own options (as scikit-learn's estimators do), so that the evaluation
takes a list of them instead of prefixed arguments.

``estimators=["standard", "hierarchical"]`` and
``estimators=[Standard(), HierarchicalBayes()]`` are the same; pass an object to change an
option: ``HierarchicalBayes(draws=500, chains=2)``, ``StructuredRegression(ridge="rows")``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._validation import check_count, check_flag, check_open_probability, check_resamples
from .._vocabulary import N_RESAMPLES
from .shrinkage import EB_INTERVALS
from .structured import check_rblpr_options

__all__ = [
    "ESTIMATORS",
    "EmpiricalBayes",
    "HierarchicalBayes",
    "JamesStein",
    "Standard",
    "StructuredRegression",
    "empirical_bayes_caveat",
    "hierarchical_bayes_caveat",
    "resolve_estimators",
    "structured_regression_caveat",
]

#: the estimators' names, in the order of the paper (and of the result's tables)
ESTIMATORS = ("standard", "james_stein", "empirical_bayes", "structured", "hierarchical")
MAIN_EFFECTS = ("auto", "non-centred", "centred")
GROUP_VARIANCES = ("size", "exchangeable")


@dataclass(frozen=True)
class Standard:
    """The group's own estimate, with an interval from the pooled variance (eq. 7).

    Examples
    --------
    >>> from bayesfair.disaggregated import Standard
    >>> Standard().name
    'standard'
    """

    name: ClassVar[str] = "standard"


@dataclass(frozen=True)
class JamesStein:
    """James-Stein shrinkage of the groups' estimates towards their mean (no interval).

    Examples
    --------
    >>> from bayesfair.disaggregated import JamesStein
    >>> JamesStein().name
    'james_stein'
    """

    name: ClassVar[str] = "james_stein"


@dataclass(frozen=True)
class EmpiricalBayes:
    """Empirical Bayes under a normal model of the groups (Appendix B).

    Parameters
    ----------
    interval : {"prasad_rao", "posterior", "robust"}, default "prasad_rao"
        ``"prasad_rao"`` adds to the posterior variance the uncertainty of the estimated
        mean and spread of the groups (Prasad and Rao's mean squared error, as in
        small-area estimation); ``"posterior"`` is the paper's plug-in posterior interval,
        which has zero width wherever the spread is estimated as 0 (see
        :func:`~bayesfair.disaggregated.shrinkage.empirical_bayes`). Neither is calibrated
        group by group: both hold their level only on average over groups drawn from the
        normal model, and a group far from the others' mean is shrunk towards it and
        missed (notebook 07 measures it on Herlihy et al.'s diabetes population).
        ``"robust"`` changes the estimates too: Armstrong, Kolesar and Plagborg-Moller's
        robust empirical Bayes
        (:func:`~bayesfair.disaggregated.robust_empirical_bayes`), whose spread
        counts every group alike and whose intervals hold their level on average over the
        groups whatever the distribution of their true values: conservative, and only a
        little narrower than the standard intervals.

    Examples
    --------
    >>> from bayesfair.disaggregated import EmpiricalBayes
    >>> EmpiricalBayes(interval="posterior").interval
    'posterior'
    """

    interval: str = "prasad_rao"
    name: ClassVar[str] = "empirical_bayes"

    def __post_init__(self) -> None:
        if self.interval not in EB_INTERVALS:
            raise ValueError(
                f"EmpiricalBayes: `interval` must be one of {EB_INTERVALS}, got {self.interval!r}"
            )


def empirical_bayes_caveat(interval: str) -> str:
    """What empirical Bayes' intervals (``EmpiricalBayes(interval=...)``) hold and do not:
    the words the result's notes and the report give wherever its intervals are shown.

    Parameters
    ----------
    interval : {"prasad_rao", "posterior", "robust"}

    Returns
    -------
    str

    Examples
    --------
    >>> from bayesfair.disaggregated import empirical_bayes_caveat
    >>> "group by group" in empirical_bayes_caveat("prasad_rao")
    True
    """
    if interval == "robust":
        return (
            "Empirical Bayes here is the robust one (Armstrong, Kolesar and Plagborg-Moller "
            "2022): the groups' spread is estimated with every group counting alike, and "
            "its intervals hold their level on average over the groups whatever the "
            "distribution of their true values, not only a normal one. They are "
            "conservative, and a group far from the others' mean may still be missed: do "
            "not read them group by group."
        )
    if interval == "posterior":
        text = (
            "Empirical Bayes' intervals are the paper's plug-in posterior intervals: they "
            "treat the estimated mean and spread of the groups as known, and have zero "
            "width where the spread is estimated as 0 (EmpiricalBayes(interval='prasad_rao') "
            "adds the uncertainty of both)."
        )
    else:
        text = (
            "Empirical Bayes' intervals add to its posterior variance the uncertainty of "
            "the estimated mean and spread of the groups (Prasad and Rao's mean squared "
            "error); the paper's plug-in posterior intervals "
            "(EmpiricalBayes(interval='posterior')) treat both as known "
            "and have zero width where the spread is estimated as 0."
        )
    return text + (
        " They are calibrated only on average over groups drawn from its normal model: a "
        "group far from the others' mean is shrunk towards it and its interval misses (on "
        "the diabetes simulation, 95% intervals covered 0.67-0.93 by metric, 0.47 for the "
        "quarter of groups farthest from the median); do not read them group by group."
        " Hierarchical Bayes integrates over both; EmpiricalBayes(interval='robust') "
        "gives intervals that hold on average over the groups whatever their spread."
    )


@dataclass(frozen=True)
class StructuredRegression:
    """Structured regression: a lasso of the groups' estimates on group features, with
    rBLPR intervals (residual bootstrap of the lasso-selected, partially ridged fit).

    Parameters
    ----------
    interval : {"percentile", "basic"}, default "percentile"
        The rBLPR interval: the bootstrap estimates' percentiles (as published), or the
        basic bootstrap interval, which reverses the bootstrap's bias and so misses more
        often where the lasso shrinks what sets small groups apart (see
        :func:`~bayesfair.disaggregated.structured.structured_regression`).
    ridge : {"groups", "rows"} or float, default "groups"
        The partial ridge of rBLPR: ``"groups"`` gives tighter intervals, ``"rows"``
        intervals close to the standard width that cover conservatively.
    departures : bool, default True
        Let rBLPR's bootstrap world hold the groups' departures from the regression
        surface, with the variance the lasso's residuals show beyond their sampling
        variance: a part common to all groups and one that grows with a group's sampling
        variance (:func:`~bayesfair.disaggregated.structured.departure_variance`), so that
        the intervals of small groups allow for what the features do not explain.
        ``False`` is rBLPR as published, whose bootstrap world is the fitted surface
        itself: tighter, and short of its level where the features miss real differences
        between small groups (notebook 07 measures both on Herlihy et al.'s diabetes
        population).
    interactions : bool, default False
        Add pairwise attribute interactions to the features.
    explanatory : mapping, optional
        ``{name: f(frame) -> per-row values}``: their group means are features.
    outcome_rates : bool, default True
        Add the group's outcome rate to the features (left out, with a warning, of a
        metric it is an exact linear function of, such as the base rate).
    n_resamples : int, default 999
        Residual-bootstrap replicates of rBLPR.
    n_folds : int, default 10
        Folds of the cross-validation (over rows, stratified by group) that chooses the
        lasso's penalty.
    n_lambdas : int, default 30
        Penalties on its grid (``lambda_max`` times ratios from 1 to 1e-4).

    Examples
    --------
    >>> from bayesfair.disaggregated import StructuredRegression
    >>> StructuredRegression(ridge="rows").ridge
    'rows'
    """

    interval: str = "percentile"
    ridge: str | float = "groups"
    departures: bool = True
    interactions: bool = False
    explanatory: Mapping[str, Callable[[pd.DataFrame], np.ndarray]] | None = None
    outcome_rates: bool = True
    n_resamples: int = N_RESAMPLES
    n_folds: int = 10
    n_lambdas: int = 30
    name: ClassVar[str] = "structured"

    def __post_init__(self) -> None:
        check_rblpr_options(self.interval, self.ridge)
        check_count(self.n_folds, "n_folds", 2)
        check_count(self.n_lambdas, "n_lambdas")
        check_flag(self.departures, "departures")
        check_flag(self.interactions, "interactions")
        check_flag(self.outcome_rates, "outcome_rates")
        check_resamples(self.n_resamples, "n_resamples", minimum=2)
        if self.explanatory is not None and not isinstance(self.explanatory, Mapping):
            raise TypeError(
                "StructuredRegression: `explanatory` must be None or a mapping "
                f"{{name: f(frame) -> per-row values}}, got {type(self.explanatory).__name__}"
            )


#: the closing words of structured regression's and hierarchical Bayes' caveats
_ON_AVERAGE = (
    "They hold their level on average over groups: do not read a small group's interval alone."
)


def structured_regression_caveat(estimator: StructuredRegression | None = None) -> str:
    """What structured regression's intervals (``StructuredRegression``, default options
    when ``None``) hold and do not: the words the result's notes and the report give
    wherever its intervals are shown.

    rBLPR's bootstrap world is the fitted surface (with the groups' departures from it,
    by default): an interval allows for the surface's uncertainty and for departures
    whose variance, estimated from all groups' residuals, grows as a group's rows fall. A
    small group whose true value lies further from the surface than that is shrunk
    towards it, and its own rows are too few to show it, so its interval can miss: the
    intervals hold their level on average over groups, not group by group.

    Parameters
    ----------
    estimator : StructuredRegression, optional

    Returns
    -------
    str

    Examples
    --------
    >>> from bayesfair.disaggregated import StructuredRegression, structured_regression_caveat
    >>> "on average over groups" in structured_regression_caveat()
    True
    >>> rows = structured_regression_caveat(StructuredRegression(ridge="rows"))
    >>> "keeps almost all of its own deviation" in rows and "can miss" not in rows
    True
    """
    sr = StructuredRegression() if estimator is None else estimator
    if sr.ridge == "rows":
        return (
            "Structured regression's intervals here have the partial ridge "
            "StructuredRegression(ridge='rows'): each group keeps almost all of its own "
            "deviation from the fitted surface, so the intervals are conservative and as "
            "wide as the standard ones or wider (at 95% on the Adult simulation, 0.97-0.98 "
            "at 1.06-1.31 times the standard width: notebook 04)."
        )
    if sr.departures:
        text = (
            "Structured regression's intervals (rBLPR: a residual bootstrap of the lasso "
            "with a partial ridge) allow for the uncertainty of the fitted surface and for "
            "the groups' departures from it, with a variance estimated from the residuals "
            "that grows as a group's rows fall. A small group whose true value departs from "
            "the surface further than that is shrunk towards it, and its interval can miss. "
            "At 95%, on Herlihy et al.'s diabetes population they covered 0.94-0.96 of all "
            "groups on six metrics and 0.92 of groups of at most 10 rows, at 0.74-0.83 of "
            "the standard width; on three other splits of those data, audited by the "
            "paper's logistic regression or by gradient-boosted trees, 0.919-0.964 of all "
            "groups and 0.91-0.98 of groups of at most 25 rows on selection rate and FPR "
            "(accuracy, on the trees' split 3: 0.905, scripts/robust_empirical_bayes.py), "
            "but at 0.78-1.05 of the standard width, above 0.85 in 7 of 12 cases: where the "
            "features explain the groups less well, the intervals keep their level by being "
            "as wide as the standard ones (notebook 07, section 4; the hierarchical model's: "
            "0.956-0.977 at 0.75-0.83); on the Adult simulation 0.94-0.98 at 0.88-1.06 "
            "(notebook 04). Their level also moves with the evaluation set's size: on the "
            "paper's split, with sets of 10,000 rows they covered 0.877-0.956 of all groups "
            "(0.825-0.947 of groups of at most 10 rows), with sets of 2,500 rows 0.969-0.991 "
            "(notebook 07, section 4)."
        )
    else:
        text = (
            "Structured regression's intervals here are rBLPR as published "
            "(StructuredRegression(departures=False)): their bootstrap world is the fitted "
            "surface itself, so they allow for its uncertainty only and miss the groups "
            "that depart from it; at 95% they covered 0.89-0.92 on three of six metrics of "
            "the diabetes population (notebook 07)."
        )
    return f"{text} {_ON_AVERAGE} " + (
        "The hierarchical model's intervals learn the groups' spread with "
        "its uncertainty; StructuredRegression(ridge='rows') gives conservative ones, as "
        "wide as the standard intervals or wider."
    )


def hierarchical_bayes_caveat(group_variance: str = "size") -> str:
    """What hierarchical Bayes' intervals (``HierarchicalBayes``) hold and do not: the
    words the result's notes and the report give wherever its intervals are shown.

    The model integrates over the groups' spread with its uncertainty.  With
    exchangeable group effects (``group_variance="exchangeable"``) that is one spread
    for every group, learned mostly from the groups with many rows: a small group
    whose true value departs from what its attribute values predict further than that
    is shrunk towards the prediction, and its own rows are too few to show it, so its
    interval can miss; the larger the evaluation set, the more tightly its large groups
    pin the spread down, and the more often that happens.  The default
    (``group_variance="size"``) lets a group's departure grow as its size falls, which
    restores the small groups' coverage at the price of some width; its intervals are
    still calibrated on average over groups, not group by group.

    Parameters
    ----------
    group_variance : {"size", "exchangeable"}, default "size"
        The ``HierarchicalBayes`` option whose intervals are described.

    Returns
    -------
    str

    Examples
    --------
    >>> from bayesfair.disaggregated import hierarchical_bayes_caveat
    >>> "on average over groups" in hierarchical_bayes_caveat()
    True
    """
    if group_variance not in GROUP_VARIANCES:
        raise ValueError(
            f"`group_variance` must be one of {GROUP_VARIANCES}, got {group_variance!r}"
        )
    if group_variance == "size":
        return (
            "Hierarchical Bayes' intervals allow for the uncertainty of the groups' spread, "
            "and let a group's departure from what its attribute values predict grow as its "
            "rows fall (HierarchicalBayes(group_variance='size')). At 95% on Herlihy et al.'s "
            "diabetes population they covered 0.967-0.977 of all groups by metric (0.933-0.994 "
            "of groups of at most 10 rows) with evaluation sets of 5,000 rows, 0.950-0.975 "
            "(0.829-0.975) with 10,000 rows and 0.977-0.987 (0.951-1.000) with 2,500 rows, at "
            "0.75-0.82 of the standard width with 5,000 rows (notebook 07, sections 3 and 4). "
            "On a simulated finite population whose small groups depart from the prediction "
            "mostly by the noise of their few members, sampled at 13.5%, their 90% intervals "
            "covered 0.85 of "
            "the groups of at most 25 rows (0.59 with one spread for every group; "
            f"tests/disaggregated/test_hierarchical_bayes.py). {_ON_AVERAGE}"
        )
    return (
        "Hierarchical Bayes' intervals allow for the uncertainty of the groups' spread, but "
        "give every group the same spread around what its attribute values predict, learned "
        "mostly from the groups with many rows (HierarchicalBayes(group_variance="
        "'exchangeable')): a small group that departs from the prediction further than that "
        "is shrunk towards it, and its interval can miss, the more often the larger the "
        "evaluation set. At 95% on Herlihy et al.'s diabetes population, with evaluation "
        "sets of 5,000 rows they covered 0.943-0.962 of all groups by metric and 0.803-0.975 "
        "of groups of at most 10 rows; with sets of 10,000 rows, 0.920-0.948 of all groups "
        "but 0.658-0.942 of groups of at most 10 rows (notebook 07, section 4). "
        f"{_ON_AVERAGE}"
    )


@dataclass(frozen=True)
class HierarchicalBayes:
    """Fully Bayesian hierarchical model of the groups (PyMC, NUTS): binomial counts for a
    count metric, a Fay-Herriot model of the standard estimates otherwise, with main
    effects of every attribute and a group effect.

    Parameters
    ----------
    draws, tune, chains : int, default 1000, 1000, 4
        NUTS settings.
    target_accept : float, default 0.95
        NUTS's target acceptance rate for the count model (the Fay-Herriot model uses at
        least 0.99). Divergent transitions, which the result's ``diagnostics`` and a
        ``SamplerWarning`` report, usually go when it is raised towards 0.99.
    main_effects : {"auto", "non-centred", "centred"}, default "auto"
        Coordinates in which NUTS samples the attributes' main effects (the model is the
        same). Non-centred suits the usual audit, where small groups say little; centred
        suits large data where every value of an attribute has many rows; ``"auto"``
        samples the main effects of an attribute with three or more values, each with
        1,000 rows or more, partially centred, the others non-centred (see
        :func:`~bayesfair.disaggregated.hierarchical.fit_hierarchical` and
        ``models/cards/hierarchical_bayes.md``).
    point_estimate : {"mean", "median"}, default "mean"
        The posterior summary reported as the estimate (as ArviZ's ``point_estimate``):
        the mean minimises expected squared error, the median expected absolute error and
        always lies inside the central credible interval.
    group_variance : {"size", "exchangeable"}, default "size"
        Variance of a group's effect, its departure from what its attributes predict.
        ``"exchangeable"``: sigma_group^2 for every group.  ``"size"``: sigma_group^2 +
        psi^2 v_a, with v_a the group's sampling variance (on the log-odds scale
        1 / (m_a p (1 - p)) for m_a trials at the measure's pooled rate p; for metrics
        without counts the standard error's square) and psi ~ HalfNormal(0.5), so that a
        group's departure may grow as its size falls.  It does wherever the estimand is
        the rate of a finite population that the evaluation set samples: a small group's
        true rate is itself an average over few members, with noise of order 1 / N_a.
        An exchangeable effect then learns its spread from the large groups, whose
        departures are small, and shrinks the small ones too far: the larger the
        evaluation set, the worse their intervals cover (measured in notebook 07).
        With one attribute a count model has no group effect (the main effect is one),
        and the option does nothing there.

    Examples
    --------
    >>> from bayesfair.disaggregated import HierarchicalBayes
    >>> HierarchicalBayes(draws=500, chains=2).chains
    2
    >>> HierarchicalBayes().group_variance
    'size'
    """

    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    target_accept: float = 0.95
    main_effects: str = "auto"
    point_estimate: str = "mean"
    group_variance: str = "size"
    name: ClassVar[str] = "hierarchical"

    def __post_init__(self) -> None:
        check_count(self.draws, "draws")
        check_count(self.tune, "tune")  # NUTS adapts while tuning (nutpie panics without)
        check_count(self.chains, "chains")
        check_open_probability(self.target_accept, "target_accept")
        if self.main_effects not in MAIN_EFFECTS:
            raise ValueError(
                f"HierarchicalBayes: `main_effects` must be one of {MAIN_EFFECTS}, got "
                f"{self.main_effects!r}"
            )
        if self.group_variance not in GROUP_VARIANCES:
            raise ValueError(
                f"HierarchicalBayes: `group_variance` must be one of {GROUP_VARIANCES}, got "
                f"{self.group_variance!r}"
            )
        if self.point_estimate not in ("mean", "median"):
            raise ValueError(
                "HierarchicalBayes: `point_estimate` must be 'mean' or 'median', got "
                f"{self.point_estimate!r}"
            )


_CLASSES = {c.name: c for c in (Standard, JamesStein, EmpiricalBayes, StructuredRegression)}
_CLASSES["hierarchical"] = HierarchicalBayes


def resolve_estimators(estimators: Sequence[Any]) -> dict[str, Any]:
    """``{name: estimator}`` of names (each with its defaults) and estimator objects.

    Parameters
    ----------
    estimators : sequence
        Names among :data:`ESTIMATORS` and objects of the classes of this module.

    Returns
    -------
    dict

    Examples
    --------
    >>> from bayesfair.disaggregated import HierarchicalBayes, resolve_estimators
    >>> list(resolve_estimators(["standard", HierarchicalBayes(draws=200)]))
    ['standard', 'hierarchical']
    """
    if isinstance(estimators, (str, *_CLASSES.values())):
        estimators = [estimators]
    out: dict[str, Any] = {}
    for e in estimators:
        if isinstance(e, str):
            if e not in _CLASSES:
                raise ValueError(f"unknown estimator {e!r}; choose from {ESTIMATORS}")
            e = _CLASSES[e]()
        elif not isinstance(e, tuple(_CLASSES.values())):
            raise TypeError(
                f"an estimator is a name among {ESTIMATORS} or one of Standard(), JamesStein(), "
                "EmpiricalBayes(...), StructuredRegression(...), HierarchicalBayes(...); got "
                f"{type(e).__name__}"
            )
        if e.name in out:
            raise ValueError(f"`estimators` names {e.name!r} twice")
        out[e.name] = e
    if not out:
        raise ValueError(f"`estimators` must name at least one of {ESTIMATORS}")
    return out
