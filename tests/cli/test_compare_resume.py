"""compare --param and --resume, as run and sweep have them: a changed scenario, and an interrupted comparison finished."""

from __future__ import annotations

import json
import sqlite3

import pytest

import fleetchaos.runs.runner as runner

ARGS = ("--seeds", "2", "--jobs", "1", "--policies", "structured,backoff", "--errors", "generic", "--json")


@pytest.fixture
def cli(history_cli):
    """The CLI in a temporary working directory (see tests/conftest.py)."""
    return history_cli


def test_compare_param_changes_the_scenario_it_runs(cli, small, tmp_path):
    """--param faults[0].probability=0.3 is the scenario the runs meet: its document, its figures and its replays."""
    plain = json.loads(cli("compare", "--scenario", small, *ARGS, "--no-history").stdout)
    history = str(tmp_path / "h.db")
    changed = cli("compare", "--scenario", small, *ARGS, "--history", history, "--param", "faults[0].probability=0.3")
    assert changed.exit_code == 0, changed.stderr
    doc = json.loads(changed.stdout)
    assert plain["scenario_config"]["faults"][0]["probability"] == 0.02
    assert doc["scenario_config"]["faults"][0]["probability"] == 0.3
    assert all(
        a["metrics"]["faulted_tasks"] > b["metrics"]["faulted_tasks"] for a, b in zip(doc["arms"], plain["arms"])
    )
    runs = json.loads(cli("history", "latest", "--history", history, "--json").stdout)["runs"]
    assert all(r["params"] == {"faults[0].probability": 0.3} for r in runs) and len(runs) == 4


def test_an_interrupted_comparison_resumes_to_the_same_bytes(cli, small, monkeypatch, tmp_path):
    """Ctrl-C keeps the finished runs (exit 130); --resume runs only the rest; the JSON equals an uninterrupted run's."""
    history = str(tmp_path / "h.db")
    args = ("compare", "--scenario", small, *ARGS, "--param", "faults[0].probability=0.1")
    full = cli(*args, "--no-history")
    assert full.exit_code == 0
    real = runner.run_one
    calls = {"n": 0}

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(runner, "run_one", flaky)
    stopped = cli(*args, "--history", history)
    assert stopped.exit_code == 130
    assert "kept the 2 finished runs in history group #1" in stopped.stderr and "--resume" in stopped.stderr
    monkeypatch.setattr(runner, "run_one", real)
    ran = []

    def counted(*a, **k):
        ran.append(a[1:4])
        return real(*a, **k)

    monkeypatch.setattr(runner, "run_one", counted)
    resumed = cli(*args, "--history", history, "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert "2 of 4 runs already stored" in resumed.stderr
    assert len(ran) == 2  # only the two runs the interrupted comparison lacked
    assert resumed.stdout == full.stdout
    db = sqlite3.connect(history)
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone() == (4, 4)
    assert db.execute("SELECT kind, status FROM groups").fetchall() == [("compare", "complete")]
    ran.clear()
    again = cli(*args, "--history", history, "--resume")
    assert again.stdout == full.stdout and ran == [] and "4 of 4 runs already stored" in again.stderr


def test_resume_never_continues_another_comparison(cli, small, tmp_path):
    """Another seed count or another parameter value is another comparison: --resume starts it afresh."""
    history = str(tmp_path / "h.db")
    assert cli("compare", "--scenario", small, *ARGS, "--history", history).exit_code == 0
    other = cli("compare", "--scenario", small, *ARGS, "--history", history, "--resume", "--param", "fleet.workers=7")
    assert other.exit_code == 0 and "nothing of this comparison is stored" in other.stderr
    groups = json.loads(cli("history", "--history", history, "--json").stdout)["groups"]
    assert [g["runs"] for g in groups] == [4, 4]


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--no-history",), "--resume reads the run history: drop --no-history"),
        (("--check-determinism",), "--resume with --check-determinism"),
        (("--tune",), "--resume with --tune"),
    ],
)
def test_resume_where_nothing_can_be_resumed_is_a_usage_error(cli, small, extra, message):
    """--resume with --no-history, --check-determinism or --tune: exit 2 with one message."""
    result = cli("compare", "--scenario", small, *ARGS, "--resume", *extra)
    assert result.exit_code == 2 and message in result.stderr
