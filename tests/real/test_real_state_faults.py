"""State faults in real code: a full disk under a bound tool's writes, a crashed or cut-off worker, and
assert_injected's per-tool opt-out."""

from __future__ import annotations

import errno
import time

import pytest

import fleetchaos
from fleetchaos.errors import UserError
from fleetchaos.real import run_real
from fleetchaos.scenario.load import Scenario


def _scenario(faults: list[dict], **fleet) -> Scenario:
    """One template: fetch (the API, 1 s), then save (a 10 MB file write, no API, 2 s); 4 tasks 10 s apart."""
    return Scenario.model_validate(
        {
            "name": "real-state",
            "duration_s": 3600,
            "fleet": {
                "orchestrators": 1,
                "workers": 2,
                "api_burst": 1000,
                "network_latency": {"mean_s": 1e-6, "cv": 0},
                **fleet,
            },
            "workload": {
                "templates": [
                    {
                        "name": "report",
                        "steps": [
                            {"tool": "fetch", "duration": {"mean_s": 1, "cv": 0}},
                            {"tool": "save", "duration": {"mean_s": 2, "cv": 0}, "uses_api": False, "disk_mb": 10},
                        ],
                    }
                ],
                "arrivals": [{"at_s": 10.0 * i, "template": "report"} for i in range(4)],
            },
            "faults": faults,
        }
    )


def _agent(folder, log):
    """Fetch, then save the report to a file, retrying an OSError 60 s later (up to 5 tries); log what met what."""

    @fleetchaos.tool("fetch")
    def fetch(task_id: int) -> str:
        return f"report {task_id}"

    @fleetchaos.tool("save")
    def save(task_id: int, text: str) -> None:
        (folder / f"report-{task_id}.txt").write_text(text)

    def entry(task, rt):
        for tool, call in (("fetch", lambda: fetch(task.id)), ("save", lambda: save(task.id, "done"))):
            for _ in range(5):
                try:
                    call()
                    log.append((task.id, tool, "ok", rt.now()))
                    break
                except OSError as exc:
                    log.append((task.id, tool, exc.errno if exc.errno else type(exc).__name__, rt.now()))
                    time.sleep(60)
            else:
                return "failed"
        return "success"

    return entry


def test_a_full_disk_fails_the_bound_tools_writes_with_enospc_until_it_is_cleaned_up(tmp_path):
    """Worker 0's disk is full from 0 s to 100 s.  Task 0 (worker 0) fetches (1 s), its save raises OSError ENOSPC
    after the kind's 0.5 s (the function never runs: no file), again at 62 s after a 60 s wait (a wasted retry: the
    same full disk), and saves at 124 s once the disk is cleaned up; the tasks after it (run in order by a sync
    entry) save at once.  A tool that only writes to disk passes assert_injected; the API tool that met no fault is
    let off by name."""
    log: list = []
    faults = [{"kind": "disk_full", "events": [{"worker": 0, "at_s": 0}], "cleanup_after_s": 100}]
    run = run_real(_scenario(faults), _agent(tmp_path, log), seed=1)
    saves = [(t, what, round(at, 3)) for t, tool, what, at in log if tool == "save"]
    assert saves == [
        (0, errno.ENOSPC, 1.5), (0, errno.ENOSPC, 62.0), (0, "ok", 124.0),
        (1, "ok", 127.0), (2, "ok", 130.0), (3, "ok", 133.0),
    ]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"report-{i}.txt" for i in range(4)]
    wasted = {r.id: r.wasted_reasons for r in run.records}
    assert wasted == {0: {"same full disk": 1}, 1: {}, 2: {}, 3: {}}
    run.assert_injected(unfaulted=["fetch"])
    with pytest.raises(fleetchaos.real.NotInjectedError, match="fetch: 4 call"):
        run.assert_injected()
    with pytest.raises(UserError, match=r"unfaulted=...\): nope is not a tool of the run's tasks"):
        run.assert_injected(unfaulted=["nope"])


def test_a_crashed_worker_refuses_its_calls_until_it_restarts(tmp_path):
    """Worker 1 is down from 0 s to 150 s.  Task 1 (worker 1, starting at its 10 s arrival) meets a refused connection
    (ECONNREFUSED, after the kind's 0.2 s) at 10.2 s, again at 70.4 s and 130.6 s (each retry wasted: the worker is
    still down), and runs once the worker is back (fetch at 191.6 s); worker 0's tasks never notice."""
    log: list = []
    faults = [{"kind": "node_crash", "events": [{"worker": 1, "at_s": 0}], "down_s": 150}]
    run = run_real(_scenario(faults), _agent(tmp_path, log), seed=1)
    met = [(t, tool, what, round(at, 3)) for t, tool, what, at in log]
    assert met == [
        (0, "fetch", "ok", 1.0), (0, "save", "ok", 3.0),
        (1, "fetch", errno.ECONNREFUSED, 10.2), (1, "fetch", errno.ECONNREFUSED, 70.4),
        (1, "fetch", errno.ECONNREFUSED, 130.6), (1, "fetch", "ok", 191.6), (1, "save", "ok", 193.6),
        (2, "fetch", "ok", 194.6), (2, "save", "ok", 196.6), (3, "fetch", "ok", 197.6), (3, "save", "ok", 199.6),
    ]  # fmt: skip
    assert {r.id: r.wasted_reasons for r in run.records}[1] == {"worker still down": 2}


def test_a_partition_cuts_the_orchestrator_off_from_a_worker_for_its_window(tmp_path):
    """Orchestrator 0 cannot reach worker 1 from 0 s to 100 s (connect timeout 10 s): task 1's fetch fails as a
    ConnectionError at 20 s and 90 s (the retry wasted: still partitioned), then runs at 150 s."""
    log: list = []
    faults = [
        {
            "kind": "network_partition",
            "workers": [1],
            "windows": [{"start_s": 0, "duration_s": 100}],
            "connect_timeout_s": 10,
        }
    ]
    run = run_real(_scenario(faults), _agent(tmp_path, log), seed=1)
    met = [(t, tool, what, round(at, 3)) for t, tool, what, at in log if t == 1]
    assert met == [
        (1, "fetch", "InjectedConnectionError", 20.0), (1, "fetch", "InjectedConnectionError", 90.0),
        (1, "fetch", "ok", 151.0), (1, "save", "ok", 153.0),
    ]  # fmt: skip
    assert {r.id: r.wasted_reasons for r in run.records}[1] == {"still partitioned": 1}
    assert run.metrics["success_rate"] == 1.0
