"""The example suite in examples/suite works when a team copies it, replay commands included."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import patience

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "suite"
JUNK = shutil.ignore_patterns(".hypothesis", ".pytest_cache", "__pycache__", "fleetchaos-out")


def test_the_example_suite_passes_from_a_copy_and_its_replay_commands_work(tmp_path):
    """A copy of examples/suite passes on its own, and a printed replay of its local policy runs from that folder."""
    suite = tmp_path / "suite"
    shutil.copytree(EXAMPLE, suite, ignore=JUNK)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CHAOS_", "FLEETCHAOS_"))}
    out = patience.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        cpu_s=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "8 passed, 1 xfailed" in out.stdout
    row = next(line for line in out.stdout.splitlines() if "test_rides_out_a_key_rotation" in line)
    assert row.split()[1:7] == ["passed", "key-rotation", "team_policy:TeamPolicy", "structured", "1-3", "1"]
    gated = next(line for line in out.stdout.splitlines() if "test_meets_the_busy_hours_own_criteria" in line)
    assert gated.split()[1:3] == ["passed", "busy-hour"] and gated.split()[-3:] == ["ok", "(4)", "sim"]
    fleetchaos = Path(sys.executable).with_name("fleetchaos")
    run = patience.run(
        [
            str(fleetchaos),
            "run",
            "--scenario",
            "chaos/key_rotation.yaml",
            "--policy",
            "team_policy:TeamPolicy",
            "--errors",
            "structured",
            "--seed",
            "2",
            "--json",
            "--no-history",
        ],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        cpu_s=120,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["metrics"]["recovery_rate"] == 1.0
