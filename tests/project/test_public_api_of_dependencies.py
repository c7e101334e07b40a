"""The package uses only the public API of PyMC, PyTensor, nutpie and ArviZ: no import of a
``_``-prefixed module or name of theirs, and no ``_``-prefixed attribute read off them, so
that a minor release of a dependency cannot silently change what the package does (as
nutpie 0.16.11 did to the fields of its ``CompiledPyMCModel``, which the package filled)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEPENDENCIES = ("pymc", "pytensor", "nutpie", "arviz", "arviz_base", "arviz_stats", "arviz_plots")
SOURCES = sorted(
    p for folder in ("bayesfair", "benchmarks", "scripts") for p in (REPO / folder).rglob("*.py")
)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str) -> list[str]:
    """Every private name of a dependency that ``source`` imports or reads."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # local name -> dotted module of a dependency
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] in DEPENDENCIES:
                    if any(_private(p) for p in parts):
                        found.append(f"import {a.name}")
                    aliases[a.asname or parts[0]] = a.name if a.asname else parts[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] in DEPENDENCIES:
                if any(_private(p) for p in parts):
                    found.append(f"from {node.module} import ...")
                for a in node.names:
                    if _private(a.name):
                        found.append(f"from {node.module} import {a.name}")
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases:
                found.append(f"{ast.unparse(node)} ({aliases[root.id]})")
    return found


def test_the_check_finds_private_uses():
    code = (
        "import nutpie\nfrom nutpie import _lib\nfrom pymc._version import v\n"
        "import arviz as az\nx = az._private.thing\nfrom nutpie.compile_pymc import _helper\n"
        "y = nutpie.__version__\nfrom pymc.blocking import DictToArrayBijection\n"
    )
    assert private_uses(code) == [
        "from nutpie import _lib",
        "from pymc._version import ...",
        "from nutpie.compile_pymc import _helper",
        "az._private (arviz)",
    ]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_private_api_of_a_dependency(path):
    assert private_uses(path.read_text()) == []
