"""Shared fixtures: the reference data home, a private download cache, and PyMC's own
density of a model to check the package's hand-written ones against."""

from __future__ import annotations

import os

# One BLAS thread per test process, set before NumPy loads (and inherited by the notebook
# kernels and command-line subprocesses the tests start): pytest-xdist already runs one test
# per core, and OpenBLAS's extra threads spin while they wait, so on a loaded machine they
# take the cores from the other worker (measured in the commit that added this).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path  # noqa: E402

import matplotlib  # noqa: E402
import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

# NumPy may have loaded before this file (a plugin): limit its pools at run time too
threadpool_limits(1)

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def _data_home() -> Path | None:
    env = os.environ.get("BAYESFAIR_DATA")
    for cand in ([Path(env)] if env else []) + [SHARED_DATA]:
        if (cand / "compas-scores-two-years.csv").is_file() and (cand / "adult.data").is_file():
            return cand
    return None


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Downloads in tests go to a temporary cache, never the user's."""
    monkeypatch.setenv("BAYESFAIR_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="session")
def data_home() -> Path:
    home = _data_home()
    if home is None:
        pytest.skip(
            "reference data not found: set BAYESFAIR_DATA or place ../shared/data beside the "
            "repository (it holds compas-scores-two-years.csv and adult.data/.test)"
        )
    return home


@pytest.fixture(scope="session")
def pymc_reference():
    """``compile_reference(model, graphs=())`` gives ``evaluate(point) -> (logp, dlogp,
    [graph values])``: PyMC's log density, its gradient and derived values of ``model``
    at a point, in one function compiled once and without PyTensor's graph optimisations
    (a test evaluates a few points, so optimising the graph would cost more than it
    saves)."""

    from pytensor.compile.mode import Mode

    def compile_reference(model, graphs=()):
        fn = model.compile_fn(
            [model.logp(), model.dlogp(), *graphs],
            inputs=model.value_vars,
            on_unused_input="ignore",
            # the graph as PyMC builds it, run by the Python linker: no rewrite at all
            # (FAST_COMPILE still ran its canonicalising ones, half the compile time)
            mode=Mode(linker="py", optimizer=None),
        )

        def evaluate(point):
            logp, dlogp, *values = fn(point)
            return float(logp), dlogp, values

        return evaluate

    return compile_reference
