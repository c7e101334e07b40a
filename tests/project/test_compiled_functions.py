"""The package's numba-compiled functions are called through numba's compiled dispatch:
none takes a default argument, which numba's dispatcher resolves in Python on every call
(its ``_compile_for_args``), at a cost above that of the small problems these functions
solve. A caller that wants defaults gets them from a plain function in front (as
:func:`bayesfair.disaggregated._lasso.lasso_cd`)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _compiled_functions(root: Path):
    """``(path, function node)`` of every function under ``root`` decorated with numba's
    ``njit`` or ``jit`` (however imported)."""
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
                if {getattr(d, "attr", getattr(d, "id", "")) for d in decorators} & {"njit", "jit"}:
                    yield path, node


def _compiled_with_defaults(root: Path) -> list[str]:
    """``module:function`` of every compiled function under ``root`` that has a default
    argument."""
    return [
        f"{path.relative_to(root.parent)}:{node.name}"
        for path, node in _compiled_functions(root)
        if node.args.defaults or any(node.args.kw_defaults)
    ]


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


def _modules_with_compiled_functions(root: Path) -> set[str]:
    """Dotted names of the modules under ``root`` with a compiled function."""
    return {
        ".".join(path.relative_to(root.parent).with_suffix("").parts)
        for path, _ in _compiled_functions(root)
    }


def test_bayesfair_compile_knows_every_module_with_compiled_functions():
    """``bayesfair compile`` checks the entry kernels of the modules it lists
    (``_precompile.KERNEL_MODULES``, whose kernels ``tests/project/test_precompile.py``
    checks to be compiled): a new module of kernels must be among them."""
    from bayesfair._precompile import KERNEL_MODULES

    assert _modules_with_compiled_functions(REPO / "bayesfair") == set(KERNEL_MODULES)
