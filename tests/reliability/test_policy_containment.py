"""Issue 17 item 1: whatever a policy raises is its own task's error, and a policy that blocks cannot hang a run."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import patience
import pytest
from reliability_cli import FLEETCHAOS, fleetchaos

from fleetchaos.runs.limits import wall_clock_limit
from fleetchaos.sim.interrupts import UserInterrupt, WallClockExceeded, describe_exception, user_signals

HOSTILE = [
    ("ExitsZero", "SystemExit: 0"),
    ("ExitsFour", "SystemExit: 4"),
    ("RaisesKeyboardInterrupt", "KeyboardInterrupt"),
    ("RaisesBaseException", "BaseException: base"),
    ("RaisesCustom", "Custom: custom"),
    ("RaisesUnprintable", "Unprintable: (unprintable)"),
    ("RaisesGeneratorExit", "GeneratorExit"),
]


@pytest.mark.parametrize("name, message", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_policys_base_exception_is_a_policy_error_not_the_commands_exit(tmp_path, tiny, name, message):
    """`run` with a policy raising SystemExit/KeyboardInterrupt/BaseException/an unprintable error prints its result, exit 0."""
    out = fleetchaos("run", "--scenario", str(tiny), "--policy", f"hostile_policies:{name}", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    result = json.loads(out.stdout)
    assert result["metrics"]["policy_errors"] > 0
    assert f"policy raised {message}" in result["breakdowns"]["policy_errors_by_message"]
    db = sqlite3.connect(tmp_path / "history.db")
    assert db.execute("SELECT status, (SELECT COUNT(*) FROM runs) FROM groups").fetchall() == [("complete", 1)]


def test_hostile_arms_in_worker_processes_leave_every_arm_and_run_whole(tmp_path, tiny):
    """A compare over two worker processes with every hostile arm stores every run and exits 0 (the pool carries nothing back)."""
    arms = ",".join(f"hostile_policies:{n}" for n, _ in HOSTILE) + ",backoff"
    out = fleetchaos("compare", "--scenario", str(tiny), "--policies", arms, "--errors", "generic",
                     "--seeds", "2", "--jobs", "2", "--json", cwd=tmp_path, cpu_s=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert len(result["arms"]) == len(HOSTILE) + 1
    for arm in result["arms"][:-1]:
        assert arm["metrics"]["policy_errors"] > 0, arm["policy"]
    assert result["arms"][-1]["metrics"]["policy_errors"] == 0
    db = sqlite3.connect(tmp_path / "history.db")
    assert db.execute("SELECT status, (SELECT COUNT(*) FROM runs) FROM groups").fetchall() == [("complete", 16)]


def test_describing_an_exception_never_raises_and_scrubs_secrets():
    """An exception whose __str__ raises is named, and a planted secret in a message is redacted."""
    from hostile_policies import Unprintable

    assert describe_exception(Unprintable()) == "Unprintable: (unprintable)"
    text = describe_exception(ValueError("key sk_live_abcdefghijklmnopqrstuvwx for bob@corp.example.com"))
    assert "sk_live_" not in text and "bob@" not in text and text.count("[REDACTED]") == 2


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_policy_blocking_in_wall_clock_time_fails_the_command_with_exit_4(tmp_path, tiny, jobs):
    """A policy that sleeps (and swallows the first interrupt) is stopped by --time-limit, in-process and in a worker."""
    out = fleetchaos("compare", "--scenario", str(tiny), "--policies", "hostile_policies:SleepsAndSwallows",
                     "--errors", "generic", "--seeds", "2", "--jobs", jobs, "--time-limit", "1", cwd=tmp_path)  # fmt: skip
    assert out.returncode == 4, out.stderr
    assert "still running after 1 s of wall-clock time" in out.stderr
    assert "--seed" in out.stderr and "Traceback" not in out.stderr
    db = sqlite3.connect(tmp_path / "history.db")
    assert db.execute("SELECT status FROM groups").fetchall() == [("failed",)]


def test_the_wall_clock_limit_also_stops_a_run_outside_the_main_thread():
    """In a thread (a Dask worker's), the limit is raised asynchronously into a pure-Python loop."""
    caught = []

    def body():
        try:
            with wall_clock_limit(0.2):
                while True:
                    sum(range(100))
        except WallClockExceeded:
            caught.append(True)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(30)
    assert caught == [True] and not thread.is_alive()


def test_a_run_that_ends_in_time_is_not_interrupted_afterwards():
    """Leaving the limit's block disarms it: nothing is raised later."""
    with wall_clock_limit(0.05):
        pass
    time.sleep(0.2)  # an armed timer would raise here


def test_the_users_ctrl_c_is_not_a_policy_error():
    """Inside user_signals a SIGINT raises UserInterrupt, which containment lets through."""
    from fleetchaos.sim.interrupts import PASS_THROUGH

    # The user's own Ctrl-C handler, whatever the suite was started with: a suite started in
    # the background by a shell has SIGINT ignored, which user_signals rightly leaves ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(UserInterrupt), user_signals():
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert UserInterrupt in PASS_THROUGH and KeyboardInterrupt not in PASS_THROUGH


def test_sigterm_marks_the_group_interrupted_keeps_runs_and_exits_143(tmp_path, tiny):
    """SIGTERM during a compare is handled like Ctrl-C: finished runs stay stored, the group is marked interrupted."""
    env = {"PYTHONPATH": str(Path(__file__).parent)}  # the hostile policies beside this file
    proc = subprocess.Popen(
        [FLEETCHAOS, "compare", "--scenario", str(tiny), "--policies",
         "hostile_policies:SlowButFine", "--errors", "generic", "--seeds", "200", "--jobs", "1"],
        cwd=tmp_path, env={**__import__("os").environ, **env, "FLEETCHAOS_HISTORY": str(tmp_path / "h.db")},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:

        def stored() -> bool:
            assert proc.poll() is None, "the compare ended before it could be terminated"
            try:
                db = sqlite3.connect(tmp_path / "h.db", timeout=5)
                count = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                db.close()
            except sqlite3.Error:
                return False
            return count >= 2

        patience.until(stored, watch=proc.pid, what="two stored runs", poll_s=0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = patience.wait(proc)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "terminated" in err and "Traceback" not in err
    db = sqlite3.connect(tmp_path / "h.db")
    status, runs = db.execute("SELECT status, (SELECT COUNT(*) FROM runs) FROM groups").fetchone()
    assert status == "interrupted" and runs >= 2


@pytest.mark.parametrize("name", ["CallsOsExit", "SwallowsOsExit"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_policy_calling_os_exit_fails_the_command_with_one_line(tmp_path, tiny, name, jobs):
    """os._exit(0) in a policy (it ended a --jobs 1 command with exit 0 and no output): exit 2 naming the call, the
    arm and its replay, in-process and in worker processes, even when the policy swallows what the call raised;
    the history group is marked failed, never complete."""
    out = fleetchaos("compare", "--scenario", str(tiny), "--policies", f"hostile_policies:{name},backoff",
                     "--errors", "generic", "--seeds", "2", "--jobs", jobs, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr)
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"error: policy hostile_policies:{name} on generic, seed ") and "os._exit(0)" in line
    assert "replay it with: fleetchaos run" in line and "Traceback" not in out.stderr
    db = sqlite3.connect(tmp_path / "history.db")
    assert [s for (s,) in db.execute("SELECT status FROM groups")] == ["failed"]


@pytest.mark.parametrize("name", ["RetryPropertyExits", "EXITING_RETRYING"])
def test_a_policy_whose_attribute_raises_system_exit_is_exit_2(tmp_path, tiny, name):
    """A policy object whose `retry` raises SystemExit(0) when read (it exited 0 with no output): exit 2, one line."""
    out = fleetchaos("run", "--scenario", str(tiny), "--policy", f"hostile_policies:{name}", cwd=tmp_path)
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr)
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"error: --policy: policy 'hostile_policies:{name}': "), line


def test_process_exits_are_refused_only_inside_the_block_and_even_when_swallowed():
    """The stand-ins for os._exit are in place only while a run's block runs, nested blocks included; a call the
    caller swallowed is raised again when the block ends."""
    import os

    from fleetchaos.sim.interrupts import ProcessExitRefused, process_exits_refused

    original = os._exit
    with pytest.raises(ProcessExitRefused, match=r"os._exit\(3\)"), process_exits_refused():
        with process_exits_refused():
            assert os._exit is not original
        assert os._exit is not original
        with contextlib.suppress(BaseException):
            os._exit(3)
    assert os._exit is original
