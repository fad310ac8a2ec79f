"""A real-code retry is the repeated step execution: it fails again only when that execution fails again.

The agent calls ``a``, retries it after a dropped connection, then calls ``b``, which meets its own first failure.
The retry of ``a`` got through, so the run has one retry and no failed retry; a retry of ``a`` that fails again is
one failed retry with its reason.  The hand-computed timeline: ``a`` is cut off in [0, 1) s, ``b`` in [10, 20) s;
the agent waits 5 s after a failure (a dropped connection fails in about 1 s), ``a`` takes 2 s and ``b`` 1 s.
"""

from __future__ import annotations

import time

import fleetchaos
from fleetchaos.real import InjectedFault, run_real
from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import Scenario


@fleetchaos.tool("a")
def a(task_id: int) -> str:
    return "a"


@fleetchaos.tool("b")
def b(task_id: int) -> str:
    return "b"


def _scenario(a_window_s: float) -> Scenario:
    blip = {"kind": "network_blip", "probability": 1.0}
    return Scenario.model_validate(
        {
            "name": "retry-watch",
            "duration_s": 3600,
            "fleet": {"orchestrators": 1, "workers": 1, "api_burst": 1000},
            "workload": {
                "templates": [
                    {
                        "name": "ab",
                        "steps": [
                            {"tool": "a", "duration": {"mean_s": 2, "cv": 0}, "uses_api": False},
                            {"tool": "b", "duration": {"mean_s": 1, "cv": 0}, "uses_api": False},
                        ],
                    }
                ],
                "arrivals": [{"at_s": 0.0, "template": "ab"}],
            },
            "faults": [
                {**blip, "tools": ["a"], "windows": [{"start_s": 0, "duration_s": a_window_s}]},
                {**blip, "tools": ["b"], "windows": [{"start_s": 10, "duration_s": 10}]},
            ],
        }
    )


def agent(task, rt):
    for attempt in range(2):  # the team's one retry of ``a``
        try:
            a(task.id)
            break
        except InjectedFault:
            if attempt:
                return "failed"
            time.sleep(5)
    time.sleep(5)
    try:
        b(task.id)  # meets its first failure at about 13 s (a's retry ran from about 6 s to 8 s)
    except InjectedFault:
        return "failed"
    return "success"


def test_a_retry_that_got_through_is_not_failed_by_a_later_first_failure():
    run = run_real(_scenario(1), agent, seed=1)
    (record,) = run.records
    assert record.fault_hits == {"network_blip": 2}  # a's first call, b's first call
    assert (run.metrics["retries"], run.metrics["failed_retries"]) == (1, 0)
    assert run.result.breakdowns["failed_retries_by_reason"] == {}


def test_a_retry_that_fails_again_is_one_failed_retry():
    """``a`` is cut off for the first 8 s: its retry (5 s after the first call failed fast) fails again, with the same fault."""
    run = run_real(_scenario(8), agent, seed=1)
    assert (run.metrics["retries"], run.metrics["failed_retries"]) == (1, 1)
    assert run.result.breakdowns["failed_retries_by_reason"] == {"same fault again": 1}


def test_the_simulator_agrees_on_the_retry_that_got_through():
    """The same world simulated with one immediate retry: ``a`` fails in [0, 1) s, its retry dispatch at about 1 s
    gets through (``b`` runs before its window), as the real retry did: one retry, none failed."""
    result = run_one(_scenario(1), "blind-retry(max_retries=1)", "structured", 1, keep_tasks=True)
    assert (result.metrics["retries"], result.metrics["failed_retries"]) == (1, 0)
    assert result.metrics["success_rate"] == 1.0
