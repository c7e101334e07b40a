"""The README's code blocks run as written, in order, so its examples cannot rot."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.data
def test_readme_python_blocks_run(data_home, tmp_path):
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 3, "the README lost its examples"
    script = tmp_path / "readme.py"
    script.write_text("import matplotlib\nmatplotlib.use('Agg')\n" + "\n".join(blocks))
    env = {**os.environ, "BAYESFAIR_DATA": str(data_home), "MPLBACKEND": "Agg"}
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
