"""The one-call audit (``bayesfair.audit``) of COMPAS with every section and the Bayesian
models, in a fresh process, as a user's first call: PyMC's import, the models' compilation
(numba's on-disk cache filled, as on any machine after its first fit), the permutation
tests, the scans, the per-group estimates with hierarchical Bayes, and the HTML report.

The issue's target is 15 s on the project's machine (2 cores).  The baseline is the same
audit without the Bayesian models (``bayes=False``) in a fresh process: what the models and
hierarchical Bayes add.  A second row times the audit without the models on two jobs
(``n_jobs=2``: the interval checks' replicate tables and the permutations of the tests and
scans), against the same audit on one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

TARGET_S = 15.0


def _data_home():
    env = os.environ.get("BAYESFAIR_DATA")
    here = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    return env or (here if os.path.isdir(here) else None)


def _fresh(home: str, bayes: bool, cache: str, n_jobs: int = 1) -> dict:
    code = (
        "import json, time, warnings; warnings.simplefilter('ignore')\n"
        "t0 = time.perf_counter()\n"
        "import bayesfair as bf\n"
        "from bayesfair.datasets import load_compas\n"
        f"frame = load_compas('cbs', data_home={home!r}).frame\n"
        "data = bf.AuditData(frame, protected=['race', 'sex'], outcome='two_year_recid',\n"
        "                    score='P', decision='high_risk')\n"
        "t1 = time.perf_counter()\n"
        f"res = bf.audit(data, bayes={bayes}, random_state=0, n_jobs={n_jobs})\n"
        "html = res.report().to_html()\n"
        "t2 = time.perf_counter()\n"
        "print(json.dumps({'audit': t2 - t1, 'process': t2 - t0, 'rows': data.n_rows,\n"
        "                  'parts': int(res.summary()['ran'].sum())}))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> list[dict]:
    home = _data_home()
    if home is None:
        return [{"benchmark": "one-call audit of COMPAS (no data)", "bayesfair_s": float("nan")}]
    with tempfile.TemporaryDirectory() as cache:
        _fresh(home, True, cache)  # fills numba's on-disk cache, as a first fit does once
        full = _fresh(home, True, cache)
        empirical = _fresh(home, False, cache)
        two_jobs = _fresh(home, False, cache, n_jobs=2)
    return [
        {
            "benchmark": "bf.audit(COMPAS, bayes=True) + report, fresh process",
            "bayesfair_s": full["audit"],
            "baseline": "the same audit, bayes=False",
            "baseline_s": empirical["audit"],
            "note": f"{full['rows']:,} rows, {full['parts']} of 5 parts; target {TARGET_S:g} s "
            f"({'met' if full['audit'] <= TARGET_S else 'NOT met'}); the whole process, "
            f"imports and data loading included: {full['process']:.1f} s; the ratio below 1 "
            "is what the Bayesian models and hierarchical Bayes cost",
        },
        {
            "benchmark": "bf.audit(COMPAS, n_jobs=2) + report, fresh process",
            "bayesfair_s": two_jobs["audit"],
            "baseline": "the same audit, n_jobs=1",
            "baseline_s": empirical["audit"],
            "note": "the same result (tests/report/test_full_audit.py); joblib's worker "
            "processes start inside the timed call",
        },
    ]
