"""``bayesfair compile`` (:mod:`bayesfair._precompile`): it reaches every entry kernel, and
compiles each with the argument types that the package's own calls then pass, so that a
process started after it (a test worker, a notebook, a user's audit) compiles nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.bayesian]  # fits NUTS models, in a new process

# a new process: kernels this one has run are compiled already, whichever test ran them
_SCRIPT = """
import json, sys, warnings
import numpy as np, pandas as pd
from numba.core.registry import CPUDispatcher
from bayesfair import _precompile

def signatures():
    out = {}
    for name in _precompile.KERNEL_MODULES:
        module = sys.modules.get(name) or __import__(name, fromlist=["_"])
        for attr, obj in vars(module).items():
            if isinstance(obj, CPUDispatcher):
                out[f"{name}.{attr}"] = sorted(str(s) for s in obj.signatures)
    return out

before = _precompile.uncompiled_kernels()
_precompile.compile_kernels()
after = _precompile.uncompiled_kernels()
warm = signatures()

# the package's entry points on other data, with other settings
import bayesfair as bf
from bayesfair.cli import main
from bayesfair.disaggregated import HierarchicalBayes, StructuredRegression

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert main(["demo", "--n-rows", "3000", "--n-resamples", "9", "--draws", "50",
                 "--out", sys.argv[1]]) == 0
    rng = np.random.default_rng(1)
    n = 2000
    frame = pd.DataFrame({c: rng.choice(list("pqrs")[:k], n)
                          for c, k in (("a", 4), ("b", 2), ("c", 3))})
    frame["y"] = rng.integers(0, 2, n)
    frame["p"] = np.clip(0.3 * frame["y"] + 0.7 * rng.random(n), 0, 1)
    frame["d"] = (frame["p"] > 0.5).astype(int)
    bf.disaggregated_evaluation(
        frame, ["a", "b", "c"], "y", "d", "p", metrics=["selection_rate", "fnr", "auc"],
        estimators=["standard", StructuredRegression(),
                    HierarchicalBayes(draws=30, tune=30, chains=2)], random_state=1)
    data = bf.AuditData(frame, ["a", "b"], "y", decision="d", score="p")
    bf.auc_permutation_test(data, by="a", groups=("p", "q"), permute="free", studentize=False,
                            n_resamples=9, random_state=1)
    bf.interval_calibration(data, role="decision", n_replicates=10, random_state=1)
later = signatures()
new = {k: sorted(set(v) - set(warm.get(k, []))) for k, v in later.items()
       if set(v) - set(warm.get(k, []))}
print(json.dumps({"before": before, "after": after, "new": new}))
"""


def test_compile_reaches_every_entry_kernel_with_the_types_the_package_passes(tmp_path):
    """In a new process no entry kernel is compiled; after ``compile_kernels`` every one
    is; the demo's audit, a disaggregated evaluation with the three model-based
    estimators, an AUC test and an interval calibration on other data then add no
    specialisation (a kernel compiled for other argument types would be one)."""
    script = tmp_path / "precompile_check.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "report.html")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(result["before"]) >= 10, result["before"]  # the check sees the kernels
    assert result["after"] == []
    assert result["new"] == {}
