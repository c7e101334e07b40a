"""Compile the package's numba kernels ahead of their first use (``bayesfair compile``).

numba compiles a kernel the first time a process calls it and caches the machine code on
disk, beside the kernel's source file (``__pycache__``), where later processes load it in
milliseconds. Until the cache exists, every process that reaches a kernel compiles it
itself: on a new installation the first scan, structured regression, hierarchical fit or
interval calibration waits seconds for the compiler, and processes started side by side
(test workers, notebooks, jobs on a cluster) each compile the same kernels. Running the
entry points that call every kernel once, on a few hundred synthetic rows, compiles each
one once, with the argument types the entry points pass, which is what numba's cache is
keyed by. A kernel that these calls do not reach is named by :func:`uncompiled_kernels`,
which the test suite checks to be empty.
"""

from __future__ import annotations

import importlib
import inspect
import re
import warnings

import numpy as np
import pandas as pd

__all__ = ["KERNEL_MODULES", "compile_kernels", "uncompiled_kernels"]

#: every module of the package that defines numba kernels
KERNEL_MODULES = (
    "bayesfair._newton_kernel",
    "bayesfair._nutpie",
    "bayesfair.disaggregated._lasso",
    "bayesfair.frequentist._auc_kernel",
    "bayesfair.scan._kernel",
)


def compile_kernels(n_rows: int = 600) -> None:
    """Run every entry point that calls a numba kernel once, on ``n_rows`` synthetic rows.

    The calls are the package's own (a bias scan with its I-hat, a disaggregated evaluation
    with structured regression and hierarchical Bayes, an interval calibration, an AUC
    permutation test, and the logistic models' NUTS fits), so the kernels are compiled with
    the types those calls pass. Their results are discarded; warnings are silenced (a few
    hundred rows and a handful of draws are not meant to mix).
    """
    from . import _nutpie

    frame = _frame(n_rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _scan(frame)
        _calibration(frame)
        _auc(frame)
        _disaggregated(frame, hierarchical=_nutpie.available())
        if _nutpie.available():
            _logistic_models(frame)


def uncompiled_kernels() -> list[str]:
    """The entry kernels of :data:`KERNEL_MODULES` that this process has neither compiled
    nor loaded from the cache, by qualified name.

    An entry kernel is one that no other kernel of its module calls: Python calls it. A
    kernel that other kernels call is compiled into them (and loaded with them from the
    cache, without signatures of its own), and one that numba inlines
    (``inline="always"``) likewise, so neither is listed.
    """
    from numba.core.registry import CPUDispatcher

    missing = []
    for name in KERNEL_MODULES:
        module = importlib.import_module(name)
        kernels = {
            attr: obj
            for attr, obj in vars(module).items()
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name
        }
        sources = {attr: inspect.getsource(obj.py_func) for attr, obj in kernels.items()}
        for attr, obj in kernels.items():
            called = any(
                re.search(rf"\b{attr}\(", src) for other, src in sources.items() if other != attr
            )
            if not (called or obj.targetoptions.get("inline") == "always" or obj.signatures):
                missing.append(f"{name}.{attr}")
    return missing


def _frame(n_rows: int) -> pd.DataFrame:
    """Rows of two protected attributes and a covariate, a binary outcome, a score and the
    decision the score makes at 0.5."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "race": rng.choice(["a", "b", "c"], n_rows),
            "sex": rng.choice(["f", "m"], n_rows),
            "age": rng.choice(["young", "middle", "old"], n_rows),
        }
    )
    logit = rng.normal(-0.3, 1.0, n_rows) + (frame["race"] == "a") * 0.5
    frame["score"] = 1.0 / (1.0 + np.exp(-logit))
    frame["outcome"] = (rng.random(n_rows) < frame["score"]).astype(int)
    frame["decision"] = (frame["score"] >= 0.5).astype(int)
    return frame


def _scan(frame: pd.DataFrame) -> None:
    from .scan import conditional_bias_scan

    conditional_bias_scan(
        frame,
        protected_class=("race", "a"),
        scan_type="separation_recommendations",
        condition_value=0,
        outcome="outcome",
        score="score",
        decision="decision",
        attributes=["sex", "age"],
        n_resamples=9,
        random_state=0,
    )


def _calibration(frame: pd.DataFrame) -> None:
    from .calibration import interval_calibration
    from .data import AuditData

    data = AuditData(frame, ["race", "sex"], "outcome", decision="decision")
    interval_calibration(data, n_replicates=10, random_state=0)


def _auc(frame: pd.DataFrame) -> None:
    from .data import AuditData
    from .frequentist import auc_permutation_test

    data = AuditData(frame, ["race"], "outcome", score="score")
    auc_permutation_test(data, by="race", groups=("a", "b"), n_resamples=9, random_state=0)


def _disaggregated(frame: pd.DataFrame, *, hierarchical: bool) -> None:
    from .disaggregated import HierarchicalBayes, StructuredRegression, disaggregated_evaluation

    estimators = ["standard", StructuredRegression()]
    if hierarchical:
        estimators.append(HierarchicalBayes(draws=20, tune=20, chains=1))
    disaggregated_evaluation(
        frame,
        ["race", "sex"],
        "outcome",
        "decision",
        "score",
        metrics=["fpr"],
        estimators=estimators,
        random_state=0,
    )


def _logistic_models(frame: pd.DataFrame) -> None:
    from .data import AuditData
    from .models import HierarchicalLogisticRegression, LogisticRegression

    data = AuditData(frame, ["race", "sex"], "outcome")
    fit = {"draws": 20, "tune": 20, "chains": 1, "random_state": 0}
    LogisticRegression(**fit).fit(data)
    for parameterization in ("noncentered", "marginal"):
        HierarchicalLogisticRegression(parameterization=parameterization, **fit).fit(data)
