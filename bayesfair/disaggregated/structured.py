"""Structured regression of per-group metrics (Herlihy et al., Section 4).

The standard estimates s_a are regressed on group features -- group-identity
indicators (so the model can express any vector of group values), attribute-value
indicators, optional pairwise interactions and explanatory features -- by a lasso
whose loss weights each group by 1 / sigma_a^2 = n_a / sigma^2 (eq. 5), with the
penalty chosen by 10-fold cross-validation over rows, stratified by group.
Intervals by the residual bootstrap lasso + partial ridge (rBLPR) of Liu, Xu and
Li (2020).  Goodness-of-fit F-tests compare nested weighted least-squares models
without group identities (Table 1).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from numbers import Real

import numpy as np
import pandas as pd
from scipy import stats
from scipy.optimize import nnls

from .._validation import check_instance, check_real, check_same_index
from .._vocabulary import LEVEL, moved_options, renamed_arguments
from .._warning_location import user_stacklevel
from ._lasso import PartialRidge, lambda_max, lasso_cd
from .groups import GroupedData, metric_name

__all__ = ["departure_variance", "goodness_of_fit", "group_features", "structured_regression"]


def group_features(
    gd: GroupedData,
    *,
    identity: bool = True,
    attributes: bool = True,
    interactions: bool = False,
    explanatory: Mapping[str, Callable[[pd.DataFrame], np.ndarray] | np.ndarray] | None = None,
    outcome_rates: bool = False,
    outcome_interactions: bool = False,
    rows: np.ndarray | None = None,
) -> pd.DataFrame:
    """Feature matrix phi_a (one row per group) of structured regression.

    ``explanatory`` maps a name to a function of the data frame returning one value
    per row; the feature is its mean over the group's rows.  ``outcome_rates`` adds
    P[Y = 1] in the group; ``outcome_interactions`` the products of that rate with the
    attribute indicators (the paper's Y . sens).  Groups without rows get the
    overall mean of an explanatory feature.

    Parameters
    ----------
    gd : GroupedData
    identity : bool, default True
        One indicator per group.
    attributes : bool, default True
        One indicator per attribute value.
    interactions : bool, default False
        Indicators of every pair of values of two attributes.
    explanatory : mapping of str to callable or array, optional
        ``{name: f(frame) -> one value per row}`` (or those values themselves); the
        feature is the group mean.
    outcome_rates, outcome_interactions : bool, default False
        See above.
    rows : numpy.ndarray, optional
        Boolean row selection for the group means (cross-validation folds).

    Returns
    -------
    pandas.DataFrame
        One row per group (index: group names), one column per feature.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayesfair.disaggregated import GroupedData, group_features
    >>> df = pd.DataFrame({"a": ["x", "y"] * 4, "b": ["u"] * 4 + ["v"] * 4, "y": [1, 0] * 4})
    >>> gd = GroupedData.from_frame(df, ["a", "b"], "y")
    >>> list(group_features(gd, identity=False).columns)
    ['a=x', 'a=y', 'b=u', 'b=v']
    """
    lab = gd.labels
    cols: dict[str, np.ndarray] = {}
    if identity:
        for a, name in enumerate(gd.group_names()):
            cols[f"group[{name}]"] = (np.arange(gd.n_groups) == a).astype(float)
    ind = {}
    for c in lab.columns:
        for v in pd.unique(lab[c]):
            ind[f"{c}={v}"] = (lab[c] == v).to_numpy(float)
    if attributes:
        cols.update(ind)
    if interactions:
        for c1, c2 in combinations(lab.columns, 2):
            for v1 in pd.unique(lab[c1]):
                for v2 in pd.unique(lab[c2]):
                    cols[f"{c1}={v1} x {c2}={v2}"] = ind[f"{c1}={v1}"] * ind[f"{c2}={v2}"]
    sel = np.ones(len(gd.group), bool) if rows is None else rows
    n = np.bincount(gd.group[sel], minlength=gd.n_groups).astype(float)

    def gmean(values: np.ndarray) -> np.ndarray:
        tot = np.bincount(gd.group[sel], weights=values[sel], minlength=gd.n_groups)
        overall = values[sel].mean() if sel.any() else 0.0
        return np.where(n > 0, tot / np.maximum(n, 1), overall)

    for name, fn in (explanatory or {}).items():
        out = fn(gd.frame) if callable(fn) else fn
        check_same_index(data=gd.frame, **{f"explanatory feature {name!r}": out})
        try:
            vals = np.asarray(out, float)
        except (TypeError, ValueError) as err:
            raise ValueError(f"explanatory feature {name!r} must return numbers ({err})") from None
        if vals.shape != (len(gd.group),):
            raise ValueError(f"explanatory feature {name!r} must return one value per row")
        if not np.isfinite(vals).all():  # a NaN made the lasso's SVD fail ('did not converge')
            raise ValueError(
                f"explanatory feature {name!r} returned {int((~np.isfinite(vals)).sum())} "
                "missing or infinite value(s); it must give every row a finite number"
            )
        cols[f"expl:{name}"] = gmean(vals)
    if outcome_rates or outcome_interactions:
        rate = gmean(gd.y.astype(float))
        if outcome_rates:
            cols["P(Y=1)"] = rate
        if outcome_interactions:
            for k, v in ind.items():
                cols[f"P(Y=1) x {k}"] = rate * v
    return pd.DataFrame(cols, index=gd.group_names())


def standardise_features(F: np.ndarray):
    """Indicator columns stay as they are (one penalty scale for every group and attribute
    value, as in the paper); other columns are scaled to the standard deviation 0.5 of a
    balanced indicator, so the penalty treats them alike."""
    sd = np.ones(F.shape[1])
    binary = np.all((F == 0) | (F == 1), axis=0)
    spread = F.std(axis=0)
    cont = ~binary & (spread > 1e-12)
    sd[cont] = spread[cont] / 0.5
    return F / sd, sd


def target_copies(features: pd.DataFrame, s: np.ndarray, ok: np.ndarray) -> list[str]:
    """Explanatory columns of ``features`` that are an exact affine function of the standard
    estimates ``s`` on the groups ``ok`` that have one: the metric itself in disguise, such
    as the outcome-rate feature when the metric is the base rate, or the selection rate of
    decisions that equal the outcome.  The lasso fits every group exactly through such a
    column, its residuals are zero, and its rBLPR intervals shrink to nothing (for the base
    rate, small groups' 95% intervals covered the truth half the time).  Indicator columns
    (group identities, attribute values) are the design, not explanatory features, and
    are never reported; with three groups or fewer an exact fit is too easily a
    coincidence (any column fits two), so none is."""
    y = np.asarray(s, float)[ok]
    if ok.sum() <= 3 or np.ptp(y) == 0:
        return []
    tol = 1e-9 * max(1.0, float(np.max(np.abs(y))))
    out = []
    for name in features.columns:
        f = features[name].to_numpy(float)[ok]
        if np.all((f == 0) | (f == 1)) or np.ptp(f) == 0:
            continue
        design = np.column_stack([np.ones_like(f), f])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        if np.max(np.abs(design @ coef - y)) <= tol:
            out.append(str(name))
    return out


def drop_target_copies(
    features: pd.DataFrame, s: np.ndarray, ok: np.ndarray, what: str
) -> tuple[pd.DataFrame, list[str]]:
    """``features`` without its :func:`target_copies`, and their names; warns, naming
    ``what`` (the fit that leaves them out), when there are any."""
    dropped = target_copies(features, s, ok)
    if dropped:
        warnings.warn(
            f"{what}: left out the feature(s) {dropped}, an exact linear function of the "
            "metric's own standard estimates (the metric itself, such as the outcome rate of "
            "a base rate): a regression on them reproduces every group's estimate, with "
            "residuals, and so intervals, of zero",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return features.drop(columns=dropped), dropped


def lambda_ratios(n_lambdas: int) -> np.ndarray:
    """The penalty grid of structured regression as fractions of ``lambda_max``: from 1
    (every coefficient zero) down to 1e-4, evenly on a log scale."""
    return np.logspace(0, -4, n_lambdas)


def fit_lasso(X, y, w, lam):
    b0, th = lasso_cd(X, y, w, lam, np.zeros(X.shape[1]))
    return b0, th


def _cv_lambda(gd, metric, F, sigma2, lams, n_folds, rng, fold_features=None):
    """10-fold CV over rows, folds stratified by group; weighted squared error on the
    held-out fold's standard estimates.  ``fold_features(rows)`` gives the (scaled)
    features of a training fold; without it every fold uses ``F``."""
    fold = gd.folds(n_folds, rng)
    loss = np.zeros(len(lams))
    for k in range(n_folds):
        tr = fold != k
        s_tr, s_te = gd.estimate(metric, tr), gd.estimate(metric, ~tr)
        n_tr, n_te = gd.sizes(tr).astype(float), gd.sizes(~tr).astype(float)
        ok = np.isfinite(s_tr) & (n_tr > 0)
        te = np.isfinite(s_te) & (n_te > 0)
        if ok.sum() < 2 or not te.any():
            continue
        Fk = F if fold_features is None else fold_features(tr)
        X_tr, X_te = Fk[ok], Fk[te]  # copies: taken once per fold, not per penalty
        y_tr, w_tr = s_tr[ok], n_tr[ok] / sigma2
        theta = np.zeros(F.shape[1])
        for i, lam in enumerate(lams):
            b0, theta = lasso_cd(X_tr, y_tr, w_tr, lam, theta)
            pred = b0 + X_te @ theta
            loss[i] += np.sum(n_te[te] * (pred - s_te[te]) ** 2)
    return lams[int(np.argmin(loss))], loss


def check_rblpr_options(
    interval: str, ridge: str | float, names: tuple[str, str] = ("interval", "ridge")
) -> None:
    """Raise if ``interval`` or ``ridge`` of :func:`structured_regression` is not one it
    takes; ``names`` are the caller's argument names for the messages
    (``disaggregated_evaluation`` checks its ``sr_*`` arguments before any work)."""
    iname, rname = names
    if interval not in ("percentile", "basic"):
        raise ValueError(f"`{iname}` must be 'percentile' or 'basic', got {interval!r}")
    if isinstance(ridge, str):
        if ridge not in ("groups", "rows"):
            raise ValueError(f"`{rname}` must be 'groups', 'rows' or a number, got {ridge!r}")
    elif isinstance(ridge, bool) or not isinstance(ridge, Real):
        raise TypeError(
            f"`{rname}` must be 'groups', 'rows' or a finite non-negative number, got {ridge!r}"
        )
    else:
        check_real(ridge, rname, "non-negative")


def _options(estimator):
    """The :class:`~bayesfair.disaggregated.StructuredRegression` of ``estimator`` (its
    default for None), refused by name otherwise."""
    from .estimators import StructuredRegression  # which imports this module's checks

    options = StructuredRegression() if estimator is None else estimator
    check_instance(options, StructuredRegression, "estimator", "a StructuredRegression(...)")
    return options


def _ridge_penalty(ridge: str | float, n: np.ndarray) -> float:
    """The partial ridge penalty lam2 for the groups of sizes ``n`` that have estimates:
    1 / (number of groups), 1 / (number of rows) or the number given."""
    if ridge == "groups":
        return 1.0 / len(n)
    if ridge == "rows":
        return 1.0 / n.sum()
    return float(ridge)


@moved_options(
    {
        "n_bootstrap": "estimator=StructuredRegression(n_resamples=...)",
        **{
            name: f"estimator=StructuredRegression({name}=...)"
            for name in ("n_resamples", "n_folds", "n_lambdas", "interval", "ridge")
        },
    }
)
@renamed_arguments(levels="level")
def structured_regression(
    gd: GroupedData,
    metric,
    s: np.ndarray,
    sigma2: float,
    *,
    estimator=None,
    features: pd.DataFrame | None = None,
    fold_features: Callable[[np.ndarray], pd.DataFrame] | None = None,
    level: float | Sequence[float] = LEVEL,
    lam: float | None = None,
    rng: np.random.Generator,
) -> dict:
    """Lasso estimates of every group's metric and rBLPR intervals (Herlihy et al. eq. 5;
    Liu, Xu and Li 2020), optionally with the groups' departures from the surface.

    The lasso weights group a by ``n_a / sigma2``.  ``lam`` fixes its penalty (0 gives
    back the standard estimates for defined groups, a very large value the weighted
    mean); otherwise ``n_folds``-fold cross-validation over rows, stratified by group,
    chooses it.
    ``interval`` is ``"percentile"`` (rBLPR as Liu, Xu and Li publish it: percentiles
    of the bootstrap lasso + partial ridge estimates, whose bootstrap world has the
    lasso fit as its truth) or ``"basic"``: the LPR estimate minus the quantiles of the
    replicates' deviations from their world's truth, the lasso fit, ``[lpr - q_hi,
    lpr - q_lo]`` with ``q`` the quantiles of ``lpr* - fit`` (Davison and Hinkley 1997,
    eq. 5.6).  The deviations must be taken from the world's truth: taken from the LPR
    estimate they would also hold its gap to the lasso fit, and move the interval away
    from the truth by as much.  The basic interval reverses the bootstrap's bias, so
    where the lasso shrinks the effects that set small groups apart it misses more
    often than the percentile interval.

    ``ridge`` is the partial ridge penalty lam2 on the coefficients the lasso left
    out, in units of the loss whose weights sum to one.  Liu, Xu and Li use 1/n for
    n observations; two readings of n fit a weighted group regression:

    * ``"groups"`` (default): n = number of groups with an estimate.  A small group's
      own indicator is shrunk almost entirely, so its interval is mostly the
      uncertainty of the regression surface (and, with ``departures``, of the group's
      departure from it): tight, and calibrated where the features explain the groups
      (``tests/disaggregated/test_structured.py -k rblpr`` checks it on a
      well-specified additive simulation); without ``departures`` it under-covers where
      the features miss real differences between small groups (notebooks 04 and 07
      measure it).
    * ``"rows"``: n = number of rows, each carrying its group's estimate (the loss
      of eq. 5 is least squares over rows).  A group's indicator keeps n_a / (n_a +
      1) of its deviation, so intervals are close to the standard width and cover
      conservatively.
    * a number: lam2 itself.

    ``departures`` (on by default) lets the bootstrap world hold the groups' departures
    from the surface: each replicate's truth is the lasso fit plus independent
    ``N(0, tau^2 + phi sigma^2 / n_a)`` departures (``tau^2`` and ``phi`` the
    :func:`departure_variance` of the lasso's residuals, with its nonzero coefficients as
    the fit's degrees of freedom: a part common to all groups and one that grows as a
    group's rows fall), its data that truth plus resampled noise, and the interval is
    taken of the replicate's LPR estimate minus its departure, so that the interval of a
    group whose estimate is shrunk towards the surface allows for what the features do
    not explain. Without it the world's truth is the surface itself, and a small group's
    interval is the surface's uncertainty alone.

    Parameters
    ----------
    gd : GroupedData
    metric : str or callable
        The metric (cross-validation recomputes it on the folds' rows).
    s : numpy.ndarray
        Standard estimates per group (NaN where undefined).
    sigma2 : float
        Pooled variance parameter (:func:`pooled_sigma2`).
    features : pandas.DataFrame, optional
        One row per group (:func:`group_features`); default identities and attribute
        values.
    fold_features : callable, optional
        ``rows -> features`` computed from a cross-validation training fold's rows
        alone (``lambda rows: group_features(gd, rows=rows, ...)`` with the arguments
        that built ``features``), so that group means of the data (explanatory features,
        the outcome rate) do not carry the held-out rows into the training fit.  Default:
        ``features`` in every fold, which is exact for indicator features only.
    estimator : StructuredRegression, optional
        The rBLPR options (``interval``, ``ridge``, ``departures``, ``n_resamples``) and
        the penalty's cross-validation (``n_folds``, ``n_lambdas``); default
        ``StructuredRegression()``.
        Its feature options are for :func:`group_features`, which builds ``features``.
    level : float or sequence of float, default 0.9
        Confidence level(s) of the intervals.
    lam : float, optional
        A fixed penalty; default chosen by cross-validation.
    rng : numpy.random.Generator

    Returns
    -------
    dict
        ``estimate`` (groups,), ``lpr`` (the lasso + partial ridge estimate),
        ``intervals`` {level: (lo, hi)}, ``lam``, ``cv_loss``, ``lambdas``,
        ``selected`` (feature names), ``coef`` (a Series on the features' scale),
        ``dropped``: features left out because they copy the metric (see
        :func:`target_copies`; also warned), and ``departure_variance``: the pair
        ``(tau2, phi)`` of :func:`departure_variance` (``(0.0, 0.0)`` without
        ``departures``).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.disaggregated import (GroupedData, pooled_sigma2,
    ...                                      structured_regression)
    >>> ds = make_gaussian_threshold(n_rows=3000, random_state=0)
    >>> gd = GroupedData.from_frame(ds.frame, list(ds.protected), ds.outcome, ds.decision)
    >>> rng = np.random.default_rng(0)
    >>> s, n = gd.estimate("fpr"), gd.cells()[:, [1, 3]].sum(1)
    >>> sigma2 = pooled_sigma2(n, gd.bootstrap_variance("fpr", 200, rng))
    >>> from bayesfair.disaggregated import StructuredRegression
    >>> fit = structured_regression(gd, "fpr", s, sigma2, rng=rng,
    ...                             estimator=StructuredRegression(n_resamples=100))
    >>> lo, hi = fit["intervals"][0.9]
    >>> bool(np.all(lo <= hi))
    True
    """
    est_opts = _options(estimator)
    n_resamples = est_opts.n_resamples
    F_df = group_features(gd) if features is None else features
    n = gd.sizes().astype(float)
    ok = np.isfinite(s) & (n > 0)
    if ok.sum() < 2:
        raise ValueError("structured regression needs at least two groups with estimates")
    F_df, dropped = drop_target_copies(
        F_df, s, ok, f"structured regression of {metric_name(metric)!r}"
    )
    F, _sd = standardise_features(F_df.to_numpy(float))
    scaled_fold_features = None
    if fold_features is not None:

        def scaled_fold_features(rows: np.ndarray) -> np.ndarray:
            fold = fold_features(rows).drop(columns=dropped)
            if list(fold.columns) != list(F_df.columns):
                raise ValueError("`fold_features` must return the columns of `features`")
            return fold.to_numpy(float) / _sd

    w = n[ok] / sigma2
    F_ok = F[ok]  # a copy: taken once, not per bootstrap replicate
    lmax = lambda_max(F_ok, s[ok], w)
    lams = lmax * lambda_ratios(est_opts.n_lambdas) if lmax > 0 else np.array([0.0])
    cv_loss = None
    if lam is None:
        lam, cv_loss = _cv_lambda(
            gd, metric, F, sigma2, lams, est_opts.n_folds, rng, scaled_fold_features
        )
    b0, theta = fit_lasso(F_ok, s[ok], w, lam)
    est = b0 + F @ theta
    selected = np.abs(theta) > 1e-12
    # rBLPR: residual bootstrap of lasso + partial ridge
    lam2 = _ridge_penalty(est_opts.ridge, n[ok])
    ridge_fit = PartialRidge(F_ok, w)
    c0, c = ridge_fit.fit(s[ok], selected, lam2)
    lpr = c0 + F @ c
    # residuals standardised by the pooled standard errors sigma_a = sigma / sqrt(n_a), then
    # centred and rescaled to unit variance: the pooled variance model fixes the noise level,
    # which a lasso fit that interpolates small groups would otherwise under-state
    se = np.sqrt(sigma2 / n[ok])
    tau2, phi = 0.0, 0.0
    if est_opts.departures:
        tau2, phi = departure_variance(s[ok] - est[ok], se, df=1 + int(selected.sum()))
    # a group without an estimate departs as much as the smallest group with one
    sampling = np.full(gd.n_groups, se.max() ** 2)
    sampling[ok] = sigma2 / n[ok]
    dep_sd = np.sqrt(tau2 + phi * sampling)
    resid = (s[ok] - est[ok]) / se
    resid = resid - resid.mean()
    sd = resid.std()
    resid = resid / sd if sd > 1e-12 else rng.standard_normal(len(resid))
    # each replicate's estimates minus its world's departures from the surface (none
    # without ``departures``): what the intervals' quantiles are taken of. The departures
    # come from a child stream (Generator.spawn advances no state), so that the draws of
    # everything else sharing ``rng`` are those of ``departures=False``.
    boot = np.empty((n_resamples, gd.n_groups))
    theta_b = theta.copy()
    dep = np.zeros(gd.n_groups)
    dep_rng = rng.spawn(1)[0] if dep_sd.max() > 0 else None
    for b in range(n_resamples):
        if dep_rng is not None:
            dep = dep_sd * dep_rng.standard_normal(gd.n_groups)
        ystar = est[ok] + dep[ok] + rng.choice(resid, size=len(resid)) * se
        _b0b, theta_b = lasso_cd(F_ok, ystar, w, lam, theta_b)
        selb = np.abs(theta_b) > 1e-12
        c0b, cb = ridge_fit.fit(ystar, selb, lam2)
        boot[b] = c0b + F @ cb - dep
    return {
        "estimate": est,
        "lpr": lpr,
        "intervals": _rblpr_intervals(boot, lpr, est, level, est_opts.interval),
        "lam": float(lam),
        "lambdas": lams,
        "cv_loss": cv_loss,
        "selected": list(F_df.columns[selected]),
        "coef": pd.Series(theta / _sd, index=F_df.columns),
        "dropped": dropped,
        "departure_variance": (tau2, phi),
    }


def _rblpr_intervals(
    boot: np.ndarray,
    lpr: np.ndarray,
    world: np.ndarray,
    level: float | Sequence[float],
    interval: str,
) -> dict:
    """``{level: (lo, hi)}`` from the bootstrap replicates ``boot`` (replicates, groups)
    of a world whose truth is ``world``: their percentiles (rBLPR as published), or the
    basic interval, their deviations from ``world`` reflected around ``lpr``."""
    intervals = {}
    for lv in [level] if isinstance(level, Real) else list(level):
        a = (1 - lv) / 2
        if interval == "percentile":
            intervals[lv] = tuple(np.quantile(boot, [a, 1 - a], axis=0))
        else:
            q_lo, q_hi = np.quantile(boot - world, [a, 1 - a], axis=0)
            intervals[lv] = (lpr - q_hi, lpr - q_lo)
    return intervals


def departure_variance(residuals: np.ndarray, se: np.ndarray, df: int = 0) -> tuple[float, float]:
    r"""The variance of the groups' departures from the regression surface, as
    :math:`\tau^2 + \phi \sigma_a^2` for group a, by the method of moments: ``(tau2,
    phi)``.

    A group's residual :math:`r_a` (its standard estimate minus the surface's fit) is its
    sampling error, of variance :math:`\sigma_a^2 = \sigma^2 / n_a` (the pooled variance
    model), plus its departure. A fit with ``df`` parameters absorbs part of both: over
    :math:`k` groups the squared residuals fall short by a factor of about :math:`(k -
    \mathrm{df}) / k` (exactly so, on average, for least squares with equal weights and
    variances), so the corrected :math:`c_a = r_a^2 k / (k - \mathrm{df})` estimate the
    total variance, and :math:`c_a - \sigma_a^2` the departure's. Non-negative least
    squares of these excesses on :math:`(1, \sigma_a^2)`, every group counting alike,
    gives :math:`\tau^2`, a departure common to all groups (the moment estimator of a
    random-effects meta-analysis, DerSimonian and Laird 1986), and :math:`\phi`, one that
    grows with the group's sampling variance, as overdispersion does (McCullagh and Nelder
    1989, section 4.5): the departures are not exchangeable, small groups depart more (a
    small group's true value is an average over few people, so it scatters further around
    any surface of the features; ``scripts/structured_departures.py`` measures it on
    Herlihy et al.'s diabetes population), and one variance for all would leave the small
    groups' intervals short and the large groups' wide. For a lasso, ``df`` is the number
    of its nonzero coefficients plus the intercept (Zou, Hastie and Tibshirani 2007).

    Parameters
    ----------
    residuals : numpy.ndarray
        Standard estimates minus the surface's fit, per group with an estimate.
    se : numpy.ndarray
        Their standard errors under the pooled variance, ``sqrt(sigma2 / n_a)``.
    df : int, default 0
        Degrees of freedom of the fit (at most ``k - 1`` of them are corrected for).

    Returns
    -------
    tuple of float
        ``(tau2, phi)``, both non-negative; ``(0.0, 0.0)`` where the residuals are no
        larger than their sampling noise.

    References
    ----------
    DerSimonian, R. and Laird, N. (1986). Meta-analysis in clinical trials. *Controlled
    Clinical Trials* 7(3). McCullagh, P. and Nelder, J. A. (1989). *Generalized Linear
    Models*, 2nd ed. Chapman and Hall. Zou, H., Hastie, T. and Tibshirani, R. (2007). On
    the "degrees of freedom" of the lasso. *Annals of Statistics* 35(5).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.disaggregated.structured import departure_variance
    >>> se = np.array([0.1, 0.1, 0.05, 0.05])
    >>> r = np.sqrt([0.05, 0.05, 0.02, 0.02]) * np.array([1, -1, 1, -1])
    >>> tau2, phi = departure_variance(r, se)  # 0.01 for every group, 3 times its noise
    >>> round(tau2, 6), round(phi, 6)
    (0.01, 3.0)
    >>> departure_variance(np.array([0.01, -0.01, 0.0, 0.0]), se)  # noise alone
    (0.0, 0.0)
    """
    r2 = np.asarray(residuals, dtype=float) ** 2
    se2 = np.asarray(se, dtype=float) ** 2
    k = len(r2)
    excess = r2 * k / max(k - df, 1) - se2
    coef, _ = nnls(np.column_stack([np.ones(k), se2]), excess)
    return float(coef[0]), float(coef[1])


def goodness_of_fit(
    gd: GroupedData,
    s: np.ndarray,
    sigma2: float,
    models: Mapping[str, pd.DataFrame],
    comparisons: Sequence[tuple[str, str]],
    rows: np.ndarray | None = None,
) -> pd.DataFrame:
    """F-tests between nested weighted least-squares models of the standard estimates.

    ``models`` maps a name to a feature frame (the intercept is always included;
    ``"intercept"`` may map to an empty frame); each comparison (bigger, smaller)
    gives the p-value of the bigger model's extra features (Herlihy et al., Table 1).
    The test takes the features as fixed: features computed from the same rows as
    ``s`` (a group's outcome rate beside its PPV) share their noise and make it
    reject too often; compute them on other rows and pass ``rows``
    (:meth:`DisaggregatedResult.goodness_of_fit` with ``split=True``).

    Parameters
    ----------
    gd : GroupedData
    s : numpy.ndarray
        Standard estimates per group (NaN where undefined; left out).
    sigma2 : float
        Pooled variance parameter: group a has weight ``n_a / sigma2``.
    models : mapping of str to pandas.DataFrame
        Feature frames (:func:`group_features`) by name.
    comparisons : sequence of (str, str)
        Pairs (bigger, smaller) of names in ``models``.
    rows : numpy.ndarray, optional
        The rows ``s`` was estimated on (boolean mask): the weights count them.
        Default all rows.

    Returns
    -------
    pandas.DataFrame
        One row per comparison: ``model``, ``versus``, ``F``, ``df`` and ``pvalue``
        (NaN where the models do not nest with degrees of freedom to spare).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from bayesfair.disaggregated import GroupedData, goodness_of_fit, group_features
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.choice(list("xyz"), 4000), "b": rng.choice(list("pqrs"), 4000)})
    >>> df["d"] = (rng.random(4000) < np.where(df["a"] == "x", 0.6, 0.3)).astype(int)
    >>> df["y"] = rng.integers(0, 2, 4000)
    >>> gd = GroupedData.from_frame(df, ["a", "b"], "y", "d")
    >>> s = gd.estimate("selection_rate")
    >>> models = {"attributes": group_features(gd, identity=False),
    ...           "intercept": pd.DataFrame(index=gd.group_names())}
    >>> res = goodness_of_fit(gd, s, 0.25, models, [("attributes", "intercept")])
    >>> res["df"].iloc[0], bool(res["pvalue"].iloc[0] < 0.001)  # attributes explain the rates
    ((5, 6), True)
    """
    n = gd.sizes(rows).astype(float)
    ok = np.isfinite(s) & (n > 0)
    w = n[ok] / sigma2
    y = s[ok]

    def rss_df(F: pd.DataFrame):
        X = (
            np.column_stack([np.ones(ok.sum()), F.to_numpy(float)[ok]])
            if F.shape[1]
            else (np.ones((ok.sum(), 1)))
        )
        sw = np.sqrt(w)
        coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
        r = (y - X @ coef) * sw
        rank = np.linalg.matrix_rank(X * sw[:, None])
        return float(r @ r), rank

    rows = []
    for big, small in comparisons:
        rss1, p1 = rss_df(models[big])
        rss0, p0 = rss_df(models[small])
        df_num, df_den = int(p1 - p0), int(ok.sum() - p1)
        if df_num <= 0 or df_den <= 0:
            F, p = np.nan, np.nan
        else:
            F = ((rss0 - rss1) / df_num) / (rss1 / df_den)
            p = float(stats.f.sf(F, df_num, df_den))
        rows.append({"model": big, "versus": small, "F": F, "df": (df_num, df_den), "pvalue": p})
    return pd.DataFrame(rows)
