"""The benchmarks call the package's current API.

``make bench`` is not part of ``make test`` (``benchmarks/run.py --quick`` alone takes
minutes), so a renamed or moved argument would break a benchmark unseen: every keyword a
benchmark passes to a bayesfair function or class, directly or through a ``dict(...)``
it splats (``**KW``), must be one that the callee takes."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
from project_helpers import load_file

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted((REPO / "benchmarks").glob("bench_*.py"))


def _imported(tree: ast.Module) -> dict[str, object]:
    """Names the module imports from bayesfair (``from bayesfair.x import f``), resolved."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bayesfair"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                name = alias.asname or alias.name
                if hasattr(module, alias.name):
                    out[name] = getattr(module, alias.name)
                else:  # a submodule not yet imported by its package
                    out[name] = importlib.import_module(f"{node.module}.{alias.name}")
    return out


def _dicts(tree: ast.Module) -> dict[str, set[str]]:
    """Keywords of every ``NAME = dict(...)`` and ``{**NAME, "key": ...}`` in the module."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if not isinstance(target, ast.Name):
            continue
        if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "dict":
            out.setdefault(target.id, set()).update(k.arg for k in value.keywords if k.arg)
        elif isinstance(value, ast.Dict):
            keys = {k.value for k in value.keys if isinstance(k, ast.Constant)}
            spread = [
                v.id
                for k, v in zip(value.keys, value.values, strict=True)
                if k is None and isinstance(v, ast.Name)
            ]
            out.setdefault(target.id, set()).update(keys)
            for name in spread:
                out[target.id].update(out.get(name, set()))
    return out


def _calls(path: Path) -> list[tuple[str, int, str, set[str]]]:
    """(callee, line, its name, keywords passed) of every call of a bayesfair name."""
    tree = ast.parse(path.read_text())
    names, dicts = _imported(tree), _dicts(tree)
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in names:
            continue
        keywords = {k.arg for k in node.keywords if k.arg}
        for k in node.keywords:
            if k.arg is None and isinstance(k.value, ast.Name):
                keywords |= dicts.get(k.value.id, set())
        out.append((names[node.func.id], node.lineno, node.func.id, keywords))
    return out


def _accepts(callee, keywords: set[str]) -> set[str]:
    """The keywords ``callee`` does not take (none if it takes ``**kwargs``)."""
    target = callee.__init__ if inspect.isclass(callee) else callee
    params = inspect.signature(target).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return set()
    return keywords - {p.name for p in params}


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmarks_pass_only_arguments_the_package_takes(path):
    wrong = [
        f"{path.name}:{line} {name}() does not take {sorted(bad)}"
        for callee, line, name, keywords in _calls(path)
        if (bad := _accepts(callee, keywords))
    ]
    assert wrong == []


def test_the_check_sees_a_splatted_dict(tmp_path):
    """bench_scan once splatted ``KW = dict(..., penalty=1.0)`` into conditional_bias_scan
    after ``penalty`` had moved into ``SubsetSearch``: the check must see it."""
    bench = tmp_path / "bench_x.py"
    bench.write_text(
        "from bayesfair.scan import conditional_bias_scan\n"
        "KW = dict(scan_type='separation_recommendations', penalty=1.0)\n"
        "def run(quick):\n"
        "    conditional_bias_scan(None, protected_class='a', **KW)\n"
    )
    ((callee, _, name, keywords),) = _calls(bench)
    assert name == "conditional_bias_scan"
    assert _accepts(callee, keywords) == {"penalty"}


@pytest.mark.slow  # the dense baseline on 240 intersections: about ten seconds
def test_the_calibration_benchmarks_own_check_holds():
    """The refit benchmark first checks that the compiled fit (which fits only the grid
    points that carry weight) has the dense NumPy fit's modes at those points, on 24, 60
    and 240 intersections; a change that broke that check would otherwise surface only in
    ``make bench``, which ``make test`` does not run. Its timings are not asserted."""
    bench = load_file(REPO / "benchmarks" / "bench_calibration.py")
    rows = bench._laplace_fits(quick=True)
    assert [r["benchmark"].split(", ")[1] for r in rows] == [
        "24 groups (x20)",
        "60 groups (x20)",
        "240 groups (x2)",
    ]
