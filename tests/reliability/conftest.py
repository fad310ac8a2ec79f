"""Shared set-up of the reliability tests (issue 17): the hostile policies module and a CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import fleetchaos.catalogue as catalogue

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # `hostile_policies:Name` for in-process runs

#: The installed command line, beside this interpreter ($FLEETCHAOS_CLI runs these tests against another
#: installation, e.g. an older one, to see them fail there).
FLEETCHAOS = os.environ.get("FLEETCHAOS_CLI") or str(Path(sys.executable).with_name("fleetchaos"))

#: Exit codes a user's input may give: ok, gate failed, usage; never 3 (a bug) for user input.
OK_CODES = {0, 1, 2}


def fleetchaos(
    *args: str, cwd: Path, timeout: float = 120, env: dict | None = None, **kw
) -> subprocess.CompletedProcess:
    """Run the fleetchaos CLI in a subprocess (the hostile policies importable), with its own history in ``cwd``."""
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    environ.pop("FLEETCHAOS_DEBUG", None)
    environ["FLEETCHAOS_HISTORY"] = str(cwd / "history.db")
    environ.update(env or {})
    return subprocess.run(
        [FLEETCHAOS, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> Path:
    """The default scenario with about 30 tasks a day: fast enough for a subprocess per case."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"] = "tiny"
    doc["workload"]["tasks_per_day"] = 30
    path = tmp_path_factory.mktemp("scenarios") / "tiny.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path
