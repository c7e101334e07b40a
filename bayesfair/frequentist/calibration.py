"""How often the intervals of epsilon-DF and gamma-SF cover on tables like the audited one.

A posterior of a largest log-ratio of noisy rates sits above the truth where groups are
small or similar, so its credible interval can miss at the audit's sample size; the
projected Clopper-Pearson box (:func:`fairness_confidence_interval`) is valid but wide.
Which to believe depends on the table's sizes and rates: :func:`interval_calibration`
measures both by simulation on replicate tables with the audited intersection sizes
(calibrated Bayes: a Bayesian interval is judged by its frequency of coverage under
replications like the data, Rubin 1984; Dawid 1982).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._plotting import new_axes
from .._repr import compact_repr
from .._result import ResultMixin
from .._validation import check_count, check_open_probability, check_seed
from .._vocabulary import LEVEL, N_RESAMPLES, PSEUDO_COUNT, interval_columns
from ..data import AuditData, as_audit_data
from ..metrics.fairness import epsilon_df, gamma_sf, outcome_probabilities
from .fairness_bounds import intervals_from_counts

__all__ = ["IntervalCalibration", "interval_calibration"]

METHODS = ("Dirichlet-multinomial", "Clopper-Pearson")
METRICS = ("epsilon-DF", "gamma-SF")


def _metrics(p1: np.ndarray, share: np.ndarray) -> np.ndarray:
    """(epsilon, gamma) over the leading axes of rates ``p1`` (..., groups): shape (..., 2)."""
    with np.errstate(divide="ignore"):
        eps = epsilon_df(outcome_probabilities(p1))
    return np.stack([eps, gamma_sf(p1, share)], axis=-1)


def shrunk_rates(n: np.ndarray, k: np.ndarray, pseudo_count: float = PSEUDO_COUNT) -> np.ndarray:
    r"""The groups' rates with their sampling noise shrunk away: each group's log-odds
    deviation from the overall log-odds times its share of signal
    :math:`\tau^2 / (\tau^2 + v_s)`, with :math:`v_s = 1 / (n_s p_s (1 - p_s))` and
    :math:`\tau^2` the size-weighted method-of-moments spread of the deviations
    (empirical Bayes on the log-odds scale).

    The rates of the table itself spread more than the population's (each carries its
    sampling noise), so replicates drawn from them would judge intervals against a less
    fair population than the one that gave the data.

    Parameters
    ----------
    n, k : numpy.ndarray
        Rows and positives per group (every ``n > 0``).
    pseudo_count : float, default 0.5
        Added to the positives and negatives of every group (no rate of 0 or 1).

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.frequentist.calibration import shrunk_rates
    >>> p = shrunk_rates(np.array([50, 50, 5000]), np.array([10, 30, 1500]))
    >>> bool(abs(p[2] - 0.3) < 0.01)
    True
    """
    fitted = (k + pseudo_count) / (n + 2 * pseudo_count)
    overall = k.sum() / n.sum()
    c = np.log(overall / (1 - overall))
    dev = np.log(fitted / (1 - fitted)) - c
    var = 1 / (n * fitted * (1 - fitted))
    tau2 = max(0.0, float(np.sum(n * (dev**2 - var)) / n.sum()))
    return 1 / (1 + np.exp(-(c + dev * tau2 / (tau2 + var))))


@dataclass(repr=False)
class IntervalCalibration(ResultMixin):  # numpydoc ignore=PR01
    """Coverage of epsilon-DF and gamma-SF intervals on replicates of the audited table
    (:func:`interval_calibration`).

    Attributes
    ----------
    intervals : pandas.DataFrame
        The audited table's intervals: ``metric``, ``method``, ``estimate``, ``lower``,
        ``upper``, ``level``.
    coverage : pandas.DataFrame
        One row per scenario (``fitted``: replicates of the table's rates with their
        sampling noise shrunk away, :func:`shrunk_rates`; ``fair``: every rate the
        overall rate), metric and method: ``truth`` (the scenario's value), ``coverage``
        (the share of replicates whose interval held it), ``median_width`` and
        ``n_resamples``.
    level : float
    role : str
    n_resamples : int
    notes : list of str
    """

    __repr__ = compact_repr

    intervals: pd.DataFrame
    coverage: pd.DataFrame
    level: float
    role: str
    n_resamples: int
    notes: list[str] = field(default_factory=list)

    def summary(self) -> pd.DataFrame:
        """The audited table's intervals, each with its coverage in the two scenarios.

        Returns
        -------
        pandas.DataFrame
            The columns of ``intervals`` and ``coverage_fair``, ``coverage_fitted``.
        """
        wide = self.coverage.pivot_table(
            index=["metric", "method"], columns="scenario", values="coverage"
        ).add_prefix("coverage_")
        wide.columns.name = None
        return self.intervals.merge(wide.reset_index(), on=["metric", "method"], how="left")

    def plot(self, ax=None):
        """Coverage of every method and metric in the two scenarios, against the level.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: a new figure's axes).

        Returns
        -------
        matplotlib.axes.Axes
        """
        ax = new_axes(ax, figsize=(6, 3))
        c = self.coverage
        order = list(dict.fromkeys(f"{m}, {s}" for m, s in zip(c.metric, c.scenario, strict=True)))
        for method, g in c.groupby("method", sort=False):
            ys = [order.index(f"{m}, {s}") for m, s in zip(g.metric, g.scenario, strict=True)]
            ax.plot(g["coverage"], ys, "o", label=method)
        ax.axvline(self.level, color="k", lw=0.8, ls="--")
        ax.set_yticks(range(len(order)), order, fontsize=8)
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel(f"coverage of {self.level:.0%} intervals ({self.n_resamples} replicates)")
        ax.legend(fontsize=7, loc="best")
        return ax


def interval_calibration(
    data: AuditData | pd.DataFrame,
    *,
    role: str = "outcome",
    level: float = LEVEL,
    n_resamples: int = N_RESAMPLES,
    draws: int = 400,
    pseudo_count: float = PSEUDO_COUNT,
    random_state: Any = None,
    **roles: Any,
) -> IntervalCalibration:
    r"""How often the intervals of epsilon-DF and gamma-SF cover on tables like the audited
    one.

    Replicate tables keep every intersection's size ``n_s`` and draw its positives
    ``k_s ~ Binomial(n_s, p_s)`` in two scenarios: the table's rates with their sampling
    noise shrunk away (``fitted``, :func:`shrunk_rates`) and a fair population, every rate
    the overall rate (``fair``: epsilon = gamma = 0). On each replicate two intervals at
    ``level`` are computed and checked against the scenario's value: the equal-tailed
    interval of the Dirichlet-multinomial posterior (independent
    Beta(k + a, n - k + a) rates, shares at the table's; the package's Bayesian model of
    the counts) and the projected Clopper-Pearson box (:func:`fairness_confidence_interval`).
    A method whose coverage falls short of ``level`` in either scenario should not be read
    at this table's sizes.

    Parameters
    ----------
    data : AuditData or pandas.DataFrame
        The audited table (a DataFrame needs ``protected=`` and the role's column).
    role : {"outcome", "decision"}, default "outcome"
    level : float, default 0.9
    n_resamples : int, default 999
        Replicate tables per scenario.
    draws : int, default 400
        Posterior draws per table.
    pseudo_count : float, default 0.5
        The Dirichlet-multinomial's pseudo-count ``a`` (Jeffreys).
    random_state : int, numpy.random.Generator or None
    **roles
        Column roles when ``data`` is a DataFrame.

    Returns
    -------
    IntervalCalibration

    References
    ----------
    Rubin, D. B. (1984). Bayesianly justifiable and relevant frequency calculations for
    the applied statistician. *Annals of Statistics* 12(4).
    Dawid, A. P. (1982). The well-calibrated Bayesian. *JASA* 77(379).

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.frequentist import interval_calibration
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> cal = interval_calibration(data, n_resamples=50, random_state=0)
    >>> sorted(cal.coverage["scenario"].unique())
    ['fair', 'fitted']
    """
    data = as_audit_data(data, roles)
    if role not in ("outcome", "decision"):
        raise ValueError(f"`role` must be 'outcome' or 'decision', got {role!r}")
    check_open_probability(level, "level")
    check_count(n_resamples, "n_resamples", minimum=10)
    check_count(draws, "draws", minimum=50)
    rng = np.random.default_rng(check_seed(random_state))
    counts = data.counts(role)
    n_all = counts.sum(axis=1).astype(np.int64)
    seen = n_all > 0
    notes = []
    if not seen.all():
        notes.append(f"{int((~seen).sum())} intersection(s) without rows left out")
    n, k = n_all[seen], counts[seen, 1].astype(np.int64)
    share = n / n.sum()
    a = float(pseudo_count)
    qs = [(1 - level) / 2, (1 + level) / 2]
    scenarios = {"fitted": shrunk_rates(n, k, a), "fair": np.full(len(n), k.sum() / n.sum())}
    rows = []
    for name, p in scenarios.items():
        truth = _metrics(p, share)
        kk = rng.binomial(n, p, size=(n_resamples, len(n)))
        post = _metrics(rng.beta(kk + a, n - kk + a, size=(draws, *kk.shape)), share)
        bounds = {
            "Dirichlet-multinomial": tuple(np.quantile(post, qs, axis=0)),
            "Clopper-Pearson": _clopper_pearson_bounds(n, kk, level),
        }
        for method, (lo, hi) in bounds.items():
            for j, metric in enumerate(METRICS):
                inside = (lo[:, j] <= truth[j] + 1e-12) & (truth[j] - 1e-12 <= hi[:, j])
                rows.append(
                    {
                        "scenario": name,
                        "metric": metric,
                        "method": method,
                        "truth": float(truth[j]),
                        "coverage": float(inside.mean()),
                        "median_width": float(np.median(hi[:, j] - lo[:, j])),
                        "n_resamples": n_resamples,
                    }
                )
    post = _metrics(rng.beta(k + a, n - k + a, size=(draws, len(n))), share)
    dm_lo, dm_hi = np.quantile(post, qs, axis=0)
    cp = _clopper_pearson(n, k, level)
    intervals = pd.DataFrame(
        {
            "metric": list(METRICS) * 2,
            "method": [m for m in METHODS for _ in METRICS],
            "estimate": [*post.mean(axis=0), cp.epsilon, cp.gamma],
            **interval_columns(
                [*dm_lo, cp.epsilon_interval[0], cp.gamma_interval[0]],
                [*dm_hi, cp.epsilon_interval[1], cp.gamma_interval[1]],
                level,
            ),
        }
    )
    return IntervalCalibration(
        intervals=intervals,
        coverage=pd.DataFrame(rows),
        level=level,
        role=role,
        n_resamples=n_resamples,
        notes=notes,
    )


def _clopper_pearson(n: np.ndarray, k: np.ndarray, level: float):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # groups without rows: left out before
        labels = [str(i) for i in range(len(n))]
        return intervals_from_counts(n, k, labels, level=level, role="outcome", by=())


def _clopper_pearson_bounds(n, kk, level) -> tuple[np.ndarray, np.ndarray]:
    """The projected Clopper-Pearson intervals of every replicate: (lower, upper), each
    shaped (replicates, 2)."""
    lo, hi = np.empty((len(kk), 2)), np.empty((len(kk), 2))
    for r, k in enumerate(kk):
        ci = _clopper_pearson(n, k, level)
        lo[r] = ci.epsilon_interval[0], ci.gamma_interval[0]
        hi[r] = ci.epsilon_interval[1], ci.gamma_interval[1]
    return lo, hi
