"""The package's numba-compiled functions are called through numba's compiled dispatch:
none takes a default argument, which numba's dispatcher resolves in Python on every call
(its ``_compile_for_args``), at a cost above that of the small problems these functions
solve. A caller that wants defaults gets them from a plain function in front (as
:func:`bayesfair.disaggregated._lasso.lasso_cd`)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _compiled_with_defaults(root: Path) -> list[str]:
    """``module:function`` of every function under ``root`` decorated with numba's
    ``njit`` or ``jit`` (however imported) that has a default argument."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
            names = {
                d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "") for d in decorators
            }
            args = node.args
            if names & {"njit", "jit"} and (args.defaults or any(args.kw_defaults)):
                found.append(f"{path.relative_to(root.parent)}:{node.name}")
    return found


def test_no_compiled_function_takes_a_default_argument():
    assert _compiled_with_defaults(REPO / "bayesfair") == []


def test_the_check_sees_a_compiled_function_with_a_default(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "mod.py").write_text(
        "import numba as nb\nfrom numba import njit\n\n"
        "@nb.njit(cache=True)\ndef a(x, y=1):\n    return x\n\n"
        "@njit\ndef b(x, *, y=1):\n    return x\n\n"
        "@nb.njit\ndef c(x, y):\n    return x\n\n"
        "def d(x, y=1):\n    return x\n"
    )
    assert _compiled_with_defaults(pkg) == ["pkg/mod.py:a", "pkg/mod.py:b"]
