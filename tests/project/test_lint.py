"""The code base stays ruff clean (CI runs only `make test`, so lint is checked here)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TARGETS = ["bayesfair", "tests", "benchmarks", "docs", "scripts", "conftest.py"]


def _ruff() -> str:
    here = Path(sys.executable).with_name("ruff")
    found = str(here) if here.exists() else shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed in this environment (pip install -e '.[test]')")
    return found


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff(args):
    proc = subprocess.run(
        [_ruff(), *args, *TARGETS], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
