"""Every notebook runs top to bottom in a fresh kernel (small-size switch on)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: notebooks that run nothing of PyMC or ArviZ (the discrimination tests, the permutation
#: tests, the count model's nested Laplace): make test runs them on the default stack only;
#: the others also on the PyMC 6 / ArviZ 1 stack (make test-next, marker ``bayesian``)
WITHOUT_PYMC = {
    "05_discrimination_learning_curves",
    "06_permutation_table1",
    "08_interval_coverage",
}
CASES = [
    pytest.param(p, marks=() if p.stem in WITHOUT_PYMC else pytest.mark.bayesian, id=p.stem)
    for p in NOTEBOOKS
]


def test_the_notebooks_without_pymc_import_none_of_it():
    """The notebooks left off the PyMC 6 stack do not name PyMC, ArviZ or a PyMC model."""
    names = ("pymc", "arviz", "import az", "HierarchicalBayes", "LogisticRegression", "bayes=True")
    for path in NOTEBOOKS:
        if path.stem in WITHOUT_PYMC:
            text = path.read_text()
            assert not [n for n in names if n in text], path.stem


@pytest.mark.slow  # make test runs them; make test-fast keeps to the unit tests
@pytest.mark.parametrize("path", CASES)
def test_notebook_runs(path, data_home, monkeypatch):
    monkeypatch.setenv("BAYESFAIR_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("BAYESFAIR_DATA", str(data_home))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
