"""Run metrics aggregated over a few tasks whose outcomes are known by hand."""

from __future__ import annotations

import pytest

from fleetchaos.results.registry import METRICS
from fleetchaos.runs.runner import run_one

APPROX = dict(abs=1e-6)


def three_task_world(sim):
    """Three workers, three tasks at t=0, one per worker (round robin: task i -> worker i).

    * task 0 (local, worker 0): no fault.
    * task 1 (local, worker 1): a blip on its first call only (window [0, 0.5), worker 1).
    * task 2 (batch, worker 2): fan-out of 5 API items with 3 API tokens and a refill of
      0.01 token/s: items 3 and 4 are rate-limited.  The 'local' steps do not use the API,
      so task 2 is the only bucket user.  Its tool hides the partial batch (partial_batch: ok).
    """
    return sim.scenario(
        {
            "local": [sim.step("plan", 10, uses_api=False), sim.step("edit", 10, uses_api=False, disk_mb=10)],
            "batch": [sim.step("search", 10, fan_out=5), sim.step("synth", 10, uses_api=False)],
        },
        arrivals=[(0, "local"), (0, "local"), (0, "batch")],
        faults=[
            {
                "kind": "network_blip",
                "probability": 1.0,
                "workers": [1],
                "windows": [{"start_s": 0, "duration_s": 0.5}],
            }
        ],
        workers=3,
        api_rate_per_s=0.01,
        api_burst=3,
        partial_batch="ok",
    )


def test_metrics_blind_retry_generic_by_hand(sim):
    """Clean + recovered + silent partial batch: every run metric matches the hand computation."""
    r = sim.run(three_task_world(sim), "blind-retry", "generic")
    t0, t1, t2 = r.outcomes
    # task 0: plan 10.1, edit 20.2 -> success, full, not faulted ; 2 calls
    assert (t0.claim, t0.truth, t0.faulted) == ("success", "full", False)
    assert t0.calls == 2 and t0.end_s == pytest.approx(20.2, **APPROX)
    # task 1: plan blips -> 1.1 ; retry: plan 11.2, edit 21.3 -> recovered ; 3 calls, 1 retry
    #         step executions 3, first fault at the 1st -> steps_to_recovery 2 ; time 21.3 - 0
    assert t1.recovered and t1.calls == 3 and t1.retries == 1
    assert t1.steps_to_recovery == 2 and t1.time_to_recovery_s == pytest.approx(21.3, **APPROX)
    # task 2: items 3,4 -> 429 ; generic says ok ; synth -> 20.2 ; silent failure ; 6 calls
    assert t2.silent_failure and t2.truth == "partial" and t2.claim == "success" and t2.calls == 6
    m = r.metrics
    assert m["tasks"] == 3.0
    assert m["faulted_tasks"] == 2.0  # tasks 1 and 2
    assert m["recovered_tasks"] == 1.0  # task 1
    assert m["recovery_rate"] == pytest.approx(1 / 2)
    assert m["silent_failure_rate"] == pytest.approx(1 / 3)  # task 2 of 3 tasks
    assert m["success_rate"] == pytest.approx(2 / 3)  # tasks 0 and 1
    assert m["tool_calls"] == 2 + 3 + 6
    assert m["retries"] == 1.0
    assert m["wasted_retries"] == 0.0
    assert m["redone_steps"] == 0.0
    assert m["duplicate_side_effects"] == 0.0
    assert m["escalations"] == 0.0
    assert m["false_alarms"] == 0.0
    assert m["unfinished_tasks"] == 0.0
    assert m["policy_errors"] == 0.0
    assert m["mean_steps_to_recovery"] == 2.0
    assert m["mean_time_to_recovery_s"] == pytest.approx(21.3, **APPROX)
    assert set(m) == set(METRICS)
    # the one retry (task 1 at 1.1 s) came after the blip window and went through
    assert m["failed_retries"] == 0.0
    assert m["common_recovery_rate"] == pytest.approx(1 / 2)  # a lone run: its own faulted tasks
    # cost: 2 + 3 + 6 calls at $0.0005; 6 x 2000 tokens of the API calls that ran (task 2's 3 searches: the
    # local steps use no API) at $0.01/1k; the silent failure at $480; nothing undone, paged or billed as refused
    assert m["refused_calls"] == 2.0 and m["undone_tasks"] == 0.0
    assert m["tool_call_cost_usd"] == pytest.approx(11 * 0.0005)
    # and the one model turn (task 2's search step) reads the 2000-token system prompt at $0.0025/1k
    assert m["input_tokens"] == 2000.0
    assert m["token_cost_usd"] == pytest.approx(3 * 2000 / 1000 * 0.01 + 2000 / 1000 * 0.0025)
    assert m["silent_failure_cost_usd"] == 480.0 and m["undone_task_cost_usd"] == m["refused_call_cost_usd"] == 0.0
    assert m["human_cost_usd"] == 0.0
    assert m["cost_usd"] == pytest.approx(11 * 0.0005 + 0.06 + 0.005 + 480.0)
    assert r.breakdowns == {
        "wasted_retries_by_reason": {},
        "failed_retries_by_kind": {},
        "failed_retries_by_reason": {},
        "fault_hits_by_kind": {"network_blip": 1, "rate_limit": 2},
        "claims": {"success": 3},
    }


def test_metrics_structured_by_hand(sim):
    """Same world, structured arm: both faulted tasks recover; mean steps to recovery (2 + 3) / 2."""
    r = sim.run(three_task_world(sim), "structured", "structured")
    t0, t1, t2 = r.outcomes
    # task 1: blip, Retry(d) from step 0 -> plan, edit: steps_to_recovery 2, 3 calls
    # task 2: as in test_partial_batch_structured_resumes_only_failed_items: 9 calls,
    #         2 retries, steps_to_recovery 3 (search | search, search, synth)
    assert not t0.faulted
    assert t1.recovered and t1.steps_to_recovery == 2 and t1.calls == 3
    assert t2.recovered and t2.steps_to_recovery == 3 and t2.calls == 9 and t2.retries == 2
    m = r.metrics
    assert m["faulted_tasks"] == 2.0 and m["recovered_tasks"] == 2.0
    assert m["recovery_rate"] == 1.0
    assert m["silent_failure_rate"] == 0.0
    assert m["success_rate"] == 1.0
    assert m["mean_steps_to_recovery"] == 2.5
    assert m["tool_calls"] == 2 + 3 + 9
    assert m["retries"] == 3.0
    assert m["wasted_retries"] == 0.0 and m["redone_steps"] == 0.0
    assert r.breakdowns["fault_hits_by_kind"] == {"network_blip": 1, "rate_limit": 3}


def test_run_one_reports_the_same_metrics(sim):
    """fleetchaos.runs.runner.run_one on the tiny world gives the metrics and task rows computed by hand."""
    res = run_one(three_task_world(sim), "blind-retry", "generic", 0, keep_tasks=True)
    assert res.metrics["recovery_rate"] == 0.5
    assert res.metrics["silent_failure_rate"] == round(1 / 3, 6)
    assert res.metrics["success_rate"] == round(2 / 3, 6)
    assert res.metrics["mean_steps_to_recovery"] == 2.0
    assert res.metrics["mean_time_to_recovery_s"] == 21.3
    rows = {t["id"]: t for t in res.tasks}
    assert [rows[i]["worker"] for i in range(3)] == [0, 1, 2]
    assert rows[1]["recovered"] and rows[1]["faults"] == "network_blip=1"
    assert rows[2]["silent_failure"] and rows[2]["faults"] == "rate_limit=2"
    assert rows[0]["end_s"] == 20.2 and rows[1]["end_s"] == 21.3 and rows[2]["end_s"] == 20.2
    # per-call faults limited to windows list their active windows in the schedule
    assert all(line.startswith("network_blip (faults[0]) active from") for line in res.fault_schedule)


def test_rates_are_none_without_denominator(sim):
    """With no faulted task, recovery_rate and the recovery means are None, not 0 or 1."""
    scn = sim.scenario({"job": [sim.step("plan", 10)]})
    r = sim.run(scn, "blind-retry", "generic")
    m = r.metrics
    assert m["tasks"] == 1.0 and m["faulted_tasks"] == 0.0
    assert m["recovery_rate"] is None
    assert m["mean_steps_to_recovery"] is None and m["mean_time_to_recovery_s"] is None
    assert m["success_rate"] == 1.0 and m["silent_failure_rate"] == 0.0


def test_unfinished_task_at_drain_limit(sim):
    """A task still running at the drain limit is claimed in_flight and counted as unfinished."""
    # horizon 10 s, drain 5 s: the one 20 s step (20.1 s call) is still running at t=15
    scn = sim.scenario({"job": [sim.step("long", 20)]}, duration_s=10)
    r = sim.run(scn, "blind-retry", "generic", drain_s=5.0)
    assert r.output.end_s == 15.0
    # the record names the worker the task was dispatched to, even while it is still running
    assert r.rec.claim == "in_flight" and r.rec.end_s is None and r.rec.worker == 0
    assert r.metrics["unfinished_tasks"] == 1.0
    assert r.metrics["success_rate"] == 0.0 and r.metrics["silent_failure_rate"] == 0.0
    assert r.breakdowns["claims"] == {"in_flight": 1}
