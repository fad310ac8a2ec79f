"""The README's demo output is what ``make demo`` prints now: every figure of the headline regenerated.

The README shows the demo's terminal output (the comparison's table and best against
best) in a ``text`` block after the marker ``<!-- make demo prints -->``; this runs the
demo's comparison afresh (no run cache) in 100 columns and compares the two line by line.
Slow: the demo's 80 runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- make demo prints -->"


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


@pytest.mark.slow
def test_the_readme_shows_the_demo_as_it_prints(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(re.escape(MARKER) + r"\n```text\n(.*?)^```", readme, re.S | re.M)
    assert found, f"README.md shows the demo's output in a text block after {MARKER}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLEETCHAOS_", "PYTEST_"))}
    env.update(COLUMNS="100", FLEETCHAOS_CACHE="off", FLEETCHAOS_HISTORY=str(tmp_path / "history.db"))
    demo = subprocess.run(
        [str(Path(sys.executable).parent / "fleetchaos"), "compare", "--scenario", "default", "--seeds", "10"],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stderr
    assert _lines(found.group(1)) == _lines(demo.stdout)
