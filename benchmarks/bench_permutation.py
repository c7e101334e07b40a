"""Studentized permutation test of an FNR difference: hypergeometric tables vs row shuffles."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from scipy import stats

from bayesfair import AuditData
from bayesfair.frequentist import (
    auc_permutation_test,
    intersectional_permutation_test,
    permutation_test,
)


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.random(n) < 0.2
    y = rng.random(n) < np.where(g, 0.05, 0.5)
    d = np.where(rng.random(n) < 0.8, y, ~y)
    return pd.DataFrame(
        {"g": np.where(g, "A", "B"), "y": y.astype(np.int8), "d": d.astype(np.int8)}
    )


def _scipy(df: pd.DataFrame, n_resamples: int) -> float:
    """scipy.stats.permutation_test with the same studentized FNR statistic, vectorised."""
    y = df["y"].to_numpy().astype(bool)
    miss = (df["d"].to_numpy() == 0).astype(float)
    is_a = (df["g"].to_numpy() == "A").astype(float)

    def stat(label, axis):
        a = label.astype(bool)
        pa = (a & y).sum(axis=axis)
        pb = (~a & y).sum(axis=axis)
        ra = (miss * (a & y)).sum(axis=axis) / pa
        rb = (miss * (~a & y)).sum(axis=axis) / pb
        return (ra - rb) / np.sqrt(ra * (1 - ra) / pa + rb * (1 - rb) / pb)

    t0 = time.perf_counter()
    stats.permutation_test(
        (is_a,),
        stat,
        permutation_type="pairings",
        n_resamples=n_resamples,
        vectorized=True,
        batch=10,
        random_state=0,
    )
    return time.perf_counter() - t0


def _pairwise(quick: bool) -> dict:
    """All pairs of 32 groups (496 two-group tests, 9,999 resamples each) in one call,
    against the loop a user would write: one permutation_test per pair."""
    rng = np.random.default_rng(3)
    n = 200_000
    df = pd.DataFrame({"g": rng.integers(0, 32, n).astype(str), "y": rng.integers(0, 2, n)})
    df["d"] = np.where(rng.random(n) < 0.8, df["y"], 1 - df["y"])
    data = AuditData(df, "g", "y", decision="d")
    t0 = time.perf_counter()
    res = intersectional_permutation_test(data, "fnr", n_resamples=9999, random_state=0)
    ours = time.perf_counter() - t0
    pairs = list(res.pairwise[["group_a", "group_b"]].itertuples(index=False, name=None))
    k = 10 if quick else 50
    t0 = time.perf_counter()
    for pair in pairs[:k]:
        permutation_test(data, "fnr", groups=pair, n_resamples=9999, random_state=0)
    loop = (time.perf_counter() - t0) * len(pairs) / k
    return {
        "benchmark": "FNR, all 496 pairs of 32 groups, 9,999 perms each",
        "bayesfair_s": ours,
        "baseline": f"permutation_test per pair ({k} run)",
        "baseline_s": loop,
        "note": f"the loop timed on {k} of the {len(pairs)} pairs and scaled linearly; "
        "bayesfair's time includes the max-T test over the groups",
    }


def run(quick: bool = False) -> list[dict]:
    rows = []
    df = _frame(1_000_000)
    data = AuditData(df, "g", "y", decision="d")
    t0 = time.perf_counter()
    # free permutation: the shuffle of all rows' labels that scipy runs below
    permutation_test(data, "fnr", n_resamples=10_000, permute="free", random_state=0)
    ours = time.perf_counter() - t0
    k = 20 if quick else 100
    scipy_s = _scipy(df, k) * (10_000 / k)
    rows.append(
        {
            "benchmark": "FNR studentized, 10,000 free permutations, 1M rows",
            "bayesfair_s": ours,
            "baseline": f"scipy permutation_test ({k} run, x{10_000 // k})",
            "baseline_s": scipy_s,
            "note": f"scipy timed on {k} resamples and scaled linearly to 10,000 (its cost is "
            "linear in resamples); bayesfair's time excludes the aggregation (below)",
        }
    )
    n = 1_000_000 if quick else 10_000_000
    big = _frame(n, 1)
    t0 = time.perf_counter()
    permutation_test(
        AuditData(big, "g", "y", decision="d"), "fnr", n_resamples=10_000, random_state=0
    )
    total = time.perf_counter() - t0
    rows.append(
        {
            "benchmark": f"FNR studentized, 10,000 perms, {n / 1e6:g}M rows + aggregation",
            "bayesfair_s": total,
            "baseline": "target 1 s",
            "baseline_s": 1.0,
        }
    )
    rows.append(_pairwise(quick))
    m = 100_000 if quick else 1_000_000
    rng = np.random.default_rng(2)
    g = np.where(rng.random(m) < 0.3, "A", "B")
    y = (rng.random(m) < np.where(g == "A", 0.1, 0.5)).astype(np.int8)
    s = 1 / (1 + np.exp(-(rng.normal(size=m) + 1.2 * y)))
    auc_data = AuditData(pd.DataFrame({"g": g, "y": y, "s": s}), "g", "y", score="s")
    t0 = time.perf_counter()
    auc_permutation_test(auc_data, n_resamples=1000, random_state=0)
    rows.append(
        {
            "benchmark": f"AUC DeLong-studentized, 1,000 permutations, {m / 1e6:g}M rows",
            "bayesfair_s": time.perf_counter() - t0,
            "baseline": "target 20 s",
            "baseline_s": 20.0,
        }
    )
    return rows
