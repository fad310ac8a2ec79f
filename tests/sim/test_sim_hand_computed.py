"""Metrics checked against worlds computed by hand, never against the code's own judge.

Each world here is small enough that every event can be worked out on paper from the
constants of ``tests/sim/conftest.py`` (a round trip of 0.1 s, steps without variance,
explicit arrivals) and the records' fail-fast times; the expected figures below are
those sums, written out as numbers.  None of them is recomputed with
:func:`fleetchaos.results.oracle.judge` or the metrics module: a bug there changes the
figure and fails the test.
"""

from __future__ import annotations

import math

import pytest

from fleetchaos.results.common_set import apply_common_sets, common_counts, common_pair, encode
from fleetchaos.results.metrics import compute_run
from fleetchaos.results.models import RunResult
from fleetchaos.results.oracle import verdict
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.observation import Escalate, GiveUp, Retry
from fleetchaos.sim.waste import SAME_AFTER_HINT, SAME_AGAIN, SAME_BEFORE_HINT


class ByCode:
    """Waits on a timeout for longer than the run lasts, escalates a refusal, retries the rest twice, 5 s apart."""

    name = "by-code"

    def decide(self, observation, history):
        code = observation.envelope.error_code
        if code == "TOOL_TIMEOUT":
            return Retry(delay_s=1e6)  # still waiting when the run stops: the task ends unreported
        if code == "PERMISSION_DENIED":
            return Escalate()
        return Retry(delay_s=5.0) if history.retries < 2 else GiveUp()


def _six_tasks(sim):
    """Six tasks, one story each (times in simulated seconds, a round trip 0.1 s):

    * T0 at 0: ``fetch`` meets a blip (0.1 + 1.0 s), retried 5 s later, succeeds at 6.1 + 5.1 = 11.2 s;
    * T1 at 100: ``gather`` fans out to 3 items, no fault, done at 105.1 s;
    * T2 at 200: ``check`` fails its validation (0.1 + 0.5 s) three times, two retries, gives up at 211.8 s;
    * T3 at 300: ``slow`` hangs to its 30 s timeout but committed; the orchestrator waits past the run's end;
    * T4 at 400: ``read`` takes effect, ``update`` returns an empty success that did not: claimed a success;
    * T5 at 500: ``crm`` is refused (0.1 + 0.3 s), escalated at 500.4 s; the human works on it for an hour.
    """
    templates = {
        "one": [sim.step("fetch", 5, tokens=100)],
        "fan": [sim.step("gather", 5, tokens=10, fan_out=3)],
        "val": [sim.step("check", 1, tokens=7)],
        "slow": [sim.step("slow", 10, tokens=40)],
        "sync": [sim.step("read", 1, tokens=5), sim.step("update", 1, tokens=5)],
        "crm": [sim.step("crm", 2, tokens=3)],
    }
    faults = [
        {"kind": "network_blip", "probability": 1.0, "tools": ["fetch"], "windows": [{"start_s": 0, "duration_s": 1}]},
        {"kind": "validation_error", "probability": 1.0, "tools": ["check"]},
        {"kind": "timeout", "probability": 1.0, "tools": ["slow"], "timeout_s": 30, "committed_probability": 1.0},
        {"kind": "silent_suppression", "probability": 1.0, "tools": ["update"]},
        {"kind": "permission_denied", "probability": 1.0, "tools": ["crm"]},
    ]
    arrivals = [(0.0, "one"), (100.0, "fan"), (200.0, "val"), (300.0, "slow"), (400.0, "sync"), (500.0, "crm")]
    scenario = sim.scenario(
        templates,
        arrivals,
        faults,
        duration_s=1000,
        usd_per_1k_tokens=1.0,
        usd_per_tool_call=0.5,
        usd_per_human_hour=100.0,
        usd_per_silent_failure=1000.0,
        usd_per_undone_task=50.0,
        page_handling={"mean_s": 3600, "cv": 0},
    )
    return sim.run(scenario, ByCode(), "structured"), scenario


def test_six_hand_computed_tasks_give_the_metrics_worked_out_on_paper(sim):
    """Every headline figure of the six-task world, as computed by hand from its story."""
    r, scenario = _six_tasks(sim)
    m, breakdowns, _ = compute_run(r.output, scenario.fleet)  # the whole run: its horizon gives the per-day figures
    assert [rec.claim for rec in r.records] == ["success", "success", "failed", "in_flight", "success", "escalated"]
    # The context each turn reads: the 2000-token system prompt, each result (200) and each error text (its
    # characters / 4, rounded up) that came before it in the task.  T0: 2000, then after the blip's text 2000 + blip;
    # T1: 2000; T2: 2000, 2000 + val, 2000 + 2 val; T3: 2000; T4: 2000, then 2200 after read's result; T5: 2000.
    shown = {report.failure: obs for report, obs in r.rendered if not obs.ok}
    blip, val = (math.ceil(len(shown[kind].rendered_text()) / 4) for kind in ("network_blip", "validation_error"))
    read = 10 * 2000 + blip + 3 * val + 200
    expected = {
        "tasks": 6.0,
        "faulted_tasks": 5.0,  # all but T1
        "recovered_tasks": 1.0,  # T0 only: T4's success is not true
        "success_rate": 2 / 6,  # T0 and T1 complete and claimed
        "recovery_rate": 1 / 5,
        "common_recovery_rate": 1 / 5,  # a lone run's common set is its faulted tasks
        "silent_failure_rate": 1 / 6,  # T4: claimed a success, half done
        "false_alarms": 0.0,  # T3 completed but was never reported on: unfinished, not a false alarm
        "unfinished_tasks": 1.0,
        "data_loss_tasks": 1.0,
        "data_loss_rate": 1 / 6,
        "escalations": 1.0,
        "escalation_rate": 1 / 6,
        "retries": 3.0,  # T0 once, T2 twice (T3's retry never came)
        "wasted_retries": 2.0,  # T2's retries into the same invalid input
        "failed_retries": 2.0,
        "tool_calls": 12.0,  # 2 + 3 + 3 + 1 + 2 + 1
        "logical_calls": 9.0,  # items of the steps: 1 + 3 + 1 + 1 + 2 + 1
        "retry_amplification": 12 / 9,
        # the calls: T0 100 (the failed call ran no model), T1 30, T3 40 (it hung), T4 10 (a masked call ran);
        # and the context the turns read (below)
        "tokens": 180.0 + read,
        "input_tokens": read,
        "human_pages": 1.0,
        "human_hours": 1.0,
        "undone_tasks": 2.0,  # T2 gave up, T3 never reported
        # tokens, the context read, calls, the page, T4's silence, T2 and T3 undone
        "cost_usd": 0.18 + read / 1000 * 0.0025 + 12 * 0.5 + 100.0 + 1000.0 + 2 * 50.0,
        "mean_steps_to_recovery": 1.0,  # T0: one step execution after its first fault
        "mean_time_to_recovery_s": 11.2,  # T0: from its fault at 0 s to its end
        "goodput_per_day": 2 / (1000 / 86400),
        "redone_steps": 0.0,
        "duplicate_side_effects": 0.0,
        "makespan_s": 500.4,  # first arrival 0 s, last end T5's escalation
    }
    assert {name: m[name] for name in expected} == pytest.approx(expected)
    assert breakdowns["wasted_retries_by_reason"] == {"input still invalid": 2}
    assert breakdowns["failed_retries_by_reason"] == {SAME_AGAIN: 2}
    assert breakdowns["claims"] == {"escalated": 1, "failed": 1, "in_flight": 1, "success": 3}
    assert breakdowns["fault_hits_by_error_code"] == {
        "EMPTY_SUCCESS": 1,
        "NETWORK_UNREACHABLE": 1,
        "PERMISSION_DENIED": 1,
        "TOOL_TIMEOUT": 1,
        "VALIDATION_FAILED": 3,
    }
    assert breakdowns["fault_hits_by_kind"] == {
        "network_blip": 1,
        "permission_denied": 1,
        "silent_suppression": 1,
        "timeout": 1,
        "validation_error": 3,
    }


def _record(claim: str, commits: list[list[int]], *, faulted: bool = True, **fields) -> TaskRecord:
    rec = TaskRecord(0, "t", "t", 0, 0.0, commits, (), [1] * len(commits), claim=claim, **fields)
    if faulted:
        rec.note_fault("network_blip", 1.0)
    return rec


#: (claim, commits, faulted) -> (truth, recovered, silent failure, false alarm), each worked out from the definitions.
VERDICTS = [
    ("success", [[1, 1]], True, ("full", True, False, False)),
    ("success", [[1, 1]], False, ("full", False, False, False)),  # nothing to recover from
    ("success", [[1, 0]], True, ("partial", False, True, False)),
    ("success", [[0, 0]], True, ("none", False, True, False)),
    ("failed", [[1, 1]], True, ("full", False, False, True)),
    ("partial", [[1, 1]], True, ("full", False, False, True)),
    ("escalated", [[1], [1]], True, ("full", False, False, True)),
    ("dead_lettered", [[2]], True, ("full", False, False, True)),
    ("in_flight", [[1, 1]], True, ("full", False, False, False)),  # never reported: not a false alarm
    ("failed", [[1], [0]], True, ("partial", False, False, False)),
]


@pytest.mark.parametrize("claim, commits, faulted, expected", VERDICTS)
def test_the_oracle_on_hand_made_records(claim, commits, faulted, expected):
    """Truth, recovery, silent failure and false alarm of hand-made records, from the definitions in docs/metrics.md."""
    v = verdict(_record(claim, commits, faulted=faulted))
    assert (v.truth, v.recovered, v.silent_failure, v.false_alarm) == expected


def test_steps_and_time_to_recovery_count_from_the_first_fault():
    """A task faulted at 40 s on its 3rd step execution, done at 95 s after 7 executions: 4 steps, 55 s."""
    rec = TaskRecord(0, "t", "t", 0, 10.0, [[1]], (), [7], claim="success", end_s=95.0, step_executions=2)
    rec.note_fault("rate_limit", 40.0)  # the 3rd execution met it: 2 were done before
    rec.step_executions = 7
    v = verdict(rec)
    assert (v.steps_to_recovery, v.time_to_recovery_s) == (5, 55.0)


# -- the earliest retry-after of a step -----------------------------------------------------


def test_a_step_reports_its_earliest_retry_after(sim):
    """Two items refused by the bucket name different instants; the step's report passes on the earliest.

    Rate 1 token/s, burst 3, a refused call costs a token.  T0 (3 items at 0 s) takes the
    three tokens.  T1's two items at 0 s: item 0 is refused and charged (tokens -1, a token
    due at 2 s), item 1 is refused and charged (tokens -2, due at 3 s).  Both fail fast
    (0.1 + 0.1 s), so the report at 0.2 s says 2.0 - 0.2 = 1.8 s.
    """
    scenario = sim.scenario(
        {"three": [sim.step("put", 1, fan_out=3)], "two": [sim.step("put", 1, fan_out=2)]},
        [(0.0, "three"), (0.0, "two")],
        api_rate_per_s=1.0,
        api_burst=3,
        api_reject_cost=1.0,
    )
    r = sim.run(scenario, "blind-retry", "structured")
    report = next(rep for rep in r.reports if rep.task_id == 1)
    assert report.failure == "rate_limit" and [i for i, _ in report.item_failures] == [0, 1]
    assert report.retry_after_s == pytest.approx(1.8)


def test_waiters_woken_at_the_hinted_instant_and_refused_again_count_as_after_the_hint(sim):
    """Three tasks at 0 s, one token: T1 and T2 are refused with a token due at 1 s (rate 1/s).

    Both wait exactly the hint (0.8 s from their report at 0.2 s) and retry at 1.0 s, the
    instant itself: T1 takes the token, T2 is refused again at its hinted instant, which
    counts as after it (it obeyed), not before.
    """

    class WaitTheHint:
        name = "wait-the-hint"

        def decide(self, observation, history):
            ms = observation.envelope.retry_after_ms
            return Retry(delay_s=ms / 1000.0) if history.retries < 1 else GiveUp()

    scenario = sim.scenario(
        {"one": [sim.step("put", 1)]}, [(0.0, "one"), (0.0, "one"), (0.0, "one")], api_rate_per_s=1.0, api_burst=1
    )
    r = sim.run(scenario, WaitTheHint(), "structured")
    t0, t1, t2 = r.records
    assert (t0.claim, t1.claim, t2.claim) == ("success", "success", "failed")
    assert t1.failed_retry_reasons == {} and t2.failed_retry_reasons == {SAME_AFTER_HINT: 1}
    assert SAME_BEFORE_HINT not in t2.failed_retry_reasons


# -- the common set -----------------------------------------------------------------------


def _run(policy: str, faulted: set[int], succeeded: set[int]) -> RunResult:
    def bits(ids: set[int]) -> bytes:
        out = bytearray(4)
        for i in ids:
            out[i // 8] |= 1 << (i % 8)
        return bytes(out)

    return RunResult(
        scenario="s",
        policy=policy,
        errors="structured",
        seed=1,
        metrics={},
        breakdowns={},
        fault_schedule=[],
        replay="",
        task_sets={"faulted": encode(bits(faulted)), "succeeded": encode(bits(succeeded))},
    )


def test_the_common_set_is_every_task_faulted_in_any_arm():
    """Arm A faulted on tasks 0, 1; arm B on 1, 2: the common set is {0, 1, 2} for both.

    A recovered 0 and 2 (2 was never faulted for it) and also completed 5 (outside the
    set): 2 of 3.  B recovered 1 only: 1 of 3.
    """
    a, b = _run("a", {0, 1}, {0, 2, 5}), _run("b", {1, 2}, {1})
    apply_common_sets([a, b])
    assert a.metrics["common_recovery_rate"] == pytest.approx(2 / 3)
    assert b.metrics["common_recovery_rate"] == pytest.approx(1 / 3)
    assert a.breakdowns["task_counts"] == {"common_recovered": 2, "common_set": 3}
    assert common_counts(0b111, a.task_sets) == (2, 3)
    assert common_pair(a.task_sets, b.task_sets) == pytest.approx((2 / 3, 1 / 3))
