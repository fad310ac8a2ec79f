"""The SQLite run history: groups and runs, references, idempotent writes, and crash safety."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import patience
import pytest

from fleetchaos.errors import UserError
from fleetchaos.gates.history import SCHEMA_VERSION, key_of, open_store, run_key
from fleetchaos.results.models import RunResult


def result(seed: int, policy: str = "structured", recovery: float = 0.8, **extra) -> RunResult:
    """A small run result."""
    return RunResult(scenario="default", policy=policy, errors="structured", seed=seed,
                     metrics={"recovery_rate": recovery}, breakdowns={"claims": {"success": 3}},
                     fault_schedule=[], replay=f"fleetchaos run --seed {seed}", **extra)  # fmt: skip


def test_groups_and_runs_round_trip(tmp_path):
    """A group's runs come back in order with their metrics and whole result; the store is in WAL mode."""
    path = tmp_path / "sub" / "history.db"
    with open_store(path) as store:
        gid = store.new_group("compare", "default", label="nightly", meta={"seeds": [1, 2]})
        assert store.add_run(gid, result(1)) and store.add_run(gid, result(2, recovery=0.5))
        runs = store.runs(gid)
        assert [r.seed for r in runs] == [1, 2]
        assert runs[1].metrics == {"recovery_rate": 0.5}
        assert runs[0].result == result(1)
        (group,) = store.groups()
        assert (group.id, group.kind, group.label, group.status, group.runs) == (
            gid,
            "compare",
            "nightly",
            "running",
            2,
        )
        store.finish_group(gid)
        assert store.group(gid).status == "complete"
        # synchronous is per connection (a fresh one reads SQLite's default, itself often FULL
        # and so proving nothing): ask the store's own.  2 = FULL, an fsync at every commit.
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_add_run_is_idempotent_and_has_run_finds_keys(tmp_path):
    """Storing the same run twice in a group keeps one row; has_run answers per group and overall."""
    with open_store(tmp_path / "h.db") as store:
        g1 = store.new_group("sweep", "default")
        g2 = store.new_group("sweep", "default")
        assert store.add_run(g1, result(1)) is True
        assert store.add_run(g1, result(1)) is False
        assert len(store.runs(g1)) == 1
        key = key_of(result(1))
        assert key == run_key("default", "structured", "structured", 1, {})
        assert store.has_run(key) and store.has_run(key, g1) and not store.has_run(key, g2)


def test_per_task_rows_and_timelines_are_not_stored(tmp_path):
    """The store keeps a run's figures, not its per-task rows."""
    with open_store(tmp_path / "h.db") as store:
        gid = store.new_group("run", "default")
        store.add_run(gid, result(1, tasks=[{"id": 0}]))
        assert store.runs(gid)[0].result.tasks == []


def test_references_by_id_latest_and_label(tmp_path):
    """Groups are named by id (7 or #7), 'latest', or their label (the newest with it)."""
    with open_store(tmp_path / "h.db") as store:
        a = store.new_group("run", "default", label="good")
        b = store.new_group("run", "default", label="good")
        c = store.new_group("run", "default")
        assert store.resolve(str(a)).id == a and store.resolve(f"#{a}").id == a
        assert store.resolve("latest").id == c
        assert store.resolve("good").id == b
        with pytest.raises(UserError, match=r"no run group 'bad' in .*newest: #3, #2 \(good\), #1 \(good\)"):
            store.resolve("bad")


def test_failed_write_rolls_back_and_the_store_stays_usable(tmp_path):
    """A run for a group that does not exist is refused (foreign key) and leaves no half-open transaction."""
    with open_store(tmp_path / "h.db") as store:
        with pytest.raises(sqlite3.IntegrityError):
            store.add_run(999, result(1))
        gid = store.new_group("run", "default")
        assert store.add_run(gid, result(1))
        assert len(store.runs(gid)) == 1


def test_missing_and_foreign_files_are_user_errors(tmp_path):
    """Reading a history that does not exist, or a file that is not one, gives a clear user error."""
    with pytest.raises(UserError, match="no history here"):
        open_store(tmp_path / "none.db", create=False)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database at all, not even close" * 10)
    with pytest.raises(UserError, match="not a fleetchaos history"):
        open_store(junk)
    newer = tmp_path / "newer.db"
    db = sqlite3.connect(newer)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(UserError, match="newer fleetchaos"):
        open_store(newer)


WRITER = textwrap.dedent(
    """
    import sys
    from fleetchaos.gates.history import open_store
    from fleetchaos.results.models import RunResult

    store = open_store(sys.argv[1])
    gid = store.new_group("sweep", "default")
    seed = 0
    while True:
        seed += 1
        store.add_run(gid, RunResult(scenario="default", policy="p", errors="e", seed=seed,
                      metrics={"recovery_rate": seed / 1e6}, breakdowns={}, fault_schedule=[],
                      replay="x" * 2000))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_kill_9_mid_write_leaves_a_sound_store(tmp_path):
    """A writer killed with SIGKILL while storing runs leaves an intact store holding whole runs, 1..n, each once."""
    path = tmp_path / "h.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], cwd=os.getcwd())

    def fifty_stored() -> bool:
        assert proc.poll() is None, "the writer ended before it could be killed"
        try:
            db = sqlite3.connect(path, timeout=5)
            count = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            db.close()
        except sqlite3.Error:
            return False
        return count >= 50

    try:
        patience.until(fifty_stored, watch=proc.pid, what="50 stored runs")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        patience.wait(proc)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    with open_store(path) as store:
        (group,) = store.groups()
        runs = store.runs(group.id)
        seeds = [r.seed for r in runs]
        assert len(seeds) >= 50 and seeds == list(range(1, len(seeds) + 1))
        assert all(r.result.replay == "x" * 2000 for r in runs)
        assert store.add_run(group.id, result(10**9))  # still writable after the crash
