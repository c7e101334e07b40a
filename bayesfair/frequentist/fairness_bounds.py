"""Confidence intervals for epsilon-DF and gamma-SF that hold at any group size, including
for a perfectly fair population: simultaneous Clopper-Pearson intervals of every
intersection's rate (and share), projected onto the two metrics."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._plotting import dot_plot, new_axes
from .._repr import compact_repr
from .._result import ResultMixin
from .._validation import check_open_probability
from .._vocabulary import LEVEL, interval_columns, renamed_arguments
from .._warning_location import user_stacklevel
from ..data import AuditData, as_audit_data
from ..metrics.fairness import epsilon_df, gamma_sf
from ._pvalues import clopper_pearson

__all__ = ["FairnessConfidenceInterval", "fairness_confidence_interval"]


def _max_other(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``max over i != j of a[i] - b[j]`` over the last axis (at least two entries, no
    NaN), without forming every pair: the largest ``a1`` of a and smallest ``b1`` of b,
    from different entries, or else the better of each with the other's runner-up."""
    ia = a.argmax(axis=-1)[..., None]
    ib = b.argmin(axis=-1)[..., None]
    a1, b1 = np.take_along_axis(a, ia, -1)[..., 0], np.take_along_axis(b, ib, -1)[..., 0]
    entry = np.arange(a.shape[-1])
    a2 = np.where(entry == ia, -np.inf, a).max(axis=-1)
    b2 = np.where(entry == ib, np.inf, b).min(axis=-1)
    with np.errstate(invalid="ignore"):
        other = np.maximum(a1 - b2, a2 - b1)
        return np.where(ia[..., 0] != ib[..., 0], a1 - b1, other)


def epsilon_range(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The range of epsilon-DF over every ``P(y=1|s)`` in the box ``[lower, upper]`` (over
    the last axis; leading axes are boxes computed at once).

    epsilon is the largest ``|log P(y|s_i) - log P(y|s_j)|`` over pairs and both outcomes.
    The upper end, the largest ``log U_i - log L_j`` (or its ``1 - p`` twin) over pairs,
    is attained at a corner. The lower end is the larger of the two outcomes' smallest
    spreads, ``max_i log L_i - min_j log U_j`` and its twin (0 when the intervals
    overlap): at most the smallest epsilon in the box, which may need both at once.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = np.maximum(
            _max_other(np.log(upper), np.log(lower)),
            _max_other(np.log1p(-lower), np.log1p(-upper)),
        )
        lo = np.maximum.reduce(
            [
                np.zeros_like(hi),
                _max_other(np.log(lower), np.log(upper)),
                _max_other(np.log1p(-upper), np.log1p(-lower)),
            ]
        )
    return lo, hi


def gamma_range(
    share: tuple[np.ndarray, np.ndarray],
    rate: tuple[np.ndarray, np.ndarray],
    overall: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """A range that holds gamma-SF, ``max_s P(s) |P(y=1) - P(y=1|s)|``, for every share,
    rate and overall rate ``P(y=1)`` in their intervals (treated as free of each other,
    which can only widen it); over the last axis, the overall rate one per leading
    index."""
    (s_lo, s_hi), (lo, hi) = share, rate
    a_lo, a_hi = (np.asarray(x, float)[..., None] for x in overall)
    near = np.maximum.reduce([np.zeros_like(lo), lo - a_hi, a_lo - hi])
    far = np.maximum(a_hi - lo, hi - a_lo)
    return np.max(s_lo * near, axis=-1), np.max(s_hi * far, axis=-1)


def projected_bounds(
    n: np.ndarray, pos: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The projected Clopper-Pearson ends ``(epsilon low, epsilon high, gamma low, gamma
    high)`` of :func:`fairness_confidence_interval` from rows ``n`` (at least two groups
    with rows) and positives ``pos`` per group; leading axes of ``pos`` are tables with the
    same ``n`` (replicates), computed at once.

    The lower end of epsilon needs every rate in its interval at once (Sidak: the counts
    are independent given the sizes); the upper end only the two rates of the pair that
    attains the population's epsilon, one side each: ``a / 2`` per side, ``a = (1 -
    level) / 2``. gamma's lower end: every share (one-sided, Bonferroni), every rate (Sidak)
    and the overall rate, ``a / 3`` each; its upper end: the attaining group's share and
    rate and the overall rate, one side each, ``a / 3`` each. A group without rows has rate
    in [0, 1].
    """
    n, pos = np.asarray(n, np.int64), np.asarray(pos, np.int64)
    seen = n > 0
    k, total, a = int(seen.sum()), int(n.sum()), (1 - level) / 2
    box = clopper_pearson(pos[..., seen], n[seen], (1 - a) ** (1 / k))
    pair = clopper_pearson(pos[..., seen], n[seen], 1 - a)
    positives = pos.sum(axis=-1)
    low = gamma_range(
        clopper_pearson(n[seen], total, 1 - 2 * a / (3 * k)),
        clopper_pearson(pos[..., seen], n[seen], (1 - a / 3) ** (1 / k)),
        clopper_pearson(positives, total, 1 - a / 3),
    )[0]
    rate = clopper_pearson(pos, np.maximum(n, 1), 1 - 2 * a / 3)
    high = gamma_range(
        clopper_pearson(n, total, 1 - 2 * a / 3),
        (np.where(seen, rate[0], 0.0), np.where(seen, rate[1], 1.0)),
        clopper_pearson(positives, total, 1 - 2 * a / 3),
    )[1]
    return epsilon_range(*box)[0], epsilon_range(*pair)[1], low, high


def amplification_bounds(
    n: np.ndarray, labels: np.ndarray, decisions: np.ndarray, level: float
) -> np.ndarray:
    """Bounds of the amplification (the decisions' epsilon-DF and gamma-SF minus the
    labels'), ``[[epsilon low, high], [gamma low, high]]``, from rows ``n`` and the
    positive labels and decisions per group: both tables' :func:`projected_bounds` at
    level ``1 - (1 - level) / 2`` hold together with probability at least ``level``
    (Bonferroni), and then the difference lies between their far ends."""
    half = 1 - (1 - level) / 2
    lab = projected_bounds(n, labels, half)
    dec = projected_bounds(n, decisions, half)
    return np.array(
        [[dec[0] - lab[1], dec[1] - lab[0]], [dec[2] - lab[3], dec[3] - lab[2]]], dtype=float
    )


@dataclass(frozen=True)
class FairnessConfidenceInterval(ResultMixin):  # numpydoc ignore=PR01
    """Confidence intervals of epsilon-DF and gamma-SF (:func:`fairness_confidence_interval`).

    Attributes
    ----------
    epsilon, gamma : float
        The empirical (EDF) estimates.
    epsilon_interval, gamma_interval : tuple of float
        ``(lower, upper)``, jointly covering the population's values with probability
        at least ``level`` each.
    level : float
    role : str
    by : tuple of str
    groups : pandas.DataFrame
        Per intersection with rows: ``n``, ``positives``, ``p`` and the bounds
        ``lower``, ``upper`` that hold for all intersections at once with
        probability at least ``level`` (the column: ``1 - (1 - level) / 2``, as
        epsilon's lower end needs).
    excluded : list of str
        Intersections left out because they have no rows.
    notes : list of str
    """

    __repr__ = compact_repr

    epsilon: float
    gamma: float
    epsilon_interval: tuple[float, float]
    gamma_interval: tuple[float, float]
    level: float
    role: str
    by: tuple[str, ...]
    groups: pd.DataFrame
    excluded: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        """The per-group bounds (``groups``).

        Returns
        -------
        pandas.DataFrame
        """
        return self.groups

    def summary(self) -> pd.DataFrame:
        """One row per metric: the EDF estimate and the interval.

        Returns
        -------
        pandas.DataFrame
            Columns ``metric``, ``estimate``, ``lower``, ``upper``, ``level``,
            ``role`` and ``method``.
        """
        k = len(self.groups)
        return pd.DataFrame(
            {
                "metric": ["epsilon-DF", "gamma-SF"],
                "estimate": [self.epsilon, self.gamma],
                **interval_columns(
                    [self.epsilon_interval[0], self.gamma_interval[0]],
                    [self.epsilon_interval[1], self.gamma_interval[1]],
                    self.level,
                ),
                "role": [self.role] * 2,
                "method": [
                    f"Clopper-Pearson rates of {k} groups, projected (Sidak for the lower end)",
                    f"Clopper-Pearson rates and shares of {k} groups and the overall rate, "
                    "projected",
                ],
            }
        )

    def plot(self, ax=None):
        """Every intersection's rate with its simultaneous Clopper-Pearson bounds, from
        which the intervals of epsilon-DF and gamma-SF are projected.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: a new figure's axes).

        Returns
        -------
        matplotlib.axes.Axes
        """
        g = self.groups
        ax = new_axes(ax, figsize=(5, 0.25 * len(g) + 1.2))
        lv = float(g["level"].iloc[0]) if len(g) else self.level
        dot_plot(
            ax,
            g["intersection"],
            g["p"],
            g["lower"],
            g["upper"],
            label=f"P({self.role}=1 | s), simultaneous {lv:.0%} bounds",
        )
        lo, hi = self.epsilon_interval
        ax.set_title(
            f"epsilon-DF {self.epsilon:.3g}, {self.level:.0%} CI [{lo:.3g}, {hi:.3g}]", fontsize=9
        )
        ax.legend(fontsize=7, loc="best")
        return ax


@renamed_arguments(target="role")
def fairness_confidence_interval(
    data: AuditData,
    *,
    role: str = "outcome",
    level: float = LEVEL,
    by: str | Sequence[str] | None = None,
    **roles: Any,
) -> FairnessConfidenceInterval:
    """Confidence intervals of the population's epsilon-DF and gamma-SF, valid at any
    group size and for a perfectly fair population.

    A posterior interval of epsilon rests on a model in which no two intersections
    share a rate, and epsilon is a largest absolute log-ratio: its estimates are biased
    upwards and, where the population is fair or nearly so, posterior (and bootstrap)
    intervals exclude the truth. These intervals assume only that each intersection's
    count is binomial given its size, and hold with probability at least ``level`` at
    any group size. With ``a = (1 - level) / 2`` for each end:

    * epsilon's lower end is the smallest epsilon over a box in which every rate
      ``P(y=1|s)`` lies in its Clopper-Pearson interval at the Sidak level
      ``(1 - a) ** (1/k)`` (all ``k`` hold at once: the counts are independent given
      the sizes). It is 0 whenever those intervals overlap, as in a fair population.
    * epsilon's upper end needs only the two rates of the pair that attains the
      population's epsilon, each on one side: it is the largest epsilon over the
      rates' Clopper-Pearson intervals at level ``1 - a``.
    * gamma also needs the shares ``P(s)`` and the overall rate ``P(y=1)`` (rows drawn
      at random from the population): its lower end holds when every share is above
      its lower bound, every rate in its box and the overall rate in its interval
      (``a/3`` each); its upper end when the attaining group's share, rate and the
      overall rate are on the right side of one bound each (``a/3`` each). A group
      without rows enters gamma's upper end with a rate anywhere in [0, 1].

    Each end is attained by some rates in the boxes, or lies beyond them, so the
    intervals are conservative: coverage is at least ``level``, often more.
    epsilon is over the intersections with rows, as in EDF: an empty intersection's
    rate is unknown and is left out (with a warning and a note).

    Parameters
    ----------
    data : AuditData
    role : {"outcome", "decision"}
        Fairness of the true labels or of the mechanism's decisions.
    level : float, default 0.9
        Confidence level of each interval (the package's credible mass is also 0.9).
    by : str or list of str, optional
        Compare the groups of a subset of the protected columns.
    **roles
        With a DataFrame as ``data``: its columns' roles, as :class:`~bayesfair.AuditData`
        takes them (``protected=``, ``outcome=``, ``decision=``, ``score=``,
        ``threshold=``, ...).

    Returns
    -------
    FairnessConfidenceInterval
        ``epsilon_interval``, ``gamma_interval``, the bounds per group, ``.summary()``.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.frequentist import fairness_confidence_interval
    >>> ds = make_gaussian_threshold(n_rows=4000, random_state=1)
    >>> ci = fairness_confidence_interval(ds.audit_data())
    >>> lo, hi = ci.epsilon_interval
    >>> bool(lo <= ci.epsilon <= hi)
    True
    """
    data = as_audit_data(data, roles)
    level = check_open_probability(level, "level")
    counts = data.counts(role, by)
    labels = data.grouping(by)["intersection"].tolist()
    return intervals_from_counts(
        counts.sum(axis=1),
        counts[:, 1],
        labels,
        level=level,
        role=role,
        by=tuple(data._check_by(by)),
    )


def intervals_from_counts(
    n: np.ndarray,
    pos: np.ndarray,
    labels: list[str],
    *,
    level: float,
    role: str,
    by: tuple[str, ...],
) -> FairnessConfidenceInterval:
    """:func:`fairness_confidence_interval` from the groups' rows ``n`` and positives
    ``pos`` (a fitted model's table, say), over the protected columns ``by``."""
    n, pos = np.asarray(n, np.int64), np.asarray(pos, np.int64)
    seen = n > 0
    excluded = [lab for lab, s in zip(labels, seen, strict=True) if not s]
    if seen.sum() < 2:
        raise ValueError(
            f"`data` has {int(seen.sum())} group(s) of {list(by)} with rows; "
            "epsilon-DF and gamma-SF compare at least two"
        )
    notes = []
    if excluded:
        notes.append(
            f"{len(excluded)} group(s) without rows left out of epsilon-DF (their rate is "
            f"unknown, as in EDF): {excluded[:5]}{' ...' if len(excluded) > 5 else ''}"
        )
        warnings.warn(notes[-1], UserWarning, stacklevel=user_stacklevel())
    eps_lo, eps_hi, low, high = projected_bounds(n, pos, level)
    box = clopper_pearson(pos[seen], n[seen], (1 - (1 - level) / 2) ** (1 / int(seen.sum())))
    eps_interval = (float(eps_lo), float(eps_hi))
    p = pos[seen] / n[seen]
    groups = pd.DataFrame(
        {
            "intersection": [lab for lab, s in zip(labels, seen, strict=True) if s],
            "n": n[seen],
            "positives": pos[seen],
            "p": p,
            # simultaneous over the intersections
            **interval_columns(box[0], box[1], 1 - (1 - level) / 2),
        }
    )
    with np.errstate(divide="ignore"):
        eps = float(epsilon_df(np.column_stack([1 - p, p])))
    return FairnessConfidenceInterval(
        epsilon=eps,
        gamma=float(gamma_sf(p, n[seen])),
        epsilon_interval=eps_interval,
        gamma_interval=(float(low), float(high)),
        level=level,
        role=role,
        by=by,
        groups=groups,
        excluded=excluded,
        notes=notes,
    )
