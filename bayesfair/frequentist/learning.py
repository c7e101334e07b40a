"""Chen, Johansson and Sontag: comparing two predictors' discrimination, learning curves per
group, and the bias/variance/noise decomposition of each group's loss."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.base import clone

from .._parallel import chunked_resamples
from .._plotting import dot_plot, literal, new_axes
from .._repr import compact_repr
from .._result import ResultMixin
from .._validation import (
    SeedLike,
    check_axes,
    check_count,
    check_no_missing_groups,
    check_open_probability,
    check_random_state,
    check_real,
    check_same_index,
    warn_unused_categories,
)
from .._vocabulary import LEVEL, interval_columns
from .._warning_location import user_stacklevel

__all__ = [
    "DiscriminationComparison",
    "LearningCurveResult",
    "bias_variance_decomposition",
    "compare_discrimination",
    "group_learning_curves",
]


# ------------------------------------------------------------------ two predictors
@dataclass
class DiscriminationComparison(ResultMixin):  # numpydoc ignore=PR01
    """Test of H0: Gamma(Y_hat) = Gamma(Y_hat') on one sample.

    ``Z_alpha = alpha (gamma_0 - gamma_1)(Y_hat) - (gamma_0 - gamma_1)(Y_hat')`` is Normal
    for alpha in {-1, +1}, and ``|Gamma - Gamma'|`` = min over alpha of ``|Z_alpha|``, so
    H0 is rejected only when both ``Z_{-1}`` and ``Z_{+1}`` are unlikely: ``pvalue`` is
    the larger of the two two-sided p-values.

    Attributes
    ----------
    gamma, gamma_other : float
        Discrimination levels of the first and the second predictor.
    z_minus, z_plus : float
        The standardised ``Z_{-1}`` and ``Z_{+1}``.
    p_minus, p_plus : float
        Their two-sided p-values.
    pvalue : float
        The larger of the two.
    """

    __repr__ = compact_repr

    gamma: float
    gamma_other: float
    z_minus: float
    z_plus: float
    p_minus: float
    p_plus: float
    pvalue: float

    def summary(self) -> pd.DataFrame:
        """The fields as a one-row table.

        Returns
        -------
        pandas.DataFrame
        """
        return pd.DataFrame([self.__dict__])

    def plot(self, ax=None):
        """The two predictors' discrimination levels, with the test's p-value.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: a new figure's axes).

        Returns
        -------
        matplotlib.axes.Axes
        """
        ax = new_axes(ax, figsize=(4.5, 1.8))
        dot_plot(ax, ["first predictor", "second predictor"], [self.gamma, self.gamma_other])
        ax.set_xlabel("discrimination level Gamma")
        ax.set_title(f"H0 equal Gamma: p = {self.pvalue:.3g}", fontsize=9)
        return ax


def compare_discrimination(loss_a, loss_b, group) -> DiscriminationComparison:
    """Compare the discrimination levels of two predictors evaluated on the same rows.

    Parameters
    ----------
    loss_a, loss_b : array
        Per-row losses of the two predictors (same rows, so their covariance counts).
    group : array
        Two group labels.

    Returns
    -------
    DiscriminationComparison

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> g = np.repeat([0, 1], 500)
    >>> la = rng.random(1000) < np.where(g == 1, 0.3, 0.2)
    >>> lb = rng.random(1000) < 0.2
    >>> compare_discrimination(la, lb, g).pvalue < 0.05
    True
    """
    check_same_index(loss_a=loss_a, loss_b=loss_b, group=group)
    la, lb = np.asarray(loss_a, float), np.asarray(loss_b, float)
    g = np.asarray(group)
    if la.shape != lb.shape or la.shape != g.shape or la.ndim != 1:
        raise ValueError("`loss_a`, `loss_b` and `group` must be 1-d arrays of one length")
    for name, loss in (("loss_a", la), ("loss_b", lb)):
        if not np.isfinite(loss).all():
            raise ValueError(
                f"`{name}` has {int((~np.isfinite(loss)).sum())} missing or infinite values"
            )
    check_no_missing_groups(pd.Series(g), "`group`")
    labels = sorted(pd.unique(g), key=str)
    if len(labels) != 2:
        raise ValueError(
            f"`group` must have exactly two values, got {len(labels)}: "
            f"{[str(v) for v in labels[:5]]}"
        )
    d, var = [], {}
    for lab, sign in zip(labels, (1.0, -1.0), strict=True):
        m = g == lab
        if m.sum() < 2:
            raise ValueError(f"group {lab!r} needs at least two rows")
        d.append((sign * la[m].mean(), sign * lb[m].mean()))
        c = np.cov(la[m], lb[m]) / m.sum()
        var[lab] = c
    da = d[0][0] + d[1][0]  # gamma_0 - gamma_1 for predictor a
    db = d[0][1] + d[1][1]
    C = var[labels[0]] + var[labels[1]]  # covariance of (da, db)
    out = {}
    for alpha in (-1.0, 1.0):
        z_num = alpha * da - db
        v = C[0, 0] + C[1, 1] - 2 * alpha * C[0, 1]
        z = z_num / np.sqrt(v) if v > 0 else (0.0 if z_num == 0 else np.inf)
        out[alpha] = (float(z), float(2 * norm.sf(abs(z))))
    return DiscriminationComparison(
        gamma=float(abs(da)),
        gamma_other=float(abs(db)),
        z_minus=out[-1.0][0],
        z_plus=out[1.0][0],
        p_minus=out[-1.0][1],
        p_plus=out[1.0][1],
        pvalue=max(out[-1.0][1], out[1.0][1]),
    )


# ------------------------------------------------------------------ learning curves
def _pow3(n, delta, alpha, beta):
    return delta + alpha * np.power(n, -beta)


@dataclass
class LearningCurveResult(ResultMixin):  # numpydoc ignore=PR01
    """Per-group learning curves and their inverse power-law fits.

    Attributes
    ----------
    curves : pandas.DataFrame
        Tidy (group, n, repeat, loss).
    fits : pandas.DataFrame
        Per group: delta (the asymptote, the loss with infinite data), alpha, beta of
        delta + alpha n^-beta, and a bootstrap interval of delta over repeats.
    level : float
        Confidence level of delta's interval.
    boot_deltas : dict
        Per group, delta refitted to each bootstrap resample of the repeats.
    """

    __repr__ = compact_repr

    curves: pd.DataFrame
    fits: pd.DataFrame
    level: float = LEVEL
    boot_deltas: dict = field(default_factory=dict, repr=False)

    @property
    def notes(self) -> list[str]:
        """Where a fit cannot be read as a learning curve: three sizes fit its three
        parameters exactly (no residual checks the curve's shape), and a fit on a bound
        (alpha = 0, beta at 0 or 5, or delta at 0 with beta near 0): the curve does not
        fall like n^-beta over the sizes, alpha and beta are not identified, and delta is
        not an extrapolation."""
        out = []
        if self.curves["n"].nunique() == 3:
            out.append(
                "three training sizes fit the curve's three parameters exactly: nothing "
                "checks its shape; give more sizes to extrapolate"
            )
        f = self.fits.dropna(subset=["beta"])
        # delta at its floor 0 with a small beta: the flat curve whose delta and alpha trade
        # off (_fit_pow3); with a larger beta a loss that falls to 0 is a fit like any other
        bound = (
            (f["alpha"] <= 1e-12)
            | (f["beta"] <= 1e-6)
            | (f["beta"] >= 5 - 1e-6)
            | ((f["delta"].abs() <= 1e-12) & (f["beta"] < 0.1))
        )
        if bound.any():
            out.append(
                f"the fit of {', '.join(map(str, f.loc[bound, 'group']))} sits on a bound "
                "(alpha = 0, beta at 0 or 5, or delta at 0): its curve does not fall like "
                "n^-beta over these sizes, alpha and beta are not identified, and delta is "
                "not an extrapolation (read loss_at_largest_n and the curves)"
            )
        return out

    def summary(self) -> pd.DataFrame:
        """Per group: the fitted asymptote delta (the loss with unlimited data), alpha and
        beta of delta + alpha n^-beta, and delta's bootstrap interval (``fits``).

        Returns
        -------
        pandas.DataFrame
        """
        return self.fits

    def mean_curves(self) -> pd.DataFrame:
        """Mean loss over repeats at each training size.

        Returns
        -------
        pandas.DataFrame
            Index: training size; one column per group.
        """
        return self.curves.groupby(["group", "n"])["loss"].mean().unstack("group")

    def plot(self, ax=None, extrapolate_to: float | None = None):
        """Mean curves (points), their Pow3 fits (lines) and asymptotes (dotted).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Draw into it; default a new figure.
        extrapolate_to : float, optional
            Training size the fitted curves extend to (default 4 times the largest).

        Returns
        -------
        matplotlib.axes.Axes
        """
        import matplotlib.pyplot as plt

        check_axes(ax)
        mc = self.mean_curves()
        if extrapolate_to is None:
            top = mc.index.max() * 4
        else:
            top = check_real(extrapolate_to, "extrapolate_to", "positive")
        if ax is None:
            _, ax = plt.subplots(figsize=(5.5, 3.5))
        grid = np.geomspace(mc.index.min(), top, 100)
        for j, g in enumerate(mc.columns):
            ax.plot(mc.index, mc[g], "o", color=f"C{j}", label=literal(f"group {g}"))
            f = self.fits.set_index("group").loc[g]
            ax.plot(grid, _pow3(grid, f["delta"], f["alpha"], f["beta"]), "-", color=f"C{j}")
            ax.axhline(f["delta"], color=f"C{j}", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("training set size n")
        ax.set_ylabel("mean loss in the group")
        ax.legend(frameon=False, fontsize=8)
        return ax


def _as_rows(X):
    """``X`` as given when it is a pandas object (an estimator may select its columns by
    name, as a ColumnTransformer does), else as a numpy array."""
    return X if hasattr(X, "iloc") else np.asarray(X)


def _take(X, idx: np.ndarray):
    """The rows ``idx`` of ``X`` (by position; a pandas object keeps its columns)."""
    return X.iloc[idx] if hasattr(X, "iloc") else X[idx]


def _stratified_split(group: np.ndarray, test_size: float, rng: np.random.Generator):
    """Test and training positions with round(test_size n_a) of every group's n_a rows in
    the test set."""
    perm = rng.permutation(len(group))
    codes, _ = pd.factorize(group[perm])  # any labels, mixed types too
    order = perm[np.argsort(codes, kind="stable")]  # rows by group, shuffled within
    sizes = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    k = np.round(sizes * test_size).astype(int)
    in_test = np.zeros(len(group), bool)
    for start, m in zip(starts, k, strict=True):
        in_test[order[start : start + m]] = True
    return np.flatnonzero(in_test), np.flatnonzero(~in_test)


def _check_finite_outcome(y: np.ndarray, name: str) -> None:
    """A numeric outcome has no NaN or infinite value (class labels are left to the
    estimator): a missing outcome among the test rows made its group's curve NaN, and
    among the training rows failed only in the samples that drew it."""
    if np.issubdtype(y.dtype, np.number):
        bad = int(np.sum(~np.isfinite(y)))
        if bad:
            raise ValueError(f"`{name}` has {bad} missing or infinite value(s)")


def _check_lengths(X, y, group, names: tuple[str, str, str]) -> None:
    """``X`` has one row per entry of the 1-d ``y`` and ``group``; ``y`` is finite if
    numeric; ``group`` has no missing values."""
    lengths = {names[0]: X.shape[0] if np.ndim(X) else 0, names[1]: len(y), names[2]: len(group)}
    if len(set(lengths.values())) != 1 or y.ndim != 1 or group.ndim != 1:
        raise ValueError(
            f"{', '.join(f'`{k}`' for k in names)} must have one row per sample (1-d `{names[1]}` "
            f"and `{names[2]}`); got {lengths}"
        )
    _check_finite_outcome(y, names[1])
    check_no_missing_groups(pd.Series(group), f"`{names[2]}`")


def _fit_pow3(n, y):
    """Least-squares fit of delta + alpha n^-beta with alpha >= 0, 0 <= beta <= 5 and,
    when every loss in ``y`` is non-negative (every named loss), delta >= 0.

    For fixed beta the model is linear in (delta, alpha), solved in closed form under its
    bounds; the profile error over beta is scanned on a grid and refined by a bounded
    scalar search (fast enough to refit hundreds of bootstrap curves).  Without the bound
    on delta, a curve that barely falls (or rises) over the sizes was fitted by beta near
    0, where n^-beta is nearly constant and delta and alpha trade off without limit: a
    loss averaging 0.68 got a bootstrap asymptote of -878,858.  The asymptote of a
    non-negative loss is non-negative."""
    from scipy.optimize import minimize_scalar

    n = np.asarray(n, float)
    y = np.asarray(y, float)
    if len(n) < 3 or not np.isfinite(y).all():
        return np.array([np.nan] * 3)
    floor = 0.0 if (y >= 0).all() else -np.inf

    def sse(delta, alpha, x):
        r = y - delta - alpha * x
        return float(r @ r), delta, alpha

    def solve(beta):
        x = np.power(n, -beta)
        xc, yc = x - x.mean(), y - y.mean()
        sxx = float(xc @ xc)
        alpha = max(float(xc @ yc) / sxx, 0.0) if sxx > 1e-300 else 0.0
        delta = float(y.mean() - alpha * x.mean())
        if delta >= floor:
            return sse(delta, alpha, x)
        # the bound on delta is active: the best fit with delta = 0 (alpha >= 0), or with
        # alpha = 0 (delta = mean(y) >= 0), whichever is closer
        return min(sse(0.0, max(float(x @ y) / float(x @ x), 0.0), x), sse(y.mean(), 0.0, x))

    grid = np.linspace(0.0, 5.0, 101)
    sse_grid = _pow3_profile(n, y, grid, floor)
    i = int(np.argmin(sse_grid))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    beta = grid[i]
    if hi > lo:
        res = minimize_scalar(
            lambda b: solve(b)[0], bounds=(lo, hi), method="bounded", options={"xatol": 1e-8}
        )
        if res.fun <= sse_grid[i]:
            beta = float(res.x)
    _, delta, alpha = solve(beta)
    return np.array([delta, alpha, beta])


def _pow3_profile(n: np.ndarray, y: np.ndarray, betas: np.ndarray, floor: float) -> np.ndarray:
    """The least-squares error of :func:`_fit_pow3`'s bounded fit at every one of ``betas``
    at once (its ``solve``, one row per beta): the grid scan that brackets the minimum."""
    x = np.power(n[None, :], -betas[:, None])
    xm, ym = x.mean(axis=1), y.mean()
    xc, yc = x - xm[:, None], y - ym
    sxx = np.einsum("bi,bi->b", xc, xc)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(sxx > 1e-300, np.maximum(xc @ yc / sxx, 0.0), 0.0)
    delta = ym - alpha * xm

    def sse(d, a):
        r = y[None, :] - d[:, None] - a[:, None] * x
        return np.einsum("bi,bi->b", r, r)

    free = sse(delta, alpha)
    # the bound on delta active: delta = 0 (alpha >= 0) or alpha = 0 (delta = mean(y))
    through_zero = np.maximum((x @ y) / np.einsum("bi,bi->b", x, x), 0.0)
    zero = np.zeros(len(betas))
    bounded = np.minimum(sse(zero, through_zero), sse(np.full(len(betas), ym), zero))
    return np.where(delta >= floor, free, bounded)


def _squared_loss(y, prediction):
    return (y - prediction) ** 2


def _zero_one_loss(y, decision):
    return (y != decision).astype(float)


def _log_loss(y, p):
    """Cross-entropy of probabilities ``p``, clipped to [1e-15, 1 - 1e-15]."""
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return -(y * np.log(p) + (1 - y) * np.log1p(-p))


#: per-row losses by name, ``loss(y_true, prediction)``: "brier" and "log" take
#: probabilities of the positive class (shared with :func:`discrimination_test`)
ROW_LOSSES = {
    "squared": _squared_loss,
    "zero_one": _zero_one_loss,
    "brier": _squared_loss,
    "log": _log_loss,
}


def group_learning_curves(
    estimator,
    X: np.ndarray,
    y: np.ndarray,
    group: np.ndarray,
    *,
    sizes,
    n_repeats: int = 20,
    test_size: float = 0.2,
    loss: Callable[[np.ndarray, np.ndarray], np.ndarray] | str = "squared",
    X_test=None,
    y_test=None,
    group_test=None,
    level: float = LEVEL,
    n_jobs: int | None = 1,
    random_state: SeedLike = None,
) -> LearningCurveResult:
    """Train ``estimator`` repeatedly at growing training sizes; per-group test loss; fit
    gamma_a(n) = delta_a + alpha_a n^-beta_a (Pow3) to each group's mean curve.

    The asymptote delta_a estimates the group's loss with unlimited data (bias plus
    noise); its interval comes from refitting the curve to bootstrap resamples of both
    sources of its error: the repeats (training samples) and the group's test rows (a
    finite test set measures every repeat's loss with the same error).  It does not
    cover the error of extrapolating with a curve of the wrong form.  A held-out test
    set is split off once (``test_size`` of every group's rows) unless given.  A group
    without test rows has no curve, which a warning says.

    ``loss`` is ``"squared"`` or ``"zero_one"`` on ``estimator.predict``, ``"brier"``
    (squared error) or ``"log"`` (cross-entropy, probabilities clipped to [1e-15,
    1 - 1e-15]) on the positive-class column of ``estimator.predict_proba`` for a 0/1
    outcome, or a callable ``loss(y_true, y_pred) -> per-row losses`` on ``predict``.

    Parameters
    ----------
    estimator : scikit-learn estimator
        Cloned and refitted for every size and repeat.
    X, y : array_like
        Features and outcome, one row per individual.  A pandas DataFrame ``X`` stays
        one (rows taken by position), for estimators that select columns by name.
    group : array_like
        Group label of every row.
    sizes : sequence of int
        Training set sizes.
    n_repeats : int, default 20
        Training sets drawn at every size.
    test_size : float, default 0.2
        Share of the rows held out as the test set (without ``X_test``).
    loss : str or callable, default "squared"
        See above.
    X_test, y_test, group_test : array_like, optional
        A separate test set.
    level : float, default 0.9
        Confidence level of the asymptote's interval.
    n_jobs : int, optional
        Workers for joblib; results do not depend on it.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Returns
    -------
    LearningCurveResult

    Notes
    -----
    Fourteen parameters: the estimator and data, the groups (with an optional held-out
    test set of three arrays, as Chen et al. evaluate on a fixed test set), the loss and
    the package's shared ``level``, ``n_jobs`` and ``random_state``; scikit-learn's
    ``learning_curve`` takes sixteen.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 2)); g = rng.choice(["a", "b"], 600)
    >>> y = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
    >>> res = group_learning_curves(LogisticRegression(), X, y, g, sizes=[50, 100, 200],
    ...                             n_repeats=4, loss="log", random_state=0)
    >>> sorted(res.fits["group"])
    ['a', 'b']
    """
    rng = check_random_state(random_state)
    # the asymptote's interval resamples the repeats: one repeat would give it zero width
    check_count(n_repeats, "n_repeats", minimum=2)
    check_open_probability(level, "level")
    X, y, group, X_test, y_test, group_test = _train_and_test(
        X, y, group, X_test, y_test, group_test, test_size, rng
    )
    sizes = _training_sizes(sizes)
    if sizes.max() > len(y):
        raise ValueError(f"largest training size {sizes.max()} exceeds the {len(y)} training rows")
    loss_fn, predict = _loss_and_prediction(loss, estimator, y, y_test)
    if len(np.unique(sizes)) < 3:
        warnings.warn(
            f"`sizes` has {len(np.unique(sizes))} distinct value(s); the curve delta + alpha "
            "n^-beta has three parameters, so its fit (delta, alpha, beta and the interval) "
            "is NaN: give three or more sizes",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    labels = sorted(pd.unique(group_test), key=str)
    untested = sorted(set(pd.unique(group).tolist()) - set(labels), key=str)
    if untested:
        warnings.warn(
            f"group(s) {untested} have no rows in the test set, so no learning curve "
            "(give more rows, a larger `test_size` or a test set that holds them)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )

    def chunk(size: int, r: np.random.Generator) -> np.ndarray:
        out = np.empty((size, len(sizes), len(y_test)))  # every test row's loss
        for b in range(size):
            for i, n in enumerate(sizes):
                idx = r.choice(len(y), size=n, replace=False)
                model = _fit_sample(estimator, _take(X, idx), y[idx], "`sizes`")
                out[b, i] = loss_fn(y_test, predict(model, X_test))
        return out

    row_loss = chunked_resamples(chunk, n_repeats, rng.integers(2**31), n_jobs=n_jobs)
    in_group = [np.flatnonzero(group_test == g) for g in labels]
    arr = np.stack([row_loss[:, :, r].mean(axis=2) for r in in_group], axis=2)
    rows = [
        {"group": g, "n": int(n), "repeat": b, "loss": arr[b, i, j]}
        for b in range(arr.shape[0])
        for i, n in enumerate(sizes)
        for j, g in enumerate(labels)
    ]
    fits, boots = [], {}
    for j, g in enumerate(labels):
        fit, boots[g] = _asymptote(sizes, arr[:, :, j], row_loss[:, :, in_group[j]], level, rng)
        fits.append({"group": g, **fit})
    return LearningCurveResult(
        curves=pd.DataFrame(rows), fits=pd.DataFrame(fits), level=level, boot_deltas=boots
    )


def _train_and_test(X, y, group, X_test, y_test, group_test, test_size, rng) -> tuple:
    """The training and test rows, checked: the test set given, or a split stratified by
    group (``test_size`` of each group's rows)."""
    check_same_index(X=X, y=y, group=group)
    check_same_index(X_test=X_test, y_test=y_test, group_test=group_test)
    warn_unused_categories(group, "group", "they get no learning curve")
    X, y, group = _as_rows(X), np.asarray(y, float), np.asarray(group)
    _check_lengths(X, y, group, ("X", "y", "group"))
    if X_test is not None:
        if y_test is None or group_test is None:
            raise ValueError("give `y_test` and `group_test` with `X_test`")
        X_test, y_test, group_test = _as_rows(X_test), np.asarray(y_test), np.asarray(group_test)
        _check_lengths(X_test, y_test, group_test, ("X_test", "y_test", "group_test"))
        return X, y, group, X_test, y_test, group_test
    te, tr = _stratified_split(group, check_open_probability(test_size, "test_size"), rng)
    return _take(X, tr), y[tr], group[tr], _take(X, te), y[te], group[te]


def _loss_and_prediction(loss, estimator, y, y_test) -> tuple:
    """The per-row loss and what it is computed on: ``predict``, or P(y = 1) from
    ``predict_proba`` for the Brier and log losses (which need a 0/1 outcome)."""
    proba = loss in ("brier", "log")
    if isinstance(loss, str) and loss in ROW_LOSSES:
        loss_fn = ROW_LOSSES[loss]
    elif callable(loss):
        loss_fn = loss
    else:
        raise ValueError(
            f"`loss` must be 'squared', 'zero_one', 'brier', 'log' or a callable, got {loss!r}"
        )
    if proba:
        if not hasattr(estimator, "predict_proba"):
            raise TypeError(f"loss={loss!r} needs an estimator with predict_proba")
        if not np.isin(np.concatenate([y, np.asarray(y_test, float)]), (0, 1)).all():
            raise ValueError(f"loss={loss!r} needs a 0/1 outcome `y`")

    def predict(model, X_):
        if not proba:
            return model.predict(X_)
        classes = list(model.classes_)
        if 1 not in classes:  # a training sample with one class only
            return np.zeros(len(X_))
        return model.predict_proba(X_)[:, classes.index(1)]

    return loss_fn, predict


def _asymptote(sizes, curve, losses, level: float, rng) -> tuple[dict, np.ndarray]:
    """The fit delta + alpha n^-beta of one group's mean curve (``curve``: repeats x sizes),
    and the interval of delta from 200 bootstraps that resample the repeats and, with
    multinomial weights, the group's test rows (``losses``: repeats x sizes x rows)."""
    d, al, be = _fit_pow3(sizes.astype(float), curve.mean(axis=0))
    n_rows, bd = losses.shape[2], []
    for _ in range(200):
        pick = rng.integers(0, curve.shape[0], curve.shape[0])
        weight = rng.multinomial(n_rows, np.full(n_rows, 1 / n_rows))
        boot = losses[pick].mean(axis=0) @ weight / n_rows
        bd.append(_fit_pow3(sizes.astype(float), boot)[0])
    bd = np.asarray(bd)
    bd = bd[np.isfinite(bd)]
    a = (1 - level) / 2
    lo, hi = np.quantile(bd, [a, 1 - a]) if len(bd) else (np.nan, np.nan)
    fit = {"delta": d, "alpha": al, "beta": be, **interval_columns(lo, hi, level)}
    return {**fit, "loss_at_largest_n": curve[:, -1].mean()}, bd


# ------------------------------------------------------------------ bias / variance / noise
def _training_sizes(sizes) -> np.ndarray:
    """``sizes`` as sorted integers, refusing anything but whole numbers of rows >= 2."""
    try:
        arr = np.asarray(sizes, dtype=float)
    except (TypeError, ValueError):
        arr = np.array([np.nan])
    with np.errstate(invalid="ignore"):  # inf % 1 is NaN: refused below, without a warning
        whole = np.isfinite(arr) & (arr >= 2) & (arr % 1 == 0)
    if arr.ndim != 1 or not len(arr) or not whole.all():
        raise ValueError(
            f"`sizes` must be whole numbers of training rows, each >= 2, got {sizes!r}"
        )
    return np.sort(arr.astype(int))


def _fit_sample(estimator, X: np.ndarray, y: np.ndarray, size_argument: str):
    """A clone of ``estimator`` fitted on one resampled training sample; its failure
    says the sample's size, whether it holds one class only, and which argument sets it."""
    try:
        return clone(estimator).fit(X, y)
    except ValueError as err:
        one = len(np.unique(y)) == 1
        raise ValueError(
            f"the estimator failed on a training sample of {len(y)} rows"
            + (", which holds one class only" if one else "")
            + f" ({err}); larger training samples (raise {size_argument}) are likelier to fit"
        ) from err


def bias_variance_decomposition(
    estimator,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    group_test: np.ndarray,
    *,
    loss: str = "squared",
    train_size: int | None = None,
    n_repeats: int = 50,
    y_optimal: np.ndarray | None = None,
    n_jobs: int | None = 1,
    random_state: SeedLike = None,
) -> pd.DataFrame:
    """Domingos' decomposition of each group's expected loss by repeated training.

    Models are trained on ``n_repeats`` bootstrap samples (of ``train_size`` rows) of
    the training set.  For every test point the main prediction y_m is the mean
    (squared loss) or the mode (0-1 loss) of the predictions; with the optimal
    prediction y* (``y_optimal``: E[Y|x] for squared loss, the Bayes class for 0-1
    loss; known in simulations):

    * squared loss: noise = (y - y*)^2, bias = (y* - y_m)^2, variance = E[(y_hat - y_m)^2],
      and loss = noise + bias + variance holds in expectation;
    * 0-1 loss: noise = 1[y != y*], bias = 1[y_m != y*], variance = P(y_hat != y_m),
      entering the loss with sign +1 on unbiased points and -1 on biased ones (Domingos).

    Without ``y_optimal`` the noise cannot be separated: it is reported as NaN and the
    "bias" column holds bias + noise (squared loss: (y - y_m)^2).

    Parameters
    ----------
    estimator : scikit-learn estimator
        Cloned and refitted on every bootstrap sample.
    X_train, y_train : array_like
        The training data (a pandas DataFrame ``X_train`` stays one).
    X_test, y_test : array_like
        The test data.
    group_test : array_like
        Group label of every test row.
    loss : {"squared", "zero_one"}
    train_size : int, optional
        Rows of every bootstrap sample (default: the training set's).
    n_repeats : int, default 50
    y_optimal : array_like, optional
        The optimal prediction at every test row (see above).
    n_jobs : int, optional
        Workers for joblib; results do not depend on it.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Returns
    -------
    pandas.DataFrame
        One row per group: the mean loss, noise, bias, variance and net variance.

    Notes
    -----
    Twelve parameters: the estimator, the training and test data with the test rows'
    groups (five arrays, as scikit-learn names them), the loss, the repetitions and their
    training size, the optional Bayes-optimal predictions, and ``n_jobs``, ``random_state``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from bayesfair.frequentist import bias_variance_decomposition
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 1)); g = np.where(X[:, 0] > 0, "a", "b")
    >>> f = 2 * X[:, 0]; y = f + rng.normal(size=400)
    >>> out = bias_variance_decomposition(LinearRegression(), X[:200], y[:200], X[200:],
    ...                                   y[200:], g[200:], y_optimal=f[200:], n_repeats=20,
    ...                                   random_state=0)
    >>> sorted(out["group"])
    ['a', 'b']
    """
    rng = check_random_state(random_state)
    # the variance term compares the repeats' predictions: one repeat would make it 0
    check_count(n_repeats, "n_repeats", minimum=2)
    check_same_index(X_train=X_train, y_train=y_train)
    check_same_index(X_test=X_test, y_test=y_test, group_test=group_test, y_optimal=y_optimal)
    warn_unused_categories(group_test, "group_test", "they get no decomposition")
    X_train, y_train, X_test = _as_rows(X_train), np.asarray(y_train), _as_rows(X_test)
    y_test, group_test = np.asarray(y_test), np.asarray(group_test)
    if np.ndim(X_train) == 0 or X_train.shape[0] != len(y_train) or y_train.ndim != 1:
        raise ValueError(
            "`X_train` and `y_train` must have one row per sample (1-d `y_train`); got "
            f"{np.shape(X_train)} and {y_train.shape}"
        )
    _check_finite_outcome(y_train, "y_train")
    _check_lengths(X_test, y_test, group_test, ("X_test", "y_test", "group_test"))
    if y_optimal is not None:
        # a missing value was skipped by the groups' means (n still counted it); a length
        # other than y_test's failed in numpy after every fit
        y_optimal = np.asarray(y_optimal)
        if y_optimal.shape != y_test.shape:
            raise ValueError(
                f"`y_optimal` must have one value per test row ({len(y_test)}), got shape "
                f"{y_optimal.shape}"
            )
        _check_finite_outcome(y_optimal, "y_optimal")
    if loss not in ("squared", "zero_one"):
        raise ValueError(f"`loss` must be 'squared' or 'zero_one', got {loss!r}")
    m = len(y_train) if train_size is None else check_count(train_size, "train_size")
    if m > len(y_train):
        raise ValueError(f"`train_size` {m} exceeds the {len(y_train)} training rows it resamples")

    def chunk(size: int, r: np.random.Generator) -> np.ndarray:
        out = np.empty((size, len(y_test)))
        for b in range(size):
            idx = r.integers(0, len(y_train), m)
            model = _fit_sample(estimator, _take(X_train, idx), y_train[idx], "`train_size`")
            out[b] = model.predict(X_test)
        return out

    P = chunked_resamples(chunk, n_repeats, rng.integers(2**31), n_jobs=n_jobs)
    if loss == "squared":
        ym = P.mean(axis=0)
        var = ((P - ym) ** 2).mean(axis=0)
        lossv = ((P - y_test) ** 2).mean(axis=0)
        if y_optimal is not None:
            noise = (y_test - y_optimal) ** 2
            bias = (y_optimal - ym) ** 2
        else:
            noise = np.full(len(y_test), np.nan)
            bias = (y_test - ym) ** 2
        net_var = var
    else:
        vals = np.unique(P)
        counts = np.stack([(P == v).sum(axis=0) for v in vals])
        ym = vals[np.argmax(counts, axis=0)]
        var = (P != ym).mean(axis=0)
        lossv = (P != y_test).mean(axis=0)
        if y_optimal is not None:
            noise = (y_test != y_optimal).astype(float)
            bias = (ym != y_optimal).astype(float)
        else:
            noise = np.full(len(y_test), np.nan)
            bias = (ym != y_test).astype(float)
        net_var = np.where(bias > 0, -var, var)
    df = pd.DataFrame(
        {
            "group": group_test,
            "loss": lossv,
            "noise": noise,
            "bias": bias,
            "variance": var,
            "net_variance": net_var,
        }
    )
    out = df.groupby("group").mean().reset_index()
    out.insert(1, "n", df.groupby("group").size().to_numpy())
    return out
