"""Reproductions of Foulds, Islam, Keya and Pan, *Bayesian Modeling of Intersectional Fairness*.

Table 2 (held-out negative cross-entropy per intersection), Table 3 (1%
subsamples against full-data estimates), the COMPAS case study (Figure 4) and
a calibration study on the Gaussian threshold model, which the paper did not
run.  Every function documents the choices the paper leaves open.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone

from .._validation import check_flag
from .._vocabulary import LEVEL, renamed_arguments
from ..data import AuditData
from ..datasets import load_adult, load_compas, make_gaussian_threshold
from ..frequentist import fairness_confidence_interval
from ..metrics import epsilon_df
from ..models import (
    DirichletMultinomial,
    FairnessModel,
    HierarchicalLogisticRegression,
    LogisticRegression,
    NaiveBayes,
    NeuralNetwork,
    model_average,
    negative_cross_entropy,
    posterior_fairness,
)

__all__ = [
    "AUTHORS_CODES",
    "PAPER_TABLE2",
    "PAPER_TABLE3",
    "SETTINGS",
    "authors_point_estimates",
    "calibration_study",
    "compas_case_study",
    "default_models",
    "summarise_table3",
    "table2",
    "table2_splits",
    "table3",
]

SETTINGS = ("actual, full", "M(x), held-out", "actual, 10%", "M(x), 10%")

#: Table 2 of the paper: {dataset: {model: [PE, FB] x 4 settings}} (NaN: not reported).
_N = np.nan
PAPER_TABLE2: dict[str, dict[str, list[float]]] = {
    "adult": {
        "EDF": [-0.4366, -0.4359, -0.3587, -0.3580, -0.4582, -0.4575, -0.3959, -0.3661],
        "NB": [-0.4334, -0.4334, -0.3646, -0.3540, -0.4357, -0.4478, -0.3649, -0.3537],
        "LR": [-0.4416, -0.4304, -0.3821, -0.3496, -0.4533, -0.4365, -0.3782, -0.3521],
        "DNN": [-0.4308, -0.4291, -0.3645, -0.3528, -0.4408, -0.4314, -0.3555, -0.3631],
        "HLR": [_N, -0.4323, _N, -0.3531, _N, -0.4384, _N, -0.3528],
        "Ensemble": [_N, -0.4337, _N, -0.3597, _N, -0.4444, _N, -0.3647],
    },
    "compas": {
        "EDF": [-0.6899, -0.6889, -0.6491, -0.6490, -0.6745, -0.6736, -0.6652, -0.6610],
        "NB": [-0.6882, -0.6851, -0.6456, -0.6447, -0.6748, -0.6818, -0.6517, -0.6510],
        "LR": [-0.6926, -0.6835, -0.6469, -0.6436, -0.6862, -0.6812, -0.6579, -0.6538],
        "DNN": [-0.6725, -0.6721, -0.6461, -0.6593, -0.6721, -0.6714, -0.6535, -0.6566],
        "HLR": [_N, -0.6859, _N, -0.6457, _N, -0.6721, _N, -0.6569],
        "Ensemble": [_N, -0.6843, _N, -0.6478, _N, -0.6764, _N, -0.6564],
    },
}

#: Table 3: {dataset: {model: [eps PE, eps FB, gamma PE, gamma FB]}} (L1 deviations).
PAPER_TABLE3: dict[str, dict[str, list[float]]] = {
    "adult": {
        "EDF": [2.105, 0.740, 0.028, 0.019],
        "NB": [2.644, 1.614, 0.024, 0.017],
        "LR": [1.367, 0.572, 0.019, 0.008],
        "DNN": [1.958, 2.210, 0.016, 0.031],
        "HLR": [_N, 0.341, _N, 0.011],
        "Ensemble": [_N, 1.489, _N, 0.019],
    },
    "compas": {
        "EDF": [0.541, 0.485, 0.028, 0.022],
        "NB": [1.475, 2.083, 0.031, 0.031],
        "LR": [0.901, 0.208, 0.021, 0.016],
        "DNN": [0.692, 0.884, 0.022, 0.051],
        "HLR": [_N, 0.393, _N, 0.015],
        "Ensemble": [_N, 0.835, _N, 0.026],
    },
}

ModelFactory = Callable[[int], FairnessModel]

#: The integer codes of the protected attributes in the authors' public code
#: (``modeling_Intersectional_Fairness.py`` of rashid-islam/BayesianModelingIntersectionalFairness):
#: ``{dataset: {attribute: values in the order of their codes 0, 1, ...}}``.  Its COMPAS map is
#: African-American 0, Caucasian 1, Hispanic 2 (then Native American, Asian, Other, which the
#: paper merges into Other: code 3 here); its naive Bayes comments give Adult's, "0,1,2,3 values
#: represent Black, White, Asian-Pac-Islander and Other races", Female 0 and Male 1, USA 0 and
#: other nationalities 1.  Of the 24 orders of Adult's races, only this one gives the paper's
#: LR-PE and NB-PE in Table 2 (``pytest tests/replication/test_replication.py -k authors_point``).
AUTHORS_CODES: dict[str, dict[str, tuple[str, ...]]] = {
    "adult": {
        "race": ("Black", "White", "Asian-Pac-Islander", "Other"),
        "sex": ("Female", "Male"),
        "nationality": ("United-States", "Other"),
    },
    "compas": {
        "race": ("African-American", "Caucasian", "Hispanic", "Other"),
        "sex": ("Female", "Male"),
    },
}
_AUTHORS_MODELS = ("EDF", "NB", "LR", "DNN")


def authors_point_estimates(
    data: AuditData,
    *,
    codes: dict[str, Sequence[str]],
    role: str = "outcome",
    models: Sequence[str] = _AUTHORS_MODELS,
    random_state: int = 0,
) -> pd.DataFrame:
    """P(y = 1 | s) from the point-estimate models of the authors' public code (the paper's "PE").

    The paper's point estimates are not MAPs of its Bayesian models: its public
    code fits scikit-learn estimators on the *integer codes* of the protected
    attributes (one numeric column per attribute, ``codes``), so that logistic
    regression is linear in the code of race:

    * ``"LR"``: ``LogisticRegression(C=1.0, solver="liblinear")`` (which also
      penalises the intercept);
    * ``"NB"``: ``BernoulliNB(alpha=0.1, binarize=0.0)``, which binarises every
      code at 0, so race is seen as "code 0 or not";
    * ``"DNN"``: ``MLPClassifier(hidden_layer_sizes=(10, 10, 10), activation="relu",
      solver="adam", random_state=random_state)`` (the authors': 0), its
      convergence warnings silenced as the authors' code silences every warning;
    * ``"EDF"``: the empirical rate, left out (NaN) where it is 0 or 1 or
      undefined, as the authors' ``computeEDFforData`` drops such intersections.

    NB, LR and DNN predict the intersections whose every attribute value occurs in
    ``data`` (the authors loop over the observed values of each attribute); the
    others are NaN.  Each estimator is fitted on the rows that ``data``'s counts
    stand for, so the result needs only the count table.  With Adult's official
    split this gives the paper's LR-PE and NB-PE in Table 2 to 4 decimals
    (-0.4416 and -0.4333 against -0.4334) where the package's own PE, the exact
    MAP of the one-hot model, scores -0.4303 and -0.4329.

    Parameters
    ----------
    data : AuditData
        The training data.
    codes : dict
        ``{attribute: values in the order of their integer codes}`` for every
        protected attribute of ``data`` (:data:`AUTHORS_CODES` has the paper's).
    role : {"outcome", "decision"}
    models : sequence of str
        Any of ``"EDF"``, ``"NB"``, ``"LR"``, ``"DNN"``.
    random_state : int, default 0
        Seed of the network's initial weights and mini-batches.

    Returns
    -------
    pandas.DataFrame
        One column per model, one row per intersection (index: the labels, in
        table order).

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.replication.foulds import authors_point_estimates
    >>> data = make_gaussian_threshold({"a": 3, "b": 2}, n_rows=600, random_state=0).audit_data()
    >>> codes = {name: values for name, values in data.categories.items()}
    >>> pe = authors_point_estimates(data, codes=codes, models=("EDF", "LR"))
    >>> pe.shape
    (6, 2)
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression as SkLR
    from sklearn.naive_bayes import BernoulliNB
    from sklearn.neural_network import MLPClassifier

    unknown = [m for m in models if m not in _AUTHORS_MODELS]
    if unknown:
        raise ValueError(f"`models` must be among {list(_AUTHORS_MODELS)}, got {unknown}")
    table = data.table
    columns = []
    for attr in data.protected:
        if attr not in codes:
            raise ValueError(f"`codes` has no integer codes for the protected attribute {attr!r}")
        code = {value: i for i, value in enumerate(codes[attr])}
        missing = sorted(set(data.categories[attr]) - set(code))
        if missing:
            raise ValueError(f"`codes[{attr!r}]` has no code for the values {missing}")
        columns.append(np.array([code[value] for value in table[attr]], dtype=int))
    x = np.column_stack(columns)
    counts = data.counts(role)
    n = counts.sum(axis=1)
    # intersections whose every attribute value has rows: the authors' loop over observed values
    seen = np.ones(len(x), dtype=bool)
    for j in range(x.shape[1]):
        seen &= np.isin(x[:, j], np.unique(x[n > 0, j]))
    rows = np.repeat(np.vstack([x, x]), np.concatenate([counts[:, 1], counts[:, 0]]), axis=0)
    labels = np.repeat([1, 0], [counts[:, 1].sum(), counts[:, 0].sum()])
    estimators = {
        "NB": lambda: BernoulliNB(alpha=0.1, binarize=0.0),
        "LR": lambda: SkLR(C=1.0, solver="liblinear"),
        "DNN": lambda: MLPClassifier(
            hidden_layer_sizes=(10, 10, 10),
            activation="relu",
            solver="adam",
            random_state=random_state,
        ),
    }
    out = {}
    for name in models:
        if name == "EDF":
            with np.errstate(invalid="ignore", divide="ignore"):
                rate = counts[:, 1] / n
            out[name] = np.where((rate > 0) & (rate < 1), rate, np.nan)
            continue
        if np.unique(labels).size < 2:
            raise ValueError(
                f"{name} needs rows of both {role} values in `data`, which has "
                f"{counts[:, 1].sum()} rows of 1 and {counts[:, 0].sum()} of 0"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = estimators[name]().fit(rows, labels)
        out[name] = np.where(seen, clf.predict_proba(x)[:, 1], np.nan)
    return pd.DataFrame(out, index=pd.Index(data.group_labels, name="intersection"))


def _authors_fairness(p1: np.ndarray, n: np.ndarray, *, empirical: bool) -> tuple[float, float]:
    """epsilon-DF and gamma-SF as the authors' code computes them from a point estimate.

    Over the intersections where ``p1`` is defined; P(s) is ``n / N`` for the
    empirical estimate and ``(n + 1/2) / (N + 1)`` for the models, not renormalised
    over the intersections kept (``subgroupFairness``).
    """
    total = n.sum()
    share = n / total if empirical else (n + 0.5) / (total + 1)
    keep = np.isfinite(p1)
    p1, share = p1[keep], share[keep]
    eps = float(epsilon_df(np.stack([1 - p1, p1], axis=-1)))
    overall = float(np.sum(p1 * share))
    return eps, float(np.max(share * np.abs(overall - p1))) if p1.size else np.nan


def default_models(
    *, draws: int = 1000, chains: int = 4, dnn: bool = True, dnn_iterations: int = 30_000
) -> dict[str, ModelFactory]:
    """The paper's models as factories of a seed.

    EDF is the Dirichlet-multinomial with pseudo_count = 0.5 (its predictive is the
    paper's EDF-FB, its point estimate EDF-PE); LR and HLR use NUTS (sum-to-zero
    effects); the DNN uses ADVI, the paper's method, because its posterior is
    multimodal.

    Parameters
    ----------
    draws, chains : int
        NUTS settings of LR and HLR (and the draws of the conjugate models).
    dnn : bool, default True
        Include the neural network.
    dnn_iterations : int, default 30000
        ADVI iterations of the neural network.

    Returns
    -------
    dict
        Model name -> function of a seed returning an unfitted model.

    Examples
    --------
    >>> from bayesfair.replication.foulds import default_models
    >>> sorted(default_models(dnn=False))
    ['EDF', 'HLR', 'LR', 'NB']
    """
    models: dict[str, ModelFactory] = {
        "EDF": lambda s: DirichletMultinomial(
            pseudo_count=0.5, draws=draws, chains=chains, random_state=s
        ),
        "NB": lambda s: NaiveBayes(draws=draws, chains=chains, random_state=s),
        "LR": lambda s: LogisticRegression(draws=draws, tune=draws, chains=chains, random_state=s),
        "HLR": lambda s: HierarchicalLogisticRegression(
            draws=draws, tune=draws, chains=chains, random_state=s
        ),
    }
    if dnn:
        models["DNN"] = lambda s: NeuralNetwork(
            method="advi", advi_iterations=dnn_iterations, draws=draws, random_state=s
        )
    return models


def _adult_mechanism(train: pd.DataFrame, seed: int):
    """M(x): logistic regression on all Adult features (one-hot categorical, scaled numeric)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression as SkLR
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    cat = [
        "workclass",
        "education",
        "marital_status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "native_country",
    ]
    num = ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
    pre = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), cat), ("num", StandardScaler(), num)]
    )
    clf = make_pipeline(pre, SkLR(max_iter=2000, random_state=seed))
    clf.fit(train[cat + num], train["income_gt_50k"])
    return lambda df: clf.predict(df[cat + num]).astype(int)


def _subsample(frame: pd.DataFrame, n: int, rng) -> pd.DataFrame:
    idx = rng.choice(len(frame), size=n, replace=False)
    return frame.iloc[np.sort(idx)].reset_index(drop=True)


def table2_splits(
    dataset: str,
    *,
    data_home: str | os.PathLike | None = None,
    random_state: int = 0,
) -> dict[str, tuple[AuditData, AuditData, str]]:
    """The four training/test settings of Table 2: ``{setting: (train, test, role)}``.

    Adult: the official split.  M(x) is a logistic regression on all features
    trained on a random half of the training set; the ``P(y'|s)`` models see the
    other half relabelled by M(x) and are scored on the relabelled test set.
    The sparse settings keep the instance counts the paper states (6,512
    rows for actual labels, 3,256 for M(x) labels).
    COMPAS (Foulds coding, 7,214 rows): a random split into 5,410 training and
    1,804 test rows (``random_state``); M(x) is the COMPAS decision itself, so
    its models use the whole training set; the sparse settings use 10% of it
    (541 rows).

    Parameters
    ----------
    dataset : {"adult", "compas"}
    data_home : path, optional
        Where the reference files are.
    random_state : int, default 0
        Seeds the split and the subsamples.

    Returns
    -------
    dict
        ``{setting: (train AuditData, test AuditData, role)}``.
    """
    rng = np.random.default_rng(random_state)
    if dataset == "adult":
        train = load_adult("train", data_home=data_home).frame
        test = load_adult("test", data_home=data_home).frame
        perm = rng.permutation(len(train))
        half_a = train.iloc[np.sort(perm[: len(train) // 2])].reset_index(drop=True)
        half_b = train.iloc[np.sort(perm[len(train) // 2 :])].reset_index(drop=True)
        mech = _adult_mechanism(half_a, random_state)
        half_b = half_b.assign(mx=mech(half_b))
        test = test.assign(mx=mech(test))
        roles = dict(protected=["race", "sex", "nationality"], outcome="income_gt_50k")
        n_sparse = (6512, 3256)
        mech_train, mech_col = half_b, "mx"
    elif dataset == "compas":
        frame = load_compas("foulds", data_home=data_home).frame
        perm = rng.permutation(len(frame))
        train = frame.iloc[np.sort(perm[:5410])].reset_index(drop=True)
        test = frame.iloc[np.sort(perm[5410:])].reset_index(drop=True)
        roles = dict(protected=["race", "sex"], outcome="two_year_recid")
        n_sparse = (541, 541)
        mech_train, mech_col = train, "compas_decision"
    else:
        raise ValueError(f"`dataset` must be 'adult' or 'compas', got {dataset!r}")

    def audit(df: pd.DataFrame, decision: str | None = None) -> AuditData:
        return AuditData(df, decision=decision, **roles)

    return {
        "actual, full": (audit(train), audit(test), "outcome"),
        "M(x), held-out": (audit(mech_train, mech_col), audit(test, mech_col), "decision"),
        "actual, 10%": (audit(_subsample(train, n_sparse[0], rng)), audit(test), "outcome"),
        "M(x), 10%": (
            audit(_subsample(mech_train, n_sparse[1], rng), mech_col),
            audit(test, mech_col),
            "decision",
        ),
    }


def table2(
    dataset: str,
    *,
    models: dict[str, ModelFactory] | None = None,
    data_home: str | os.PathLike | None = None,
    random_state: int = 0,
    ensemble: str | None = "bma",
    authors_pe: bool = True,
) -> pd.DataFrame:
    """Reproduce Table 2 for one data set: negative cross-entropy, PE and FB, four settings.

    Parameters
    ----------
    dataset : {"adult", "compas"}
    models : dict, optional
        Model name -> function of a seed returning an unfitted model (default
        :func:`default_models`).
    data_home : path, optional
        Where the reference files are.
    random_state : int, default 0
        Seeds the splits (:func:`table2_splits`) and the fits.
    ensemble : {"bma", "stacking", ...} or None
        Also score the model average of the fitted models.
    authors_pe : bool, default True
        Also score the point estimates of the authors' public code
        (:func:`authors_point_estimates`, estimate ``"PE (authors)"``) for NB, LR
        and DNN where ``models`` has them: the paper's PE column.  (EDF's is its
        own PE, the empirical rate.)

    Returns
    -------
    pandas.DataFrame
        Long table with columns ``model``, ``setting``, ``estimate`` (PE, FB or
        "PE (authors)"), ``ours``, ``paper`` and ``difference``; PE is the
        package's point estimate (the MAP; counts for EDF; empirical Bayes for HLR).
    """
    models = models or default_models()
    check_flag(authors_pe, "authors_pe")
    authors = [m for m in ("NB", "LR", "DNN") if m in models] if authors_pe else []
    rows = []
    splits = table2_splits(dataset, data_home=data_home, random_state=random_state)
    for s_idx, (setting, (train, test, role)) in enumerate(splits.items()):
        fitted = []
        for m_idx, (name, factory) in enumerate(models.items()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                model = factory(random_state + 100 * s_idx + m_idx).fit(train, role=role)
            fitted.append(model)
            for est in ("PE", "FB"):
                value = negative_cross_entropy(
                    model, test, role=role, estimate="point" if est == "PE" else "predictive"
                )
                rows.append((name, setting, est, value))
        if authors:
            pe = authors_point_estimates(
                train,
                codes=AUTHORS_CODES[dataset],
                role=role,
                models=authors,
                random_state=random_state,
            )
            for name in authors:
                value = negative_cross_entropy(pe[name].to_numpy(), test, role=role)
                rows.append((name, setting, "PE (authors)", value))
        if ensemble:
            avg = model_average(fitted, ensemble)
            rows.append(("Ensemble", setting, "FB", negative_cross_entropy(avg, test, role=role)))
    out = pd.DataFrame(rows, columns=["model", "setting", "estimate", "ours"])
    paper = PAPER_TABLE2[dataset]
    out["paper"] = [
        paper.get(m, [np.nan] * 8)[2 * SETTINGS.index(s) + (e == "FB")]
        for m, s, e in zip(out["model"], out["setting"], out["estimate"], strict=True)
    ]
    out["difference"] = out["ours"] - out["paper"]
    return out


def _fairness_estimates(model: FairnessModel, point: bool = True) -> dict[str, float]:
    pf = posterior_fairness(model, point=point)
    return {
        "eps_PE": pf.o["epsilon"],
        "eps_FB": pf.x["epsilon"],
        "eps_post": float(np.median(pf.draws["epsilon"])),
        "gamma_PE": pf.o["gamma"],
        "gamma_FB": pf.x["gamma"],
        "gamma_post": float(np.median(pf.draws["gamma"])),
    }


def table3(
    dataset: str,
    *,
    models: dict[str, ModelFactory] | None = None,
    data_home: str | os.PathLike | None = None,
    fraction: float = 0.01,
    replicates: int = 10,
    random_state: int = 0,
    ensemble: str | None = "bma",
    point_estimates: str = "map",
) -> pd.DataFrame:
    """Reproduce Table 3: L1 deviation of 1%-subsample estimates from full-data "ground truth".

    As in the paper: the data are the M(x)-labelled training data (Adult: the
    logistic-regression mechanism on the held-out half; COMPAS: the COMPAS
    decision); the ground truth of epsilon-DF and gamma-SF is the median of
    all finite estimates, over ``replicates`` full-size bootstrap samples, all
    models and both estimates (PE and FB).  FB is the posterior-predictive
    plug-in ("X"), and ``post`` the posterior median of the metric (the middle
    of the paper's box plots), the other reading of "fully Bayesian";
    "Ensemble" is the model average (``ensemble``) of the fitted models.  PE is
    chosen by ``point_estimates``:

    * ``"map"``: the package's point estimates of the same models (the MAP;
      counts for EDF, whose epsilon is infinite where an intersection's rate is
      0 or 1; empirical Bayes for HLR);
    * ``"authors"``: the paper's, from the authors' public code
      (:func:`authors_point_estimates`: scikit-learn estimators on integer codes
      of the attributes, EDF without the intersections whose rate is 0 or 1, and
      their formula of gamma), for EDF, NB, LR and DNN; HLR has none (the paper's
      "X").

    Both are computed on every replicate (``attrs["estimates"]``), so
    :func:`summarise_table3` gives the other reading without refitting.

    Two deviations are reported, because the paper's text admits both:

    * ``eps_PE``, ``eps_FB``, ``eps_post``, ``gamma_PE`` ...: the paper's reading,
      "calculated at the left end of the curves in Figure 2", whose points are
      averages over the bootstrap samples: ``|mean_r(estimate_r) - truth|``;
    * ``mae_eps_PE`` ... ``mae_gamma_post``: the mean absolute deviation
      ``mean_r |estimate_r - truth|``, which also charges the estimator's
      variance across samples.

    Parameters
    ----------
    dataset : {"adult", "compas"}
    models : dict, optional
        Model name -> function of a seed returning an unfitted model (default
        :func:`default_models`).
    data_home : path, optional
        Where the reference files are.
    fraction : float, default 0.01
        Size of the subsamples relative to the data.
    replicates : int, default 10
        Bootstrap replicates (of the full data and of the subsamples).
    random_state : int, default 0
    ensemble : {"bma", "stacking", ...} or None
        Also evaluate the model average of the fitted models.
    point_estimates : {"map", "authors"}, default "map"
        Which point estimates the PE columns and the ground truth use.

    Returns
    -------
    pandas.DataFrame
        One row per model with both sets of columns and the paper's values
        (``paper_eps_PE`` ...); ``attrs`` hold ``truth``, ``rows_small``,
        ``point_estimates`` and the per-replicate estimates (``estimates``, a long
        DataFrame with the package's PE in ``eps_PE`` and the authors' in
        ``eps_PE_authors``).
    """
    _check_point_estimates(point_estimates)
    models = models or default_models()
    splits = table2_splits(dataset, data_home=data_home, random_state=random_state)
    train, _, _ = splits["M(x), held-out"]
    frame = train.frame
    rng = np.random.default_rng(random_state + 1)
    authors = [m for m in _AUTHORS_MODELS if m in models]

    def estimates(size: int, label: str) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for r in range(replicates):
            boot = frame.iloc[rng.integers(0, len(frame), size)].reset_index(drop=True)
            data = AuditData(
                boot,
                list(train.protected),
                train.outcome,
                decision=train.decision,
                categories=train.categories,
            )
            pe = authors_point_estimates(
                data,
                codes=AUTHORS_CODES[dataset],
                role="decision",
                models=authors,
                random_state=random_state,
            )
            n = data.counts("decision").sum(axis=1).astype(float)
            fitted = []
            for m_idx, (name, factory) in enumerate(models.items()):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    model = factory(random_state + 1000 * r + m_idx).fit(data, role="decision")
                fitted.append(model)
                row = {"size": label, "replicate": r, "model": name, **_fairness_estimates(model)}
                if name in authors:
                    eps, gamma = _authors_fairness(pe[name].to_numpy(), n, empirical=name == "EDF")
                    row.update(eps_PE_authors=eps, gamma_PE_authors=gamma)
                out.append(row)
            if ensemble and len(fitted) > 1:
                avg = _fairness_estimates(model_average(fitted, ensemble), point=False)
                out.append({"size": label, "replicate": r, "model": "Ensemble", **avg})
        return out

    n_small = max(round(fraction * len(frame)), 2)
    est = pd.DataFrame(estimates(len(frame), "full") + estimates(n_small, "small"))
    for key in ("eps_PE_authors", "gamma_PE_authors"):
        if key not in est:
            est[key] = np.nan
    out = summarise_table3(est, dataset=dataset, point_estimates=point_estimates)
    out.attrs["rows_small"] = n_small
    return out


def _check_point_estimates(point_estimates: str) -> None:
    if point_estimates not in ("map", "authors"):
        raise ValueError(f"`point_estimates` must be 'map' or 'authors', got {point_estimates!r}")


def summarise_table3(
    estimates: pd.DataFrame, *, dataset: str, point_estimates: str = "map"
) -> pd.DataFrame:
    """Table 3 from the per-replicate estimates of :func:`table3` (``attrs["estimates"]``).

    Parameters
    ----------
    estimates : pandas.DataFrame
        ``table3(...).attrs["estimates"]``.
    dataset : {"adult", "compas"}
        Which of the paper's values to print beside ours.
    point_estimates : {"map", "authors"}, default "map"
        The package's point estimates or the authors' (see :func:`table3`): they
        fill the PE columns and enter the ground truth.

    Returns
    -------
    pandas.DataFrame
        As :func:`table3`.
    """
    _check_point_estimates(point_estimates)
    if dataset not in PAPER_TABLE3:
        raise ValueError(f"`dataset` must be 'adult' or 'compas', got {dataset!r}")
    est = estimates.copy()
    if point_estimates == "authors":
        est["eps_PE"] = est["eps_PE_authors"]
        est["gamma_PE"] = est["gamma_PE_authors"]
    keys = ("eps_PE", "eps_FB", "eps_post", "gamma_PE", "gamma_FB", "gamma_post")
    full = est[(est["size"] == "full") & (est["model"] != "Ensemble")]
    truth = {}
    for metric in ("eps", "gamma"):
        values = full[[f"{metric}_PE", f"{metric}_FB"]].to_numpy(float).ravel()
        truth[metric] = float(np.median(values[np.isfinite(values)]))
    small = est[est["size"] == "small"]
    rows = []
    for name, ests in small.groupby("model", sort=False):
        curve: dict[str, float] = {}
        mae: dict[str, float] = {}
        for key in keys:
            dev = ests[key].to_numpy(float) - truth[key.split("_")[0]]
            defined = not np.isnan(dev).all()
            curve[key] = float(abs(np.mean(dev))) if defined else np.nan
            mae[f"mae_{key}"] = float(np.mean(np.abs(dev))) if defined else np.nan
        row: dict[str, object] = {"model": name, **curve, **mae}
        paper = PAPER_TABLE3[dataset].get(name, [np.nan] * 4)
        for key, value in zip(("eps_PE", "eps_FB", "gamma_PE", "gamma_FB"), paper, strict=True):
            row[f"paper_{key}"] = value
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["truth"] = truth
    out.attrs["point_estimates"] = point_estimates
    out.attrs["estimates"] = estimates
    return out


def compas_case_study(
    model: FairnessModel | None = None,
    *,
    data_home: str | os.PathLike | None = None,
    random_state: int = 0,
):
    """Figure 4: epsilon-DF and gamma-SF of COMPAS labels and decisions and the bias
    amplification, all 7,214 defendants (Foulds coding), with HLR-FB by default.

    Parameters
    ----------
    model : FairnessModel, optional
        An unfitted model whose settings both fits copy (default HLR with NUTS).
    data_home : path, optional
        Where ``compas-scores-two-years.csv`` is (see
        :func:`~bayesfair.datasets.load_compas`).
    random_state : int, default 0
        Seed of the label model; the decision model's is one more.

    Returns
    -------
    PosteriorFairness
        Of the label model against the decision model.
    """
    data = load_compas("foulds", data_home=data_home).audit_data()
    make = (
        (lambda s: HierarchicalLogisticRegression(random_state=s))
        if model is None
        else (lambda s: clone(model).set_params(random_state=s))
    )
    y = make(random_state).fit(data, role="outcome")
    d = make(random_state + 1).fit(data, role="decision")
    return posterior_fairness(y, d, random_state=random_state)


@renamed_arguments(levels="categories", prob="level")
def calibration_study(
    factories: dict[str, ModelFactory],
    *,
    replicates: int = 50,
    n_rows: int = 7214,
    categories: dict[str, int] | None = None,
    level: float = LEVEL,
    p_s: str | Sequence[str] = ("empirical", "posterior"),
    weights: Sequence[float] | None = None,
    frequentist: bool = False,
    random_state: int = 0,
) -> pd.DataFrame:
    """How often the ``level`` credible interval of epsilon-DF and gamma-SF covers the truth.

    Each replicate redraws a data set from one Gaussian threshold model (fixed
    group weights and group probabilities, drawn once from ``random_state``;
    default shape race 4 x sex 2 like COMPAS, ``n_rows`` rows) and fits every
    model.  The intervals are the package's HDIs.  The truth is that of the
    generating P(y|s) and P(s).  gamma's posterior is computed with each of
    ``p_s`` (see :func:`~bayesfair.models.posterior_fairness`: the empirical
    P(s), or P(s) drawn from its posterior) from the same fits.

    Parameters
    ----------
    factories : dict
        Model name -> function of a seed returning an unfitted model.
    replicates : int, default 50
    n_rows : int, default 7214
        Rows of every replicate.
    categories : dict, optional
        ``{attribute: number of values}``; default race 4 x sex 2.
    level : float, default 0.9
        Credible mass of the intervals.
    p_s : str or sequence of str
        ``"empirical"`` and/or ``"posterior"``.
    weights : sequence of float, optional
        The generator's group weights (see
        :func:`~bayesfair.datasets.make_gaussian_threshold`); default: drawn once from
        ``random_state``. Weights near 0 make a nearly fair population.
    frequentist : bool, default False
        Also score the confidence intervals of
        :func:`~bayesfair.frequentist.fairness_confidence_interval` at level ``level`` on
        the same data (model ``"frequentist CI"``).
    random_state : int, default 0

    Returns
    -------
    pandas.DataFrame
        One row per (model, metric, p_s): coverage, its binomial standard
        error, mean interval width, and the replicates used (``p_s`` is "n/a" for
        epsilon, which does not use P(s)).

    Examples
    --------
    >>> from bayesfair.models import DirichletMultinomial
    >>> from bayesfair.replication.foulds import calibration_study
    >>> cov = calibration_study({"EDF": lambda s: DirichletMultinomial(random_state=s)},
    ...                         replicates=5, n_rows=2000)
    >>> sorted(set(cov["metric"]))
    ['epsilon', 'gamma']
    """
    modes = (p_s,) if isinstance(p_s, str) else tuple(p_s)
    categories = categories or {"race": 4, "sex": 2}
    check_flag(frequentist, "frequentist")
    base = make_gaussian_threshold(
        categories, n_rows=1000, weights=weights, random_state=random_state
    )
    w = base.truth["table"]["w"].to_numpy()
    truth_p_s = base.truth["table"]["p_s"].to_numpy()
    rng = np.random.default_rng(random_state + 1)
    hits: dict[tuple[str, str, str], list[float]] = {}
    widths: dict[tuple[str, str, str], list[float]] = {}
    for r in range(replicates):
        ds = make_gaussian_threshold(
            categories, group_sizes=rng.multinomial(n_rows, truth_p_s), weights=w, random_state=rng
        )
        data = ds.audit_data()
        if frequentist:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                ci = fairness_confidence_interval(data, level=level)
            for metric, (lo, hi) in (
                ("epsilon", ci.epsilon_interval),
                ("gamma", ci.gamma_interval),
            ):
                key = ("frequentist CI", metric, "n/a")
                hits.setdefault(key, []).append(float(lo <= ds.truth[metric] <= hi))
                widths.setdefault(key, []).append(float(hi - lo))
        for m_idx, (name, factory) in enumerate(factories.items()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                model = factory(random_state + 1000 * r + m_idx).fit(data)
            for i, mode in enumerate(modes):
                pf = posterior_fairness(model, level=level, point=False, p_s=mode, random_state=r)
                s = pf.summary().set_index("metric")
                for metric in ("epsilon", "gamma") if i == 0 else ("gamma",):
                    key = (name, metric, mode if metric == "gamma" else "n/a")
                    lo, hi = s.loc[metric, "lower"], s.loc[metric, "upper"]
                    hits.setdefault(key, []).append(float(lo <= ds.truth[metric] <= hi))
                    widths.setdefault(key, []).append(float(hi - lo))
    rows = []
    for (name, metric, mode), h in hits.items():
        cov = float(np.mean(h))
        rows.append(
            {
                "model": name,
                "metric": metric,
                "p_s": mode,
                "coverage": cov,
                "se": float(np.sqrt(cov * (1 - cov) / len(h))),
                "mean_width": float(np.mean(widths[(name, metric, mode)])),
                "replicates": len(h),
            }
        )
    return pd.DataFrame(rows)
