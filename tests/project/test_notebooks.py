"""Every notebook runs top to bottom in a fresh kernel (small-size switch on)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

# make test runs these on the PyMC 6 / ArviZ 1 stack too (make test-next)
pytestmark = pytest.mark.bayesian

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.slow  # make test runs them; make test-fast keeps to the unit tests
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
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
