"""Herlihy et al.'s simulation (Section 5.1) rebuilt on Adult, which needs no unavailable data.

A logistic regression trained on 25% of Adult (train + test, 48,842 rows) is the
system under audit; the other 75% is the ground-truth population, with groups
race (4) x sex (2) x age band (4) = 32.  The decision refers the top 20% of
scores (P[score >= r] = 0.2 in the population, as in the paper).  Evaluation
sets of 5,000 rows are drawn by stratified sampling (proportional allocation,
each group's count rounded, so the smallest groups have a handful of rows).
Every estimator is compared with the population's true metric values.

Structured regression gets, besides group and attribute indicators, pairwise
interactions and the group's outcome rate, explanatory features in the spirit of the paper's
clinical features: the group means of four of the audited model's inputs
(:data:`EXPLANATORY`), computed on the evaluation set like everything else.

The harness runs on any population with known truth, not only Adult: pass a DataFrame
of it as ``pop_truth`` to :func:`simulate` and :func:`lasso_path_oracle`, with its
``protected`` and column roles; :func:`population_truth` gives its true metric
table.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.base import ClassifierMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from .. import _arviz
from .._sampling import SamplerWarning
from .._validation import check_flag
from .._vocabulary import ROLE_RENAMES, moved_options, renamed_arguments
from .._warning_location import user_stacklevel
from ..datasets import load_adult, load_diabetes
from ..datasets.diabetes import (
    CLINICAL_CATEGORICAL,
    CLINICAL_NUMERIC,
    clinical_features,
    heart_failure,
)
from ..disaggregated import (
    EmpiricalBayes,
    HierarchicalBayes,
    JamesStein,
    Standard,
    StructuredRegression,
    disaggregated_evaluation,
    resolve_estimators,
)
from ..disaggregated.evaluate import MOVED_OPTIONS
from ..disaggregated.groups import GroupedData, needed_column

__all__ = [
    "DIABETES_PROTECTED",
    "EXPLANATORY",
    "EXPLANATORY_DIABETES",
    "METRICS",
    "lasso_path_oracle",
    "population",
    "population_truth",
    "shrinkage_oracle",
    "simulate",
    "summarise",
    "table1",
]

METRICS = ("selection_rate", "fpr", "fnr", "accuracy", "ppv", "auc")
SENSITIVE = ["race", "sex", "age_band"]
AGE_BANDS = ["17-29", "30-44", "45-59", "60+"]
#: the groups of the diabetes population (the paper's): race x age band x gender = 32
DIABETES_PROTECTED = ["race", "age_band", "gender"]
POPULATIONS = ("adult", "diabetes")

#: Explanatory features of structured regression: group means of model inputs.
EXPLANATORY = {
    "education_num": lambda df: df["education_num"].to_numpy(float),
    "hours_per_week": lambda df: df["hours_per_week"].to_numpy(float),
    "age": lambda df: df["age"].to_numpy(float),
    "capital_gain>0": lambda df: (df["capital_gain"].to_numpy(float) > 0).astype(float),
}


#: Explanatory features of structured regression on the diabetes population, the paper's
#: seven (Section 5.1): beside the indicators of the two values of Y (the group's outcome
#: rate, which structured regression always has), any inpatient, outpatient and emergency
#: visit in the preceding year, the number of diagnoses, and any diagnosis of congestive
#: heart failure; each enters as its group mean.
EXPLANATORY_DIABETES = {
    "inpatient": lambda df: df["had_inpatient_days"].to_numpy(float),
    "outpatient": lambda df: df["had_outpatient_days"].to_numpy(float),
    "emergency": lambda df: df["had_emergency"].to_numpy(float),
    "number_diagnoses": lambda df: df["number_diagnoses"].to_numpy(float),
    "heart_failure": lambda df: df["heart_failure"].to_numpy(float),
}


def population(
    data_home: str | os.PathLike | None = None,
    random_state: int = 0,
    name: str = "adult",
    *,
    classifier: ClassifierMixin | None = None,
):
    """The simulation's population: a data set audited by a model trained on 25%.

    A classifier (the paper's logistic regression by default) trained on a random 25%
    of the rows is the system under audit; the other 75%, with its scores and decisions
    (the top 20% of scores), are the ground-truth population.  ``name="adult"``: Adult
    (train + test), groups race x sex x age band.  ``name="diabetes"``: the paper's own
    population, UCI's diabetes readmissions with its filter
    (:func:`~bayesfair.datasets.load_diabetes`), readmission within 30 days predicted from
    the clinical features of the Fairlearn SciPy 2021 tutorial's preprocessing and the
    protected attributes; groups race x age band x gender (32), 73,988 rows of ground
    truth.  The population's protected columns are in ``pop.attrs["protected"]``, which
    :func:`simulate` reads.

    Parameters
    ----------
    data_home : path, optional
        Where the data files are.
    random_state : int, default 0
        Seeds the 25% training split.
    name : {"adult", "diabetes"}, default "adult"
        Which population.
    classifier : scikit-learn classifier, optional
        The system under audit, fitted (a clone) on the training rows' standardised
        numeric features and one-hot categories, given to it as a dense array; it needs
        ``predict_proba``. Default: ``LogisticRegression(max_iter=2000)`` on the same
        features (kept sparse), the paper's model. Another model gives another
        population: how the estimators fare depends on the scores that set the
        decisions, so an audit of your own model is best checked on its population.

    Returns
    -------
    pop : pandas.DataFrame
        The population rows (sensitive features, numeric features, ``y``,
        ``score``, ``decision``).
    truth : pandas.DataFrame
        True value of every metric per group (index: group names), with ``N``.
    """
    if name not in POPULATIONS:
        raise ValueError(f"`name` must be one of {POPULATIONS}, got {name!r}")
    if classifier is not None and not hasattr(classifier, "predict_proba"):
        raise TypeError(
            f"`classifier` must be a scikit-learn classifier with predict_proba, got "
            f"{type(classifier).__name__}"
        )
    if name == "diabetes":
        return _diabetes_population(data_home, random_state, classifier)
    ds = load_adult("both", data_home=data_home)
    f = ds.frame.copy()
    f["age_band"] = pd.Categorical(
        pd.cut(f["age"], [0, 29, 44, 59, 200], labels=AGE_BANDS), categories=AGE_BANDS
    )
    num = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
    cat = ["workclass", "marital_status", "occupation", "relationship", "sex", "race"]
    rng = np.random.default_rng(random_state)
    train = rng.random(len(f)) < 0.25
    pop = f.loc[~train, SENSITIVE + num + ["income_gt_50k"]].reset_index(drop=True)
    pop["score"], pop["decision"] = _audited_model(
        f, f["income_gt_50k"], train, num, cat, classifier
    )
    pop = pop.rename(columns={"income_gt_50k": "y"})
    pop.attrs["protected"] = list(SENSITIVE)
    return pop, population_truth(pop)


def _audited_model(
    X: pd.DataFrame,
    y: pd.Series,
    train: np.ndarray,
    num: list[str],
    cat: list[str],
    classifier: ClassifierMixin | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The system under audit: ``classifier`` (a clone; default a logistic regression,
    on sparse features) on the numeric columns ``num`` (standardised) and the categories
    ``cat`` (one-hot), trained on the rows ``train``. Returns the other rows' scores and
    decisions: the top 20% of scores referred (P[score >= r] = 0.2 in the population, as
    in the paper)."""
    transformer = ColumnTransformer(
        [("num", StandardScaler(), num), ("cat", OneHotEncoder(handle_unknown="ignore"), cat)],
        # a classifier of one's own gets dense features: not every one takes sparse input
        sparse_threshold=0.3 if classifier is None else 0.0,
    )
    model = make_pipeline(
        transformer,
        LogisticRegression(max_iter=2000) if classifier is None else clone(classifier),
    )
    model.fit(X.loc[train, num + cat], y[train])
    score = model.predict_proba(X.loc[~train, num + cat])[:, 1]
    return score, (score >= np.quantile(score, 0.8)).astype(int)


def _diabetes_population(data_home, random_state: int, classifier=None):
    """The diabetes population of :func:`population`."""
    f = load_diabetes(data_home=data_home).frame
    X = clinical_features(f)
    for c in DIABETES_PROTECTED:
        X[c] = f[c].astype(str)
    cat = CLINICAL_CATEGORICAL + DIABETES_PROTECTED
    # exactly a quarter (rounded down) to train: 73,988 rows of ground truth, as the paper's
    train = np.zeros(len(f), dtype=bool)
    train[np.random.default_rng(random_state).permutation(len(f))[: len(f) // 4]] = True
    pop = X.loc[~train, CLINICAL_NUMERIC].reset_index(drop=True)
    for c in DIABETES_PROTECTED:
        pop[c] = f.loc[~train, c].to_numpy()
    pop["heart_failure"] = heart_failure(f.loc[~train])
    pop["y"] = f.loc[~train, "readmitted_30"].to_numpy()
    pop["score"], pop["decision"] = _audited_model(
        X, f["readmitted_30"], train, CLINICAL_NUMERIC, cat, classifier
    )
    pop.attrs["protected"] = list(DIABETES_PROTECTED)
    return pop, population_truth(pop, DIABETES_PROTECTED)


@renamed_arguments(
    **ROLE_RENAMES,
)
def population_truth(
    pop: pd.DataFrame,
    protected: str | list[str] = SENSITIVE,
    outcome: str = "y",
    decision: str | None = "decision",
    score: str | None = "score",
    metrics=None,
) -> pd.DataFrame:
    """The true value of every metric in every group of a population.

    Parameters
    ----------
    pop : pandas.DataFrame
        The whole population, one row per individual.
    protected : str or list of str
        Columns whose intersections are the groups (default: the Adult population's).
    outcome, decision, score : str
        Outcome, decision and score columns; ``decision`` or ``score`` may be None.
    metrics : sequence of str, optional
        Metric names (default :data:`METRICS`, less those whose column is None).

    Returns
    -------
    pandas.DataFrame
        Index: group names (as :func:`~bayesfair.disaggregated.disaggregated_evaluation`
        names them); column ``N`` (rows) and one column per metric (NaN where the metric
        is undefined in the group).

    Examples
    --------
    >>> import pandas as pd
    >>> pop = pd.DataFrame({"g": list("aabb"), "y": [0, 1, 1, 1], "d": [0, 1, 0, 1]})
    >>> population_truth(pop, "g", "y", "d", None, ["selection_rate", "fnr"])
       N  selection_rate  fnr
    a  2             0.5  0.0
    b  2             0.5  0.5
    """
    if metrics is None:
        metrics = _available_metrics(decision, score)
    gd = GroupedData.from_frame(pop, protected, outcome, decision, score)
    truth = pd.DataFrame({m: gd.estimate(m) for m in metrics}, index=gd.group_names())
    truth.insert(0, "N", gd.sizes())
    return truth


def _available_metrics(decision: str | None, score: str | None) -> list[str]:
    """:data:`METRICS` less those whose column is None (AUC needs the score, the others
    the decision: :func:`~bayesfair.disaggregated.groups.needed_column`)."""
    given = {"decision": decision, "score": score, None: "outcome"}
    metrics = [m for m in METRICS if given[needed_column(m)] is not None]
    if not metrics:
        raise ValueError("the population needs a decision (`decision`) or a score (`score`)")
    return metrics


def _resolve_population(pop_truth, data_home, random_state, sensitive, roles, metrics):
    """(pop, truth, sensitive features as a list) for the harness: the Adult population
    (:func:`population`) when ``pop_truth`` is None, a user's population DataFrame (its
    truth computed here) or a ``(pop, truth)`` pair, checked against the column roles."""
    if sensitive is None:  # the population's own, else the Adult population's
        pops = pop_truth if isinstance(pop_truth, tuple) else (pop_truth,)
        own = getattr(pops[0], "attrs", {}).get("protected") if pops[0] is not None else None
        sensitive = own or SENSITIVE
    sensitive = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    if pop_truth is None:
        pop, truth = population(data_home, random_state)
        if sensitive != SENSITIVE:
            truth = None  # the Adult population grouped otherwise
    elif isinstance(pop_truth, pd.DataFrame):
        pop, truth = pop_truth, None
    elif isinstance(pop_truth, tuple) and len(pop_truth) == 2:
        pop, truth = pop_truth
        if not isinstance(pop, pd.DataFrame) or not isinstance(truth, pd.DataFrame):
            raise TypeError("`pop_truth` must be a DataFrame or a (pop, truth) pair of DataFrames")
        # a truth table of one's own must name every group (population_truth's does)
        groups = GroupedData.from_frame(pop, sensitive, *roles).group_names()
        absent = [g for g in groups if g not in truth.index]
        if absent:
            raise ValueError(
                f"the truth table has no row for {len(absent)} group(s) of the population "
                f"({'; '.join(map(str, absent[:5]))}); it must be indexed by group name, "
                "as population_truth returns it"
            )
    else:
        raise TypeError(
            "`pop_truth` must be a population DataFrame or a (pop, truth) pair of DataFrames, "
            f"got {type(pop_truth).__name__}"
        )
    if truth is None:
        truth = population_truth(pop, sensitive, *roles, metrics=list(metrics))
    missing = [m for m in metrics if m not in truth.columns]
    if missing:
        raise ValueError(
            f"`metrics` {missing} have no true values; the truth table has {list(truth.columns)}"
        )
    return pop, truth, sensitive


def _default_explanatory(explanatory, pop: pd.DataFrame):
    """``"auto"``: :data:`EXPLANATORY` where the population has the Adult columns it
    reads, :data:`EXPLANATORY_DIABETES` where it has the diabetes population's,
    otherwise none (structured regression still has the outcome rates)."""
    if isinstance(explanatory, str) and explanatory == "auto":
        cols = {"education_num", "hours_per_week", "age", "capital_gain"}
        if cols <= set(pop.columns):
            return EXPLANATORY
        if {"had_inpatient_days", "number_diagnoses", "heart_failure"} <= set(pop.columns):
            return EXPLANATORY_DIABETES
        return None
    return explanatory


def _stratified(
    pop: pd.DataFrame, n: int, rng: np.random.Generator, sensitive: list[str] = SENSITIVE
) -> pd.DataFrame:
    g = pop.groupby(sensitive, observed=True).indices
    sizes = {k: len(v) for k, v in g.items()}
    total = sum(sizes.values())
    take = []
    for k, idx in g.items():
        m = round(n * sizes[k] / total)
        if m:
            take.append(rng.choice(idx, size=m, replace=False))
    return pop.iloc[np.concatenate(take)].reset_index(drop=True)


def simulation_estimators(
    pop: pd.DataFrame | None = None, *, draws: int = 500, chains: int = 2, n_resamples: int = 500
) -> list:
    """The estimators :func:`simulate` runs by default: standard, James-Stein, empirical
    Bayes, structured regression with pairwise attribute interactions (on Adult they cut
    its error for five of six metrics and raise its coverage) and the population's
    explanatory features, and hierarchical Bayes.

    Parameters
    ----------
    pop : pandas.DataFrame, optional
        The population: :data:`EXPLANATORY` where it has the Adult columns those read,
        :data:`EXPLANATORY_DIABETES` where it has the diabetes population's, otherwise
        none (structured regression still has the outcome rates).
    draws, chains : int, default 500, 2
        NUTS draws (and tuning steps) and chains of hierarchical Bayes.
    n_resamples : int, default 500
        Residual-bootstrap replicates of structured regression's rBLPR intervals.

    Returns
    -------
    list

    Examples
    --------
    >>> from bayesfair.replication import herlihy
    >>> [e.name for e in herlihy.simulation_estimators()]
    ['standard', 'james_stein', 'empirical_bayes', 'structured', 'hierarchical']
    """
    explanatory = None if pop is None else _default_explanatory("auto", pop)
    return [
        Standard(),
        JamesStein(),
        EmpiricalBayes(),
        StructuredRegression(interactions=True, explanatory=explanatory, n_resamples=n_resamples),
        HierarchicalBayes(draws=draws, tune=draws, chains=chains),
    ]


@moved_options(
    {
        **MOVED_OPTIONS,
        "hb_draws": "HierarchicalBayes(draws=..., tune=...)",
    },
    into="estimators",
)
@renamed_arguments(**ROLE_RENAMES, levels="level")
def simulate(
    n_draws: int = 20,
    *,
    n_eval: int = 5000,
    metrics=None,
    estimators: Sequence | None = None,
    level=(0.5, 0.8, 0.9, 0.95),
    data_home: str | os.PathLike | None = None,
    random_state: int = 0,
    pop_truth=None,
    protected: str | list[str] | None = None,
    outcome: str = "y",
    decision: str | None = "decision",
    score: str | None = "score",
) -> pd.DataFrame:
    """Long table of every (draw, metric, group, estimator, level) with the truth.

    Each draw is a stratified evaluation set of ``n_eval`` rows of the population
    (:func:`population`, or yours: ``pop_truth``), evaluated by every estimator
    (:func:`~bayesfair.disaggregated.disaggregated_evaluation`).

    The hierarchical models' NUTS diagnostics of every draw are in
    ``attrs["hb_diagnostics"]``: records of draw, model, divergences, largest R-hat
    and smallest ESS (``pd.DataFrame(sim.attrs["hb_diagnostics"])``).  Instead of a
    warning per draw, one ``SamplerWarning`` at the end counts the fits with problems.

    Structured regression's estimated departure variance of every draw and metric is in
    ``attrs["structured_departures"]``: records of draw, metric, ``tau2`` and ``phi``
    (:func:`~bayesfair.disaggregated.structured.departure_variance`), to tell the sets
    where it came out 0 (whose intervals carry the surface's uncertainty alone) from the
    others.

    Parameters
    ----------
    n_draws : int, default 20
        Evaluation sets drawn.
    n_eval : int, default 5000
        Rows of every evaluation set.
    metrics : sequence of str, optional
        Metric names (default :data:`METRICS`, less AUC without ``score`` and the
        decision's metrics without ``decision``).
    estimators : sequence, optional
        Names or estimator objects, as
        :func:`~bayesfair.disaggregated.disaggregated_evaluation` takes them; a name
        stands for the estimator of :func:`simulation_estimators` of the population
        (structured regression with interactions and the population's explanatory
        features, hierarchical Bayes at 2 x 500 draws), and the default is all five.
    level : sequence of float
        Confidence levels of the intervals.
    data_home : path, optional
        Where the Adult files are.
    random_state : int, default 0
    pop_truth : DataFrame or tuple, optional
        The population: ``(pop, truth)`` of :func:`population`, to reuse it across
        calls; or any population DataFrame (its truth from :func:`population_truth`);
        or ``(pop, truth)`` with a truth table of your own, indexed by group name.
        Default: the Adult population.
    protected : str or list of str, optional
        The population's columns whose intersections are the groups (default: those of
        ``pop.attrs["protected"]``, which :func:`population` sets, else race, sex, age
        band).
    outcome, decision, score : str
        The population's outcome, decision and score columns (``decision`` or ``score``
        may be None when no metric needs it).

    Returns
    -------
    pandas.DataFrame
        Columns ``draw``, ``metric``, ``group``, ``estimator``, ``level``, ``n``,
        ``defined``, ``estimate``, ``lower``, ``upper`` and ``truth``.

    Notes
    -----
    Twelve parameters: the population (``pop_truth`` or ``data_home``, with its four
    column roles), the evaluation design (``n_draws``, ``n_eval``, ``metrics``,
    ``level``, ``random_state``) and the estimators, whose options they carry.
    """
    roles = (outcome, decision, score)
    metrics = _available_metrics(decision, score) if metrics is None else metrics
    pop, truth, sensitive = _resolve_population(
        pop_truth, data_home, random_state, protected, roles, metrics
    )
    defaults = {e.name: e for e in simulation_estimators(pop)}
    if estimators is None:
        estimators = list(defaults.values())
    else:  # a name takes the simulation's default estimator of that name
        estimators = [defaults.get(e, e) if isinstance(e, str) else e for e in estimators]
    hb = resolve_estimators(estimators).get("hierarchical")
    seeds = np.random.SeedSequence(random_state).spawn(n_draws)
    out, diagnostics, departures = [], [], []
    for d in range(n_draws):
        rng = np.random.default_rng(seeds[d])
        ev = _stratified(pop, n_eval, rng, sensitive)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)  # summarised after the loop
            res = disaggregated_evaluation(
                ev,
                sensitive,
                *roles,
                metrics=list(metrics),
                estimators=estimators,
                level=list(level),
                random_state=int(rng.integers(2**31)),
            )
        for model, diag in res.diagnostics.items():
            diagnostics.append({"draw": d, "model": model, **diag})
        for metric, info in res.structured.items():
            tau2, phi = info["departure_variance"]
            departures.append({"draw": d, "metric": metric, "tau2": tau2, "phi": phi})
        iv = res.intervals.drop(columns="n")
        est = res.table[["group", "n", "metric", "estimator", "estimate", "defined"]]
        long = est.merge(iv, on=["group", "metric", "estimator"], how="left")
        long["truth"] = [
            truth.loc[g, m] for g, m in zip(long["group"], long["metric"], strict=True)
        ]
        long["draw"] = d
        out.append(long)
    sim = pd.concat(out, ignore_index=True)
    # records, not a DataFrame: pandas compares attrs when it combines frames
    sim.attrs["hb_diagnostics"] = diagnostics
    sim.attrs["structured_departures"] = departures
    bad = [r for r in diagnostics if _arviz.sampler_problems(r)]
    if bad:
        r_hats = [r["r_hat_max"] for r in diagnostics if np.isfinite(r["r_hat_max"])]
        n_div = int(sum(r["divergences"] for r in diagnostics))
        advice = []
        if any(r > _arviz.R_HAT_MAX for r in r_hats):
            advice.append(
                "more draws or chains (HierarchicalBayes(draws=..., chains=...)) would "
                "tighten the R-hats"
            )
        if n_div:
            advice.append(
                "a larger target acceptance (HierarchicalBayes(target_accept=...), now "
                f"{hb.target_accept}) removes divergences"
            )
        warnings.warn(
            f"hierarchical models: divergences or R-hat above {_arviz.R_HAT_MAX} in {len(bad)} "
            f"of {len(diagnostics)} fits ({len({r['draw'] for r in bad})} of {n_draws} draws; "
            f"largest R-hat {max(r_hats, default=np.nan):.3f}, "
            f"{n_div} divergent transitions in all); "
            + "; ".join(advice)
            + '. Per fit: .attrs["hb_diagnostics"]',
            SamplerWarning,
            stacklevel=user_stacklevel(),
        )
    return sim


#: Herlihy et al.'s Table 1 (diabetes population): p-values of the F-tests between nested
#: weighted least-squares models of the standard estimates
TABLE1_PAPER = pd.DataFrame(
    {
        "auc": [0.281, 0.438, 0.726, 0.543],
        "selection_rate": [0.000, 0.000, 0.000, 0.842],
        "fnr": [0.093, 0.473, 0.735, 0.565],
        "fpr": [0.001, 0.000, 0.000, 0.431],
        "accuracy": [0.000, 0.000, 0.005, 0.182],
        "ppv": [0.316, 0.493, 0.470, 0.874],
    },
    index=["expl vs none", "sens vs none", "expl+sens vs expl", "+Y.sens vs expl+sens"],
).T


def table1(
    pop_truth=None,
    n_sets: int = 5,
    n_eval: int = 5000,
    random_state: int = 0,
    data_home: str | os.PathLike | None = None,
    outcome_rates: bool = True,
    split: bool = False,
):
    """Table 1 of Herlihy et al. on evaluation sets of a population: the median, over
    ``n_sets`` stratified evaluation sets of ``n_eval`` rows, of the p-value of each
    goodness-of-fit F-test (:meth:`DisaggregatedResult.goodness_of_fit`: explanatory
    features vs none, attributes vs none, both vs explanatory, and the outcome-by-attribute
    interactions added), next to the paper's.

    Parameters
    ----------
    pop_truth : tuple, optional
        ``(pop, truth)`` of :func:`population`; default the diabetes population.
    n_sets : int, default 5
    n_eval : int, default 5000
    random_state : int, default 0
    data_home : path, optional
        Where the diabetes file is (for the default population).
    outcome_rates : bool, default True
        Whether the explanatory features include the groups' outcome rate, as the paper's
        do (:meth:`DisaggregatedResult.goodness_of_fit`); ``False`` shows how much of each
        metric's differences the base rate explains.
    split : bool, default False
        Whether each test computes the explanatory features on half of every group's rows
        and the metric on the other half (:meth:`DisaggregatedResult.goodness_of_fit`), a
        test that keeps its size where the paper's same-sample test does not; the default
        is the paper's.

    Returns
    -------
    pandas.DataFrame
        One row per metric; columns ``(comparison, "package")`` and
        ``(comparison, "paper")``. ``attrs["per_set"]`` has every evaluation set's
        p-values (one row per set and metric): a single set's p-value varies widely, and a
        published table of one set is one draw of it.

    Examples
    --------
    >>> from bayesfair.replication import herlihy
    >>> t1 = herlihy.table1(n_sets=2)  # doctest: +SKIP
    >>> t1[("expl vs none", "package")].round(3)  # doctest: +SKIP
    """
    check_flag(outcome_rates, "outcome_rates")  # before the population is read
    check_flag(split, "split")
    if pop_truth is None:
        pop_truth = population(data_home, random_state=0, name="diabetes")
    pop = pop_truth[0]
    protected = pop.attrs.get("protected", DIABETES_PROTECTED)
    explanatory = _default_explanatory("auto", pop)
    metrics = list(TABLE1_PAPER.index)
    seeds = np.random.SeedSequence(random_state).spawn(n_sets)
    rows = []
    for number, seed in enumerate(seeds):
        rng = np.random.default_rng(seed)
        ev = _stratified(pop, n_eval, rng, protected)
        res = disaggregated_evaluation(
            ev,
            protected,
            "y",
            "decision",
            "score",
            metrics=metrics,
            estimators=["standard"],
            random_state=int(rng.integers(2**31)),
        )
        for m in metrics:
            g = res.goodness_of_fit(
                m,
                explanatory,
                outcome_rates=outcome_rates,
                split=split,
                random_state=int(rng.integers(2**31)) if split else None,
            )
            rows.append(
                pd.Series(g["pvalue"].to_numpy(), index=TABLE1_PAPER.columns, name=(number, m))
            )
    per_set = pd.DataFrame(rows)
    per_set.index = pd.MultiIndex.from_tuples(per_set.index, names=["set", "metric"])
    ours = per_set.groupby(level="metric").median().loc[metrics]
    out = pd.concat({"package": ours, "paper": TABLE1_PAPER}, axis=1).swaplevel(axis=1)[
        list(TABLE1_PAPER.columns)
    ]
    out.attrs["per_set"] = per_set
    return out


def summarise(sim: pd.DataFrame, small: int = 25):
    """(MAE table as Figure 3, coverage and relative width table as Figure 4).

    The MAE table has the mean absolute error over all group-draws (``all``), small
    groups of at most ``small`` rows (``small``), the others (``large``), and the
    small groups whose true value lies strictly inside (0, 1) (``small_interior``).
    The last one explains, not replaces, ``small``: where a small population group's true
    rate is exactly 0 (no negative referred, say), every sample of it has the standard
    estimate 0 too, so on those group-draws the standard estimator cannot err and any
    estimator that borrows from other groups can only lose.

    Parameters
    ----------
    sim : pandas.DataFrame
        The output of :func:`simulate`.
    small : int, default 25
        Groups with at most this many rows in an evaluation set are small.

    Returns
    -------
    mae : pandas.DataFrame
        Per metric and estimator (Figure 3).
    coverage : pandas.DataFrame
        Per metric, estimator and level: coverage and width relative to standard
        (Figure 4).
    """
    one = sim.drop_duplicates(["draw", "metric", "group", "estimator"])
    one = one[one["defined"] & np.isfinite(one["truth"]) & np.isfinite(one["estimate"])]
    one = one.assign(
        err=(one["estimate"] - one["truth"]).abs(),
        size=np.where(one["n"] <= small, "small", "large"),
        interior=(one["truth"] > 0) & (one["truth"] < 1),
    )
    mae = pd.concat(
        [
            one.groupby(["metric", "estimator"])["err"].mean().rename("all"),
            one[one["size"] == "small"]
            .groupby(["metric", "estimator"])["err"]
            .mean()
            .rename("small"),
            one[one["size"] == "large"]
            .groupby(["metric", "estimator"])["err"]
            .mean()
            .rename("large"),
            one[(one["size"] == "small") & one["interior"]]
            .groupby(["metric", "estimator"])["err"]
            .mean()
            .rename("small_interior"),
        ],
        axis=1,
    ).reset_index()
    iv = sim[sim["defined"] & np.isfinite(sim["truth"]) & sim["lower"].notna()]
    iv = iv.assign(
        cover=(iv["lower"] <= iv["truth"]) & (iv["truth"] <= iv["upper"]),
        width=iv["upper"] - iv["lower"],
    )
    std_w = iv[iv["estimator"] == "standard"].set_index(["draw", "metric", "group", "level"])[
        "width"
    ]
    iv = iv.join(std_w.rename("std_width"), on=["draw", "metric", "group", "level"])
    iv = iv.assign(rel_width=iv["width"] / iv["std_width"])
    cov = (
        iv.groupby(["metric", "estimator", "level"])
        .agg(coverage=("cover", "mean"), relative_width=("rel_width", "mean"), n=("cover", "size"))
        .reset_index()
    )
    return mae, cov


def _oracle_shrink_to_constant(e, t, centres):
    """Least sum of |centre + c (e - centre) - t| over a grid of centres and c in [0, 1].

    For a fixed centre m the sum is sum_a |e_a - m| |c - r_a| with r_a = (t_a - m) / (e_a - m):
    a weighted median of the r_a minimises it exactly, and clipping to [0, 1] keeps it
    the minimiser on the interval (the sum is convex in c).
    """
    d = e[None, :] - centres[:, None]  # (centres, groups)
    w = np.abs(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(w > 0, (t[None, :] - centres[:, None]) / d, 0.0)
    order = np.argsort(r, axis=1)
    rs = np.take_along_axis(r, order, axis=1)
    cw = np.cumsum(np.take_along_axis(w, order, axis=1), axis=1)
    k = np.argmax(cw >= cw[:, -1:] / 2, axis=1)
    c = np.clip(rs[np.arange(len(centres)), k], 0.0, 1.0)
    c = np.where(cw[:, -1] > 0, c, 0.0)
    err = np.abs(centres[:, None] + c[:, None] * d - t[None, :]).sum(axis=1)
    return float(err.min())


def _oracle_size_shrinkage(e, t, n, centres, ratios):
    """Least sum of |centre + k_a (e - centre) - t|, k_a = n_a rho / (1 + n_a rho), on a grid."""
    with np.errstate(invalid="ignore"):
        k = np.where(
            np.isinf(ratios)[:, None],
            1.0,
            n[None, :] * ratios[:, None] / (1 + n[None, :] * ratios[:, None]),
        )  # (ratios, groups)
    m = centres[:, None, None]
    err = np.abs(m + k[None] * (e[None, None, :] - m) - t[None, None, :]).sum(axis=-1)
    return float(err.min())


def shrinkage_oracle(
    sim: pd.DataFrame, small: int = 25, n_centres: int = 401, n_ratios: int = 400
) -> pd.DataFrame:
    """How far can shrinking towards a common centre go on the small groups of a simulation?

    James-Stein and empirical Bayes both move each standard estimate s_a towards one
    centre m shared by every group: James-Stein by a factor c common to all groups,
    ``m + c (s_a - m)``; empirical Bayes by a factor that depends on the group's size
    only, ``m + k_a (s_a - m)`` with ``k_a = tau^2 / (tau^2 + sigma^2 / n_a) =
    n_a rho / (1 + n_a rho)``.  Here, for every draw and metric separately, the centre
    and the factor (c in [0, 1], or rho in [0, inf]) are chosen *knowing the truth*, to
    minimise the absolute error on the small groups alone.  No estimator of either
    form -- whatever it estimates from the draw's data -- can have a lower small-group
    mean absolute error on those draws (up to the grid), so a cut of the standard
    estimator's error that the oracle does not reach on a set of draws is out of reach
    of James-Stein and empirical Bayes on that set.  The centres lie in [0, 1], the
    range of the rates and the AUC.

    Parameters
    ----------
    sim : DataFrame
        The output of :func:`simulate` (its ``standard`` rows are used; ``james_stein``
        and ``empirical_bayes`` rows, when present, are reported beside the oracles).
    small : int
        Groups with at most this many rows in an evaluation set are small.
    n_centres, n_ratios : int
        Grid sizes: centres evenly on [0, 1] (absolute error moves by at most half a
        grid step between grid points); ratios rho geometric on [1e-4, 1e4] plus 0 and
        infinity.  The factor c is exact (a weighted median).

    Returns
    -------
    DataFrame
        One row per metric and estimator (standard, the actual James-Stein and empirical
        Bayes when simulated, and the two oracles: "oracle: common factor", the
        James-Stein form, and "oracle: factor by size", the empirical-Bayes form) with
        the small-group mean absolute error ``small``, its ``cut`` against the standard
        estimator and the number of small ``group_draws``.

    Examples
    --------
    >>> import pandas as pd
    >>> sim = pd.DataFrame({"draw": 0, "metric": "fpr", "group": list("abcd"),
    ...     "estimator": "standard", "n": 10, "defined": True, "estimate": [0.1, 0.3, 0.2, 0.4],
    ...     "truth": [0.25, 0.25, 0.25, 0.25]})
    >>> shrinkage_oracle(sim).round(3)[["estimator", "small", "cut"]]
                    estimator  small  cut
    0                standard    0.1  0.0
    1   oracle: common factor    0.0  1.0
    2  oracle: factor by size    0.0  1.0
    """
    one = sim.drop_duplicates(["draw", "metric", "group", "estimator"])
    one = one[
        one["defined"]
        & (one["n"] <= small)
        & np.isfinite(one["truth"])
        & np.isfinite(one["estimate"])
    ]
    if not (one["estimator"] == "standard").any():
        raise ValueError("`sim` has no defined 'standard' estimates of small groups to start from")
    centres = np.linspace(0.0, 1.0, n_centres)
    ratios = np.concatenate([[0.0], np.geomspace(1e-4, 1e4, n_ratios), [np.inf]])
    js_name = "oracle: common factor"
    eb_name = "oracle: factor by size"
    rows = []
    for metric, g in one.groupby("metric", sort=False):
        std = g[g["estimator"] == "standard"]
        if std.empty:
            continue
        js = eb = 0.0
        for _, d in std.groupby("draw"):
            e, t = d["estimate"].to_numpy(float), d["truth"].to_numpy(float)
            js += _oracle_shrink_to_constant(e, t, centres)
            eb += _oracle_size_shrinkage(e, t, d["n"].to_numpy(float), centres, ratios)
        base = float(np.abs(std["estimate"] - std["truth"]).mean())
        res = {"standard": base}
        for est in ("james_stein", "empirical_bayes"):
            a = g[g["estimator"] == est]
            if len(a):
                res[est] = float(np.abs(a["estimate"] - a["truth"]).mean())
        res[js_name] = js / len(std)
        res[eb_name] = eb / len(std)
        for est, v in res.items():
            rows.append(
                {
                    "metric": metric,
                    "estimator": est,
                    "small": v,
                    "cut": 1 - v / base if base else np.nan,
                    "group_draws": len(std),
                }
            )
    return pd.DataFrame(rows)


def lasso_path_oracle(
    n_draws: int = 20,
    *,
    metrics=("selection_rate", "fpr"),
    n_eval: int = 5000,
    data_home: str | os.PathLike | None = None,
    random_state: int = 0,
    pop_truth=None,
    protected: str | list[str] | None = None,
    outcome: str = "y",
    decision: str | None = "decision",
    score: str | None = "score",
    explanatory="auto",
    interactions: bool = True,
    outcome_rates: bool = True,
    small: int = 25,
    n_lambdas: int = 30,
    return_path: bool = False,
):
    """How far could structured regression go with a better choice of its penalty?

    Structured regression's estimate is its weighted lasso at the penalty lambda that
    cross-validation picks from a grid (``lambda_max`` times 30 ratios from 1 to
    1e-4).  Here the evaluation sets of :func:`simulate` (the same draws for the same
    ``n_draws``, ``n_eval``, ``random_state`` and population) are fitted along that
    whole grid with the same features, and the penalty is chosen *knowing the truth*:
    one ratio for all draws (the best fixed rule), and the best ratio of each draw
    separately (a bound on every rule that picks lambda from the grid, cross-validation
    included).  A cut of the standard estimator's small-group error that the per-draw
    oracle does not reach is out of reach of structured regression with those features
    on those draws, whatever picks its penalty.  The pooled variance sigma^2 scales
    every group's weight alike, so it changes no lasso fit (the weights are
    normalised) and is not needed.

    Parameters
    ----------
    n_draws, n_eval, data_home, random_state, pop_truth, protected, outcome, decision, score
        As :func:`simulate`.
    metrics : sequence of str
        Count metrics or "auc".
    explanatory, interactions, outcome_rates
        The features, as :func:`simulate` passes them to structured regression.
    small : int
        Groups with at most this many rows in an evaluation set are small.
    n_lambdas : int
        Size of the penalty grid (structured regression's default 30).
    return_path : bool
        Also return the small-group error at every ratio of the grid.

    Returns
    -------
    DataFrame, or (DataFrame, DataFrame) with ``return_path``
        One row per metric and estimator ("standard", "lasso: best lambda for all
        draws", "lasso: best lambda per draw") with the small-group mean absolute
        error ``small``, its ``cut`` against the standard estimator, the chosen
        ``lambda_ratio`` (lambda / lambda_max; NaN per draw) and the number of small
        ``group_draws``.  The path: metric, lambda_ratio, small, cut.

    Notes
    -----
    Sixteen parameters: :func:`simulate`'s population and design (the same draws, so the
    oracle is compared with the simulation it bounds), structured regression's three feature
    options as :func:`simulate` passes them, and the oracle's own grid and output; a research
    harness that mirrors those two calls rather than a function an audit calls.
    """
    from ..disaggregated._lasso import lambda_max
    from ..disaggregated.evaluate import truncate_to_range
    from ..disaggregated.structured import (
        fit_lasso,
        group_features,
        lambda_ratios,
        standardise_features,
    )

    roles = (outcome, decision, score)
    pop, truth, sensitive = _resolve_population(
        pop_truth, data_home, random_state, protected, roles, metrics
    )
    explanatory = _default_explanatory(explanatory, pop)
    if n_draws < 1 or n_lambdas < 1:
        raise ValueError(f"`n_draws` and `n_lambdas` must be >= 1, got {n_draws}, {n_lambdas}")
    seeds = np.random.SeedSequence(random_state).spawn(n_draws)
    ratios = lambda_ratios(n_lambdas)
    err = {m: np.zeros(n_lambdas) for m in metrics}  # summed over draws' small groups
    best = dict.fromkeys(metrics, 0.0)
    base = dict.fromkeys(metrics, 0.0)
    count = dict.fromkeys(metrics, 0)
    for d in range(n_draws):
        ev = _stratified(pop, n_eval, np.random.default_rng(seeds[d]), sensitive)
        gd = GroupedData.from_frame(ev, sensitive, *roles)
        n = gd.sizes().astype(float)
        feats = group_features(
            gd, interactions=interactions, explanatory=explanatory, outcome_rates=outcome_rates
        )
        F, _ = standardise_features(feats.to_numpy(float))
        names = gd.group_names()
        for m in metrics:
            s = gd.estimate(m)
            t = truth.loc[names, m].to_numpy(float)
            ok = np.isfinite(s) & (n > 0)
            keep = ok & (n <= small) & np.isfinite(t)
            if ok.sum() < 2 or not keep.any():
                continue
            lmax = lambda_max(F[ok], s[ok], n[ok])
            e = np.empty(n_lambdas)
            for i, r in enumerate(ratios):
                # structured regression's own fit at that penalty
                b0, theta = fit_lasso(F[ok], s[ok], n[ok], lmax * r)
                est = truncate_to_range(b0 + F @ theta, m)
                e[i] = np.abs(est[keep] - t[keep]).sum()
            err[m] += e
            best[m] += e.min()
            base[m] += np.abs(s[keep] - t[keep]).sum()
            count[m] += int(keep.sum())
    rows, path = [], []
    for m in metrics:
        if not count[m]:
            continue
        b = base[m] / count[m]
        i = int(np.argmin(err[m]))
        for est, v, r in [
            ("standard", b, np.nan),
            ("lasso: best lambda for all draws", err[m][i] / count[m], ratios[i]),
            ("lasso: best lambda per draw", best[m] / count[m], np.nan),
        ]:
            rows.append(
                {
                    "metric": m,
                    "estimator": est,
                    "small": v,
                    "cut": 1 - v / b if b else np.nan,
                    "lambda_ratio": r,
                    "group_draws": count[m],
                }
            )
        path += [
            {"metric": m, "lambda_ratio": r, "small": v / count[m], "cut": 1 - v / base[m]}
            for r, v in zip(ratios, err[m], strict=True)
        ]
    table = pd.DataFrame(rows)
    return (table, pd.DataFrame(path)) if return_path else table
