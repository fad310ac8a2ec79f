"""A sweep killed from outside: Ctrl-C keeps what finished, kill -9 never corrupts the history.

Both tests run ``fleetchaos sweep`` in a subprocess with two worker processes and watch
the history file fill up before stopping it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import patience
import pytest
import yaml

import fleetchaos.catalogue as catalogue

#: 4 fault rates x 3 policies x 2 formats x 3 seeds = 72 runs: a few seconds on 2 cores.
GRID = ["--param", "faults[0].probability=0,0.1,0.2,0.5", "--seeds", "3"]
TOTAL = 72


@pytest.fixture(scope="module")
def medium(tmp_path_factory) -> str:
    """The default scenario with a lighter workload (200 tasks a day)."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"] = "medium"
    doc["workload"]["tasks_per_day"] = 200
    path = tmp_path_factory.mktemp("scenarios") / "medium.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _sweep(scenario: str, history: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "fleetchaos.cli",
        "sweep",
        "--scenario",
        scenario,
        *GRID,
        "--jobs",
        "2",
        "--history",
        str(history),
        *extra,
    ]


def _start(cmd: list[str], cwd: Path) -> subprocess.Popen:
    # SIGINT back to its default: a test runner may have started us with it ignored.
    return subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _stored(history: Path) -> int:
    if not history.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{history}?mode=ro", uri=True, timeout=5)
        try:
            return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        finally:
            db.close()
    except sqlite3.OperationalError:  # the tables are not created yet
        return 0


def _wait_for_runs(history: Path, at_least: int, proc: subprocess.Popen) -> int:
    def stored_or_ended() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"sweep ended early (exit {proc.returncode}): {proc.stderr.read()}")
        return _stored(history) >= at_least

    patience.until(stored_or_ended, watch=proc.pid, what=f"{at_least} stored runs", poll_s=0.02)
    return _stored(history)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[1].startswith("Z"))


def _wait_gone(pids: list[int]) -> list[int]:
    """The processes of ``pids`` still alive once none of them has used processor time for a minute (else [])."""
    with contextlib.suppress(patience.Stalled):
        patience.until(lambda: not any(_alive(p) for p in pids), watch=pids, what="workers to exit", stall_s=60)
    return [p for p in pids if _alive(p)]


def test_ctrl_c_keeps_finished_runs_and_exits_130(medium, tmp_path):
    """SIGINT mid-sweep: exit 130, a message saying how to resume, the group marked interrupted, no workers left."""
    history = tmp_path / "history.db"
    proc = _start(_sweep(medium, history), tmp_path)
    _wait_for_runs(history, 3, proc)
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGINT)
    _, err = patience.wait(proc)
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "--resume" in err and "Traceback" not in err
    db = sqlite3.connect(history)
    stored = db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone()
    assert stored[0] == stored[1] and 3 <= stored[0] < TOTAL
    assert db.execute("SELECT status FROM groups").fetchall() == [("interrupted",)]
    assert _wait_gone(workers) == []


def test_kill_9_mid_sweep_then_resume_stores_every_run_exactly_once(medium, tmp_path):
    """kill -9 mid-sweep leaves a readable history; --resume finishes with every run stored exactly once."""
    history = tmp_path / "history.db"
    proc = _start(_sweep(medium, history), tmp_path)
    _wait_for_runs(history, 8, proc)
    workers = _children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    patience.wait(proc)
    assert proc.returncode == -signal.SIGKILL
    assert _wait_gone(workers) == [], "orphaned worker processes kept running after their parent was killed"

    db = sqlite3.connect(history)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    before = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    db.close()
    assert 8 <= before < TOTAL, "the sweep finished before it could be killed; make it longer"

    resumed = patience.run(
        _sweep(medium, history, "--resume", "--json"), cwd=tmp_path, capture_output=True, text=True, cpu_s=120
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{before} of {TOTAL} runs already stored" in resumed.stderr

    db = sqlite3.connect(history)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone() == (TOTAL, TOTAL)
    assert db.execute("SELECT COUNT(*), MIN(status) FROM groups").fetchone() == (1, "complete")
    import json

    doc = json.loads(resumed.stdout)
    assert len(doc["entries"]) == 4 * 3 * 2
    assert all(len(e["per_seed"]["tasks"]) == 3 for e in doc["entries"])
