"""Intervals of epsilon-DF and gamma-SF, and how often they cover on tables like the
audited one.

A posterior of a largest log-ratio of noisy rates sits above the truth where groups are
small or similar, so the credible interval of independent rates (Dirichlet-multinomial)
misses at the audit's sample sizes; the projected Clopper-Pearson box
(:func:`~bayesfair.frequentist.fairness_confidence_interval`) is valid but wide and often
unbounded. :func:`interval_calibration` builds on a hierarchical model of the counts
(:class:`~bayesfair.models.HierarchicalCounts`), which shrinks noisy intersections towards
what their attribute values predict (those too small to contradict it lie off it now and
then, a contamination prior, Berger 1985), with a lower end of 0 wherever a test of equal rates
does not reject; it measures the coverage of every interval on replicate tables with the
audited intersection sizes (calibrated Bayes: a Bayesian interval is judged by its
frequency of coverage under replications like the data, Rubin 1984; Dawid 1982; Talts et
al. 2018), and gives as the audit's default that posterior's interval corrected for the
bias its median shows on replications from the posterior (a parametric bootstrap's bias
correction, Efron & Tibshirani 1993), at the credible mass whose simulated coverage
reaches the level (Loh 1987's calibration of the nominal level): where one small
intersection may set the maximum, the mass grows until the interval allows for it. Where
equal rates are rejected, its lower end is at most the inversion of that test along the path
from equal rates to the posterior mean (Casella & Berger 2002, section 9.2.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._parallel import chunked_resamples
from ._plotting import new_axes
from ._progress import progress_bar
from ._repr import compact_repr
from ._result import ResultMixin
from ._table_intervals import (
    ALL_METHODS,
    CALIBRATION_SCENARIOS,
    MASSES,
    METHODS,
    METRICS,
    PATH_ROW,
    PLAUSIBLE_MASS,
    AmplificationIntervals,
    RateIntervals,
    at_mass,
    calibrate,
    calibrated_bounds,
    constrained_bayes_rates,
    equal_rates_pvalue,
    held,
    off_hierarchy,
    replicate_bounds,
    shifted_mass_rows,
    shrunk_rates,
    unchecked,
    with_path_lower,
)
from ._validation import check_count, check_open_probability, check_seed
from ._vocabulary import LEVEL, N_REPLICATES, PSEUDO_COUNT, interval_columns
from .data import AuditData, as_audit_data

__all__ = [
    "IntervalCalibration",
    "constrained_bayes_rates",
    "equal_rates_pvalue",
    "interval_calibration",
    "off_hierarchy",
    "shrunk_rates",
    "table_name",
    "unchecked",
]

#: replicate worlds: truths drawn from the hierarchical posterior (a new one per replicate),
#: the observed (smoothed) rates, the rates with their noise shrunk away, equal rates
SCENARIOS = ("posterior", "observed", "shrunk", "fair")
#: the fifth world, where the hierarchical posterior rules the smoothed table out as the
#: 'observed' scenario's truth: the smoothed table itself, checked out of sample
SMOOTHED = "smoothed"
#: the role of the amplification's table: decisions' metrics minus the labels'
AMPLIFICATION = "amplification"


@dataclass(repr=False)
class IntervalCalibration(ResultMixin):  # numpydoc ignore=PR01
    """Intervals of epsilon-DF and gamma-SF with their coverage on replicates of the
    audited table (:func:`interval_calibration`).

    Attributes
    ----------
    intervals : pandas.DataFrame
        The audited table's intervals: ``metric``, ``method``, ``estimate``, ``lower``,
        ``upper``, ``level``, ``credible_mass``; the ``calibrated`` rows are the default.
    coverage : pandas.DataFrame
        One row per scenario, metric and method: ``truth`` (the scenario's value; the
        median over replicates for ``posterior``), ``coverage`` (the share of replicates
        whose interval held their truth), ``median_width`` and ``n_replicates``.
    equal_rates_pvalue : float
        Of the audited table (:func:`equal_rates_pvalue`); at least ``1 - level`` puts
        the hierarchical intervals' lower ends at 0.
    level : float
    role : str
        ``"outcome"``, ``"decision"`` or ``"decision | outcome = 0"`` (or 1).
    n_replicates : int
    credible_mass : dict
        Per metric, the credible mass of the calibrated interval.
    bias_correction : dict
        Per metric, how far the calibrated interval (and its estimate) is moved down from the
        hierarchical posterior's: its median's bias in the ``posterior`` scenario, for the
        metrics :attr:`bias_corrected` names; 0 for the others.
    unpooled : dict or None
        Where the audited table has :func:`unchecked` intersections (too few rows for any
        count to contradict the pooled rate), which the hierarchy lets lie off it only in a
        share of its draws (:func:`off_hierarchy`): epsilon-DF's
        interval at the level with their rates anywhere their rows allow
        (``lower``, ``upper``; :meth:`RateIntervals.unpooled_bounds
        <bayesfair._table_intervals.RateIntervals.unpooled_bounds>`), and how many there
        are and their largest size (``intersections``, ``max_rows``). A sensitivity
        check, not calibrated on replicates. None otherwise, and for the amplification.
    path_lower : dict or None
        Per metric, the lower end of the inversion of the test of equal rates along the path
        from equal rates to the posterior-mean log-odds
        (:func:`~bayesfair._table_intervals.path_lower_bounds`), which the calibrated
        interval's lower end never exceeds (a note says where it set it). None where equal
        rates are not rejected (the lower ends are 0), where the test rejects every world on
        the path up to ``2 ** PATH_DOUBLINGS`` times the posterior mean's deviations (the
        posterior's lower ends stand), and for the amplification.
    uneven : dict or None
        Where the hierarchical posterior rules out the smoothed table as the ``observed``
        scenario's truth (its replicates then draw from :func:`constrained_bayes_rates`),
        the check of the table's own unevenness: ``plausibility``, the share of tables
        drawn from the smoothed rates whose smoothed metric (the one ruled out) is at or
        below this table's (near 0: the data rule those rates out too), and ``short``, per
        metric whose calibrated interval held the smoothed rates' value in fewer than
        ``level`` minus two standard errors of the ``smoothed`` scenario's replicates (and
        only while the data do not rule them out), that coverage. None otherwise.
    notes : list of str
    """

    __repr__ = compact_repr

    intervals: pd.DataFrame
    coverage: pd.DataFrame
    equal_rates_pvalue: float
    level: float
    role: str
    n_replicates: int
    credible_mass: dict[str, float] = field(default_factory=dict)
    bias_correction: dict[str, float] = field(default_factory=dict)
    unpooled: dict[str, float] | None = None
    path_lower: dict[str, float] | None = None
    uneven: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> pd.DataFrame:
        """The audited table's intervals, each with its coverage in every scenario.

        Returns
        -------
        pandas.DataFrame
            The columns of ``intervals`` and ``coverage_<scenario>``.
        """
        wide = self.coverage.pivot_table(
            index=["metric", "method"], columns="scenario", values="coverage", sort=False
        ).add_prefix("coverage_")
        wide.columns.name = None
        return self.intervals.merge(wide.reset_index(), on=["metric", "method"], how="left")

    @property
    def shortfall(self) -> dict[str, dict[str, float]]:
        """Per metric whose calibrated interval, even at the largest credible mass (0.999),
        held its truth in fewer than ``level`` of the replicates of a scenario it was
        chosen on: ``{scenario: coverage}`` (read from ``coverage``). Empty when the level
        was reached: then the interval can be read at its level on tables like the audited
        one; otherwise it cannot, and the Clopper-Pearson interval, valid at any size, is
        the one to read."""
        return _shortfall(self.coverage, self.level)

    @property
    def bias_corrected(self) -> dict[str, bool]:
        """Per metric, whether the calibrated interval and its estimate are moved by a bias
        correction: epsilon-DF of rates, not gamma-SF, nor the amplification (see
        :func:`interval_calibration`)."""
        return dict(zip(METRICS, _intervals_kind(self.role).bias_corrected, strict=True))

    def plot(self, ax=None):
        """Coverage of every method and metric in every scenario, against the level.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: a new figure's axes).

        Returns
        -------
        matplotlib.axes.Axes
        """
        ax = new_axes(ax, figsize=(6, 4))
        c = self.coverage
        order = list(dict.fromkeys(f"{m}, {s}" for m, s in zip(c.metric, c.scenario, strict=True)))
        for method, g in c.groupby("method", sort=False):
            ys = [order.index(f"{m}, {s}") for m, s in zip(g.metric, g.scenario, strict=True)]
            ax.plot(g["coverage"], ys, "o", label=method)
        ax.axvline(self.level, color="k", lw=0.8, ls="--")
        ax.set_yticks(range(len(order)), order, fontsize=8)
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel(f"coverage of {self.level:.0%} intervals ({self.n_replicates} replicates)")
        ax.legend(fontsize=7, loc="best")
        return ax


def _intervals_kind(role: str) -> type[RateIntervals] | type[AmplificationIntervals]:
    """The table whose intervals a calibration of ``role`` checks."""
    return AmplificationIntervals if role == AMPLIFICATION else RateIntervals


def interval_calibration(
    data: AuditData | pd.DataFrame,
    *,
    role: str = "outcome",
    given_outcome: int | None = None,
    level: float = LEVEL,
    n_replicates: int = N_REPLICATES,
    draws: int = 400,
    pseudo_count: float = PSEUDO_COUNT,
    n_jobs: int | None = 1,
    random_state: Any = None,
    progressbar: bool = False,
    **roles: Any,
) -> IntervalCalibration:
    r"""Intervals of epsilon-DF and gamma-SF, and how often each covers on tables like the
    audited one.

    **The hierarchical interval** is the equal-tailed posterior interval of
    :class:`~bayesfair.models.HierarchicalCounts` with ``group_variance="size"`` (attribute
    effects and intersection deviations with learned scales, a deviation's variance
    ``tau^2 + psi^2 v_s`` growing as the intersection's sampling variance ``v_s`` does, so
    that a small intersection may depart as far as its own rows' noise, as a finite
    population's small groups do; shares ``Dirichlet(n + pseudo_count)``; an
    intersection too small for any count of it to contradict the pooled rate,
    :func:`unchecked`, lies off the hierarchy, with its own posterior rate, in a share
    ``1 / (m + 2)`` of the draws, ``m`` the intersections that can: a contamination prior,
    :func:`off_hierarchy`, so that the hierarchy does not pool
    by assumption alone an intersection that may set the maximum), whose lower
    end is set to 0 when :func:`equal_rates_pvalue` is at least ``1 - level``: a posterior
    of a maximum of log-ratios is positive in every draw, so without it no interval would
    ever hold a fair population's 0, and with it the interval holds 0 exactly as often as
    the test does not reject (``level`` of the time). On replicate tables, which need only
    that decision, the test stops its resamples once the decision is settled
    (``equal_rates_pvalue(..., decide_at=1 - level)``). The hierarchy borrows strength
    across intersections that share attribute values, so a small intersection's noise does
    not set the maximum.

    **The default interval** (``calibrated``) is the same posterior's interval, for
    epsilon-DF moved down by its median's bias, taken at a calibrated credible mass. The
    bias is the median, over the ``posterior`` scenario's replicates (below), of the
    replicate's posterior median minus its truth: a posterior of a maximum of noisy
    log-ratios sits above the truth where groups are small or similar, and the model's own
    replications say by how much on tables of these sizes (a parametric bootstrap's bias
    correction, with the posterior as the bootstrap world). Every end is moved by it
    (within ``[0, inf)``; a lower end at 0 stays there), and so is the estimate. Gamma-SF
    is not moved: it weights every intersection's gap by its share, so the small
    intersections' noise barely enters it and its posterior median is about unbiased; the
    bias one table's posterior scenario shows for it is that scenario's own and does not
    carry over to the table's truth, so moving by it would only spread the intervals'
    ends (and lower their coverage). The mass is the smallest, from
    ``level`` up to 0.999, whose moved intervals held their truth in at least ``level`` of
    the replicates of both the ``posterior`` and the ``observed`` scenario: the simulated
    coverage curve inverted at the level (Loh 1987; a double bootstrap's calibration with a
    posterior as the inner interval). Where the hierarchy's shrinkage would hide a small
    intersection that may set the maximum (a few rows, all positive), the observed scenario
    asks for a larger mass, until the interval allows for it. It never goes below
    ``level``: the observed scenario is rougher than the population (each small group as
    extreme as it looked), so an interval that over-covers there is not shown to
    over-cover on the population. Its coverage in these two scenarios is in-sample (at
    least ``level`` by construction, unless even 0.999 falls short); the other scenarios
    measure it out of sample. ``bias_correction`` and ``credible_mass`` give both choices.
    Where equal rates are rejected, each lower end is then at most the inversion of the same
    test along the path of worlds from equal rates to the posterior-mean log-odds
    (:func:`~bayesfair._table_intervals.path_lower_bounds`: the epsilon-DF and gamma-SF of the
    least uneven world on the path the test keeps at ``1 - level``; a Neyman construction
    within the path, Casella & Berger 2002), so that on rates that differ only a little the
    lower end rises from 0 with the evidence instead of jumping to the posterior's, above the
    small truth; every replicate table computes it too, and the coverage is of that interval.

    **The check.** Replicate tables keep every intersection's size ``n_s`` and draw
    ``k_s ~ Binomial(n_s, p_s)`` in four scenarios: ``posterior`` (every replicate's rates
    a draw of the hierarchical posterior: replications like the data, as the model sees
    them), ``observed`` (the table's rates smoothed by ``pseudo_count``: a rough truth,
    each small group as extreme as it looked; where the hierarchical posterior rules that
    truth out, its epsilon-DF or gamma-SF outside the posterior's 99.9% interval, as with
    many intersections of moderate size whose noise alone sets the smoothed maximum, the
    :func:`constrained_bayes_rates` instead, and a note says so), ``shrunk``
    (:func:`shrunk_rates`: a smooth
    truth) and ``fair`` (every rate the pooled rate: epsilon = gamma = 0). Where the
    posterior rules the smoothed table out, a fifth scenario, ``smoothed``, keeps it as a
    truth checked out of sample: the posterior's verdict is the model's, and a table may be
    more uneven than the hierarchy, even with its size term, expects. ``uneven`` says
    whether the data rule that truth out too (a parametric bootstrap without the model)
    and, where they do not, what the default would cover there when it falls short. Every method is
    recomputed on every replicate (the hierarchical model refitted) and checked against the
    replicate's truth: the calibrated interval (at the mass chosen on the audited table),
    the hierarchical interval, the equal-tailed Dirichlet-multinomial
    posterior interval (independent ``Beta(k + a, n - k + a)`` rates) and the projected
    Clopper-Pearson box. A coverage far from ``level`` in a scenario says that the interval
    cannot be read at face value if the population looks like that scenario.

    Parameters
    ----------
    data : AuditData or pandas.DataFrame
        The audited table (a DataFrame needs ``protected=`` and the role's column).
    role : {"outcome", "decision", "amplification"}, default "outcome"
        The table: the labels, the decisions, or the amplification (the decisions'
        epsilon-DF and gamma-SF minus the labels'). The amplification's hierarchical
        posterior is that of ``P(y|s)``, ``P(d|y=0,s)`` and ``P(d|y=1,s)``, each modelled
        as the rates are (the likelihood factorises, so the three posteriors are
        independent), with the decisions' rates ``sum_y P(y|s) P(d|y,s)`` drawn with the
        labels': the difference keeps the correlation of two columns of the same rows.
        Its replicates draw labels, then decisions given them; its Dirichlet-multinomial
        interval has the same three factors with independent Beta rates; its
        Clopper-Pearson interval is the difference of both boxes at level ``1 - (1 -
        level) / 2`` (Bonferroni). Its ``equal_rates_pvalue`` is the decisions', and its
        lower end is not set to 0 (the amplification may be negative). Its calibrated
        interval has the calibrated mass but no bias correction: the two maxima's biases
        cancel in part in the difference, and what is left in the posterior scenario
        does not carry over to the observed and shrunk rates.
    given_outcome : {None, 0, 1}, default None
        With ``role="decision"``: the decisions among the rows whose outcome is this value
        only, so that epsilon-DF is that of ``P(decision | y, s)``, the equalized-odds form
        of differential fairness (0: false positive rates, 1: true positive rates).
    level : float, default 0.9
    n_replicates : int, default 200
        Replicate tables per scenario (each refitted; 200 measure a coverage of 0.9 to
        within 0.021, one standard error).
    draws : int, default 400
        Posterior draws per replicate table (the audited table gets ten times as many).
    pseudo_count : float, default 0.5
        The Dirichlet-multinomial's pseudo-count ``a`` (Jeffreys), also the shares'.
    n_jobs : int, optional
        Replicate chunks run at once through joblib (-1: every core); the result does not
        depend on it.
    random_state : int, numpy.random.Generator or None
    progressbar : bool, default False
        Show a progress bar over the replicate tables (PyMC's name for it).
    **roles
        Column roles when ``data`` is a DataFrame.

    Returns
    -------
    IntervalCalibration

    Notes
    -----
    Intersections without rows are left out of the metrics (and named in ``notes``); the
    hierarchical model still fits them, from their attribute values.

    References
    ----------
    Rubin, D. B. (1984). Bayesianly justifiable and relevant frequency calculations for
    the applied statistician. *Annals of Statistics* 12(4).
    Dawid, A. P. (1982). The well-calibrated Bayesian. *JASA* 77(379).
    Talts, S., Betancourt, M., Simpson, D., Vehtari, A. & Gelman, A. (2018). Validating
    Bayesian inference algorithms with simulation-based calibration. arXiv:1804.06788.
    Loh, W.-Y. (1987). Calibrating confidence coefficients. *JASA* 82(397).
    Berger, J. O. (1985). *Statistical Decision Theory and Bayesian Analysis*, 2nd ed.,
    section 4.7 (epsilon-contamination priors). Springer.
    Efron, B. & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*, ch. 10
    (estimates of bias). Chapman & Hall.
    Casella, G. & Berger, R. L. (2002). *Statistical Inference*, 2nd ed., section 9.2.1.
    Duxbury.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair import interval_calibration
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> cal = interval_calibration(data, n_replicates=20, random_state=0)
    >>> list(cal.coverage["scenario"].unique())
    ['posterior', 'observed', 'shrunk', 'fair']
    >>> cal.intervals.loc[0, ["metric", "method"]].tolist()
    ['epsilon-DF', 'calibrated']
    """
    data = as_audit_data(data, roles)
    n, table = _table(data, role, given_outcome)
    check_open_probability(level, "level")
    check_count(n_replicates, "n_replicates", minimum=10)
    check_count(draws, "draws", minimum=50)
    own, replicates = check_seed(random_state).spawn(2)
    seen = n > 0
    notes = []
    if not seen.all():
        notes.append(f"{int((~seen).sum())} intersection(s) without rows left out of the metrics")
    codes = np.indices(data.shape_).reshape(len(data.shape_), -1)
    box = _intervals_kind(role)(n, codes, seen, level, float(pseudo_count))
    rng = np.random.default_rng(own)
    post = box.hierarchical_draws(table, 10 * draws, rng)
    bounds, pvalue, hier, dm = box.bounds(table, 10 * draws, rng, post=post)
    truths = box.truths(table, post)
    ruled_out = box.rules_out_observed(table, post)
    if ruled_out is not None:
        notes.append(_ruled_out_note(ruled_out))
        truths[SMOOTHED] = box.smoothed(table)  # last: the other scenarios' seeds stay
    seeds = replicates.spawn(len(truths))
    results = {}
    name = table_name(role, given_outcome)
    with progress_bar(len(truths) * n_replicates, f"replicates ({name})", progressbar) as bar:
        for i, (scenario, truth) in enumerate(truths.items()):
            results[scenario] = chunked_resamples(
                lambda size, r, t=truth: replicate_bounds(box, t, size, draws, r),
                n_replicates,
                seeds[i],
                n_jobs=n_jobs,
                on_chunk=bar,
            )
    mass, shift = calibrate(box, results, level)
    moved = calibrated_bounds(box, hier, pvalue, mass, shift)
    path_lower = box.path_lower(table, post, pvalue, rng)
    calibrated = with_path_lower(moved, path_lower)
    bounds = np.concatenate([calibrated[None], bounds])
    median = np.median(hier, axis=0)
    corrected = box.shifted(np.stack([median, median], axis=-1), shift)[:, 0]
    estimates = np.array([corrected, median, np.median(dm, axis=0), box.estimate(table)])
    rows = []
    for scenario, res in results.items():
        rows += _coverage_rows(scenario, _with_calibrated(res, box, mass, shift))
    coverage = pd.DataFrame(rows)
    short = _shortfall(coverage, level)
    notes.append(_calibration_note(mass, shift, level, box.bias_corrected, short))
    lowered = {m: (calibrated[j, 0], moved[j, 0]) for j, m in enumerate(METRICS)}
    lowered = {m: v for m, v in lowered.items() if v[0] < v[1]}
    if lowered:
        notes.append(_path_note(lowered, level))
    unpooled = box.unpooled_bounds(table, post, pvalue, rng)  # drawn last: the rest is the same
    if unpooled:
        notes.append(_unpooled_note(unpooled, level))
    uneven = None
    if ruled_out is not None:
        uneven = _uneven_check(box, table, ruled_out, coverage, level, rng)
        if uneven["short"]:
            notes.append(_uneven_note(uneven, ruled_out["metric"], level))
    return IntervalCalibration(
        intervals=pd.DataFrame(
            {
                "metric": list(METRICS) * len(ALL_METHODS),
                "method": [m for m in ALL_METHODS for _ in METRICS],
                "estimate": estimates.ravel(),
                **interval_columns(bounds[..., 0].ravel(), bounds[..., 1].ravel(), level),
                "credible_mass": _credible_masses(mass, level),
            }
        ),
        coverage=coverage,
        equal_rates_pvalue=pvalue,
        level=level,
        role=name,
        n_replicates=n_replicates,
        credible_mass=dict(zip(METRICS, mass.tolist(), strict=True)),
        bias_correction=dict(zip(METRICS, shift.tolist(), strict=True)),
        unpooled=unpooled,
        uneven=uneven,
        path_lower=_path_lower_dict(path_lower),
        notes=notes,
    )


def _ruled_out_note(ruled_out: dict) -> str:
    """The note saying that the observed scenario draws from constrained-Bayes rates."""
    return (
        f"the 'observed' scenario: the smoothed table's {ruled_out['metric']} "
        f"{ruled_out['value']:.3g} is outside the hierarchical posterior's "
        f"{PLAUSIBLE_MASS:.1%} interval [{ruled_out['lower']:.3g}, {ruled_out['upper']:.3g}] "
        "(every smoothed rate carries its sampling noise), so its replicates draw from the "
        "constrained-Bayes rates instead: the posterior means, spread as much as the "
        "posterior expects the truth to be (constrained_bayes_rates)"
    )


#: tables drawn from the smoothed rates by :func:`_uneven_check`'s bootstrap
N_UNEVEN_TABLES = 2000


def _uneven_check(
    box: RateIntervals,
    k: np.ndarray,
    ruled_out: dict,
    coverage: pd.DataFrame,
    level: float,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """:attr:`IntervalCalibration.uneven` of table ``k``, whose smoothed rates the
    hierarchical posterior ruled out (``ruled_out``, :meth:`RateIntervals.rules_out_observed`).

    The posterior's verdict assumes the hierarchy, which lets an intersection depart from
    its attribute values by a common spread plus a multiple of its sampling noise; where
    intersections depart more, it shrinks them too far, and the smoothed rates are a truth
    only the model rules out. The check
    without the model is a parametric bootstrap of the metric ruled out: the share of
    tables drawn from the smoothed rates whose smoothed metric is at or below this table's
    (a truth as uneven as the smoothed table gives tables at least as uneven, but the
    maximum of many noisy log-ratios spreads widely). Below ``1 - PLAUSIBLE_MASS`` the data
    rule those rates out too; otherwise the calibrated interval's coverage in the
    ``smoothed`` scenario is what it would hold were the population as uneven as the table,
    and a coverage below ``level`` by more than two standard errors is reported."""
    j = METRICS.index(ruled_out["metric"])
    tables = rng.binomial(box.n, box.smoothed(k), size=(N_UNEVEN_TABLES, len(box.n)))
    drawn = box.truth(box.smoothed(tables))[:, j]
    plausibility = float(np.mean(drawn <= ruled_out["value"] + 1e-12))
    c = coverage[(coverage["scenario"] == SMOOTHED) & (coverage["method"] == "calibrated")]
    margin = 2 * np.sqrt(level * (1 - level) / c["n_replicates"].to_numpy())
    low = c["coverage"].to_numpy() < level - margin
    short = {}
    if plausibility >= 1 - PLAUSIBLE_MASS:
        short = {m: float(v) for m, v in zip(c["metric"][low], c["coverage"][low], strict=True)}
    return {"plausibility": plausibility, "short": short}


def _uneven_note(uneven: dict, metric: str, level: float) -> str:
    """The note of :attr:`IntervalCalibration.uneven` where the default falls short."""
    covered = ", ".join(f"{c:.2f} ({m})" for m, c in uneven["short"].items())
    return (
        "the 'smoothed' scenario (the smoothed table itself, which the hierarchy rules out "
        f"but the data do not: tables drawn from its rates show a {metric} at or below this "
        f"table's in {uneven['plausibility']:.0%} of draws): the calibrated interval held its "
        f"truth in only {covered} of the replicates, short of {level:g}. Were the population's "
        "rates as uneven as the table's (small intersections departing from their attribute "
        "values more than the hierarchy lets them), the default would be too short; the "
        "Clopper-Pearson interval holds either way"
    )


def _path_lower_dict(path_lower: np.ndarray) -> dict[str, float] | None:
    """:attr:`IntervalCalibration.path_lower` of the path's lower ends (NaN: none)."""
    if np.isnan(path_lower).all():
        return None
    return dict(zip(METRICS, path_lower.tolist(), strict=True))


def _path_note(lowered: dict, level: float) -> str:
    """The note saying which calibrated lower ends the path's inversion set."""
    ends = "; ".join(
        f"{m} {new:.3g} (the posterior's {old:.3g})" for m, (new, old) in lowered.items()
    )
    return (
        f"the calibrated lower end of {ends} is the inversion of the test of equal rates along "
        "the path from equal rates to the posterior mean: the least uneven world on it that the "
        f"test keeps at {1 - level:.2g} (path_lower_bounds)"
    )


def _unpooled_note(unpooled: dict, level: float) -> str:
    """The note of :attr:`IntervalCalibration.unpooled`."""
    return (
        f"{unpooled['intersections']} intersection(s) of at most {unpooled['max_rows']} rows, "
        "too few for any count to contradict the pooled rate: the hierarchy lets them lie "
        "off it only now and then (a contamination prior); with their rates anywhere their "
        f"rows allow (their own posteriors), epsilon-DF's {level:.0%} interval would be "
        f"[{unpooled['lower']:.3g}, {unpooled['upper']:.3g}] (not calibrated on replicates)"
    )


def _shortfall(coverage: pd.DataFrame, level: float) -> dict[str, dict[str, float]]:
    """Per metric, the calibration scenarios in which the calibrated interval's coverage
    (a calibration's ``coverage`` table) stayed below ``level``: possible only at the
    largest mass, where no mass reached it."""
    c = coverage[
        (coverage["method"] == "calibrated")
        & coverage["scenario"].isin(CALIBRATION_SCENARIOS)
        & (coverage["coverage"] < level - 1e-12)
    ]
    out: dict[str, dict[str, float]] = {}
    for r in c.itertuples():
        out.setdefault(r.metric, {})[r.scenario] = r.coverage
    return out


def _calibration_note(
    mass: np.ndarray, shift: np.ndarray, level: float, moved: Sequence[bool], short: dict
) -> str:
    """How the calibrated interval was chosen, for the result's notes (``moved``: per
    metric, whether it is bias-corrected); where no mass reached the level (``short``,
    :func:`_shortfall`), says so and which interval holds."""
    first, second = CALIBRATION_SCENARIOS
    masses = " and ".join(f"{m:g} ({metric})" for m, metric in zip(mass, METRICS, strict=True))
    biases = [
        f"{metric}'s moved by {-b:+.3g}, removing its median's bias in the '{first}' "
        f"scenario ({b:+.3g})"
        for b, metric, m in zip(shift, METRICS, moved, strict=True)
        if m
    ]
    how = ", " + " and ".join(biases) if biases else " (no bias correction for this table)"
    reached = [m for m in METRICS if m not in short]
    note = f"calibrated: the hierarchical posterior's interval at credible mass {masses}{how}"
    if reached:
        note += (
            f"; for {' and '.join(reached)}, the smallest mass that held the truth in at "
            f"least {level:g} of the replicates of the '{first}' and '{second}' scenarios "
            "(its coverage there is in-sample)"
        )
    for metric, scenarios in short.items():
        covered = ", ".join(f"{c:.2f} ({s})" for s, c in scenarios.items())
        note += (
            f"; for {metric}, no mass up to {MASSES[-1]:g} held the truth in {level:g} of "
            f"the replicates: the largest covered {covered}. The hierarchy shrinks small "
            "intersections that may set the maximum, so this interval can be too short on "
            f"tables like this one; read {metric} with the Clopper-Pearson interval, which "
            "holds at any group size"
        )
    return note


def _credible_masses(calibrated: np.ndarray, level: float) -> np.ndarray:
    """The credible mass of every row of the intervals table (methods x metrics, in the
    order of ``ALL_METHODS``): the calibrated one's, the level for the two posteriors, none
    (NaN) for the Clopper-Pearson box, which is no posterior interval."""
    per_method = {
        "calibrated": calibrated,
        "hierarchical": level,
        "Dirichlet-multinomial": level,
        "Clopper-Pearson": np.nan,
    }
    return np.concatenate([np.broadcast_to(per_method[m], len(METRICS)) for m in ALL_METHODS])


def table_name(role: str, given_outcome: int | None = None) -> str:
    """The name of an audited table: its role, with the outcome it is restricted to.

    Parameters
    ----------
    role : {"outcome", "decision"}
    given_outcome : {None, 0, 1}

    Returns
    -------
    str

    Examples
    --------
    >>> from bayesfair.calibration import table_name
    >>> table_name("decision", 0)
    'decision | outcome = 0'
    """
    return role if given_outcome is None else f"{role} | outcome = {given_outcome}"


def _table(data: AuditData, role: str, given_outcome: int | None) -> tuple:
    """Rows and positives per intersection of the audited table (int64 arrays)."""
    if role not in ("outcome", "decision", AMPLIFICATION):
        raise ValueError(f"`role` must be 'outcome', 'decision' or {AMPLIFICATION!r}, got {role!r}")
    if role == AMPLIFICATION:
        return _amplification_table(data, given_outcome)
    if given_outcome is None:
        counts = data.counts(role)
        n, k = counts.sum(axis=1).astype(np.int64), counts[:, 1].astype(np.int64)
        _check_table(n, k)
        return n, k
    if role != "decision" or given_outcome not in (0, 1) or isinstance(given_outcome, bool):
        raise ValueError(
            "`given_outcome` must be None, or 0 or 1 with role='decision' (the decisions "
            f"among the rows with that outcome); got {given_outcome!r} with role={role!r}"
        )
    if not data.has_decision:
        raise ValueError("`given_outcome` needs decisions: the data have none")
    t = data.table_for()
    pos, neg = ("tp", "fn") if given_outcome == 1 else ("fp", "tn")
    k = t[pos].to_numpy(np.int64)
    n = k + t[neg].to_numpy(np.int64)
    _check_table(n, k)
    return n, k


def _amplification_table(data: AuditData, given_outcome: int | None) -> tuple:
    """Rows per intersection and ``(k_y, k_0, k_1)``: positive labels, positive decisions
    among the rows labelled 0 and among those labelled 1."""
    if given_outcome is not None:
        raise ValueError(
            f"`given_outcome` must be None with role={AMPLIFICATION!r} (the amplification "
            f"compares all decisions with all labels); got {given_outcome!r}"
        )
    if not data.has_decision:
        raise ValueError(f"role={AMPLIFICATION!r} needs decisions: the data have none")
    t = data.table_for()
    cells = {c: t[c].to_numpy(np.int64) for c in ("tp", "fn", "fp", "tn")}
    n = sum(cells.values())
    _check_table(n, cells["tp"] + cells["fn"])
    _check_table(n, cells["tp"] + cells["fp"])
    return n, np.stack([cells["tp"] + cells["fn"], cells["fp"], cells["tp"]], axis=-1)


def _check_table(n: np.ndarray, k: np.ndarray) -> None:
    """Refuse a table on which epsilon-DF and gamma-SF say nothing."""
    seen = n > 0
    if seen.sum() < 2:
        raise ValueError(
            f"the table has {int(seen.sum())} intersection(s) with rows; epsilon-DF and "
            "gamma-SF compare at least two"
        )
    if k[seen].sum() in (0, n[seen].sum()):
        raise ValueError(
            "every row of the table has the same value (every rate is 0 or every rate is "
            "1): there is no inequality to put an interval on"
        )


def _with_calibrated(res: np.ndarray, box, mass: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """:func:`replicate_bounds`' output as (replicates, ALL_METHODS, metrics, 3): the
    calibrated interval (the hierarchical one at ``mass``, moved by ``shift``, its lower
    end at most the replicate's path lower end) first, then the methods'."""
    calibrated = at_mass(shifted_mass_rows(res, box, shift), mass, box.level)
    calibrated = with_path_lower(calibrated, res[:, PATH_ROW, :, 0])
    return np.concatenate([calibrated[:, None], res[:, : len(METHODS)]], axis=1)


def _coverage_rows(scenario: str, res: np.ndarray) -> list[dict]:
    """One row per method and metric from :func:`_with_calibrated`'s output."""
    lo, hi, truth = res[..., 0], res[..., 1], res[..., 2]
    inside = held(res)
    return [
        {
            "scenario": scenario,
            "metric": metric,
            "method": method,
            "truth": float(np.median(truth[:, i, j])),
            "coverage": float(inside[:, i, j].mean()),
            "median_width": float(np.median(hi[:, i, j] - lo[:, i, j])),
            "n_replicates": len(res),
        }
        for i, method in enumerate(ALL_METHODS)
        for j, metric in enumerate(METRICS)
    ]
