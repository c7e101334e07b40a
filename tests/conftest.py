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

import sys  # noqa: E402
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


#: what a fast test not marked ``bayesian`` may not import
BLOCKED = ("pymc", "pytensor", "arviz")
#: what a blocked test that reached one of them is told
UNMARKED = (
    "this fast test reached PyMC, PyTensor or ArviZ, which are blocked in the fast tests not "
    "marked `bayesian` (tests/conftest.py): mark it @pytest.mark.bayesian (or its case "
    "pytest.param(..., marks=pytest.mark.bayesian)), and make test-next runs it on PyMC 6 / "
    "ArviZ 1 too"
)


@pytest.hookimpl(tryfirst=True)  # the markers are in place before -m selects
def pytest_collection_modifyitems(config, items):
    """Mark every fast test that is not marked ``bayesian`` ``pymc_free``: it runs with
    PyMC, PyTensor and ArviZ blocked (a use fails, saying which marker it needs), so the
    ``bayesian`` tests are all the fast tests that reach them, and make test-next, which
    runs the ``bayesian`` tests only, runs every test that the PyMC 6 / ArviZ 1 stack can
    change. Then put the slow tests first, each group in collection order: with the
    Makefile's ``--maxschedchunk 1`` the two xdist workers take the long statistical tests
    as they free up and the many short unit tests fill the end, so that neither waits on
    the other's last long test (longest-first list scheduling)."""
    for item in items:
        if item.get_closest_marker("slow") is None and item.get_closest_marker("bayesian") is None:
            item.add_marker(pytest.mark.pymc_free)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A ``pymc_free`` test that failed on a blocked import says which marker it needs."""
    report = yield
    exc = call.excinfo
    if (
        exc is not None
        and item.get_closest_marker("pymc_free") is not None
        and exc.errisinstance(ImportError)
        and "None in sys.modules" in str(exc.value)
    ):
        report.sections.append(("blocked import", UNMARKED))
    return report


@pytest.fixture(autouse=True)
def _pymc_blocked(request, monkeypatch):
    """In a ``pymc_free`` test, importing PyMC, PyTensor or ArviZ raises ImportError (also
    where they were imported before: the test must not reach them)."""
    if request.node.get_closest_marker("pymc_free") is None:
        yield
        return
    from bayesfair import _arviz

    for name in BLOCKED:
        monkeypatch.setitem(sys.modules, name, None)
    _arviz._az.cache_clear()
    yield
    _arviz._az.cache_clear()


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
