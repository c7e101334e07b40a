"""Expectations I-hat for the Conditional Bias Scan (Boxer et al., Section 3 and Appendix A.1):
what the protected class's events would be if its rows were treated as the others are, from a
propensity-weighted model fitted on the non-protected rows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from .._newton_kernel import weighted_logit
from .engine import (
    row_codes,
    safe_logit,
)

__all__ = [
    "Inestimable",
    "expected_events",
    "fit_weighted",
    "onehot",
    "row_groups",
    "weighted_proba",
]


class Inestimable(ValueError):
    """The data leave the scan nothing to estimate (no rows of a class it keeps, or one
    class of I-hat's target); a permuted data set for which this happens takes no part
    in the null, and a report skips a protected class for which it happens."""


def onehot(frame: pd.DataFrame, cols: Sequence[str]) -> np.ndarray:
    if not cols:
        return np.zeros((len(frame), 0))
    codes, values = row_codes(frame, cols)
    blocks = [np.eye(len(values[c]))[codes[:, j]] for j, c in enumerate(cols)]
    return np.hstack(blocks)


def row_groups(X: np.ndarray) -> np.ndarray:
    """Integer id of each distinct row of X."""
    if X.shape[1] == 0:
        return np.zeros(len(X), np.int64)
    key = pd.DataFrame(X)
    return key.groupby(list(key.columns), sort=False).ngroup().to_numpy().astype(np.int64)


def fit_weighted(model, X: np.ndarray, y: np.ndarray, w: np.ndarray, aggregate: bool, groups=None):
    """Fit ``model`` with sample weights; identical rows are merged (their weights summed)
    first when the model's loss is a weighted sum over rows (logistic regression), which
    leaves the fit unchanged and makes it independent of the number of rows."""
    model = _WeightedLogit() if model is None else clone(model)
    aggregate = aggregate or isinstance(model, _WeightedLogit)
    y = np.asarray(y, float)
    if aggregate and len(X):
        g = row_groups(X) if groups is None else groups
        key = g * 2 + (y > 0.5)  # distinct (row, class), in [0, 2 * n_distinct_rows)
        wsum = np.bincount(key, weights=w)
        row = np.empty(len(wsum), np.int64)
        row[key] = np.arange(len(key))  # a row of each key: all its rows are alike
        keep = np.flatnonzero(wsum > 0)
        X, y, w = X[row[keep]], y[row[keep]], wsum[keep]
    if len(np.unique(y)) < 2:
        raise Inestimable(
            "the I-hat model sees only one class of its target among the non-protected rows; "
            "the scan cannot estimate expectations (choose another scan type or condition value)"
        )
    model.fit(X, y.astype(int), sample_weight=w)
    return model


class _WeightedLogit:
    """L2-penalised weighted logistic regression by Newton's method: the objective of
    scikit-learn's ``LogisticRegression(C=C)`` (intercept not penalised), solved to machine
    precision without its per-call overhead, which dominates on a few dozen merged rows
    and is paid twice per permutation."""

    def __init__(self, C: float = 1.0):
        self.C = C
        self.classes_ = np.array([0, 1])

    def fit(self, X, y, sample_weight):
        Xa = np.column_stack([X, np.ones(len(X))])
        reg = np.full(Xa.shape[1], 1.0 / self.C)
        reg[-1] = 0.0
        w, y = np.asarray(sample_weight, float), np.asarray(y, float)
        beta = weighted_logit(Xa, y, w, reg, 100)
        self.coef_ = beta[None, :-1]
        self.intercept_ = beta[-1:]
        return self

    def predict_proba(self, X):
        p = 1.0 / (1.0 + np.exp(-(X @ self.coef_[0] + self.intercept_[0])))
        return np.column_stack([1 - p, p])


def weighted_proba(model, X):
    return model.predict_proba(X)[:, list(model.classes_).index(1)]


def expected_events(
    protected: np.ndarray,
    event: np.ndarray,
    event_is_probability: bool,
    X_ihat: np.ndarray,
    condition: np.ndarray | None = None,
    condition_is_probability: bool = False,
    keep: np.ndarray | None = None,
    *,
    propensity_model=None,
    ihat_model=None,
    _groups: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """I-hat for the protected rows among ``keep`` by propensity-odds weighting (Appendix A.1).

    A propensity model of membership in the protected class is fitted on all rows;
    the non-protected rows among ``keep``, weighted by their propensity odds, then fit
    the model of the event whose predictions for the protected rows are I-hat: what
    their events would be if they were treated as the non-protected.

    Parameters
    ----------
    protected : numpy.ndarray of bool
        Membership in the protected class, one per row.
    event : numpy.ndarray
        The scanned event (0/1, or a probability with ``event_is_probability``).
    event_is_probability : bool
        Whether ``event`` holds probabilities (each row then enters the event model
        twice, weighted by ``event`` and ``1 - event``).
    X_ihat : numpy.ndarray
        Features of both models (one-hot attributes), one row per row.
    condition : numpy.ndarray, optional
        The conditioning variable, added as a feature of the event model.
    condition_is_probability : bool, default False
        Whether ``condition`` holds probabilities (entered on the logit scale).
    keep : numpy.ndarray of bool, optional
        Rows of the scan (value-conditional filtering); default all.
    propensity_model, ihat_model : scikit-learn classifier, optional
        Weighted models (``fit(X, y, sample_weight)``); default L2 logistic
        regression with C = 1, fitted on the rows' distinct feature patterns.
    _groups : tuple of numpy.ndarray, optional
        Internal: precomputed codes of the distinct rows of ``X_ihat`` and of the event
        model's features (the scan's permutations reuse them).

    Returns
    -------
    numpy.ndarray
        Expectations, one per row with ``protected & keep``.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.scan import expected_events
    >>> rng = np.random.default_rng(0)
    >>> X = np.eye(2)[rng.integers(0, 2, 2000)]
    >>> protected = rng.random(2000) < 0.3 + 0.4 * X[:, 0]
    >>> event = (rng.random(2000) < 0.2 + 0.5 * X[:, 0]).astype(float)
    >>> ihat = expected_events(protected, event, False, X)
    >>> ihat.shape == (protected.sum(),), bool(np.all((ihat > 0) & (ihat < 1)))
    (True, True)
    """
    protected = np.asarray(protected, bool)
    keep = np.ones(len(protected), bool) if keep is None else np.asarray(keep, bool)
    prop, imod = propensity_model, ihat_model  # None: L2 logistic regression, C = 1
    agg_p = prop is None or isinstance(prop, LogisticRegression)
    agg_i = imod is None or isinstance(imod, LogisticRegression)
    if protected.all() or not protected.any():
        raise ValueError("the protected class must contain some but not all rows")
    gx, gf = _groups if _groups is not None else (None, None)
    pm = fit_weighted(prop, X_ihat, protected.astype(float), np.ones(len(protected)), agg_p, gx)
    pa = np.clip(weighted_proba(pm, X_ihat), 1e-6, 1 - 1e-6)
    feats = X_ihat
    if condition is not None:
        c = safe_logit(condition)[:, None] if condition_is_probability else condition[:, None]
        feats = np.hstack([X_ihat, c])
    ref = ~protected & keep
    if not ref.any():
        raise Inestimable("no non-protected rows are left to estimate I-hat")
    w = pa[ref] / (1 - pa[ref])
    if event_is_probability:  # two records per row (Appendix A.1, step 4)
        ev = np.clip(event[ref], 0.0, 1.0)
        Xr = np.vstack([feats[ref], feats[ref]])
        yr = np.concatenate([np.ones(ref.sum()), np.zeros(ref.sum())])
        wr = np.concatenate([w * ev, w * (1 - ev)])
        gr = None if gf is None else np.concatenate([gf[ref], gf[ref]])
    else:
        Xr, yr, wr = feats[ref], event[ref], w
        gr = None if gf is None else gf[ref]
    im = fit_weighted(imod, Xr, yr, wr, agg_i, gr)
    return weighted_proba(im, feats[protected & keep])
