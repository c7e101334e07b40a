"""Helpers shared by the tests of bayesfair.disaggregated: small frames and populations,
short hierarchical fits."""

from __future__ import annotations

import arviz as az
import numpy as np
import pandas as pd

from bayesfair.disaggregated import (
    GroupedData,
    HierarchicalBayes,
    empirical_bayes,
    james_stein,
)

#: a short hierarchical fit for tests that compare its output, not its accuracy
SMALL_HB = dict(estimators=[HierarchicalBayes(draws=200, tune=300, chains=2)], random_state=0)


def _simulation_estimators(pop_truth, *names: str, n_resamples: int = 200) -> list:
    """herlihy.simulation_estimators of a population (structured regression with its
    explanatory features and interactions), those named."""
    from bayesfair.replication import herlihy

    pop = pop_truth[0] if isinstance(pop_truth, tuple) else pop_truth
    found = herlihy.simulation_estimators(pop, n_resamples=n_resamples)
    return [e for e in found if e.name in names]


def _frame(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "race": rng.choice(list("ABCD"), n, p=[0.6, 0.2, 0.15, 0.05]),
            "sex": rng.choice(["F", "M"], n),
            "age": rng.choice(["young", "old"], n, p=[0.7, 0.3]),
        }
    )
    df["y"] = (rng.random(n) < 0.3 + 0.1 * (df.race == "B")).astype(int)
    df["score"] = np.clip(0.2 + 0.4 * df.y + rng.normal(0, 0.2, n), 0, 1)
    df["d"] = (df.score > 0.45).astype(int)
    return df


def _lasso_kkt_gap(X, y, w, lam, b0, th):
    """Largest violation of the lasso's optimality conditions (weights normalised):
    |x_j' W r| <= lam where theta_j = 0, x_j' W r = lam sign(theta_j) elsewhere."""
    ws = w / w.sum()
    r = y - b0 - X @ th
    grad = (X - ws @ X).T @ (ws * r)
    on = th != 0
    return max(
        np.max(np.abs(grad[on] - lam * np.sign(th[on])), initial=0.0),
        np.max(np.abs(grad[~on]) - lam, initial=0.0),
    )


def _additive_population(seed: int, n_rows: int = 2000, departure: float = 0.0):
    """32 groups (4 x 2 x 4) of very unequal size (5 to 370 rows) whose decision rates are
    additive in the attributes: structured regression's features hold the truth. With
    ``departure`` > 0, every group's rate departs from that surface by N(0, departure^2)
    (clipped to [0.02, 0.98]), drawn from a stream of its own so that the rows' draws
    are those of ``departure=0``."""
    rng = np.random.default_rng(seed)
    levels = pd.MultiIndex.from_product([list("abcd"), ["f", "m"], list("1234")]).to_frame(
        index=False
    )
    share = np.einsum(
        "i,j,k->ijk", [0.70, 0.15, 0.10, 0.05], [0.45, 0.55], [0.3, 0.35, 0.25, 0.10]
    ).ravel()
    eff = (
        np.array([0.0, -0.05, 0.05, -0.03])[:, None, None]
        + np.array([-0.06, 0.06])[None, :, None]
        + np.array([-0.12, 0.02, 0.08, 0.05])[None, None, :]
    )
    p = (0.22 + eff).ravel()
    if departure > 0:
        p = np.clip(p + np.random.default_rng([seed, 1]).normal(0, departure, p.size), 0.02, 0.98)
    g = np.repeat(np.arange(32), np.round(n_rows * share).astype(int))
    df = pd.DataFrame(
        {
            "race": levels[0].to_numpy()[g],
            "sex": levels[1].to_numpy()[g],
            "age": levels[2].to_numpy()[g],
            "y": rng.integers(0, 2, len(g)),
            "d": (rng.random(len(g)) < p[g]).astype(int),
        }
    )
    truth = dict(zip(map(tuple, levels.to_numpy()), p, strict=True))
    return df, truth


def _abc_groups() -> pd.DataFrame:
    """24 groups: A (4 values) x B (2) x C (3)."""
    return pd.MultiIndex.from_product(
        [["a1", "a2", "a3", "a4"], ["b1", "b2"], ["c1", "c2", "c3"]], names=list("ABC")
    ).to_frame(index=False)


def _rows_of(groups: pd.DataFrame, rng, smallest: int, largest: int):
    """Group sizes log-uniform in [smallest, largest]; each row's group code and attributes."""
    sizes = np.round(np.exp(rng.uniform(np.log(smallest), np.log(largest), len(groups))))
    g = np.repeat(np.arange(len(groups)), sizes.astype(int))
    return g, groups.iloc[g].reset_index(drop=True)


def _truth_of(groups: pd.DataFrame, values) -> dict:
    """Group label (as disaggregated_evaluation writes it) -> true value."""
    return dict(zip([", ".join(t) for t in groups.itertuples(index=False)], values, strict=True))


def _at_95(sim: pd.DataFrame) -> pd.DataFrame:
    """summarise's coverage and relative width of the 95% intervals, by estimator, metric."""
    from bayesfair.replication import herlihy

    _, cov = herlihy.summarise(sim)
    return cov[cov["level"] == 0.95].set_index(["estimator", "metric"])


def _shrinkage_sim(seed, n_draws=6, n_groups=14):
    """Simulation-shaped frame: standard, James-Stein and empirical-Bayes estimates of
    small groups (sizes 3-25) whose true rates spread from 0.02 to 0.6."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.02, 0.6, n_groups)
    n = rng.integers(3, 26, n_groups)
    rows = []
    for d in range(n_draws):
        s = rng.binomial(n, truth) / n
        sigma2 = float(np.sum(n * s * (1 - s)) / np.sum(n))
        assert sigma2 > 0  # true rates 0.02-0.6 in 14 groups: some estimate is inside (0, 1)
        ests = {
            "standard": s,
            "james_stein": james_stein(s, n, sigma2),
            "empirical_bayes": empirical_bayes(s, n, sigma2)[0],
        }
        for est, v in ests.items():
            for a in range(n_groups):
                rows.append(
                    {
                        "draw": d,
                        "metric": "rate",
                        "group": f"g{a}",
                        "estimator": est,
                        "n": int(n[a]),
                        "defined": True,
                        "estimate": v[a],
                        "truth": truth[a],
                    }
                )
    return pd.DataFrame(rows)


def _herlihy_like_population(seed, n=6000):
    """A population with the simulation's columns (race x sex x age band, y, score,
    decision at the top 20% of scores), groups from a few rows to thousands, and its
    true metric table, as :func:`bayesfair.replication.herlihy.population` returns."""
    from bayesfair.replication.herlihy import AGE_BANDS, SENSITIVE

    rng = np.random.default_rng(seed)
    pop = pd.DataFrame(
        {
            "race": rng.choice(["W", "B", "A", "O"], n, p=[0.8, 0.12, 0.05, 0.03]),
            "sex": rng.choice(["M", "F"], n, p=[0.65, 0.35]),
            "age_band": rng.choice(AGE_BANDS, n, p=[0.3, 0.35, 0.25, 0.1]),
        }
    )
    lin = (
        pop["sex"].map({"M": 0.6, "F": -0.6}).to_numpy()
        + pop["age_band"].map(dict(zip(AGE_BANDS, [-1.5, 0.3, 0.6, 0.2], strict=True))).to_numpy()
        + pop["race"].map({"W": 0.2, "B": -0.4, "A": 0.3, "O": -0.3}).to_numpy()
    )
    pop["y"] = (rng.random(n) < 1 / (1 + np.exp(1.2 - lin))).astype(int)
    pop["score"] = 1 / (1 + np.exp(-(lin + 1.5 * pop["y"] - 1.5 + rng.normal(0, 1, n))))
    pop["decision"] = (pop["score"] >= np.quantile(pop["score"], 0.8)).astype(int)
    gd = GroupedData.from_frame(pop, SENSITIVE, "y", "decision", "score")
    truth = pd.DataFrame(
        {m: gd.estimate(m) for m in ("selection_rate", "fpr")}, index=gd.group_names()
    )
    return pop, truth


def _arviz_worst_is_main_effect(idata) -> bool:
    summ = az.summary(idata, var_names=["~theta"], kind="diagnostics")
    worst = summ.r_hat.idxmax().split("[")[0]
    return summ.r_hat.max() > 1.01 and worst in {f"{p}_{c}" for p in ("sigma", "z") for c in "abc"}
