"""Empirical (EDF) and smoothed empirical (Dirichlet) fairness estimates from the table."""

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
from .._validation import check_flag, check_instance, check_real
from .._vocabulary import PSEUDO_COUNT, renamed_arguments
from .._warning_location import user_stacklevel
from ..data import AuditData, as_audit_data
from .fairness import epsilon_df, epsilon_df_argmax, gamma_sf, gamma_sf_argmax

__all__ = ["FairnessEstimate", "bias_amplification", "empirical_fairness"]


@dataclass(frozen=True)
class FairnessEstimate(ResultMixin):  # numpydoc ignore=PR01
    """Point estimates of epsilon-DF and gamma-SF with the groups that attain them.

    Attributes
    ----------
    epsilon, gamma : float
    epsilon_pair : tuple
        ``(group_high, group_low, outcome)``: ``P(outcome | group_high) /
        P(outcome | group_low) = exp(epsilon)``.
    gamma_group : str
        The intersection that attains gamma.
    groups : pandas.DataFrame
        Per-intersection ``n``, ``p`` (P(y=1|s) used), ``p_s`` and whether the
        intersection entered epsilon (``in_epsilon``).
    excluded : list of str
        Intersections left out of epsilon because they have no rows.
    method, role : str
    pseudo_count : float
    notes : list of str
        What the estimate had to leave out or warn about.
    by : tuple of str
        The protected columns whose groups were compared (all of them by default).
    """

    __repr__ = compact_repr

    epsilon: float
    gamma: float
    epsilon_pair: tuple[str, str, int]
    gamma_group: str
    groups: pd.DataFrame
    excluded: list[str]
    method: str
    role: str
    pseudo_count: float
    notes: list[str] = field(default_factory=list)
    by: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """The per-intersection table (``groups``).

        Returns
        -------
        pandas.DataFrame
        """
        return self.groups

    def summary(self) -> pd.DataFrame:
        """One-row-per-metric table: value, where it is attained, and the settings.

        Returns
        -------
        pandas.DataFrame
            Rows epsilon-DF and gamma-SF.
        """
        hi, lo, y = self.epsilon_pair
        v = "d" if self.role == "decision" else "y"  # the decisions' rate: P(d=1|s)
        return pd.DataFrame(
            {
                "metric": ["epsilon-DF", "gamma-SF"],
                "value": [self.epsilon, self.gamma],
                "attained_by": [f"P({v}={y}|{hi}) / P({v}={y}|{lo})", self.gamma_group],
                "method": [self.method] * 2,
                "role": [self.role] * 2,
                "pseudo_count": [self.pseudo_count] * 2,
                "excluded_intersections": [len(self.excluded)] * 2,
            }
        )

    def plot(self, ax=None):
        """P(y=1 | s) of every intersection, with the pair that attains epsilon and the
        group that attains gamma marked, and the overall rate as a line.

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
        dot_plot(ax, g["intersection"], g["p"], label=f"P({self.role}=1 | s), {self.method}")
        y = np.arange(len(g))[::-1]
        hi, lo, _ = self.epsilon_pair
        for name, marker, what in ((hi, "^", "epsilon pair"), (lo, "^", None)):
            at = (g["intersection"] == name).to_numpy()
            ax.plot(g["p"][at], y[at], marker, color="C3", ms=8, mfc="none", label=what)
        at = (g["intersection"] == self.gamma_group).to_numpy()
        ax.plot(g["p"][at], y[at], "s", color="C2", ms=9, mfc="none", label="gamma group")
        shares = g["p_s"].to_numpy(float)
        overall = float(np.nansum(shares * g["p"].to_numpy(float)) / np.nansum(shares))
        ax.axvline(overall, color="0.5", ls=":", label="overall rate")
        ax.set_title(f"epsilon-DF {self.epsilon:.3g}, gamma-SF {self.gamma:.3g}", fontsize=9)
        ax.legend(fontsize=7, loc="best")
        return ax


@renamed_arguments(target="role", alpha="pseudo_count")
def empirical_fairness(
    data: AuditData,
    *,
    role: str = "outcome",
    pseudo_count: float = PSEUDO_COUNT,
    include_empty: bool = False,
    by: str | Sequence[str] | None = None,
    **roles: Any,
) -> FairnessEstimate:
    """Empirical differential fairness (EDF) and subgroup fairness from counts.

    With ``pseudo_count = 0`` this is EDF (Foulds et al. eq. 3): ``P(y|s) = N_{y,s} /
    N_s``, over intersections with ``N_s > 0``.  With ``pseudo_count > 0`` it is the
    smoothed EDF of eq. 4, the posterior predictive of a Dirichlet-multinomial
    with symmetric concentration ``pseudo_count`` per outcome.

    Parameters
    ----------
    data : AuditData
    role : {"outcome", "decision"}
        Fairness of the true labels (the data) or of the mechanism's decisions.
    pseudo_count : float, default 0.5
        Dirichlet smoothing per outcome.
    include_empty : bool, default False
        Whether intersections without rows enter epsilon, with their prior
        predictive 1/2.  Definition 2.1 quantifies only over intersections with
        P(s) > 0, so by default they are left out (and listed in ``excluded``,
        with a warning); ``True`` needs ``pseudo_count > 0``.  They never affect gamma,
        which weights by P(s) = 0.
    by : str or list of str, optional
        Measure fairness over the groups of a subset of the protected columns (their
        pooled counts) instead of the intersections of all of them. Foulds et al.
        prove that epsilon-DF over the intersections bounds it over every subset, so
        a marginal audit (race alone, sex alone) can look fairer than the
        intersectional one; it cannot look less fair.
    **roles
        With a DataFrame as ``data``: its columns' roles, as :class:`~bayesfair.AuditData`
        takes them (``protected=``, ``outcome=``, ``decision=``, ``score=``,
        ``threshold=``, ...).

    Returns
    -------
    FairnessEstimate
        ``epsilon``, ``gamma``, where they are attained, and ``.summary()``.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.metrics import empirical_fairness
    >>> ds = make_gaussian_threshold(n_rows=2000, random_state=1)
    >>> est = empirical_fairness(ds.audit_data(), pseudo_count=1.0)
    >>> est.epsilon > 0, est.excluded  # no intersection is empty here
    (True, [])
    """
    data = as_audit_data(data, roles)
    pseudo_count = check_real(pseudo_count, "pseudo_count", "non-negative")
    check_flag(include_empty, "include_empty")
    if include_empty and not pseudo_count > 0:
        raise ValueError(
            "include_empty=True needs pseudo_count > 0: P(y|s) of an empty group is undefined"
        )
    p = data.probabilities(role, pseudo_count=pseudo_count, by=by)
    n = data.group_sizes(by)
    groups = data.grouping(by)
    labels = groups["intersection"].tolist()
    empty = n == 0
    excluded = [lab for lab, e in zip(labels, empty, strict=True) if e] if not include_empty else []
    p_eps = p.copy()
    if not include_empty:
        p_eps[empty] = np.nan
    if excluded:
        warnings.warn(
            f"{len(excluded)} empty intersection(s) left out of epsilon-DF "
            f"(no rows): {excluded[:5]}{' ...' if len(excluded) > 5 else ''}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    eps = float(epsilon_df(p_eps))
    i, j, y = (int(v) for v in epsilon_df_argmax(p_eps))
    p1 = p[:, 1]
    gam = float(gamma_sf(p1, n))
    g = int(gamma_sf_argmax(p1, n))
    groups["n"] = n
    groups["p"] = p1
    groups["p_s"] = n / n.sum()
    groups["in_epsilon"] = ~np.isnan(p_eps).any(axis=1)
    return FairnessEstimate(
        epsilon=eps,
        gamma=gam,
        epsilon_pair=(labels[i], labels[j], y),
        gamma_group=labels[g],
        groups=groups,
        excluded=excluded,
        method="EDF" if pseudo_count == 0 else f"smoothed EDF (pseudo_count={pseudo_count:g})",
        role=role,
        pseudo_count=float(pseudo_count),
        by=tuple(data._check_by(by)),
    )


def bias_amplification(mechanism: FairnessEstimate, data: FairnessEstimate) -> pd.DataFrame:
    """DF and SF bias amplification (mechanism minus data), Definition 2.2.

    Both estimates must use the same method and smoothing, or the difference
    mixes estimators.

    Parameters
    ----------
    mechanism : FairnessEstimate
        Of the audited decisions (``role="decision"``).
    data : FairnessEstimate
        Of the true labels (``role="outcome"``).

    Returns
    -------
    pandas.DataFrame
        Rows epsilon-DF and gamma-SF; columns ``data``, ``mechanism`` and
        ``amplification`` (positive: the mechanism is less fair than the data).

    Examples
    --------
    >>> from bayesfair import bias_amplification, empirical_fairness
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> data = make_gaussian_threshold(n_rows=3000, random_state=1).audit_data()
    >>> amp = bias_amplification(empirical_fairness(data, role="decision"),
    ...                          empirical_fairness(data, role="outcome"))
    >>> list(amp["metric"])
    ['epsilon-DF', 'gamma-SF']
    """
    for arg, value in (("mechanism", mechanism), ("data", data)):
        check_instance(value, FairnessEstimate, arg, "a FairnessEstimate (empirical_fairness)")
    if (mechanism.method, mechanism.pseudo_count) != (data.method, data.pseudo_count):
        raise ValueError(
            f"estimates use different methods ({mechanism.method} vs {data.method}); "
            "bias amplification compares like with like"
        )
    return pd.DataFrame(
        {
            "metric": ["epsilon-DF", "gamma-SF"],
            "data": [data.epsilon, data.gamma],
            "mechanism": [mechanism.epsilon, mechanism.gamma],
            "amplification": [mechanism.epsilon - data.epsilon, mechanism.gamma - data.gamma],
        }
    )
