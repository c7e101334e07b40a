"""HLR on the aggregated table (NUTS) against the same model with one Bernoulli term per row
fitted the paper's way (ADVI, 30,000 iterations); an HLR fit on 10 million rows; and HLR's
empirical-Bayes point estimate against PyMC's find_MAP (the joint mode) on 625 intersections."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from bayesfair import AuditData
from bayesfair.datasets import load_adult, make_gaussian_threshold
from bayesfair.models import HierarchicalLogisticRegression


def _data_home():
    env = os.environ.get("BAYESFAIR_DATA")
    here = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    return env or (here if os.path.isdir(here) else None)


def _per_row_advi(data: AuditData, iterations: int, seed: int) -> float:
    """The same HLR (one-hot effects, as the authors' code) with a Bernoulli term per row."""
    import pymc as pm

    codes = np.indices(data.shape_).reshape(len(data.shape_), -1)
    coords = {"intersection": data.group_labels}
    with pm.Model(coords=coords):
        eta = pm.Normal("c", 0.0, 1.0)
        for d, (a, lv) in enumerate(data.categories.items()):
            beta = pm.Normal(f"beta_{a}", 0.0, 1.0, shape=len(lv))
            eta = eta + beta[codes[d]]
        sigma2 = pm.Exponential("sigma2", 10.0)
        gamma = pm.Normal("gamma", eta, sigma2, dims="intersection")
        pm.Bernoulli("y", logit_p=gamma[data.row_group], observed=data.row_outcome)
        t0 = time.perf_counter()
        approx = pm.fit(n=iterations, method="advi", random_seed=seed, progressbar=False)
        approx.sample(1000, random_seed=seed)
        return time.perf_counter() - t0


def _nuts(data: AuditData, seed: int):
    t0 = time.perf_counter()
    fit = HierarchicalLogisticRegression(draws=1000, tune=1000, chains=4, random_state=seed)
    fit.fit(data)
    return time.perf_counter() - t0, fit.diagnostics_


def _fresh_process(home: str, numba_cache: str, pymc_compiled: bool = False) -> tuple[float, dict]:
    """The first fit in a new Python process (data loading and bayesfair's import excluded;
    PyMC's import, model building and any compilation included).  ``numba_cache`` is the
    numba on-disk cache directory: empty, nothing compiled yet on this machine; reused,
    what every later process sees.  ``pymc_compiled`` fits the same model through
    ``nutpie.compile_pymc_model`` instead of the closed-form density."""
    code = (
        "import json, time, warnings; warnings.simplefilter('ignore')\n"
        "from bayesfair.datasets import load_adult\n"
        "from bayesfair.models import HierarchicalLogisticRegression as HLR\n"
        + ("HLR._closed_form_model = lambda self, design: None\n" if pymc_compiled else "")
        + f"data = load_adult('both', data_home={home!r}).audit_data()\n"
        "t0 = time.perf_counter()\n"
        "fit = HLR(draws=1000, tune=1000, chains=4, random_state=1)\n"
        "fit.fit(data)\n"
        "print(json.dumps([time.perf_counter() - t0, fit.diagnostics_]))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": numba_cache}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    seconds, diag = json.loads(out.stdout.strip().splitlines()[-1])
    return float(seconds), diag


def _fmt(diag: dict) -> str:
    return (
        f"R-hat max {diag['r_hat_max']:.3f}, bulk ESS min {diag['ess_bulk_min']:.0f}, "
        f"divergences {int(diag['divergences'])}"
    )


def _one_attribute(data: AuditData, seeds: range) -> dict:
    """HLR on one protected attribute (race alone), marginal (the default there) against
    non-centred: seconds per 1,000 effective draws (the smallest bulk ESS), over seeds,
    after one untimed fit of each (compilation, or loading numba's cache, excluded)."""
    one = AuditData(data.frame, ["race"], data.outcome)
    out = {}
    for par in ("marginal", "noncentered"):
        HierarchicalLogisticRegression(parameterization=par, random_state=99).fit(one)
        seconds, ess, div = 0.0, 0.0, 0
        for seed in seeds:
            t0 = time.perf_counter()
            fit = HierarchicalLogisticRegression(parameterization=par, random_state=seed)
            fit.fit(one)
            seconds += time.perf_counter() - t0
            ess += fit.diagnostics_["ess_bulk_min"]
            div += int(fit.diagnostics_["divergences"])
        out[par] = (1000 * seconds / ess, div, ess / len(seeds))
    (m_s, m_div, m_ess), (n_s, n_div, n_ess) = out["marginal"], out["noncentered"]
    return {
        "benchmark": "HLR NUTS 4x1000, Adult race alone: s per 1,000 ESS",
        "bayesfair_s": m_s,
        "baseline": "same model, non-centred",
        "baseline_s": n_s,
        "note": f"{len(seeds)} seeds, warm; divergences {m_div} vs {n_div} in all; mean "
        f"smallest bulk ESS {m_ess:.0f} vs {n_ess:.0f}",
    }


def _additive_625(n: int = 60_000, seed: int = 7) -> tuple[AuditData, float]:
    """Four attributes of five values (625 intersections), outcome from an additive logit
    with effects Normal(0, 0.4); returns the data and the true epsilon-DF."""
    import itertools

    import pandas as pd

    rng = np.random.default_rng(seed)
    share = np.r_[np.full(4, 0.9 / 4), 0.1]
    frame = pd.DataFrame(
        {f"a{j}": rng.choice([f"v{i}" for i in range(5)], n, p=share) for j in range(4)}
    )
    effects = {c: rng.normal(0, 0.4, 5) for c in frame.columns}
    logit = -1 + sum(effects[c][frame[c].str[1:].astype(int)] for c in frame.columns)
    frame["y"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    grid = np.array(list(itertools.product(range(5), repeat=4)))
    true = 1 / (1 + np.exp(1 - sum(effects[f"a{j}"][grid[:, j]] for j in range(4))))
    return AuditData(frame, list(frame.columns[:4]), "y"), float(_epsilon(true))


def _epsilon(p1: np.ndarray) -> float:
    from bayesfair.metrics import epsilon_df, outcome_probabilities

    return float(epsilon_df(outcome_probabilities(p1)))


def _point_estimates() -> dict:
    """HLR's empirical-Bayes point estimate against PyMC's find_MAP (the joint mode) on
    625 additive intersections: the time of one solve (best of 3, the PyMC objective
    compiled beforehand), and how far each one's epsilon is from the truth."""
    data, truth = _additive_625()
    ok = data.group_sizes() > 0
    eps, times = {}, {}
    for kind, par in [
        ("empirical_bayes", "noncentered"),
        ("joint_map", "noncentered"),
        ("joint_map", "centered"),
    ]:
        model = HierarchicalLogisticRegression(
            method="map", point_estimate=kind, parameterization=par, random_state=0
        )
        model.fit(data)  # a first solve (and, for the joint mode, PyMC's compilation)
        best = np.inf
        for _ in range(3):  # the solve itself, warm: nothing cached but the compiled objective
            for cached in model._fit_caches:  # every first-use cache, as a refit drops them
                model.__dict__.pop(cached, None)
            t0 = time.perf_counter()
            p = model._point_estimate()
            best = min(best, time.perf_counter() - t0)
        times[kind, par] = best
        eps[kind, par] = _epsilon(p[ok])
    post = HierarchicalLogisticRegression(random_state=0).fit(data).predict_proba()
    return {
        "benchmark": "HLR point estimate, 625 intersections",
        "bayesfair_s": times["empirical_bayes", "noncentered"],
        "baseline": "find_MAP (joint mode), non-centred",
        "baseline_s": times["joint_map", "noncentered"],
        "note": f"epsilon: truth {truth:.3f}; empirical Bayes "
        f"{eps['empirical_bayes', 'noncentered']:.3f} (one answer for every parameterization); "
        "joint mode "
        f"{eps['joint_map', 'noncentered']:.3f} non-centred, {eps['joint_map', 'centered']:.3f} "
        f"centred ({times['joint_map', 'centered']:.3f} s); posterior predictive (NUTS) "
        f"{_epsilon(post[ok]):.3f}",
    }


def run(quick: bool = False) -> list[dict]:
    warnings.simplefilter("ignore")
    rows = [_point_estimates()]
    home = _data_home()
    if home is None:
        print("bench_hlr: reference data not found (set BAYESFAIR_DATA); Adult rows skipped")
    else:
        data = load_adult("both", data_home=home).audit_data()
        with tempfile.TemporaryDirectory() as cache:
            cold, diag_cold = _fresh_process(home, cache)  # compiles into the empty cache
            cached, diag_cached = _fresh_process(home, cache)  # loads it
            compiled, diag_compiled = _fresh_process(home, cache, pymc_compiled=True)
        _nuts(data, 1)
        warm, diag = _nuts(data, 2)
        iters = 3000 if quick else 30_000
        per_row = _per_row_advi(data, iters, 3)
        baseline = f"per-row Bernoulli HLR, ADVI {iters:,} it"
        rows += [
            {
                "benchmark": "HLR NUTS 4x1000, Adult 48,842 rows (cold)",
                "bayesfair_s": cold,
                "baseline": baseline,
                "baseline_s": per_row,
                "note": "cold = first fit in a fresh process with an empty numba cache: PyMC "
                "import, model and compilation included; " + _fmt(diag_cold),
            },
            {
                "benchmark": "HLR NUTS 4x1000, Adult (fresh process, cached)",
                "bayesfair_s": cached,
                "baseline": baseline,
                "baseline_s": per_row,
                "note": "a later fresh process, numba's on-disk cache filled; " + _fmt(diag_cached),
            },
            {
                "benchmark": "HLR NUTS 4x1000, Adult 48,842 rows (warm)",
                "bayesfair_s": warm,
                "baseline": baseline,
                "baseline_s": per_row,
                "note": _fmt(diag),
            },
            {
                "benchmark": "HLR NUTS 4x1000, Adult (fresh process, cached)",
                "bayesfair_s": cached,
                "baseline": "same model, nutpie.compile_pymc_model",
                "baseline_s": compiled,
                "note": "the baseline is the PyMC model compiled by nutpie in a fresh process, "
                "as before the closed-form density; " + _fmt(diag_compiled),
            },
            _one_attribute(data, range(2 if quick else 8)),
        ]
    n = 1_000_000 if quick else 10_000_000
    sizes = np.random.default_rng(0).multinomial(n, np.full(16, 1 / 16))
    ds = make_gaussian_threshold(group_sizes=sizes, random_state=0)
    t0 = time.perf_counter()
    big = ds.audit_data()
    agg = time.perf_counter() - t0
    fit_s, diag = _nuts(big, 4)
    rows.append(
        {
            "benchmark": f"HLR on {n / 1e6:g}M synthetic rows (aggregate + NUTS)",
            "bayesfair_s": agg + fit_s,
            "baseline": "target 60 s",
            "baseline_s": 60.0,
            "note": f"aggregation {agg:.2f} s, fit {fit_s:.2f} s; " + _fmt(diag),
        }
    )
    return rows
