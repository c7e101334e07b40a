"""The README's code blocks run as written, in order, so its examples cannot rot."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.data
def test_readme_python_blocks_run(data_home, tmp_path):
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks and "bf.audit(" in blocks[0], "the README's first example is the one-call audit"
    script = tmp_path / "readme.py"
    script.write_text("import matplotlib\nmatplotlib.use('Agg')\n" + "\n".join(blocks))
    env = {**os.environ, "BAYESFAIR_DATA": str(data_home), "MPLBACKEND": "Agg"}
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]


def test_readme_fits_on_two_screens():
    """What it is, the two commands, one example, where to go next: the rest is in docs/."""
    text = (REPO / "README.md").read_text()
    assert len(text) <= 5000, len(text)
    for page in re.findall(r"`(docs/guide/\w+\.rst)`", text):
        assert (REPO / page).is_file(), page
