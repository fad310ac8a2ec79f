"""The added run metrics and breakdowns (data loss, pages, percentiles, amplification, by kind/code/tool/worker) by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fleetchaos.results.metrics import compute_run, error_code, pages_of
from fleetchaos.results.registry import DIRECTIONLESS, METRICS, direction
from fleetchaos.sim.kinds import UnknownFaultKind

APPROX = dict(abs=1e-6)


def three_task_world(sim):
    """Task 0 clean on worker 0, task 1 blips once on worker 1, task 2 (fan-out 5) rate-limited on items 3 and 4 on
    worker 2, and passed on as ok by a tool that hides partial batches (partial_batch: ok)."""
    return sim.scenario(
        {
            "local": [sim.step("plan", 10, uses_api=False), sim.step("edit", 10, uses_api=False, disk_mb=10)],
            "batch": [sim.step("search", 10, fan_out=5), sim.step("synth", 10, uses_api=False)],
        },
        arrivals=[(0, "local"), (0, "local"), (0, "batch")],
        faults=[
            {"kind": "network_blip", "probability": 1.0, "workers": [1], "windows": [{"start_s": 0, "duration_s": 0.5}]}
        ],
        workers=3,
        api_rate_per_s=0.01,
        api_burst=3,
        partial_batch="ok",
    )


def run(sim, scenario, policy, errors, **kw):
    r = sim.run(scenario, policy, errors, **kw)
    return compute_run(r.output, scenario.fleet)


def test_new_metrics_on_the_three_task_world(sim):
    """One recovery (2 steps, 21.3 s), 11 calls for 10 logical calls, no escalation, no data loss."""
    scn = three_task_world(sim)
    m, _b, _ = run(sim, scn, "blind-retry", "generic")
    assert set(m) == set(METRICS)
    # logical calls: local 1 + 1, local 1 + 1, batch 5 + 1 = 10 ; tool calls 2 + 3 + 6 = 11
    assert m["logical_calls"] == 10.0 and m["tool_calls"] == 11.0
    assert m["retry_amplification"] == pytest.approx(1.1, **APPROX)
    # the only recovered task: steps_to_recovery 2, time 21.3 s -> every percentile is that value
    assert m["p50_steps_to_recovery"] == m["p95_steps_to_recovery"] == 2.0
    assert m["p50_time_to_recovery_s"] == pytest.approx(21.3, **APPROX)
    assert m["p95_time_to_recovery_s"] == pytest.approx(21.3, **APPROX)
    assert m["data_loss_tasks"] == 0.0 and m["data_loss_rate"] == 0.0
    assert m["escalation_rate"] == 0.0 and m["human_pages"] == 0.0 and m["human_pages_per_day"] == 0.0


def test_breakdowns_by_kind_code_tool_and_worker(sim):
    """The blip (plan, worker 1) and two 429s (search, worker 2) land in every breakdown."""
    _m, b, _ = run(sim, three_task_world(sim), "blind-retry", "generic")
    assert b["fault_hits_by_error_code"] == {"NETWORK_UNREACHABLE": 1, "RATE_LIMITED": 2}
    assert b["fault_hits_by_tool"] == {"plan": 1, "search": 2}
    assert b["fault_hits_by_worker"] == {"1": 1, "2": 2}
    assert b["faulted_tasks_by_first_fault"] == {"network_blip": 1, "rate_limit": 1}
    assert b["recovered_tasks_by_first_fault"] == {"network_blip": 1, "rate_limit": 0}
    assert b["task_counts"] == {
        "common_recovered": 1, "common_set": 2, "data_loss": 0, "escalated": 0, "faulted": 2, "recovered": 1,
        "silent_failures": 1, "successes": 2, "tasks": 3,
    }  # fmt: skip
    # the old breakdowns are still there, unchanged
    assert b["fault_hits_by_kind"] == {"network_blip": 1, "rate_limit": 2}
    assert b["claims"] == {"success": 3}


def test_escalation_rate_and_pages_per_simulated_day(sim):
    """One task escalated in a 10,000 s horizon: escalation rate 1, one page, 8.64 pages per simulated day."""
    scn = sim.scenario(
        {"job": [sim.step("plan", 10), sim.step("push", 5, side_effect="append")]},
        faults=[{"kind": "network_blip", "probability": 1.0, "windows": [{"start_s": 0, "duration_s": 100}]}],
    )
    m, b, _ = run(sim, scn, "structured", "generic")
    assert m["escalations"] == 1.0 and m["escalation_rate"] == 1.0
    assert m["human_pages"] == 1.0
    assert m["human_pages_per_day"] == pytest.approx(86_400 / 10_000, **APPROX)
    assert m["p50_time_to_recovery_s"] is None and m["p95_steps_to_recovery"] is None
    assert b["task_counts"]["escalated"] == 1


def test_unreported_task_is_data_loss(sim):
    """A task still running at the drain limit never reported: one data-loss task, rate 1."""
    scn = sim.scenario({"job": [sim.step("long", 20)]}, duration_s=10)
    m, b, _ = run(sim, scn, "blind-retry", "generic", drain_s=5.0)
    assert m["data_loss_tasks"] == 1.0 and m["data_loss_rate"] == 1.0
    assert m["unfinished_tasks"] == 1.0
    assert b["task_counts"]["data_loss"] == 1


def test_pages_are_the_ledgers_own_count():
    """pages_of reads the record's pages field (the driver adds one per escalation), whatever the claim."""
    assert pages_of(SimpleNamespace(claim="escalated", pages=1)) == 1
    assert pages_of(SimpleNamespace(claim="success", pages=0)) == 0
    assert pages_of(SimpleNamespace(claim="success", pages=3)) == 3


def test_directions_and_error_codes():
    """Directions come from the registry, None for the workload counts; fault kinds map to the contract's codes."""
    assert direction("recovery_rate") is True
    assert direction("retry_amplification") is False and direction("human_pages_per_day") is False
    assert all(direction(name) is None for name in DIRECTIONLESS)
    assert direction("no_such_metric") is None
    assert error_code("expired_key") == "AUTH_EXPIRED"
    with pytest.raises(UnknownFaultKind, match="some_new_kind"):
        error_code("some_new_kind")  # no made-up code for a kind without a record


def test_task_counts_give_one_value_per_name():
    """RunAccumulator sums task_counts with map(), which would stop quietly at a missing value."""
    from fleetchaos.results.metrics import RECORD_COUNTS, TASK_COUNTS, task_counts
    from fleetchaos.results.oracle import verdict
    from fleetchaos.sim.ledger import TaskRecord

    record = TaskRecord(id=0, template="t", title="t", orchestrator=0, arrival_s=0.0, commits=[[1, 0]],
                        append_steps=(0,), executions=[1], claim="partial", calls=7, tokens=11, retries=2,
                        rolled_back=True, deduplicated=3)  # fmt: skip
    counts = task_counts(record, verdict(record))
    assert len(counts) == len(TASK_COUNTS) == len(set(TASK_COUNTS))
    values = dict(zip(TASK_COUNTS, counts))
    assert (values["tasks"], values["calls"], values["tokens"], values["retries"]) == (1, 7, 11, 2)
    assert (values["rollbacks"], values["deduplicated"], values["logical_calls"]) == (1, 3, 2)
    # The tail read straight off the record lines up with its attribute names (one is renamed).
    renamed = {"rolled_back": "rollbacks"}
    assert [renamed.get(name, name) for name in RECORD_COUNTS] == list(TASK_COUNTS[-len(RECORD_COUNTS) :])
