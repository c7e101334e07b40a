"""Intersectional fairness metrics as functions of P(y|s) arrays.

The functions here are the stable array core of the package.  They accept any
number of leading *draw* dimensions, so the same code computes a metric from
empirical frequencies (no leading dimension) and its posterior from an array
of posterior draws of P(y|s) shaped ``(chain, draw, n_intersections, ...)``.

Conventions
-----------
``p`` is shaped ``(..., n_intersections, n_outcomes)`` and holds P(y | s).
An intersection whose row contains NaN is *absent* (P(s) = 0): it takes no part
in epsilon-DF, as Definition 2.1 of Foulds et al. requires.
``p1`` is shaped ``(..., n_intersections)`` and holds P(y = 1 | s); ``p_s``
holds P(s) (or counts, which are normalised), broadcastable against ``p1``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "df_bias_amplification",
    "epsilon_df",
    "epsilon_df_argmax",
    "gamma_sf",
    "gamma_sf_argmax",
    "outcome_probabilities",
    "sf_bias_amplification",
]

_ATOL = 1e-6


def _float_array(value: object, argument: str) -> np.ndarray:
    """``value`` as a float64 array, or a TypeError naming ``argument`` that points an
    audit's data (an AuditData, which is no array) to the functions that take it."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"`{argument}` must be an array of probabilities (numbers), got "
            f"{type(value).__name__} {str(value)[:60]}; for an audit's data use "
            "bayesfair.empirical_fairness(data) (or a model's posterior_fairness)"
        ) from None


def _as_p(p: object) -> np.ndarray:
    arr = _float_array(p, "p")
    if arr.ndim < 2:
        raise ValueError(
            "`p` must be shaped (..., n_intersections, n_outcomes); got shape "
            f"{arr.shape}. For positive rates use outcome_probabilities(p1)."
        )
    if arr.shape[-1] < 2:
        raise ValueError(f"`p` needs at least two outcomes on its last axis, got {arr.shape[-1]}")
    nan = np.isnan(arr)
    absent = bool(nan.any())  # none (as in posterior draws): no copies are needed
    finite = arr[~nan] if absent else arr
    if finite.size and (finite.min() < 0 or finite.max() > 1):
        raise ValueError(
            f"`p` must hold probabilities in [0, 1]; range [{finite.min():g}, {finite.max():g}]"
        )
    if absent and (nan.any(axis=-1) & ~nan.all(axis=-1)).any():
        raise ValueError(
            "a row of `p` (an intersection) is NaN for some outcomes and not others; NaN "
            "marks an absent intersection, whose whole row is NaN"
        )
    # an absent intersection's row counts as summing to 1
    sums = (
        np.where(nan.any(axis=-1), 1.0, np.nan_to_num(arr).sum(axis=-1))
        if absent
        else arr.sum(axis=-1)
    )
    if np.abs(sums - 1).max(initial=0.0) > _ATOL:
        raise ValueError("each row of `p` (an intersection) must sum to 1 over outcomes")
    return arr


def outcome_probabilities(p1: object) -> np.ndarray:
    """Stack positive rates ``p1`` (..., n) into ``p`` (..., n, 2) = [1 - p1, p1].

    Parameters
    ----------
    p1 : array_like, shape (..., n_intersections)
        P(y = 1 | s).

    Returns
    -------
    numpy.ndarray, shape (..., n_intersections, 2)
        The input of :func:`epsilon_df`.

    Examples
    --------
    >>> from bayesfair.metrics import outcome_probabilities
    >>> outcome_probabilities([0.25, 0.5]).tolist()
    [[0.75, 0.25], [0.5, 0.5]]
    """
    p1 = _float_array(p1, "p1")
    return np.stack([1.0 - p1, p1], axis=-1)


def _extremes(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(y|s) with absent intersections at -inf (for max) and +inf (for min)."""
    nan = np.isnan(p)
    if not nan.any():  # every intersection present: p itself, not two copies
        return p, p
    present = ~nan.any(axis=-1, keepdims=True)
    hi = np.where(present, p, -np.inf)
    lo = np.where(present, p, np.inf)
    return hi, lo


def _log_ratio(mx: np.ndarray, mn: np.ndarray) -> np.ndarray:
    # log(max / min) of one division is exact to rounding, so rates one ulp apart give eps > 0;
    # an outcome impossible everywhere (or no present group) gives 0, possible somewhere only inf.
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(mx / mn)
    return np.where((mx <= 0) | ~np.isfinite(mn), 0.0, r)


def epsilon_df(p: object) -> np.ndarray:
    r"""Epsilon of differential fairness (Foulds et al., Definition 2.1).

    .. math:: \epsilon = \max_{y, s_i, s_j} \log P(y|s_i) - \log P(y|s_j)

    over the intersections present (rows without NaN).

    Parameters
    ----------
    p : array_like, shape (..., n_intersections, n_outcomes)
        P(y | s); NaN rows mark absent intersections.

    Returns
    -------
    numpy.ndarray, shape (...)
        Epsilon for every leading index.  It is ``inf`` when an outcome has
        probability 0 in one present intersection and not in another, and 0
        when fewer than two intersections are present.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.metrics import epsilon_df
    >>> float(epsilon_df([[0.5, 0.5], [0.75, 0.25]]))  # log(0.5 / 0.25)
    0.6931471805599453
    """
    p = _as_p(p)
    hi, lo = _extremes(p)
    return _log_ratio(hi.max(axis=-2), lo.min(axis=-2)).max(axis=-1)


def epsilon_df_argmax(p: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where epsilon-DF is attained: ``(i, j, y)`` with ``P(y|s_i) / P(y|s_j) = exp(eps)``.

    Parameters
    ----------
    p : array_like, shape (..., n_intersections, n_outcomes)
        P(y | s), as for :func:`epsilon_df`.

    Returns
    -------
    i, j, y : numpy.ndarray
        Integer arrays shaped like :func:`epsilon_df`'s result: the intersection
        with the larger probability, the one with the smaller, and the outcome.

    Examples
    --------
    >>> from bayesfair.metrics import epsilon_df_argmax
    >>> i, j, y = epsilon_df_argmax([[0.5, 0.5], [0.75, 0.25], [0.6, 0.4]])
    >>> int(i), int(j), int(y)  # P(y=1|s_0) / P(y=1|s_1) = 2 is the largest ratio
    (0, 1, 1)
    """
    p = _as_p(p)
    hi, lo = _extremes(p)
    gap = _log_ratio(hi.max(axis=-2), lo.min(axis=-2))
    y = gap.argmax(axis=-1)
    i = np.take_along_axis(hi.argmax(axis=-2), y[..., None], axis=-1)[..., 0]
    j = np.take_along_axis(lo.argmin(axis=-2), y[..., None], axis=-1)[..., 0]
    return i, j, y


def _as_p1_ps(p1: object, p_s: object) -> tuple[np.ndarray, np.ndarray]:
    p1 = _float_array(p1, "p1")
    p_s = _float_array(p_s, "p_s")
    if p1.ndim < 1:
        raise ValueError("`p1` must be shaped (..., n_intersections)")
    try:
        p1, p_s = np.broadcast_arrays(p1, p_s)
    except ValueError:
        raise ValueError(
            f"`p1` {p1.shape} and `p_s` {p_s.shape} must broadcast over intersections"
        ) from None
    if not np.isfinite(p_s).all() or (p_s < 0).any():
        raise ValueError("`p_s` must be non-negative probabilities or counts, finite, without NaN")
    total = p_s.sum(axis=-1, keepdims=True)
    if (total <= 0).any():
        raise ValueError("`p_s` must have a positive total over intersections")
    # shares must add up to 1; anything else must be counts (whole numbers), which are
    # normalised: shares of 0.9 and 0.9 are a mistake, not a distribution
    shares = np.isclose(total, 1.0, rtol=1e-6, atol=0.0).all()
    if not shares and not (p_s == np.round(p_s)).all():
        worst = float(np.abs(total - 1.0).max() + 1.0)
        raise ValueError(
            "`p_s` must be shares that add up to 1 over intersections (the last axis), or "
            f"counts (whole numbers); got fractions adding up to {worst:.6g}"
        )
    p_s = p_s / total
    bad = np.isnan(p1) & (p_s > 0)
    if bad.any():
        raise ValueError("`p1` is NaN for an intersection with positive probability `p_s`")
    finite = p1[~np.isnan(p1)]
    if finite.size and (finite.min() < 0 or finite.max() > 1):
        raise ValueError("`p1` must hold probabilities in [0, 1]")
    return np.where(p_s > 0, p1, 0.0), p_s


def _sf_terms(p1: object, p_s: object) -> np.ndarray:
    p1, p_s = _as_p1_ps(p1, p_s)
    overall = (p1 * p_s).sum(axis=-1, keepdims=True)
    return np.abs(overall - p1) * p_s


def gamma_sf(p1: object, p_s: object) -> np.ndarray:
    r"""Gamma of statistical-parity subgroup fairness (Kearns et al.; Foulds et al. Def. 2.3).

    .. math:: \gamma = \max_s |P(y=1) - P(y=1|s)| \, P(s),
              \quad P(y=1) = \sum_s P(s) P(y=1|s)

    over all intersections ``s`` (the group class of all attribute assignments).

    Parameters
    ----------
    p1 : array_like, shape (..., n_intersections)
        P(y = 1 | s).  NaN is allowed where ``p_s`` is 0.
    p_s : array_like, broadcastable to ``p1``
        P(s) (adding up to 1 over the last axis), or counts (whole numbers, normalised).

    Returns
    -------
    numpy.ndarray, shape (...)

    Examples
    --------
    >>> from bayesfair.metrics import gamma_sf
    >>> float(gamma_sf([0.2, 0.6], [0.5, 0.5]))  # overall 0.4; |0.4-0.2| * 0.5
    0.1
    """
    return _sf_terms(p1, p_s).max(axis=-1)


def gamma_sf_argmax(p1: object, p_s: object) -> np.ndarray:
    """Index of the intersection that attains gamma-SF, shaped like :func:`gamma_sf`.

    Parameters
    ----------
    p1 : array_like, shape (..., n_intersections)
        P(y = 1 | s).
    p_s : array_like, broadcastable to ``p1``
        P(s), or counts.

    Returns
    -------
    numpy.ndarray
        Integer indices of the intersections.

    Examples
    --------
    >>> from bayesfair.metrics import gamma_sf_argmax
    >>> int(gamma_sf_argmax([0.2, 0.6, 0.4], [0.25, 0.25, 0.5]))  # ties resolve to the first
    0
    """
    return _sf_terms(p1, p_s).argmax(axis=-1)


def df_bias_amplification(p_mechanism: object, p_data: object) -> np.ndarray:
    """DF bias amplification ``epsilon(mechanism) - epsilon(data)`` (Definition 2.2).

    Parameters
    ----------
    p_mechanism, p_data : array_like, shape (..., n_intersections, n_outcomes)
        P(y | s) of the mechanism's decisions and of the data's labels (for example
        posterior draws of each); the leading dimensions broadcast.

    Returns
    -------
    numpy.ndarray, shape (...)
        Positive where the mechanism is less fair than the data.

    Examples
    --------
    >>> from bayesfair.metrics import df_bias_amplification
    >>> round(float(df_bias_amplification([[0.5, 0.5], [0.75, 0.25]],
    ...                                   [[0.5, 0.5], [0.5, 0.5]])), 4)
    0.6931
    """
    return epsilon_df(p_mechanism) - epsilon_df(p_data)


def sf_bias_amplification(p1_mechanism: object, p1_data: object, p_s: object) -> np.ndarray:
    """SF bias amplification ``gamma(mechanism) - gamma(data)`` with shared P(s).

    Parameters
    ----------
    p1_mechanism, p1_data : array_like, shape (..., n_intersections)
        P(y = 1 | s) of the mechanism's decisions and of the data's labels.
    p_s : array_like
        P(s), or counts, shared by both.

    Returns
    -------
    numpy.ndarray, shape (...)

    Examples
    --------
    >>> from bayesfair.metrics import sf_bias_amplification
    >>> float(sf_bias_amplification([0.2, 0.6], [0.4, 0.4], [0.5, 0.5]))
    0.1
    """
    return gamma_sf(p1_mechanism, p_s) - gamma_sf(p1_data, p_s)
