"""The replay command a failing gate prints works pasted into a shell where pytest ran.

A suite that finds its policy through pytest's ``pythonpath`` ini option (here ``lib``) imports
it in pytest but not in a ``fleetchaos`` command started from a shell: the printed command
carries the folder (``PYTHONPATH=lib``).  Both pytest and the replay run in subprocesses, as a
user's would, with the ``fleetchaos`` command of this environment on ``PATH``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import patience

ROOT = Path(__file__).resolve().parents[2]

#: Half an hour on two workers with flaky network calls: a few dozen tasks, a run well under a second.
SCENARIO = """\
name: small
duration_s: 1800
fleet: {orchestrators: 1, workers: 2}
workload: {tasks_per_day: 1500, diurnal_amplitude: 0}
faults:
  - {kind: network_blip, probability: 0.1}
"""

GATE = """
import pytest

from fleetchaos import assert_rate


@pytest.mark.fleetchaos(scenario="chaos/small.yaml", seeds=2)
def test_task_count(fleetchaos_result):
    # a bound no run meets: the gate fails and names the seed to replay
    assert_rate(fleetchaos_result.metric("tasks"), at_most=1)
"""


def _env() -> dict[str, str]:
    """This environment's commands first on PATH; nothing of the outer pytest run leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FLEETCHAOS_"))}
    env.pop("PYTHONPATH", None)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _suite(folder: Path, ini: str) -> Path:
    """A suite folder: its pytest.ini, a scenario in chaos/, its policy module in lib/, a failing gate."""
    (folder / "chaos").mkdir(parents=True)
    (folder / "lib").mkdir()
    (folder / "chaos" / "small.yaml").write_text(SCENARIO)
    shutil.copy(ROOT / "examples" / "suite" / "team_policy.py", folder / "lib" / "suite_policy.py")
    (folder / "pytest.ini").write_text(ini)
    (folder / "test_gate.py").write_text(GATE)
    return folder


def _failing_replay(cwd: Path, *args: str) -> tuple[str, int, float]:
    """Run the suite from ``cwd``; (the replay command printed for the worst seed, that seed, its figure)."""
    proc = patience.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        cpu_s=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    match = re.search(r"replay the worst seed \((\d+)\): (.+)", proc.stdout)
    assert match, proc.stdout
    seed = int(match.group(1))
    per_seed = re.search(r"per seed: (.+)", proc.stdout)
    assert per_seed, proc.stdout
    values = [float(v) for v in per_seed.group(1).split(",")]
    return match.group(2).strip(), seed, values[seed - 1]


def _replay(command: str, cwd: Path) -> subprocess.CompletedProcess:
    return patience.run(
        command + " --json --no-history", shell=True, cwd=cwd, env=_env(), capture_output=True, text=True, cpu_s=300
    )


def test_a_policy_found_through_pythonpath_replays_from_the_suite_folder(tmp_path):
    """The printed command, run from the suite folder, imports the policy and gives the failing seed's figure."""
    suite = _suite(tmp_path / "suite", "[pytest]\npythonpath = lib\nfleetchaos_policy = suite_policy:TeamPolicy\n")
    command, seed, figure = _failing_replay(suite)
    assert command.startswith("PYTHONPATH=lib fleetchaos run --scenario chaos/small.yaml ")
    assert "--policy suite_policy:TeamPolicy" in command and command.endswith(f"--seed {seed}")
    proc = _replay(command, suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert (result["seed"], result["policy"]) == (seed, "suite_policy:TeamPolicy")
    assert result["metrics"]["tasks"] == figure  # the failure, reproduced
    # without the folder the same command cannot find the policy: the prefix is what makes it work
    bare = _replay(command.removeprefix("PYTHONPATH=lib "), suite)
    assert bare.returncode == 2 and "cannot import 'suite_policy'" in bare.stderr, bare.stderr


def test_run_from_a_parent_folder_the_command_works_from_there(tmp_path):
    """pytest started above the suite prints paths from where it ran, the policy's folder included."""
    _suite(tmp_path / "suite", "[pytest]\npythonpath = lib\nfleetchaos_policy = suite_policy:TeamPolicy\n")
    command, _, figure = _failing_replay(tmp_path, "suite")
    assert command.startswith("PYTHONPATH=suite/lib fleetchaos run --scenario suite/chaos/small.yaml ")
    proc = _replay(command, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["metrics"]["tasks"] == figure


def test_a_policy_in_the_suite_folder_needs_no_prefix(tmp_path):
    """With ``pythonpath = .`` and pytest run from the suite folder, the working directory is enough."""
    suite = _suite(tmp_path / "suite", "[pytest]\npythonpath = .\nfleetchaos_policy = suite_policy:TeamPolicy\n")
    (suite / "lib" / "suite_policy.py").rename(suite / "suite_policy.py")
    command, _, figure = _failing_replay(suite)
    assert command.startswith("fleetchaos run --scenario chaos/small.yaml ")
    proc = _replay(command, suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["metrics"]["tasks"] == figure
