"""The documentation in docs/ builds without a warning (numpydoc checks every public
docstring), its guide pages' code runs, and the API reference lists the whole public API."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
GUIDE_PAGES = sorted((DOCS / "guide").glob("*.rst"))
CODE_PAGES = [p for p in GUIDE_PAGES if ".. code-block:: python" in p.read_text()]
PUBLIC_MODULES = [
    "bayesfair",
    "bayesfair.datasets",
    "bayesfair.metrics",
    "bayesfair.models",
    "bayesfair.disaggregated",
    "bayesfair.scan",
    "bayesfair.frequentist",
    "bayesfair.report",
    "bayesfair.replication.foulds",
    "bayesfair.replication.boxer",
    "bayesfair.replication.herlihy",
]
# public functions whose example would need the reference data files (they are run by the
# notebooks, the specs and tests/replication/test_replication.py instead)
NEEDS_REFERENCE_DATA = {
    "population",
    "simulate",
    "summarise",
    "lasso_path_oracle",
    "table2",
    "table2_splits",
    "table3",
    "summarise_table3",
    "compas_case_study",
    "table4",
}


def _public_objects():
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                yield name, attr, obj


@pytest.mark.slow  # a whole Sphinx build: make test runs it, make test-fast leaves it
def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra is not installed: pip install -e .[docs]")
    pytest.importorskip("numpydoc", reason="the docs extra is not installed")
    src = tmp_path / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "generated"))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-b",
            "html",
            "-W",
            "--keep-going",
            "-q",
            str(src),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr[-5000:]
    api = (tmp_path / "html" / "api.html").read_text()
    assert "disaggregated_evaluation" in api and "HierarchicalLogisticRegression" in api


def test_guide_pages_with_code_are_found():
    names = {p.stem for p in CODE_PAGES}
    assert {"audit", "small_groups", "scan"} <= names, names


def test_api_reference_lists_every_public_name():
    api = (DOCS / "api.rst").read_text()
    listed = set(re.findall(r"^   ([\w.]+)$", api, flags=re.M))
    missing = [
        f"{module}.{attr}"
        for module, attr, _ in _public_objects()
        if attr not in listed and f"{module.rsplit('.', 1)[-1]}.{attr}" not in listed
    ]
    assert not missing, f"public names missing from docs/api.rst: {missing}"


def test_public_functions_and_estimators_have_examples():
    """Every public function has an Examples section (run as a doctest), as do the classes
    a user configures; result classes (dataclasses the functions return) and warnings are
    exempt, and so are the functions that need the reference data files."""
    missing = []
    for module, attr, obj in _public_objects():
        if attr in NEEDS_REFERENCE_DATA:
            continue
        if inspect.isclass(obj) and (
            issubclass(obj, Warning) or "__dataclass_fields__" in vars(obj)
        ):
            continue
        if inspect.isclass(obj) and not hasattr(obj, "fit") and module != "bayesfair.report":
            continue
        if "Examples\n" not in (obj.__doc__ or ""):
            missing.append(f"{module}.{attr}")
    assert not missing, f"public objects without an Examples section: {sorted(set(missing))}"


def test_guide_specs_are_valid_specs(tmp_path):
    """Every TOML block of a guide page is an audit spec that load_spec accepts."""
    from bayesfair.spec import load_spec

    found = 0
    for page in GUIDE_PAGES:
        for block in re.findall(r"\.\. code-block:: toml\n\n((?:   .*\n|\n)+)", page.read_text()):
            spec = tmp_path / f"{page.stem}{found}.toml"
            spec.write_text(textwrap.dedent(block))
            assert load_spec(spec).data["dataset"] == "csv", page.name
            found += 1
    assert found >= 1


@pytest.mark.slow
@pytest.mark.parametrize("page", CODE_PAGES, ids=lambda p: p.stem)
def test_guide_code_blocks_run(page, tmp_path, request):
    """The Python blocks of a guide page run, in order, as one script (a page that loads the
    reference data runs with the data home; it is skipped, saying why, without it)."""
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", page.read_text())
    assert len(blocks) == page.read_text().count(".. code-block:: python"), "a block not parsed"
    script = tmp_path / f"{page.stem}.py"
    script.write_text(
        "import matplotlib\nmatplotlib.use('Agg')\n" + "\n".join(textwrap.dedent(b) for b in blocks)
    )
    env = {**os.environ, "MPLBACKEND": "Agg"}
    if re.search(r"load_(compas|adult)\(", page.read_text()):
        env["BAYESFAIR_DATA"] = str(request.getfixturevalue("data_home"))
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
