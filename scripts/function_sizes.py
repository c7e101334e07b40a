"""Functions of the package over 80 lines of code and public ones over 10 parameters.

Issue 37's measures: lines of code exclude the docstring, parameters exclude ``self`` and
``cls`` (``*args``/``**kwargs`` not counted); a function is public unless its name or its
module's (or a package's on its path) starts with an underscore.  A function whose
docstring says why it is that long ("One function on purpose: ...") or takes that many
(a Notes paragraph "N parameters: ...") is marked "says why". Run from the repository's root::

    python scripts/function_sizes.py            # the package as it is
    python scripts/function_sizes.py path/to/bayesfair
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_LINES = 80
MAX_PARAMS = 10


def _notes(doc: str) -> str:
    """The Notes section of a numpydoc docstring (empty if none)."""
    start = doc.find("Notes\n-----")
    if start < 0:
        return ""
    rest = doc[start + 11 :]
    ends = [i for i in (rest.find("\nReferences\n"), rest.find("\nExamples\n")) if i >= 0]
    return rest[: min(ends)] if ends else rest


def _sizes(root: Path) -> tuple[list, list]:
    long, many = [], []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            body = node.body
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring
            doc = ast.get_docstring(node) or ""
            where = f"{path}:{node.name}"
            if body and body[-1].end_lineno - body[0].lineno + 1 > MAX_LINES:
                tag = "  (says why)" if "on purpose" in doc else ""
                long.append((body[-1].end_lineno - body[0].lineno + 1, where + tag))
            a = node.args
            params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
            params = [p for p in params if p not in ("self", "cls")]
            private = node.name.startswith("_") or any(
                part.startswith("_") and part != "__init__.py" for part in path.parts
            )
            if len(params) > MAX_PARAMS and not private:
                tag = "  (says why)" if "parameters:" in _notes(doc) else ""
                many.append((len(params), where + tag))
    return sorted(long, reverse=True), sorted(many, reverse=True)


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "bayesfair")
    long, many = _sizes(root)
    silent = sum("says why" not in w for _, w in long)
    print(f"functions over {MAX_LINES} lines of code: {len(long)} ({silent} without a reason)")
    for n, where in long:
        print(f"  {n:4d}  {where}")
    silent = sum("says why" not in w for _, w in many)
    print(f"public functions over {MAX_PARAMS} parameters: {len(many)} ({silent} without a reason)")
    for n, where in many:
        print(f"  {n:4d}  {where}")


if __name__ == "__main__":
    main()
