"""Coverage of the intervals of epsilon-DF and gamma-SF across populations: the study behind
the audit's default interval (notebook 08 and the slow tests of
``tests/calibration``).

A population is a table of true rates P(y=1|s) and shares P(s) over the intersections of
some protected attributes; every replicate draws a data set of ``n_rows`` rows from one
(multinomial sizes, binomial positives), computes each interval of
:func:`~bayesfair.interval_calibration` and checks it against the population's epsilon-DF
and gamma-SF over the intersections the data set has rows in (shares renormalised), the
intersections every interval is about.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from .._table_intervals import (
    ALL_METHODS,
    CALIBRATION_SCENARIOS,
    METRICS,
    RateIntervals,
    calibrate,
    calibrated_bounds,
    replicate_bounds,
    table_metrics,
    with_path_lower,
)
from .._validation import check_count, check_open_probability, check_seed
from .._vocabulary import LEVEL, PSEUDO_COUNT
from ..models._nested_laplace import grid_posterior

__all__ = ["additive_population", "fitted_population", "interval_coverage", "table_population"]

Population = tuple[np.ndarray, np.ndarray]


def additive_population(
    rng: np.random.Generator,
    levels: Sequence[int] = (4, 2, 3),
    *,
    main: float = 0.5,
    interaction: float = 0.25,
    base_rate: float = 0.3,
    concentration: float = 2.0,
) -> Population:
    """A random population: additive log-odds plus interactions, Dirichlet shares.

    ``logit P(y=1|s) = logit(base_rate) + sum_d a_d[s_d] + u_s`` with
    ``a_d ~ N(0, main^2)`` per attribute value and ``u_s ~ N(0, interaction^2)``;
    shares ``~ Dirichlet(concentration)``. The defaults are the generator of issue 40
    (race 4 x sex 2 x age 3 = 24 intersections).

    Parameters
    ----------
    rng : numpy.random.Generator
    levels : sequence of int, default (4, 2, 3)
        Values of every protected attribute.
    main, interaction : float
        Standard deviations of the attribute effects and the intersection deviations.
    base_rate : float, default 0.3
    concentration : float, default 2.0

    Returns
    -------
    tuple of numpy.ndarray
        ``(p, share)`` in the order of ``numpy.indices(levels)``.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesfair.replication.intervals import additive_population
    >>> p, share = additive_population(np.random.default_rng(0))
    >>> p.shape, round(float(share.sum()), 6)
    ((24,), 1.0)
    """
    g = int(np.prod(levels))
    codes = np.indices(levels).reshape(len(levels), -1)
    eta = np.full(g, logit(base_rate))
    for d, size in enumerate(levels):
        eta += rng.normal(0.0, main, size)[codes[d]]
    eta += rng.normal(0.0, interaction, g)
    return expit(eta), rng.dirichlet(np.full(g, concentration))


def table_population(
    n: np.ndarray, k: np.ndarray, pseudo_count: float = PSEUDO_COUNT
) -> Callable[[np.random.Generator], Population]:
    """A fixed population like an observed table: its smoothed rates and its shares.

    Parameters
    ----------
    n, k : numpy.ndarray
        Rows and positives per intersection.
    pseudo_count : float, default 0.5

    Returns
    -------
    callable
        ``rng -> (p, share)`` (the same population every time).
    """
    n = np.asarray(n, dtype=float)
    p = (np.asarray(k) + pseudo_count) / (n + 2 * pseudo_count)
    share = n / n.sum()
    return lambda rng: (p, share)


def fitted_population(
    n: np.ndarray, k: np.ndarray, levels: Sequence[int]
) -> Callable[[np.random.Generator], Population]:
    """Populations like an observed table: every call draws the rates from the hierarchical
    posterior of the table (:class:`~bayesfair.models.HierarchicalCounts`) and keeps its
    shares.

    Parameters
    ----------
    n, k : numpy.ndarray
        Rows and positives per intersection, in the order of ``numpy.indices(levels)``.
    levels : sequence of int

    Returns
    -------
    callable
        ``rng -> (p, share)``, a new population each time.
    """
    n = np.asarray(n)
    codes = np.indices(tuple(levels)).reshape(len(levels), -1)
    posterior = grid_posterior(n, np.asarray(k), codes)
    share = n / n.sum()
    return lambda rng: (posterior.draw(1, rng)[0], share)


def draw_replicate(
    population: Callable[[np.random.Generator], Population],
    codes: np.ndarray,
    n_rows: int,
    level: float,
    draws: int,
    rng: np.random.Generator,
) -> dict:
    """One replicate of a coverage study: a population drawn from ``population``, a data
    set of ``n_rows`` rows from it (multinomial sizes, binomial positives ``k``), its
    :class:`~bayesfair._table_intervals.RateIntervals` ``box``, hierarchical posterior
    draws of the rates ``post``, every method's ``bounds``, the equal-rates ``pvalue``
    (:meth:`~bayesfair._table_intervals.RateIntervals.bounds`), the hierarchical draws of
    (epsilon, gamma) ``hier``, and the population's ``truth`` over the intersections with
    rows (shares renormalised). :func:`interval_coverage` calibrates and checks each one;
    ``scripts/calibration_variants.py`` applies other calibration rules to the same."""
    p, share = population(rng)
    n = rng.multinomial(n_rows, share)
    k = rng.binomial(n, p)
    seen = n > 0
    box = RateIntervals(n, codes, seen, level, PSEUDO_COUNT)
    post = box.hierarchical_draws(k, draws, rng)
    bounds, pvalue, hier, _ = box.bounds(k, draws, rng, post=post, decide=True)
    truth = table_metrics(p[seen], share[seen] / share[seen].sum())
    return {
        "box": box,
        "k": k,
        "post": post,
        "bounds": bounds,
        "pvalue": pvalue,
        "hier": hier,
        "truth": truth,
    }


def interval_coverage(
    population: Callable[[np.random.Generator], Population],
    levels: Sequence[int],
    n_rows: int,
    *,
    n_replicates: int = 200,
    level: float = LEVEL,
    draws: int = 2000,
    n_calibration: int = 100,
    random_state=None,
) -> pd.DataFrame:
    """How often each interval covers a population's epsilon-DF and gamma-SF.

    Parameters
    ----------
    population : callable
        ``rng -> (p, share)``, called once per replicate (a new population each time, as
        :func:`additive_population`, or a fixed one, as :func:`table_population`).
    levels : sequence of int
        Values of every protected attribute (the intersections are in the order of
        ``numpy.indices(levels)``).
    n_rows : int
        Rows of every replicate data set.
    n_replicates : int, default 200
    level : float, default 0.9
    draws : int, default 2000
        Posterior draws per replicate.
    n_calibration : int, default 100
        Replicate tables of each of every replicate's own ``posterior`` and ``observed``
        scenarios on which its calibrated interval's bias correction and credible mass are
        chosen (an audit's :func:`~bayesfair.interval_calibration` uses ``n_replicates``,
        200), each with 400 posterior draws.
    random_state : int, numpy.random.Generator or None

    Returns
    -------
    pandas.DataFrame
        One row per method and metric: ``coverage``, ``median_width``,
        ``width_ratio_to_clopper_pearson`` (of the medians; 0 where the box's median width
        is infinite), ``infinite_share`` (intervals
        with an infinite end), ``n_replicates``, ``n_rows``.

    Examples
    --------
    >>> from bayesfair.replication.intervals import additive_population, interval_coverage
    >>> t = interval_coverage(additive_population, (4, 2, 3), 2500, n_replicates=5,
    ...                       n_calibration=10, random_state=0)
    >>> t["method"].unique().tolist()
    ['calibrated', 'hierarchical', 'Dirichlet-multinomial', 'Clopper-Pearson']
    """
    n_rows = check_count(n_rows, "n_rows", minimum=2)
    n_replicates = check_count(n_replicates, "n_replicates")
    check_open_probability(level, "level")
    rng = np.random.default_rng(check_seed(random_state))
    codes = np.indices(tuple(levels)).reshape(len(levels), -1)
    n_calibration = check_count(n_calibration, "n_calibration", minimum=10)
    inside, width = [], []
    for _ in range(n_replicates):
        rep = draw_replicate(population, codes, n_rows, level, draws, rng)
        box, k, post, pvalue = rep["box"], rep["k"], rep["post"], rep["pvalue"]
        truths = box.truths(k, post)
        inner = {
            s: replicate_bounds(box, truths[s], n_calibration, 400, rng, methods=False, path=False)
            for s in CALIBRATION_SCENARIOS
        }
        mass, shift = calibrate(box, inner, level)
        calibrated = with_path_lower(
            calibrated_bounds(box, rep["hier"], pvalue, mass, shift),
            box.path_lower(k, post, pvalue, rng),
        )
        bounds = np.concatenate([calibrated[None], rep["bounds"]])
        truth = rep["truth"]
        inside.append((bounds[..., 0] <= truth + 1e-12) & (truth - 1e-12 <= bounds[..., 1]))
        width.append(bounds[..., 1] - bounds[..., 0])
    inside, width = np.array(inside), np.array(width)
    med = np.median(width, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(np.isinf(med[-1]), 0.0, med / med[-1])  # an unbounded box: ratio 0
    ratio[-1] = 1.0
    rows = []
    for i, method in enumerate(ALL_METHODS):
        for j, metric in enumerate(METRICS):
            rows.append(
                {
                    "method": method,
                    "metric": metric,
                    "coverage": float(inside[:, i, j].mean()),
                    "median_width": float(med[i, j]),
                    "width_ratio_to_clopper_pearson": float(ratio[i, j]),
                    "infinite_share": float(np.isinf(width[:, i, j]).mean()),
                    "n_replicates": n_replicates,
                    "n_rows": n_rows,
                }
            )
    return pd.DataFrame(rows)
