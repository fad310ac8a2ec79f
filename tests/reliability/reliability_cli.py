"""The fleetchaos command line in a subprocess, for the reliability tests (not a test module).

Imported by name (``from reliability_cli import fleetchaos``), as ``hostile_policies`` is,
never from ``conftest``: several test folders have a conftest.py, and which of them owns
the module name ``conftest`` depends on the order pytest loaded them (``pytest
tests/reliability tests/plugin`` left it to tests/plugin's).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import patience

HERE = Path(__file__).parent

#: The installed command line, beside this interpreter ($FLEETCHAOS_CLI runs these tests against another
#: installation, e.g. an older one, to see them fail there).
FLEETCHAOS = os.environ.get("FLEETCHAOS_CLI") or str(Path(sys.executable).with_name("fleetchaos"))

#: Exit codes a user's input may give: ok, gate failed, usage; never 3 (a bug) for user input.
OK_CODES = {0, 1, 2}


def fleetchaos(*args: str, cwd: Path, cpu_s: float = 120, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """Run the fleetchaos CLI in a subprocess (the hostile policies importable), with its own history in ``cwd``.

    It may use ``cpu_s`` seconds of processor time, however long a busy machine makes it take (tests/patience.py).
    """
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    environ.pop("FLEETCHAOS_DEBUG", None)
    environ["FLEETCHAOS_HISTORY"] = str(cwd / "history.db")
    environ.update(env or {})
    return patience.run(
        [FLEETCHAOS, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        cpu_s=cpu_s,
        **kw,
    )
