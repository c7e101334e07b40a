"""The three intervals of epsilon-DF and gamma-SF on one per-intersection count table, and
of their amplification (decisions minus labels): shared by the per-audit check
(:mod:`bayesfair.calibration`) and the coverage study (:mod:`bayesfair.replication.intervals`).

A *table* is what is counted per intersection: the positives ``k`` of one binary column
(:class:`RateIntervals`), or the positives of the labels and of the decisions among the rows
with each label (:class:`AmplificationIntervals`). Each class draws replicate tables from a
truth, computes every interval of a table and the truth's metrics, so that one replicate loop
serves both.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, logit

from ._validation import check_open_probability
from ._vocabulary import N_RESAMPLES, PSEUDO_COUNT
from .frequentist._pvalues import clopper_pearson, monte_carlo_pvalue
from .frequentist.fairness_bounds import amplification_bounds, projected_bounds
from .models._nested_laplace import grid_posterior

#: the interval methods computed on one table (the calibrated interval, the audit's
#: default, is the hierarchical posterior's at a credible mass chosen on replicates)
METHODS = ("hierarchical", "Dirichlet-multinomial", "Clopper-Pearson")
METRICS = ("epsilon-DF", "gamma-SF")
#: the replicate scenarios (see :func:`~bayesfair.interval_calibration`) on which the
#: calibrated interval is chosen: its bias correction in the first, its credible mass the
#: smallest that covers in both
CALIBRATION_SCENARIOS = ("posterior", "observed")
#: every interval of a calibration, the audit's default first
ALL_METHODS = ("calibrated", *METHODS)
#: credible masses above the level among which the calibrated interval's is chosen
MASSES = np.array([0.925, 0.95, 0.96, 0.97, 0.98, 0.99, 0.995, 0.999])
#: the hierarchical posterior's interval outside which a table's smoothed rates are ruled
#: out as a truth (:meth:`RateIntervals.rules_out_observed`): the largest of :data:`MASSES`
PLAUSIBLE_MASS = float(MASSES[-1])
#: the hierarchical posterior's deviations (:func:`~bayesfair.models._nested_laplace.
#: grid_posterior`): a small intersection may depart further than a large one, as a finite
#: population's small groups do (its own rows' noise)
GROUP_VARIANCE = "size"


#: rows of :func:`replicate_bounds`' output after the methods' and the masses': the
#: hierarchical posterior's median (:data:`MEDIAN_ROW`), then the lower ends of
#: :func:`path_lower_bounds` (:data:`PATH_ROW`)
TAIL_ROWS = 2
MEDIAN_ROW, PATH_ROW = -2, -1


def credible_masses(level: float) -> np.ndarray:
    """The calibrated interval's candidate masses: ``level``, then :data:`MASSES` above it
    (the calibration only widens the nominal interval)."""
    return np.concatenate([[level], MASSES[MASSES > level]])


def mass_bounds(draws: np.ndarray, zero_lower: bool, masses: np.ndarray) -> np.ndarray:
    """Equal-tailed intervals of posterior ``draws`` (draws, metrics) at every one of
    ``masses``: (masses, metrics, 2), lower ends 0 where ``zero_lower``."""
    lo, hi = np.split(np.quantile(draws, np.r_[1 - masses, 1 + masses] / 2, axis=0), 2)
    if zero_lower:
        lo = np.zeros_like(lo)
    return np.stack([lo, hi], axis=-1)


def replicate_bounds(
    box, truth: np.ndarray, size: int, draws: int, rng, methods: bool = True, path: bool = True
) -> np.ndarray:
    """``size`` replicate tables of ``truth`` (rates, or posterior draws of them, one drawn
    per replicate), each with every method's and every mass's interval and the truth:
    (size, methods + masses + 2, metrics, 3) of (lower, upper, truth); the masses' rows are
    the hierarchical posterior's intervals at ``credible_masses(box.level)``, then come its
    median (as both ends) and the lower ends of :func:`path_lower_bounds` (as both ends; NaN
    where the posterior's lower end is already 0, and with ``path=False``), which the
    calibrated interval's lower end never exceeds. ``methods=False`` computes the
    hierarchical posterior only (the methods' rows are NaN), as a calibration needs; the
    path's lower ends draw from a child of ``rng`` (:meth:`RateIntervals.path_lower`), so
    that every other row is the same with or without them."""
    if truth.ndim > box.truth_ndim:
        p = truth[rng.integers(len(truth), size=size)]
    else:
        p = np.broadcast_to(truth, (size, *truth.shape))
    masses = credible_masses(box.level)
    out = np.full((size, len(METHODS) + len(masses) + TAIL_ROWS, len(METRICS), 3), np.nan)
    for r in range(size):
        table = box.simulate(p[r], rng)
        post = box.hierarchical_draws(table, draws, rng)
        if methods:
            bounds, pvalue, hier, _ = box.bounds(table, draws, rng, post=post, decide=True)
            out[r, : len(METHODS), :, :2] = bounds
        else:
            hier, pvalue = box.hierarchical(table, draws, rng, post=post)
        out[r, len(METHODS) : -TAIL_ROWS, :, :2] = mass_bounds(hier, box.zero_lower(pvalue), masses)
        out[r, MEDIAN_ROW, :, :2] = np.median(hier, axis=0)[:, None]
        if path:
            out[r, PATH_ROW, :, :2] = box.path_lower(table, post, pvalue, rng)[:, None]
        out[r, :, :, 2] = box.truth(p[r])
    return out


def held(res: np.ndarray) -> np.ndarray:
    """Whether each interval of :func:`replicate_bounds`' output held its truth."""
    lo, hi, truth = res[..., 0], res[..., 1], res[..., 2]
    return (lo <= truth + 1e-12) & (truth - 1e-12 <= hi)


def median_bias(res: np.ndarray) -> np.ndarray:
    """Per metric, the median over the replicates ``res`` (:func:`replicate_bounds`) of the
    hierarchical posterior median minus the replicate's truth: how far the posterior of a
    largest log-ratio sits above (or below) the truth on tables like the audited one. For a
    table of rates both are finite (posterior rates lie strictly inside (0, 1))."""
    med = res[:, MEDIAN_ROW]
    return np.median(med[..., 0] - med[..., 2], axis=0)


def calibrated_mass(results: list[np.ndarray], level: float, box, shift: np.ndarray) -> np.ndarray:
    """Per metric, the smallest of ``credible_masses(level)`` whose hierarchical intervals,
    moved down by ``shift`` (:meth:`RateIntervals.shifted`), held their truth in at least
    ``level`` of the replicates of every one of ``results`` (:func:`replicate_bounds`);
    the largest where none did.

    Equal-tailed intervals of one posterior are nested in their mass, so their coverage
    grows with it: this inverts the simulated coverage curve at the level (Loh 1987's
    calibration of the nominal level), one-sided: never below the nominal mass.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair._table_intervals import (
    ...     METHODS, RateIntervals, calibrated_mass, credible_masses)
    >>> masses = credible_masses(0.9)
    >>> n = np.array([10, 10])
    >>> box = RateIntervals(n, np.array([[0, 1]]), n > 0, 0.9, 0.5)
    >>> res = np.zeros((10, len(METHODS) + len(masses) + 2, 2, 3))
    >>> res[..., 1] = 1.0  # every interval [0, 1] ...
    >>> res[:, len(METHODS):-2, :, 2] = np.where(masses < 0.97, 2.0, 0.5)[None, :, None]
    >>> calibrated_mass([res], 0.9, box, np.zeros(2)).tolist()  # ... holds 0.5 from 0.97 on
    [0.97, 0.97]
    """
    masses = credible_masses(level)
    enough = np.all(
        [held(shifted_mass_rows(res, box, shift)).mean(axis=0) >= level - 1e-12 for res in results],
        axis=0,
    )
    idx = np.where(enough.any(axis=0), enough.argmax(axis=0), len(masses) - 1)
    return masses[idx]


def shifted_mass_rows(res: np.ndarray, box, shift: np.ndarray) -> np.ndarray:
    """The masses' rows of :func:`replicate_bounds`' output ``res``, their intervals moved
    by ``shift`` (:meth:`RateIntervals.shifted`): (replicates, masses, metrics, 3)."""
    rows = res[:, len(METHODS) : -TAIL_ROWS]
    return np.concatenate([box.shifted(rows[..., :2], shift), rows[..., 2:]], axis=-1)


def calibrate(box, results: dict, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The calibrated interval's credible mass and bias correction per metric, from the
    replicate scenarios ``results`` (``{scenario: replicate_bounds(...)}``) that include
    :data:`CALIBRATION_SCENARIOS`: the correction is the hierarchical median's bias in the
    first (:func:`median_bias`) for the metrics ``box.bias_corrected`` names, 0 for the
    others; the mass the smallest whose corrected intervals cover in all of them
    (:func:`calibrated_mass`)."""
    corrected = np.asarray(box.bias_corrected)
    shift = (
        np.where(corrected, median_bias(results[CALIBRATION_SCENARIOS[0]]), 0.0)
        if corrected.any()
        else np.zeros(len(METRICS))
    )
    mass = calibrated_mass([results[s] for s in CALIBRATION_SCENARIOS], level, box, shift)
    return mass, shift


def calibrated_bounds(
    box, hier: np.ndarray, pvalue: float, mass: np.ndarray, shift: np.ndarray
) -> np.ndarray:
    """The hierarchical part of one table's calibrated interval: its hierarchical posterior
    draws ``hier`` (draws, metrics) at each metric's credible ``mass``, lower ends 0 where
    ``box`` sets them so at ``pvalue``, moved by ``shift``: (metrics, 2). The calibrated
    interval is this with :func:`with_path_lower` of the table's
    :meth:`RateIntervals.path_lower`."""
    masses = credible_masses(box.level)
    rows = mass_bounds(hier, box.zero_lower(pvalue), masses)
    return at_mass(box.shifted(rows, shift), mass, box.level)


def with_path_lower(bounds: np.ndarray, path_lower: np.ndarray | None) -> np.ndarray:
    """Bounds (..., metrics, 2), or (..., metrics, 3) with the truth last, whose lower
    ends are at most ``path_lower`` (..., metrics), where it is not NaN; the other columns
    as given."""
    if path_lower is None:
        return bounds
    out = bounds.copy()
    out[..., 0] = np.fmin(bounds[..., 0], path_lower)
    return out


def at_mass(mass_res: np.ndarray, mass: np.ndarray, level: float) -> np.ndarray:
    """The rows of ``mass_res`` (..., masses, metrics, k), over ``credible_masses(level)``,
    at each metric's ``mass``: (..., metrics, k)."""
    idx = np.searchsorted(credible_masses(level), mass)
    return np.stack([mass_res[..., i, j, :] for j, i in enumerate(idx)], axis=-2)


def table_metrics(p1: np.ndarray, share: np.ndarray) -> np.ndarray:
    """(epsilon, gamma) over the leading axes of rates ``p1`` (..., groups): shape (..., 2).

    Epsilon as :func:`~bayesfair.metrics.epsilon_df` of ``[1 - p1, p1]`` computes it, for
    rates without NaN and without its input checks (this runs on every posterior draw of
    every replicate table): the larger of the two outcomes' log-ratios of their largest to
    their smallest rate, 0 for an outcome that is impossible everywhere, ``inf`` for one
    possible somewhere only. Gamma as :func:`~bayesfair.metrics.gamma_sf` computes it, also
    without its input checks: ``share`` is non-negative (shares or counts) with a positive
    total."""
    return np.stack([_epsilon(p1), _gamma(p1, share)], axis=-1)


def _epsilon(p1: np.ndarray) -> np.ndarray:
    """Epsilon-DF of rates ``p1`` (..., groups), as :func:`table_metrics` computes it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        per_outcome = []
        for q in (1 - p1, p1):
            mx, mn = q.max(axis=-1), q.min(axis=-1)
            per_outcome.append(np.where(mx <= 0, 0.0, np.log(mx / mn)))
    return np.maximum(*per_outcome)


def _gamma(p1: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Gamma-SF of rates ``p1`` (..., groups) with ``share`` (broadcastable), as
    :func:`table_metrics` computes it."""
    share = share / share.sum(axis=-1, keepdims=True)
    p1 = np.where(share > 0, p1, 0.0)
    overall = (p1 * share).sum(axis=-1, keepdims=True)
    return (np.abs(overall - p1) * share).max(axis=-1)


def _pearson(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Pearson's X^2 of equal rates over the last axis of ``k``."""
    pbar = k.sum(axis=-1, keepdims=True) / n.sum()
    expected = n * pbar * (1 - pbar)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(expected > 0, (k - n * pbar) ** 2 / expected, 0.0)
    return terms.sum(axis=-1)


#: resamples drawn by the interim looks of :func:`equal_rates_pvalue`'s sequential decision
#: (cumulative), and the chance, at most, that an early stop decides unlike the exact test
DECISION_LOOKS = (99, 199, 499)
RESAMPLING_RISK = 1e-3


def equal_rates_pvalue(
    n: np.ndarray,
    k: np.ndarray,
    rng: np.random.Generator,
    n_resamples: int = N_RESAMPLES,
    *,
    decide_at: float | None = None,
) -> float:
    r"""Monte Carlo p-value of the hypothesis that every intersection has the same rate.

    Pearson's statistic :math:`X^2 = \sum_s (k_s - n_s \bar p)^2 / (n_s \bar p (1 -
    \bar p))`, referred to its distribution under ``k_s ~ Binomial(n_s, p-bar)`` at the
    pooled rate (a parametric bootstrap: exact in small groups, where the chi-squared
    reference is not), ``(1 + #{X*^2 >= X^2}) / (1 + n_resamples)``.

    With ``decide_at`` (a level ``alpha``), only the decision ``p >= alpha`` is wanted, as
    on every replicate table of a calibration: the resamples are drawn in stages
    (:data:`DECISION_LOOKS`, then ``n_resamples``), and the draws stop at a look where a
    one-sided Clopper-Pearson bound of the exceedance rate, at risk ``RESAMPLING_RISK /
    len(DECISION_LOOKS)``, is already on one side of ``alpha``. Whatever the exact
    p-value (infinitely many resamples), the chance that an early stop decides unlike it
    is then at most :data:`RESAMPLING_RISK` (Bonferroni over the looks; a simple form of
    Gandy's 2009 bounded resampling risk). The value returned after an early stop is the
    running estimate, on the side decided; without one, the draws and the value are those
    of the full ``n_resamples``. A table far from ``alpha`` is decided at the first look,
    on a tenth of the draws.

    Parameters
    ----------
    n, k : numpy.ndarray
        Rows and positives per intersection (every ``n > 0``).
    rng : numpy.random.Generator
    n_resamples : int, default 999
    decide_at : float, optional
        The level of the only decision wanted (see above); None for the p-value itself.

    Returns
    -------
    float

    References
    ----------
    Gandy, A. (2009). Sequential implementation of Monte Carlo tests with uniformly bounded
    resampling risk. *JASA* 104(488).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.calibration import equal_rates_pvalue
    >>> rng = np.random.default_rng(0)
    >>> equal_rates_pvalue(np.array([100, 100]), np.array([20, 60]), rng) < 0.01
    True
    >>> equal_rates_pvalue(np.array([100, 100]), np.array([20, 60]), rng, decide_at=0.1)
    0.01
    """
    pbar = k.sum() / n.sum()
    return _pearson_pvalue(n, k, np.full(len(n), pbar), rng, n_resamples, decide_at)


def _pearson_pvalue(
    n: np.ndarray,
    k: np.ndarray,
    rates: np.ndarray,
    rng: np.random.Generator,
    n_resamples: int = N_RESAMPLES,
    decide_at: float | None = None,
) -> float:
    """Monte Carlo p-value of Pearson's X^2 of equal rates of table ``k``, referred to its
    distribution on tables ``Binomial(n, rates)``; ``decide_at`` as in
    :func:`equal_rates_pvalue` (which is this at the pooled rate)."""
    looks = []
    if decide_at is not None:
        decide_at = check_open_probability(decide_at, "decide_at")
        looks = [m for m in DECISION_LOOKS if m < n_resamples]
    observed = _pearson(n, k)
    null, drawn = [], 0
    for m in [*looks, n_resamples]:
        null.append(_pearson(n, rng.binomial(n, rates, size=(m - drawn, len(n)))))
        drawn = m
        pvalue, hits = monte_carlo_pvalue(np.concatenate(null), observed, "greater")
        if m < n_resamples and _decided(hits, m, pvalue, decide_at, len(looks)):
            break
    return pvalue


#: halvings of the bracket of :func:`path_lower_bounds`' search (the lower ends are those
#: of a world within 1/64 of the bracket's width of the smallest the test keeps), its
#: largest step beyond the pattern (``lambda`` up to ``2 ** PATH_DOUBLINGS``), and the
#: resamples of each of its tests (sequential, as a replicate table's test of equal rates)
PATH_HALVINGS = 6
PATH_DOUBLINGS = 6
PATH_RESAMPLES = 499


def path_world(n: np.ndarray, pbar: float, deviation: np.ndarray, lam: float) -> np.ndarray:
    r"""The rates :math:`\mathrm{expit}(c + \lambda d_s)` of the path from equal rates
    (``lam`` 0) through the pattern ``deviation`` (``lam`` 1), with :math:`c` such that
    the rows ``n`` expect the pooled rate ``pbar`` (0 < pbar < 1): the root of an
    increasing function of :math:`c`, bracketed by the :math:`c` that puts every rate at
    or below ``pbar`` and the one that puts every rate at or above it (Brent's method)."""
    d = lam * deviation
    center = logit(pbar)

    def excess(c: float) -> float:
        return float(n @ expit(c + d)) - pbar * float(n.sum())

    lo, hi = center - d.max(), center - d.min()
    c = lo if lo == hi else brentq(excess, lo, hi, xtol=1e-12)
    return expit(c + d)


def path_lower_bounds(
    n: np.ndarray,
    k: np.ndarray,
    pattern: np.ndarray,
    level: float,
    rng: np.random.Generator,
) -> np.ndarray:
    r"""Lower ends of epsilon-DF and gamma-SF by inverting the test of equal rates along a
    path of worlds from equal rates to a pattern: (metrics,), NaN where no world on the
    path up to ``2 ** PATH_DOUBLINGS`` times the pattern is left unrejected.

    The worlds are :func:`path_world`: log-odds ``c + lambda d_s``, ``d`` the ``pattern``
    (log-odds per intersection) centred, ``c`` keeping the pooled rate. Each is tested as
    the table's truth by Pearson's X^2 of equal rates referred to its tables
    (:func:`_pearson_pvalue`, sequential at ``1 - level``); at ``lambda = 0`` that is
    :func:`equal_rates_pvalue`'s test. The worlds the test rejects are those whose
    tables are rarely as uneven as this one, and the smallest ``lambda`` it does not
    reject (found by doubling, then :data:`PATH_HALVINGS` halvings of the bracket) gives
    the lower ends: that world's epsilon-DF and gamma-SF (shares ``n``). This is a Neyman
    construction within the path (Casella & Berger 2002, section 9.2.1): where the truth
    lies on it, the lower end exceeds the truth's with probability at most ``1 - level``;
    as ``lambda`` shrinks to 0 it meets the rule that puts the lower end at 0 where equal
    rates are not rejected, so that the bound rises from 0 with the evidence instead of
    jumping to a posterior quantile. The table's posterior-mean log-odds are the pattern
    (:meth:`RateIntervals.path_lower`): smoother than the truth, which is what a table of
    nearly equal rates needs (its posterior of a maximum sits above a small truth).

    Parameters
    ----------
    n, k : numpy.ndarray
        Rows and positives per intersection (every ``n > 0``).
    pattern : numpy.ndarray
        Log-odds per intersection (only their deviations from their mean count).
    level : float
        The test's level is ``1 - level``.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray
        (epsilon-DF, gamma-SF) lower ends.

    References
    ----------
    Casella, G. & Berger, R. L. (2002). *Statistical Inference*, 2nd ed., section 9.2.1
    (inverting a test statistic). Duxbury.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair._table_intervals import path_lower_bounds, table_metrics
    >>> n, p = np.full(6, 400), np.array([0.25, 0.28, 0.3, 0.3, 0.32, 0.35])
    >>> k = np.round(n * p).astype(int)
    >>> low = path_lower_bounds(n, k, np.log(p / (1 - p)), 0.9, np.random.default_rng(0))
    >>> bool(0 < low[0] < table_metrics(p, n)[0])  # above 0, below the observed 0.34
    True
    """
    alpha = 1.0 - level
    pbar = k.sum() / n.sum()
    deviation = pattern - np.average(pattern, weights=n)

    def kept(lam: float) -> bool:
        world = path_world(n, pbar, deviation, lam)
        return _pearson_pvalue(n, k, world, rng, PATH_RESAMPLES, decide_at=alpha) >= alpha

    lo, hi = 0.0, 1.0
    while not kept(hi):
        lo, hi = hi, 2 * hi
        if hi > 2**PATH_DOUBLINGS:
            return np.full(len(METRICS), np.nan)
    for _ in range(PATH_HALVINGS):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if kept(mid) else (mid, hi)
    return table_metrics(path_world(n, pbar, deviation, hi), n)


def _decided(hits: int, m: int, pvalue: float, alpha: float, looks: int) -> bool:
    """Whether ``hits`` exceedances in ``m`` resamples settle ``p >= alpha`` at the
    sequential decision's risk (:func:`equal_rates_pvalue`), with the running ``pvalue`` on
    the side settled."""
    lo, hi = clopper_pearson(hits, m, level=1 - 2 * RESAMPLING_RISK / looks)
    return (hi < alpha and pvalue < alpha) or (lo > alpha and pvalue >= alpha)


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
    >>> from bayesfair.calibration import shrunk_rates
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


def constrained_bayes_rates(post: np.ndarray, seen: np.ndarray) -> np.ndarray:
    r"""Rates as rough as the posterior says the truth is: the posterior mean log-odds,
    their spread over the intersections with rows widened to the posterior expected
    spread (constrained Bayes, Louis 1984; Ghosh 1992).

    With :math:`\hat\eta_s` and :math:`v_s` the posterior mean and variance of
    intersection :math:`s`'s log-odds, :math:`\bar\eta` and :math:`S^2` the mean and
    variance of the :math:`\hat\eta_s` over the intersections with rows,

    .. math:: \tilde\eta_s = \bar\eta + (\hat\eta_s - \bar\eta)
       \sqrt{1 + \bar v / S^2},

    so that the :math:`\tilde\eta_s` spread as much as the posterior expects the true
    log-odds to (:math:`S^2 + \bar v`), in the order of their posterior means. The
    posterior means alone are smoother than the truth (each shrunk by its noise) and the
    smoothed table rougher (each carries it); a maximum of log-ratios, epsilon-DF, is
    below the truth's on the first and above it on the second. Intersections without
    rows keep their posterior mean.

    Parameters
    ----------
    post : numpy.ndarray
        Posterior draws of the rates (draws, groups).
    seen : numpy.ndarray
        Boolean, the intersections with rows.

    Returns
    -------
    numpy.ndarray
        Rates (groups,).

    References
    ----------
    Louis, T. A. (1984). Estimating a population of parameter values using Bayes and
    empirical Bayes methods. *JASA* 79(386).
    Ghosh, M. (1992). Constrained Bayes estimation with applications. *JASA* 87(418).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.calibration import constrained_bayes_rates
    >>> rng = np.random.default_rng(0)
    >>> post = 1 / (1 + np.exp(-rng.normal([-1.0, 0.0, 1.0], 0.5, size=(4000, 3))))
    >>> p = constrained_bayes_rates(post, np.ones(3, bool))
    >>> draws = np.log(post / (1 - post))
    >>> spread = draws.mean(axis=0).var() + draws.var(axis=0).mean()  # about 2/3 + 1/4
    >>> bool(np.isclose(np.log(p / (1 - p)).var(), spread))
    True
    """
    post = np.clip(post, 1e-12, 1.0 - 1e-12)  # a Beta draw of an unchecked intersection
    eta = np.log(post) - np.log1p(-post)
    mean, var = eta.mean(axis=0), eta.var(axis=0)
    center, spread = mean[seen].mean(), mean[seen].var()
    out = mean.copy()
    if spread > 0:
        out[seen] = center + (mean[seen] - center) * np.sqrt(1.0 + var[seen].mean() / spread)
    return 1.0 / (1.0 + np.exp(-out))


def unchecked(n: np.ndarray, k: np.ndarray, level: float) -> np.ndarray:
    r"""The intersections with rows too few for any count of them to contradict the table's
    pooled rate at ``level``.

    The smallest two-sided p-value of an exact binomial test of ``n_s`` rows at the pooled
    rate ``p`` (the smaller tail doubled) is reached at an all-positive or all-negative
    count: :math:`2 \min(p, 1 - p)^{n_s}`. Where it is at least ``1 - level``, nothing the
    intersection could show would set it apart, so a hierarchical model gives it the rate
    its attribute values predict by assumption alone; and as epsilon-DF is a maximum, one
    such intersection may set it. At ``level`` 0.9 these are the intersections of at most
    3 rows at a pooled rate of 0.45, of at most 2 at 0.3, of 1 at 0.05.

    Parameters
    ----------
    n, k : numpy.ndarray
        Rows and positives per intersection.
    level : float

    Returns
    -------
    numpy.ndarray
        Boolean, per intersection (False where it has no rows).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.calibration import unchecked
    >>> unchecked(np.array([300, 300, 3, 4, 0]), np.array([135, 135, 1, 2, 0]), 0.9).tolist()
    [False, False, True, False, False]
    """
    seen = n > 0
    pooled = k[seen].sum() / max(int(n[seen].sum()), 1)
    smaller = min(pooled, 1.0 - pooled)
    return seen & (2.0 * smaller ** n.astype(float) >= 1.0 - level)


def off_hierarchy(
    post: np.ndarray,
    n: np.ndarray,
    k: np.ndarray,
    loose: np.ndarray,
    pseudo_count: float,
    rng: np.random.Generator,
) -> np.ndarray:
    r"""Hierarchical draws of the rates with each ``loose`` intersection's rate, in a
    share :math:`\pi = 1 / (m + 2)` of the draws, from its own posterior
    :math:`\mathrm{Beta}(k_s + a, n_s - k_s + a)` instead.

    A contamination prior (Berger 1985, section 4.7): each intersection's rate follows the
    hierarchy (attribute effects plus a deviation of learned scale), or, with prior
    probability :math:`\pi`, is a rate of its own, :math:`\mathrm{Beta}(a, a)`. Where an
    intersection's rows can contradict the pooled rate, they set its rate under either
    component, and the hierarchy's deviation scale is learned from such intersections. The
    ``loose`` ones (:func:`unchecked`) are those whose rows are too few for any count of
    theirs to contradict the pooled rate at the level, so the hierarchy alone would pool
    them by assumption while epsilon-DF, a maximum, may be set by one of them. They keep
    the prior probability: the exact posterior one would scale its odds by the ratio of
    the two components' marginal likelihoods of the intersection's few rows, which this
    simplification leaves out, since those rows cannot set it apart at the level.
    :math:`\pi` is Laplace's rule of succession over the :math:`m` intersections with rows
    that are not loose: the hierarchy was learned to fit all :math:`m`, so the chance that
    the next intersection lies off it is :math:`1 / (m + 2)`.

    Parameters
    ----------
    post : numpy.ndarray
        Hierarchical draws of the rates (draws, groups).
    n, k : numpy.ndarray
        Rows and positives per intersection.
    loose : numpy.ndarray
        Boolean, the intersections that may lie off the hierarchy.
    pseudo_count : float
        The own posterior's pseudo-count ``a`` (Jeffreys: 0.5).
    rng : numpy.random.Generator
        The caller's generator, drawn from only where an intersection is loose (so that a
        table without one keeps its stream).

    Returns
    -------
    numpy.ndarray
        ``post`` itself without a loose intersection, else a copy.

    References
    ----------
    Berger, J. O. (1985). *Statistical Decision Theory and Bayesian Analysis*, 2nd ed.,
    section 4.7 (the epsilon-contamination class of priors). Springer.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.calibration import off_hierarchy
    >>> post = np.full((4000, 3), 0.3)
    >>> n, k = np.array([500, 500, 2]), np.array([150, 150, 2])
    >>> loose = np.array([False, False, True])
    >>> out = off_hierarchy(post, n, k, loose, 0.5, np.random.default_rng(0))
    >>> bool(abs((out[:, 2] != 0.3).mean() - 1 / 4) < 0.03)  # m = 2 intersections checked
    True
    """
    if not loose.any():
        return post
    m = int(((n > 0) & ~loose).sum())
    out = post.copy()
    own = _own_rates(n, k, loose, pseudo_count, len(post), rng)
    out[:, loose] = np.where(rng.random(own.shape) < 1.0 / (m + 2), own, post[:, loose])
    return out


def _own_rates(n: np.ndarray, k: np.ndarray, loose: np.ndarray, a: float, draws: int, rng):
    """Draws (draws, loose intersections) of the ``loose`` intersections' rates from their
    own posteriors, ``Beta(k + a, n - k + a)``: independent of the hierarchy."""
    size = (draws, int(loose.sum()))
    return rng.beta(k[loose] + a, n[loose] - k[loose] + a, size=size)


class _TableIntervals:
    """What both kinds of table keep: the audited sizes ``n``, the intersections' attribute
    codes, those with rows (``seen``), the level and its two quantiles, the pseudo-count."""

    def __init__(self, n, codes, seen, level, a) -> None:
        self.n, self.codes, self.seen, self.level, self.a = n, codes, seen, level, a
        self.qs = [(1 - level) / 2, (1 + level) / 2]

    def truth(self, p: np.ndarray) -> np.ndarray:
        """(epsilon, gamma) of the truth ``p`` over the intersections with rows."""
        return self._metrics(p, self.n[self.seen])

    def _posterior(self, t, draws, rng, post=None) -> tuple[np.ndarray, np.ndarray]:
        """The hierarchical posterior's draws of (epsilon, gamma) of table ``t`` (from
        ``post`` when given), and the shares drawn with them."""
        post = self.hierarchical_draws(t, draws, rng) if post is None else post
        share = rng.dirichlet(self.n[self.seen] + self.a, size=len(post))
        return self._metrics(post, share), share

    def rules_out_observed(self, t, post) -> dict | None:
        """Whether the posterior rules out the smoothed table as a truth
        (:meth:`RateIntervals.rules_out_observed`); None here: the amplification's observed
        scenario is always its smoothed table."""
        return None

    def unpooled_bounds(self, t, post, pvalue: float, rng) -> dict | None:
        """A sensitivity check of intersections too small to check the hierarchy
        (:meth:`RateIntervals.unpooled_bounds`); None here: the amplification's factors
        stay pooled."""
        return None

    def hierarchical(self, t, draws, rng, post=None) -> tuple[np.ndarray, float]:
        """The hierarchical posterior's draws of (epsilon, gamma) (of its draws of the rates
        ``post``, when given) and the equal-rates p-value: what a calibration needs of a
        replicate table."""
        hier, _ = self._posterior(t, draws, rng, post)
        return hier, self.pvalue(t, rng, decide=True)

    def path_lower(self, t, post, pvalue: float, rng) -> np.ndarray:
        """Lower ends (metrics,) that the calibrated interval's never exceed
        (:meth:`RateIntervals.path_lower`); NaN here: the amplification's are not
        bounded so (``rng`` is not drawn from)."""
        return np.full(len(METRICS), np.nan)


class RateIntervals(_TableIntervals):
    """The three intervals of one table of positives ``k`` (sizes ``n`` and codes fixed).

    A truth is the rates ``p`` (groups,), or posterior draws of them (draws, groups).
    """

    truth_ndim = 1
    #: per metric (:data:`METRICS`), whether the calibrated interval is moved by its
    #: median's bias (:func:`calibrate`). Epsilon-DF's is: a posterior of a largest
    #: log-ratio of rates sits off the truth by an amount its replicates show. Gamma-SF's is
    #: not: it weights every intersection's gap by its share, so the small intersections'
    #: noise, which sets that bias, barely enters it; its posterior median is about unbiased,
    #: and what the posterior scenario shows of one table is that scenario's own, which does
    #: not carry over to the table's truth (moving by it only spreads the intervals' ends)
    bias_corrected = (True, False)

    def simulate(self, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A replicate table of rates ``p`` with the audited sizes."""
        return rng.binomial(self.n, p)

    def _metrics(self, p: np.ndarray, share: np.ndarray) -> np.ndarray:
        """Of rates ``p`` (..., groups), over the intersections with rows."""
        return table_metrics(p[..., self.seen], share)

    def estimate(self, k: np.ndarray) -> np.ndarray:
        """The empirical (epsilon, gamma) of the table."""
        s = self.seen
        return table_metrics(k[s] / self.n[s], self.n[s])

    def truths(self, k: np.ndarray, post: np.ndarray) -> dict:
        """The replicate scenarios' truths (see :func:`~bayesfair.interval_calibration`);
        the ``observed`` one is the smoothed table, or its :func:`constrained_bayes_rates`
        where the posterior rules the smoothed table out (:meth:`rules_out_observed`)."""
        n, s, a = self.n, self.seen, self.a
        observed = self.smoothed(k)
        if self.rules_out_observed(k, post) is not None:
            observed = constrained_bayes_rates(post, s)
        return {
            "posterior": post,
            "observed": observed,
            "shrunk": np.where(s, shrunk_rates(np.maximum(n, 1), k, a), 0.5),
            "fair": np.full(len(n), k[s].sum() / n[s].sum()),
        }

    def smoothed(self, k: np.ndarray) -> np.ndarray:
        """The table's rates smoothed by the pseudo-count: ``(k + a) / (n + 2a)``."""
        return (k + self.a) / (self.n + 2 * self.a)

    def rules_out_observed(self, k: np.ndarray, post: np.ndarray) -> dict | None:
        """Where the smoothed table's epsilon-DF or gamma-SF lies outside the hierarchical
        posterior's equal-tailed interval at :data:`PLAUSIBLE_MASS` (``post``: draws of the
        rates), the first such metric, its value and that interval; else None.

        Every smoothed rate carries its sampling noise, so the smoothed table is rougher
        than the population; with many intersections of moderate size its maximum log-ratio
        is far above any the posterior allows, and replicates of it would judge intervals
        against a truth the data rule out."""
        value = self.truth(self.smoothed(k))
        lo, hi = np.quantile(
            self.truth(post), [(1 - PLAUSIBLE_MASS) / 2, (1 + PLAUSIBLE_MASS) / 2], axis=0
        )
        for j, metric in enumerate(METRICS):
            if value[j] < lo[j] or value[j] > hi[j]:
                return {
                    "metric": metric,
                    "value": float(value[j]),
                    "lower": float(lo[j]),
                    "upper": float(hi[j]),
                }
        return None

    def hierarchical_draws(self, k, draws, rng) -> np.ndarray:
        """Draws of the rates (draws, groups) from the hierarchical posterior, with the
        :func:`unchecked` intersections' off the hierarchy now and then
        (:func:`off_hierarchy`)."""
        post = grid_posterior(self.n, k, self.codes, group_variance=GROUP_VARIANCE)
        post = post.draw(draws, rng)
        return off_hierarchy(post, self.n, k, unchecked(self.n, k, self.level), self.a, rng)

    def zero_lower(self, pvalue: float) -> bool:
        """Whether the hierarchical interval's lower end is 0: equal rates not rejected."""
        return pvalue >= 1 - self.level

    def path_lower(self, k, post, pvalue: float, rng) -> np.ndarray:
        """Lower ends (metrics,) of :func:`path_lower_bounds` along the path from equal rates
        to the hierarchical posterior's mean log-odds (of its draws of the rates ``post``)
        over the intersections with rows; NaN where equal rates are not rejected
        (:meth:`zero_lower`: the lower ends are 0 already). Its tests draw from a child of
        ``rng``, spawned on every call (:meth:`numpy.random.Generator.spawn` advances no
        state), so that the caller's stream is the same with or without it."""
        child = rng.spawn(1)[0]
        if self.zero_lower(pvalue):
            return np.full(len(METRICS), np.nan)
        s = self.seen
        mean = np.clip(post[:, s].mean(axis=0), 1e-12, 1 - 1e-12)
        return path_lower_bounds(self.n[s], k[s], logit(mean), self.level, child)

    def pvalue(self, k, rng, decide: bool = False) -> float:
        """Of equal rates (:func:`equal_rates_pvalue`) over the intersections with rows;
        ``decide``: only as precise as :meth:`zero_lower` needs (its sequential decision)."""
        decide_at = 1 - self.level if decide else None
        return equal_rates_pvalue(self.n[self.seen], k[self.seen], rng, decide_at=decide_at)

    def unpooled_bounds(self, k, post, pvalue: float, rng) -> dict | None:
        """Epsilon-DF's interval at the level with the :func:`unchecked` intersections'
        rates anywhere their rows allow (``lower``, ``upper``), with how many there are
        and their largest size (``intersections``, ``max_rows``); None when there is none.

        The upper end is the posterior quantile with their rates drawn from their own
        ``Beta(k + a, n - k + a)`` and every other rate from the hierarchical draws ``post``;
        the lower end is that of the hierarchical posterior of epsilon-DF over the other
        intersections (a maximum over all intersections is at least the maximum over any
        subset of them, so a lower bound of the latter bounds the former), or 0 where
        equal rates are not rejected (:meth:`zero_lower`) or fewer than two remain."""
        loose = unchecked(self.n, k, self.level)
        if not loose.any():
            return None
        n, s = self.n, self.seen
        own = post.copy()
        own[:, loose] = _own_rates(n, k, loose, self.a, len(post), rng)
        upper = float(np.quantile(_epsilon(own[:, s]), self.qs[1]))
        rest = s & ~loose
        lower = 0.0
        if not self.zero_lower(pvalue) and rest.sum() >= 2:
            lower = float(np.quantile(_epsilon(post[:, rest]), self.qs[0]))
        return {
            "lower": lower,
            "upper": upper,
            "intersections": int(loose.sum()),
            "max_rows": int(n[loose].max()),
        }

    def shifted(self, bounds: np.ndarray, shift: np.ndarray) -> np.ndarray:
        """Bounds (..., metrics, 2) moved down by ``shift`` (metrics,), within [0, inf):
        a lower end at 0 (equal rates not rejected) stays there."""
        lo, hi = bounds[..., 0], bounds[..., 1]
        lo = np.where(lo > 0, np.maximum(lo - shift, 0.0), lo)
        return np.stack([lo, np.maximum(hi - shift, lo)], axis=-1)

    def bounds(self, k, draws, rng, post=None, decide=False):
        """Bounds (methods, 2, 2), the equal-rates p-value (only as precise as
        :meth:`zero_lower` needs with ``decide``), and the hierarchical and
        Dirichlet-multinomial draws of (epsilon, gamma)."""
        n, s, a = self.n[self.seen], self.seen, self.a
        hier, share = self._posterior(k, draws, rng, post)
        pvalue = self.pvalue(k, rng, decide)
        dm = table_metrics(rng.beta(k[s] + a, n - k[s] + a, size=(draws, len(n))), share[:draws])
        h_lo, h_hi = np.quantile(hier, self.qs, axis=0)
        if self.zero_lower(pvalue):
            h_lo = np.zeros(2)
        eps_lo, eps_hi, gamma_lo, gamma_hi = projected_bounds(n, k[s], self.level)
        bounds = np.array(
            [
                np.stack([h_lo, h_hi], axis=-1),
                np.quantile(dm, self.qs, axis=0).T,
                [[eps_lo, eps_hi], [gamma_lo, gamma_hi]],
            ]
        )
        return bounds, pvalue, hier, dm


class AmplificationIntervals(_TableIntervals):
    r"""The three intervals of the amplification (decisions' epsilon-DF and gamma-SF minus
    the labels').

    A table is ``(k_y, k_0, k_1)`` per intersection (groups, 3): the positive labels, and the
    positive decisions among the rows labelled 0 and 1. A truth is the three rates
    ``(P(y=1|s), P(d=1|y=0,s), P(d=1|y=1,s))`` (groups, 3), or posterior draws of them.
    Since :math:`P(y, d | s) = P(y|s) P(d|y, s)`, the likelihood of the table is the product
    of three binomial likelihoods on disjoint counts; with independent priors the posterior
    is the product of three posteriors, and the decisions' rate
    :math:`P(d=1|s) = \sum_y P(y|s) P(d=1|y,s)` is drawn jointly with the labels' rate, so
    the difference carries their correlation (the same rows give both).
    """

    truth_ndim = 2
    #: not moved by a bias correction: the two maxima's biases cancel in part in the
    #: difference, and the posterior scenario's residual bias does not carry over to the
    #: observed and shrunk rates (moving by it over-covers there)
    bias_corrected = (False, False)

    def _sizes(self, t: np.ndarray) -> np.ndarray:
        """Rows of each of the three factors' tables: all, labelled 0, labelled 1."""
        ky = t[..., 0]
        return np.stack([np.broadcast_to(self.n, ky.shape), self.n - ky, ky], axis=-1)

    def simulate(self, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        ky = rng.binomial(self.n, p[:, 0])
        return np.stack([ky, rng.binomial(self.n - ky, p[:, 1]), rng.binomial(ky, p[:, 2])], -1)

    def _metrics(self, p: np.ndarray, share: np.ndarray) -> np.ndarray:
        """Of factor rates ``p`` (..., groups, 3), over the intersections with rows."""
        return _amplification(p[..., self.seen, :], share)

    def estimate(self, t: np.ndarray) -> np.ndarray:
        s = self.seen
        n = self.n[s]
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, an amplification not defined
            return table_metrics((t[s, 1] + t[s, 2]) / n, n) - table_metrics(t[s, 0] / n, n)

    def truths(self, t: np.ndarray, post: np.ndarray) -> dict:
        sizes, a, s = self._sizes(t), self.a, self.seen
        pooled = t[s].sum(axis=0) / np.maximum(sizes[s].sum(axis=0), 1)
        shrunk = [_shrunk_or_pooled(sizes[:, j], t[:, j], a, pooled[j]) for j in range(3)]
        return {
            "posterior": post,
            "observed": (t + a) / (sizes + 2 * a),
            "shrunk": np.stack(shrunk, axis=-1),
            "fair": np.broadcast_to(pooled, t.shape).copy(),
        }

    def hierarchical_draws(self, t, draws, rng) -> np.ndarray:
        sizes = self._sizes(t)
        return np.stack(
            [
                grid_posterior(
                    sizes[:, j], t[:, j], self.codes, group_variance=GROUP_VARIANCE
                ).draw(draws, rng)
                for j in range(3)
            ],
            -1,
        )

    def zero_lower(self, pvalue: float) -> bool:
        """Never: the amplification may be negative."""
        return False

    def shifted(self, bounds: np.ndarray, shift: np.ndarray) -> np.ndarray:
        """Bounds (..., metrics, 2) moved down by ``shift`` (metrics,)."""
        return bounds - np.asarray(shift)[:, None]

    def pvalue(self, t, rng, decide: bool = False) -> float:
        """Of equal rates of the decisions (the amplification's first term); NaN with
        ``decide``, which :meth:`zero_lower` does not read."""
        s = self.seen
        if decide:
            return np.nan
        return equal_rates_pvalue(self.n[s], t[s, 1] + t[s, 2], rng)

    def bounds(self, t, draws, rng, post=None, decide=False):
        """As :meth:`RateIntervals.bounds`, of the amplification."""
        s, a = self.seen, self.a
        n = self.n[s]
        hier, share = self._posterior(t, draws, rng, post)
        sizes = self._sizes(t)[s]
        dm = _amplification(
            rng.beta(t[s] + a, sizes - t[s] + a, size=(draws, *t[s].shape)), share[:draws]
        )
        cp = amplification_bounds(n, t[s, 0], t[s, 1] + t[s, 2], self.level)
        bounds = np.array(
            [np.quantile(hier, self.qs, axis=0).T, np.quantile(dm, self.qs, axis=0).T, cp]
        )
        return bounds, self.pvalue(t, rng, decide), hier, dm


def _amplification(p: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Decisions' (epsilon, gamma) minus the labels' of factor rates ``p`` (..., groups, 3):
    ``P(d=1|s) = (1 - P(y=1|s)) P(d=1|y=0,s) + P(y=1|s) P(d=1|y=1,s)``."""
    py = p[..., 0]
    pd_ = (1 - py) * p[..., 1] + py * p[..., 2]
    return table_metrics(pd_, share) - table_metrics(py, share)


def _shrunk_or_pooled(n: np.ndarray, k: np.ndarray, a: float, pooled: float) -> np.ndarray:
    """:func:`shrunk_rates` of a factor's table; the pooled rate where it has no rows, and
    everywhere when the table has no inequality to shrink (every rate 0 or every rate 1)."""
    seen = n > 0
    if not 0 < k[seen].sum() < n[seen].sum():
        return np.full(len(n), pooled)
    return np.where(seen, shrunk_rates(np.maximum(n, 1), k, a), pooled)
