"""How far the groups' true values depart from structured regression's fitted surface on the
diabetes population (issue 39), what one evaluation set can tell of it, and what the
departures do to the intervals.

rBLPR as published (``StructuredRegression(departures=False)``) has the fitted surface as its
bootstrap world's truth, so its intervals carry no departure and under-cover small groups
here. For every evaluation set and metric the script prints the estimates of the departures'
variance beside the true departures' mean squares (small groups with n <= 25, large ones): the
Fay-Herriot maximum-likelihood estimate of one variance for all groups, ``argmax_tau2 sum_a log
N(s_a - fit_a; 0, tau2 + sigma2 / n_a)`` (the surface taken as known), which is 0 in almost
every set it was run on; and the package's moment estimates of its two parts, ``tau2`` common
to all groups and ``phi`` growing with a group's sampling variance
(:func:`~bayesfair.disaggregated.structured.departure_variance`, here with the pooled binomial
variance where the package uses the pooled bootstrap variance), in which every group counts
alike, with the variance they give the small and the large groups on average. The departures are
not exchangeable (the small groups' mean square is several times the large groups'), which is
why the package's variance has the second part.

The second table compares the intervals: the published rBLPR at several partial ridge
penalties lam2 (a normal prior of variance sigma2 / (N lam2) on a group's departure, N rows;
coverage reaches 0.95 only at a lam2 that no quantity of one evaluation set selects), and the
default, with the departures in the bootstrap world. The third splits the default's coverage,
with sets of 5,000 and of 10,000 rows, between the sets whose estimated departure variance came
out 0 and the others: where it is 0, the intervals carry the surface's uncertainty alone (the
note of :attr:`~bayesfair.disaggregated.DisaggregatedResult.notes`). Run from the repository's
root with the data beside it::

    python scripts/structured_departures.py [n_draws]       # default 10
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from bayesfair.disaggregated.structured import departure_variance
from bayesfair.replication import herlihy


def ml_departure_variance(r: np.ndarray, se2: np.ndarray) -> float:
    """Fay-Herriot maximum-likelihood variance of residuals ``r`` beyond ``se2``."""

    def nll(log_tau2: float) -> float:
        v = np.exp(log_tau2) + se2
        return 0.5 * float(np.sum(np.log(v) + r**2 / v))

    best = minimize_scalar(nll, bounds=(-20.0, 0.0), method="bounded").x
    return 0.0 if best < -19.0 else float(np.exp(best))


def simulate(
    pop, n_draws: int, ridge="groups", departures: bool = False, n_eval: int = 5000
) -> pd.DataFrame:
    """Standard and structured regression (partial ridge ``ridge``, with or without the
    departures in rBLPR's bootstrap world) on ``n_draws`` sets of ``n_eval`` rows."""
    found = herlihy.simulation_estimators(pop[0], n_resamples=200)
    estimators = [
        replace(e, ridge=ridge, departures=departures) if e.name == "structured" else e
        for e in found
        if e.name in ("standard", "structured")
    ]
    return herlihy.simulate(
        n_draws,
        n_eval=n_eval,
        pop_truth=pop,
        estimators=estimators,
        metrics=("selection_rate", "fpr"),
        level=[0.95],
        random_state=1,
    )


#: the partial ridge penalties the sweep compares (published rBLPR), the default first
RIDGES = ("groups", 0.02, 0.01, 0.005, "rows")
#: the sweep's label of the package's default: the default penalty, with the departures
DEFAULT = "groups, departures (default)"


def structured_intervals(sim: pd.DataFrame) -> pd.DataFrame:
    """Structured regression's intervals in :func:`simulate`'s result, of the groups with a
    defined estimate and truth, with ``held``: whether the interval holds the truth."""
    iv = sim[sim.defined & np.isfinite(sim.truth) & (sim.estimator == "structured")]
    return iv.assign(held=(iv.lower <= iv.truth) & (iv.truth <= iv.upper))


def ridge_sweep(sims: dict) -> pd.DataFrame:
    """Structured regression's 95% coverage (all groups, small ones) and width relative to
    the standard interval's, by partial ridge penalty lam2 (``sims``: :func:`simulate`'s
    result per penalty).  In the weighted loss, lam2 on a group's identity coefficient is a
    normal prior on its departure from the selected surface of variance tau2 = sigma2 /
    (N lam2) (N rows): ``"groups"`` (1 / 32) stands for tau2 = sigma2 / 156 at N = 5,000,
    ``"rows"`` for tau2 = sigma2."""
    rows = []
    for ridge, sim in sims.items():
        iv = structured_intervals(sim)
        _, cov = herlihy.summarise(sim)
        width = cov.set_index(["estimator", "metric"]).loc["structured", "relative_width"]
        for metric in ("selection_rate", "fpr"):
            m = (iv.metric == metric).to_numpy()
            small = m & (iv.n <= 25).to_numpy()
            rows.append(
                {
                    "ridge": ridge,
                    "metric": metric,
                    "coverage": iv.held[m].mean(),
                    "coverage_small": iv.held[small].mean(),
                    "relative_width": width[metric],
                }
            )
    return pd.DataFrame(rows)


def departures(sim: pd.DataFrame) -> pd.DataFrame:
    """Per draw and metric of :func:`simulate`'s result (the default penalty): the ML
    estimate of one departure variance, the moment estimates of the package's two parts
    (``tau2`` and ``phi``; without the lasso's degrees of freedom, which the simulation's
    table does not keep, so a little short) with the variances they give the small (n <=
    25) and the large groups on average, and the true departures' mean squares of both."""
    wide = sim.pivot_table(
        index=["draw", "metric", "group"], columns="estimator", values=["estimate", "n", "truth"]
    )
    rows = []
    for (draw, metric), g in wide.groupby(level=[0, 1]):
        s, fit = g[("estimate", "standard")].to_numpy(), g[("estimate", "structured")].to_numpy()
        n, truth = g[("n", "standard")].to_numpy(), g[("truth", "standard")].to_numpy()
        ok = np.isfinite(s) & (n > 0)
        s, fit, n, truth = s[ok], fit[ok], n[ok], truth[ok]
        sigma2 = np.sum(n * s * (1 - s)) / np.sum(n)  # the pooled binomial variance
        small = n <= 25
        tau2, phi = departure_variance(s - fit, np.sqrt(sigma2 / n))
        sampling_small = np.mean(sigma2 / n[small])
        rows.append(
            {
                "draw": draw,
                "metric": metric,
                "ml_tau2": ml_departure_variance(s - fit, sigma2 / n),
                "moment_tau2": tau2,
                "moment_phi": phi,
                "moment_var_small": tau2 + phi * sampling_small,
                "moment_var_large": tau2 + phi * np.mean(sigma2 / n[~small]),
                "true_departure_ms_small": np.mean((truth - fit)[small] ** 2),
                "true_departure_ms_large": np.mean((truth - fit)[~small] ** 2),
                "sampling_var_small": sampling_small,
            }
        )
    return pd.DataFrame(rows)


def coverage_by_departure(sims: dict) -> pd.DataFrame:
    """The default's 95% coverage (all groups, small ones with n <= 25) in the sets whose
    estimated departure variance came out 0 in both parts and in the others, per set size
    and metric (``sims``: :func:`simulate`'s result with departures, per set size; the
    variances are in its ``attrs["structured_departures"]``)."""
    rows = []
    for n_eval, sim in sims.items():
        dv = pd.DataFrame(sim.attrs["structured_departures"])
        dv["zero"] = (dv.tau2 == 0) & (dv.phi == 0)
        iv = structured_intervals(sim).merge(dv[["draw", "metric", "zero"]], on=["draw", "metric"])
        for (metric, zero), g in iv.groupby(["metric", "zero"]):
            rows.append(
                {
                    "rows per set": n_eval,
                    "metric": metric,
                    "departure variance": "0" if zero else "> 0",
                    "sets": g.draw.nunique(),
                    "coverage": g.held.mean(),
                    "coverage_small": g.held[g.n <= 25].mean(),
                }
            )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    n_draws = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    home = os.environ.get("BAYESFAIR_DATA", "../shared/data")
    pop = herlihy.population(home, 0, name="diabetes")
    sims = {ridge: simulate(pop, n_draws, ridge) for ridge in RIDGES}
    sims[DEFAULT] = simulate(pop, n_draws, "groups", departures=True)
    table = departures(sims["groups"])
    print(table.round(5).to_string(index=False))
    print(f"\nML tau2 = 0 in {(table.ml_tau2 == 0).sum()} of {len(table)} draw-metrics")
    zero = (table.moment_tau2 == 0) & (table.moment_phi == 0)
    print(f"moment tau2 = phi = 0 in {zero.sum()} of {len(table)} draw-metrics")
    print("\nstructured regression by partial ridge penalty (95% intervals):")
    print(ridge_sweep(sims).round(3).to_string())
    by_size = {5000: sims[DEFAULT]}
    by_size[10_000] = simulate(pop, n_draws, "groups", departures=True, n_eval=10_000)
    print("\nthe default's 95% coverage in sets with and without an estimated departure:")
    print(coverage_by_departure(by_size).round(3).to_string(index=False))
