"""Conditional Bias Scan on COMPAS: one scan (I-hat included), the permutation test, and
AIF360's MDSS bias scan on the same rows, expectations and restarts.

AIF360 is an optional benchmark dependency (``pip install 'bayesfair[bench]'``); without
it the baseline column reads "not installed".  The paper's reported time (~90 s per
150-restart scan, Boxer et al. Appendix B) is printed as a named baseline too.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bayesfair.datasets import load_compas
from bayesfair.scan import SubsetSearch, conditional_bias_scan, subset_scan

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
KW = dict(
    protected_class=("race", "African-American"),
    scan_type="separation_recommendations",
    outcome="two_year_recid",
    score="P",
    decision="high_risk",
    condition_value=0,
    attributes=["race", "sex", "age", "charge", "priors"],
    n_resamples=0,  # one scan; the permutation row below sets its own count
)


def _frame() -> pd.DataFrame:
    home = os.environ.get("BAYESFAIR_DATA") or (DATA if DATA.is_dir() else None)
    return load_compas("cbs", data_home=home).frame


def _aif360(rows: pd.DataFrame, obs: np.ndarray, exp: np.ndarray, restarts: int):
    try:
        from aif360.detectors.mdss_detector import bias_scan
    except ImportError:
        return None, None, None
    t0 = time.perf_counter()
    sub, score = bias_scan(
        data=rows.reset_index(drop=True),
        observations=pd.Series(obs),
        expectations=pd.Series(exp),
        scoring="Bernoulli",
        overpredicted=False,
        penalty=1.0,
        num_iters=restarts,
    )
    return time.perf_counter() - t0, sub, score


def run(quick: bool = False) -> list[dict]:
    f = _frame()
    restarts = 150
    t0 = time.perf_counter()
    conditional_bias_scan(
        f, search=SubsetSearch(n_restarts=restarts), random_state=0, **KW
    )  # cold: compiles
    cold = time.perf_counter() - t0
    times = []
    for seed in range(5):
        t0 = time.perf_counter()
        res = conditional_bias_scan(
            f, search=SubsetSearch(n_restarts=restarts), random_state=seed, **KW
        )
        times.append(time.perf_counter() - t0)
    warm = float(np.median(times))
    rows = [
        {
            "benchmark": f"CBS COMPAS FPR scan, {restarts} restarts, I-hat incl.",
            "bayesfair_s": warm,
            "baseline": "paper (Boxer et al.), reported",
            "baseline_s": 90.0,
            "note": f"cold (numba compilation in a fresh process) {cold:.2f} s; "
            f"found {res.scan.describe()} ({res.n_protected}), score {res.score:.2f}",
        }
    ]
    # the scan alone, against AIF360 on the same rows and expectations
    A = (f["race"] == "African-American").to_numpy() & (f["two_year_recid"] == 0).to_numpy()
    rows_f = f.loc[A, ["sex", "age", "charge", "priors"]].astype(str)
    obs = f.loc[A, "high_risk"].to_numpy(float)
    exp = res.ihat
    attrs = list(rows_f.columns)
    for r in [10] if quick else [10, restarts]:
        t0 = time.perf_counter()
        ours = subset_scan(rows_f, attrs, obs, exp, penalty=1.0, n_restarts=r, random_state=0)
        t_ours = time.perf_counter() - t0
        t_aif, sub, score = _aif360(rows_f, obs, exp, r)
        rows.append(
            {
                "benchmark": f"scan only, {r} restarts, {len(obs)} rows",
                "bayesfair_s": t_ours,
                "baseline": "AIF360 MDSS bias_scan" if t_aif else "AIF360 (not installed)",
                "baseline_s": t_aif,
                "note": f"bayesfair score {ours.score:.3f} {ours.subgroup}"
                + (f"; AIF360 score {score:.3f} {sub}" if t_aif else ""),
            }
        )
    n_perm = 100 if quick else 1000
    t0 = time.perf_counter()
    # every permutation drawn (no sequential stop), so the row times what it names
    kw = {**KW, "n_resamples": n_perm, "sequential": False}
    p = conditional_bias_scan(
        f, search=SubsetSearch(n_restarts=restarts), n_jobs=2, random_state=0, **kw
    )
    t_perm = time.perf_counter() - t0
    rows.append(
        {
            "benchmark": f"CBS permutation test, {n_perm} permutations, 2 jobs",
            "bayesfair_s": t_perm,
            "baseline": "paper's 90 s x (1 + permutations)",
            "baseline_s": 90.0 * (1 + n_perm),
            "note": f"p = {p.pvalue:.4f}; null 95% quantile "
            f"{np.quantile(p.null_distribution, 0.95):.2f}",
        }
    )
    return rows
