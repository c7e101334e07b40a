"""What every test and doctest of the repository runs under: PyMC, PyTensor and ArviZ are
blocked in the fast tests not marked ``bayesian``, so that the marker names every test that
reaches them (make test-next runs those on PyMC 6 / ArviZ 1), and the slow tests run first.

Here, at the repository's root, rather than in ``tests/conftest.py``, whose run-time hooks
and fixtures reach only the tests under ``tests/``: these also reach the package's doctests."""

from __future__ import annotations

import doctest
import sys

import pytest

#: what a fast test not marked ``bayesian`` may not import
BLOCKED = ("pymc", "pytensor", "arviz")
#: what a blocked test that reached one of them is told
UNMARKED = (
    "this fast test reached PyMC, PyTensor or ArviZ, which are blocked in the fast tests not "
    "marked `bayesian` (conftest.py): mark it @pytest.mark.bayesian (or its case "
    "pytest.param(..., marks=pytest.mark.bayesian); a doctest, in BAYESIAN_DOCTESTS), and "
    "make test-next runs it on PyMC 6 / ArviZ 1 too"
)
#: the package's doctests that reach PyMC, PyTensor or ArviZ (a doctest carries no marker)
BAYESIAN_DOCTESTS = {
    "bayesfair.models.averaging.ModelAverage",
    "bayesfair.models.averaging.model_average",
    "bayesfair.models.base.FairnessModel",
    "bayesfair.models.base.FairnessModel.predictive_check",
    "bayesfair.models.conjugate.DirichletMultinomial",
    "bayesfair.models.conjugate.NaiveBayes",
    "bayesfair.models.evaluation.negative_cross_entropy",
    "bayesfair.models.fairness.posterior_fairness",
    "bayesfair.models.glm.HierarchicalLogisticRegression",
    "bayesfair.models.glm.LogisticRegression",
    "bayesfair.models.glm.NeuralNetwork",
    "bayesfair.models.hierarchical_counts.HierarchicalCounts",
    "bayesfair.replication.foulds.calibration_study",
    "bayesfair.report.bayesian.add_bayesian_section",
    "bayesfair.report.plots.plot_posterior_boxes",
    "bayesfair.report.plots.plot_posterior_rates",
    "bayesfair.scan.bayes.posterior_bias_scan",
}


def pytest_configure(config):
    """Import ArviZ once in the main process, before pytest-xdist starts its workers.

    ArviZ 0.2x writes a once-a-day stamp on import through a temporary file of a fixed
    name (``arviz/__init__.py``, ``_warn_once_per_day``); two workers importing it at
    once on the day's first import race on that file, and the loser's collection fails
    with FileNotFoundError (seen on a fresh machine). With the stamp written here first,
    the workers only read it. Its FutureWarning is the day's notice, not the suite's."""
    if hasattr(config, "workerinput"):  # an xdist worker: the main process has done it
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz  # noqa: F401


@pytest.hookimpl(tryfirst=True)  # the markers are in place before -m selects
def pytest_collection_modifyitems(config, items):
    """Mark every fast test that is not marked ``bayesian`` ``pymc_free``: it runs with
    PyMC, PyTensor and ArviZ blocked (a use fails, saying which marker it needs), so the
    ``bayesian`` tests are all the fast tests that reach them, and make test-next, which
    runs the ``bayesian`` tests only, leaves out none that the PyMC 6 / ArviZ 1 stack can
    change. Then put the slow tests first, each group in collection order: with the
    Makefile's ``--maxschedchunk 1`` the two xdist workers take the long statistical tests
    as they free up and the many short unit tests fill the end, so that neither waits on
    the other's last long test (longest-first list scheduling)."""
    unknown = sorted(name for name in BAYESIAN_DOCTESTS if not _resolves(name))
    if unknown:
        raise pytest.UsageError(f"conftest.py BAYESIAN_DOCTESTS names no object: {unknown}")
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.name in BAYESIAN_DOCTESTS:
            item.add_marker(pytest.mark.bayesian)
        if item.get_closest_marker("slow") is None and item.get_closest_marker("bayesian") is None:
            item.add_marker(pytest.mark.pymc_free)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def _resolves(name: str) -> bool:
    """Whether a dotted name is an object of the package (its longest importable module,
    then attributes)."""
    import importlib

    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.fixture(autouse=True)
def _pymc_blocked(request, monkeypatch):
    """In a ``pymc_free`` test or doctest, importing PyMC, PyTensor or ArviZ raises
    ImportError (also where they were imported before: the test must not reach them);
    fixtures of a wider scope, set up before it, are not blocked."""
    if request.node.get_closest_marker("pymc_free") is None:
        yield
        return
    from bayesfair import _arviz

    for name in BLOCKED:
        monkeypatch.setitem(sys.modules, name, None)
    _arviz._az.cache_clear()
    yield
    _arviz._az.cache_clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A ``pymc_free`` test that failed on a blocked import says which marker it needs."""
    report = yield
    err = None if call.excinfo is None else call.excinfo.value
    if isinstance(err, doctest.UnexpectedException):  # a doctest's example raised it
        err = err.exc_info[1]
    if (
        isinstance(err, ImportError)
        and item.get_closest_marker("pymc_free") is not None
        and "None in sys.modules" in str(err)
    ):
        report.sections.append(("blocked import", UNMARKED))
    return report
