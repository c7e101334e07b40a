"""Issue 37's measures of the code, kept: no function over 80 lines of code and no public
function over 10 parameters unless its docstring says why (scripts/function_sizes.py)."""

from __future__ import annotations

from pathlib import Path

from project_helpers import load_file

REPO = Path(__file__).resolve().parents[2]


def _script():
    return load_file(REPO / "scripts" / "function_sizes.py")


def test_long_functions_and_long_signatures_say_why():
    long, many = _script()._sizes(REPO / "bayesfair")
    assert [w for _, w in long if "says why" not in w] == []
    assert [w for _, w in many if "says why" not in w] == []


def test_the_measure_sees_a_long_signature_without_a_reason(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    params = ", ".join(f"a{i}" for i in range(11))
    (pkg / "mod.py").write_text(
        f'def wide({params}):\n    """Eleven.\n\n    Notes\n    -----\n    Many.\n    """\n'
        f'def told({params}):\n    """Eleven.\n\n    Notes\n    -----\n'
        '    Eleven parameters: because.\n    """\n'
        "def long():\n" + "    x = 1\n" * 81
    )
    long, many = _script()._sizes(pkg)
    assert [w.split(":")[-1] for _, w in many] == ["wide", "told  (says why)"]
    assert [w.split(":")[-1] for _, w in long] == ["long"]
