"""Synthetic data with known ground truth, needing no files."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import norm

from .._validation import SeedLike, check_count, check_random_state, check_real
from .._vocabulary import renamed_arguments
from ..data import AuditData
from ..metrics.fairness import epsilon_df, gamma_sf, outcome_probabilities
from ._base import Dataset

__all__ = ["make_cbs_semisynthetic", "make_gaussian_threshold", "make_gaussian_threshold_like"]

_DEFAULT_LEVELS: dict[str, list] = {
    "race": ["1", "2", "3", "4"],
    "sex": ["1", "2"],
    "nationality": ["1", "2"],
}


def _categories(categories: Mapping[str, int | Sequence] | None) -> dict[str, list]:
    if categories is None:
        return {k: list(v) for k, v in _DEFAULT_LEVELS.items()}
    if not isinstance(categories, Mapping) or not categories:
        raise TypeError("`categories` must map each attribute to n_values or [values]")
    out = {}
    for name, spec in categories.items():
        values = [str(v) for v in range(1, spec + 1)] if isinstance(spec, int) else list(spec)
        if len(values) < 2:
            raise ValueError(f"attribute {name!r} in `categories` needs at least two values")
        out[str(name)] = values
    return out


@renamed_arguments(levels="categories")
def make_gaussian_threshold(
    categories: Mapping[str, int | Sequence] | None = None,
    *,
    group_sizes: Sequence[int] | None = None,
    n_rows: int = 5000,
    weights: Sequence[float] | None = None,
    threshold: float = 2.5,
    score_noise: float = 0.75,
    random_state: SeedLike = None,
) -> Dataset:
    r"""The Gaussian threshold model of Foulds et al. (Section 5.2), with known P(y|s).

    Every individual of intersection :math:`s` (attribute values coded as
    integers :math:`s_d = 1, 2, \dots` in the order of ``categories``) has a risk
    score :math:`x \sim N(w_s \sum_d s_d, 1)`; the label is :math:`y = [x \ge t]`,
    so :math:`P(y=1|s) = 1 - \Phi(t - w_s \sum_d s_d)` exactly.

    For demonstrations the data also carry an imperfect risk model: ``score =
    expit(2 (x + e - t))`` with ``e ~ N(0, score_noise)`` and ``decision =
    score >= 0.5``.

    Parameters
    ----------
    categories : mapping, optional
        ``{attribute: number of values or list of values}``; default race (4) x
        sex (2) x nationality (2), the shape of the Adult coding.
    group_sizes : sequence of int, optional
        Rows per intersection in Cartesian (C) order; zeros make empty
        intersections.  Default: ``n_rows`` rows spread by a multinomial draw
        with Dirichlet(1) group probabilities, so sizes vary widely.
    n_rows : int, default 5000
        Used only without ``group_sizes``.
    weights : sequence of float, optional
        The group weights :math:`w_s \in (0, 1)`; default Uniform(0.1, 0.4).
    threshold : float, default 2.5
    score_noise : float, default 0.75
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Returns
    -------
    Dataset
        ``frame`` has the attributes, ``x``, ``y``, ``score`` and ``decision``.
        ``truth`` holds ``table`` (per intersection: ``n``, ``w``, ``mu``,
        ``p_true``, ``p_s``), ``epsilon`` and ``gamma`` (of the true P(y|s) with
        the generating P(s)).

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> ds = make_gaussian_threshold(n_rows=1000, random_state=0)
    >>> round(ds.truth["epsilon"], 3) > 0
    True
    """
    rng = check_random_state(random_state)
    lv = _categories(categories)
    dims = tuple(len(v) for v in lv.values())
    n_groups = math.prod(dims)
    if group_sizes is None:
        check_count(n_rows, "n_rows")
        p_s = rng.dirichlet(np.ones(n_groups))
        sizes = rng.multinomial(n_rows, p_s)
    else:
        sizes = np.asarray(group_sizes)
        if sizes.shape != (n_groups,) or (sizes < 0).any() or sizes.sum() == 0:
            raise ValueError(
                f"`group_sizes` must be {n_groups} non-negative counts (one per intersection, "
                f"C order over {list(lv)}) with a positive total"
            )
        sizes = sizes.astype(np.int64)
        p_s = sizes / sizes.sum()
    if weights is None:
        w = rng.uniform(0.1, 0.4, n_groups)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n_groups,) or not np.all((w > 0) & (w < 1)):
            raise ValueError(f"`weights` must be {n_groups} numbers in (0, 1)")
    codes = np.indices(dims).reshape(len(dims), -1)  # (n_attr, n_groups), 0-based
    mu = w * (codes + 1).sum(axis=0)
    p_true = norm.sf(threshold - mu)

    group = np.repeat(np.arange(n_groups), sizes)
    x = rng.normal(mu[group], 1.0)
    y = (x >= threshold).astype(np.int64)
    score = expit(2.0 * (x + rng.normal(0.0, score_noise, x.shape) - threshold))
    frame = pd.DataFrame(
        {
            name: pd.Categorical.from_codes(codes[d][group], categories=values)
            for d, (name, values) in enumerate(lv.items())
        }
    )
    frame["x"] = x
    frame["y"] = y
    frame["score"] = score
    frame["decision"] = (score >= 0.5).astype(np.int64)
    frame = frame.sample(frac=1.0, random_state=rng.integers(2**31)).reset_index(drop=True)

    index = pd.MultiIndex.from_product(list(lv.values()), names=list(lv))
    table = index.to_frame(index=False)
    table["n"] = sizes
    table["w"] = w
    table["mu"] = mu
    table["p_true"] = p_true
    table["p_s"] = p_s
    present = p_s > 0
    p_eps = np.where(present[:, None], outcome_probabilities(p_true), np.nan)
    return Dataset(
        frame=frame,
        protected=tuple(lv),
        outcome="y",
        score="score",
        decision="decision",
        name="gaussian-threshold",
        description=(
            "Gaussian threshold model (Foulds et al. 5.2): x ~ N(w_s * sum_d s_d, 1), "
            f"y = [x >= {threshold:g}]; score = expit(2 (x + N(0, {score_noise:g}) - t))."
        ),
        truth={
            "table": table,
            "epsilon": float(epsilon_df(p_eps)),
            "gamma": float(gamma_sf(p_true, p_s)),
            "threshold": threshold,
        },
    )


def make_gaussian_threshold_like(
    data: AuditData,
    *,
    offset: float = 0.05,
    role: str = "outcome",
    threshold: float = 2.5,
    random_state: SeedLike = None,
) -> Dataset:
    """The paper's semi-synthetic version of a real data set.

    Same attributes and rows per intersection as ``data``; group weights
    ``w_s = P_data(y=1|s) + offset`` (clipped to (0, 1); the offset alone for
    empty groups), so the synthetic P(y=1|s) keeps some association with the
    empirical rates.  See :func:`make_gaussian_threshold`.

    Parameters
    ----------
    data : AuditData
        The real data whose attributes and group sizes are copied.
    offset : float, default 0.05
        Added to the empirical rates to form the group weights.
    role : {"outcome", "decision"}
        Whose empirical rates give the weights.
    threshold : float, default 2.5
        Threshold of the Gaussian model (as in :func:`make_gaussian_threshold`).
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Returns
    -------
    Dataset
        As :func:`make_gaussian_threshold`, with the true ``epsilon`` and ``gamma``
        in ``truth``.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold, make_gaussian_threshold_like
    >>> real = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> like = make_gaussian_threshold_like(real, random_state=1)
    >>> len(like) == real.n_rows
    True
    """
    if not isinstance(data, AuditData):
        raise TypeError(f"`data` must be an AuditData, got {type(data).__name__}")
    rate = data.probabilities(role, pseudo_count=0)[:, 1]
    w = np.clip(np.nan_to_num(rate, nan=0.0) + offset, 1e-3, 1 - 1e-3)
    return make_gaussian_threshold(
        {k: [str(v) for v in vals] for k, vals in data.categories.items()},
        group_sizes=data.group_sizes(),
        weights=w,
        threshold=threshold,
        random_state=random_state,
    )


# COMPAS-like marginals (CBS coding) for a file-free default covariate frame.
_CBS_MARGINALS: dict[str, tuple[list[str], list[float]]] = {
    "race": (
        ["African-American", "Caucasian", "Hispanic", "Asian", "Native American", "Other"],
        [0.51, 0.34, 0.08, 0.005, 0.0018, 0.0632],
    ),
    "sex": (["Male", "Female"], [0.81, 0.19]),
    "age": (["Under 25", "25+"], [0.22, 0.78]),
    "charge": (["Felony", "Misdemeanor"], [0.64, 0.36]),
    "priors": (["None", "1 to 5", "Over 5"], [0.34, 0.46, 0.20]),
}


@renamed_arguments(protected="protected_class")
def make_cbs_semisynthetic(
    covariates: pd.DataFrame | None = None,
    *,
    protected_class: tuple[str, object] | None = None,
    n_bias: int = 2,
    p_bias: float = 0.5,
    mu_sep: float = 0.0,
    mu_suf: float = 0.0,
    delta: float = 0.0,
    weight_sd: float = 0.2,
    sigma_true: float = 0.6,
    sigma_predict: float = 0.2,
    n_rows: int = 6172,
    random_state: SeedLike = None,
) -> Dataset:
    """Semi-synthetic bias injection of the Conditional Bias Scan paper (Section 4).

    A protected class is an attribute value (``protected_class``, random by default);
    its attribute leaves the scan attributes.  A subgroup ``S_bias`` is chosen
    by picking ``n_bias`` of the remaining attributes and including each of
    their values with probability ``p_bias`` (redrawn until non-empty).  True
    log-odds are a sum of per-value weights ``N(0, weight_sd)`` plus
    ``N(0, sigma_true)`` noise; predicted log-odds add ``N(0, sigma_predict)``.
    In ``S_bias`` of the protected class only: predicted log-odds ``+= mu_sep``
    (a separation bias), true log-odds ``-= mu_suf`` (a sufficiency bias), and
    both ``+= delta`` (a base-rate shift with calibrated predictions).

    Parameters
    ----------
    covariates : DataFrame of categorical columns, optional
        For example the COMPAS CBS attributes; default a file-free frame of
        ``n_rows`` rows drawn independently from COMPAS-like marginals of race,
        sex, age, charge and priors.
    protected_class : (attribute, value), optional
        The protected class (default: a random attribute value).
    n_bias : int, default 2
        Number of attributes that define ``S_bias``.
    p_bias : float, default 0.5
        Probability that each value of those attributes is in ``S_bias``.
    mu_sep, mu_suf, delta : float, default 0
        The injected separation bias, sufficiency bias and base-rate shift (log-odds).
    weight_sd : float, default 0.2
        Standard deviation of the per-value weights of the true log-odds.
    sigma_true, sigma_predict : float
        Standard deviations of the noise of the true and the predicted log-odds.
    n_rows : int, default 6172
        Rows of the default covariate frame (ignored with ``covariates``).
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Returns
    -------
    Dataset
        ``frame``: the attributes, ``protected`` (bool), ``y``, ``p``
        (prediction) and ``p_bin`` (``p >= 0.5``); ``covariates`` are the scan
        attributes.  ``truth``: ``protected_class``, ``subgroup`` ({attribute:
        values}, every value for attributes not in S_bias), ``in_subgroup``
        (rows of S_bias in the protected class), ``weights``.

    Notes
    -----
    Twelve parameters: the generator's knobs in Boxer et al.'s notation (Appendix B), so
    that every setting of their experiments is one call; scikit-learn's generators
    (``make_classification``: sixteen parameters) take their design the same way.

    Examples
    --------
    >>> from bayesfair.datasets import make_cbs_semisynthetic
    >>> ds = make_cbs_semisynthetic(protected_class=("race", "African-American"), mu_sep=1.0,
    ...                             n_rows=2000, random_state=0)
    >>> ds.truth["protected_class"]
    ('race', 'African-American')
    """
    for name, value in (("mu_sep", mu_sep), ("mu_suf", mu_suf), ("delta", delta)):
        check_real(value, name)
    rng = check_random_state(random_state)
    if covariates is None:
        covariates = pd.DataFrame(
            {
                name: pd.Categorical(
                    rng.choice(values, size=n_rows, p=np.divide(p, sum(p))), values
                )
                for name, (values, p) in _CBS_MARGINALS.items()
            }
        )
    frame, categories = _categorical_covariates(covariates)
    attr, value = _protected_value(frame, categories, protected_class, rng)
    scan_attrs = [c for c in frame.columns if c != attr]
    if not 1 <= n_bias <= len(scan_attrs):
        raise ValueError(f"`n_bias` must be between 1 and {len(scan_attrs)}, got {n_bias}")
    if not 0 < p_bias <= 1:
        raise ValueError(f"`p_bias` must be in (0, 1], got {p_bias}")
    subgroup = _biased_subgroup(scan_attrs, categories, n_bias, p_bias, rng)
    weights = {
        c: dict(zip(categories[c], rng.normal(0, weight_sd, len(categories[c])), strict=True))
        for c in scan_attrs
    }
    n = len(frame)
    true_logit = np.zeros(n)
    for c in scan_attrs:
        true_logit += frame[c].map(weights[c]).to_numpy(dtype=float)
    true_logit += rng.normal(0, sigma_true, n)
    pred_logit = true_logit + rng.normal(0, sigma_predict, n)
    is_protected = (frame[attr] == value).to_numpy()
    in_s = is_protected.copy()
    for c in scan_attrs:
        in_s &= frame[c].isin(subgroup[c]).to_numpy()
    pred_logit = pred_logit + (mu_sep + delta) * in_s
    true_logit = true_logit + (delta - mu_suf) * in_s
    frame["protected"] = is_protected
    frame["y"] = (rng.random(n) < expit(true_logit)).astype(np.int64)
    frame["p"] = expit(pred_logit)
    frame["p_bin"] = (frame["p"] >= 0.5).astype(np.int64)
    return Dataset(
        frame=frame,
        protected=("protected",),
        outcome="y",
        score="p",
        decision="p_bin",
        covariates=tuple(scan_attrs),
        name="cbs-semisynthetic",
        description=(
            f"CBS semi-synthetic data: protected class {attr} = {value!r}; mu_sep={mu_sep:g}, "
            f"mu_suf={mu_suf:g}, delta={delta:g}, sigma_true={sigma_true:g}, "
            f"sigma_predict={sigma_predict:g}."
        ),
        truth={
            "protected_class": (attr, value),
            "subgroup": subgroup,
            "in_subgroup": in_s,
            "weights": weights,
        },
    )


def _categorical_covariates(covariates) -> tuple[pd.DataFrame, dict]:
    """A copy of the covariates with every column categorical, and the values that occur
    in each (no missing values allowed)."""
    if not isinstance(covariates, pd.DataFrame) or covariates.shape[1] < 2:
        raise ValueError("`covariates` must be a DataFrame with at least two categorical columns")
    frame = covariates.reset_index(drop=True).copy()
    categories = {}
    for c in frame.columns:
        if frame[c].isna().any():
            raise ValueError(f"covariate column {c!r} has missing values")
        if not isinstance(frame[c].dtype, pd.CategoricalDtype):
            frame[c] = pd.Categorical(frame[c])
        categories[c] = [v for v in frame[c].cat.categories if (frame[c] == v).any()]
    return frame, categories


def _protected_value(frame, categories: dict, protected_class, rng) -> tuple:
    """The protected class (attribute, value): the one given, checked, or one drawn from
    the attributes with two values or more."""
    if protected_class is None:
        attr = str(rng.choice([c for c in frame.columns if len(categories[c]) >= 2]))
        return attr, categories[attr][int(rng.integers(len(categories[attr])))]
    attr, value = protected_class
    if attr not in frame.columns:
        raise ValueError(f"protected attribute {attr!r} is not a column of `covariates`")
    if value not in categories[attr]:
        raise ValueError(f"protected value {value!r} does not occur in column {attr!r}")
    return attr, value


def _biased_subgroup(scan_attrs, categories: dict, n_bias: int, p_bias: float, rng) -> dict:
    """The injected subgroup: ``n_bias`` attributes drawn, each keeping every value with
    probability ``p_bias`` (at least one); the others keep all their values."""
    chosen = set(rng.choice(scan_attrs, size=n_bias, replace=False).tolist())
    subgroup: dict[str, list] = {}
    for c in scan_attrs:
        if c in chosen:
            while True:
                pick = [v for v in categories[c] if rng.random() < p_bias]
                if pick:
                    break
            subgroup[c] = pick
        else:
            subgroup[c] = list(categories[c])
    return subgroup
