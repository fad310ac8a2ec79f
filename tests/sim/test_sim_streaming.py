"""Streamed runs: records handed to a sink as tasks end, metrics folded as they arrive.

Three claims, each against the list-based way (a world that keeps every record):

* the running aggregates give exactly the metrics, breakdowns and samples the old
  list-based computation gives (same floats, bit for bit), on runs with recovered,
  unfinished and lost tasks, open and closed loops;
* a streamed world keeps no finished record: at every instant the task records alive are
  at most the tasks in flight, not the tasks so far;
* streaming changes nothing in the simulation: the same records, trace and faults, so
  the determinism check (which keeps records) still speaks for streamed runs.
"""

from __future__ import annotations

import csv
import dataclasses
import gc
import io
import operator
from collections import Counter

import pytest

import fleetchaos.catalogue as catalogue
from fleetchaos.escaping import csv_row
from fleetchaos.policies import get_policy
from fleetchaos.results.common_set import decode
from fleetchaos.results.metrics import WASTE_FAMILIES, RunAccumulator, compute_run, error_code, pages_of
from fleetchaos.results.models import rounded
from fleetchaos.results.oracle import judge
from fleetchaos.results.stats import percentile
from fleetchaos.results.task_rows import CSV_LEAD, outcome_row
from fleetchaos.runs import runner
from fleetchaos.runs.determinism import check_determinism
from fleetchaos.scenario.load import load_scenario
from fleetchaos.scenario.params import apply_params
from fleetchaos.sim.config import DAY_S
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.workload import is_closed_loop
from fleetchaos.sim.world import World


def creation_order(record) -> tuple[float, int]:
    """The order a world creates records in: tasks start at their arrival, ties in id order."""
    return (record.arrival_s, record.id)


# -- the list-based computation, written out plainly -------------------------------------


def reference(records: list[TaskRecord], fault_log: list[tuple], fleet, duration_s: float, closed_loop: bool = False):
    """(metrics, breakdowns, samples) of a run from all its records and its fault log, the
    way fleetchaos computed them before streaming: judge every record into a list, then
    one pass over that list per figure, floats summed in record order.  A closed-loop
    run has no common set (its tasks are its own)."""
    outcomes = [judge(r) for r in records]
    tasks = len(outcomes)
    faulted = [o for o in outcomes if o.faulted]
    recovered = [o for o in faulted if o.recovered]
    claims = Counter(o.claim for o in outcomes)
    steps_list = [o.steps_to_recovery for o in recovered]
    times_list = [o.time_to_recovery_s for o in recovered]
    logical = sum(len(step) for r in records for step in r.commits)
    tool_calls = float(sum(o.calls for o in outcomes))
    pages = sum(pages_of(r) for r in records)
    unreported = sum(o.claim == "in_flight" for o in outcomes)
    human_ms = sum(round(r.human_s * 1000.0) for r in records)
    transport = sum(r.transport_retries for r in records)
    compensations = sum(r.compensations for r in records)
    ended = [r.end_s for r in records if r.end_s is not None]
    successes = sum(o.truth == "full" and o.claim == "success" for o in outcomes)
    read = sum(r.input_tokens for r in records)
    token_cost = (sum(o.tokens for o in outcomes) - read) / 1000.0 * fleet.usd_per_1k_tokens
    token_cost += read / 1000.0 * fleet.model.usd_per_1k_input_tokens
    tool_cost = sum(o.calls for o in outcomes) * fleet.usd_per_tool_call
    human_cost = human_ms / 3_600_000.0 * fleet.usd_per_human_hour
    silent = sum(o.silent_failure for o in outcomes)
    undone = sum(o.claim in ("failed", "partial", "dead_lettered", "in_flight") for o in outcomes)
    refused = sum(r.fault_hits.get(k, 0) for r in records for k in ("rate_limit", "quota_exhausted", "overloaded"))
    silent_cost = silent * fleet.usd_per_silent_failure
    undone_cost = undone * fleet.usd_per_undone_task
    refused_cost = refused * fleet.usd_per_refused_call
    metrics = {
        "success_rate": successes / tasks if tasks else None,
        # a lone run's common set is its own faulted tasks
        "common_recovery_rate": len(recovered) / len(faulted) if faulted and not closed_loop else None,
        "goodput_per_day": successes / (duration_s / DAY_S),
        "silent_failure_rate": sum(o.silent_failure for o in outcomes) / tasks if tasks else None,
        "wasted_retries": float(sum(o.wasted_retries for o in outcomes)),
        "failed_retries": float(sum(r.failed_retries for r in records)),
        "recovery_rate": len(recovered) / len(faulted) if faulted else None,
        "tasks": float(tasks),
        "faulted_tasks": float(len(faulted)),
        "recovered_tasks": float(len(recovered)),
        "tool_calls": tool_calls,
        "tokens": float(sum(o.tokens for o in outcomes)),
        "input_tokens": float(read),
        "cost_usd": token_cost + tool_cost + human_cost + silent_cost + undone_cost + refused_cost,
        "token_cost_usd": token_cost,
        "tool_call_cost_usd": tool_cost,
        "human_cost_usd": human_cost,
        "silent_failure_cost_usd": silent_cost,
        "undone_task_cost_usd": undone_cost,
        "refused_call_cost_usd": refused_cost,
        "retries": float(sum(o.retries for o in outcomes)),
        "redone_steps": float(sum(o.redone_steps for o in outcomes)),
        "duplicate_side_effects": float(sum(o.duplicate_side_effects for o in outcomes)),
        "escalations": float(claims["escalated"]),
        "false_alarms": float(sum(o.false_alarm for o in outcomes)),
        "unfinished_tasks": float(claims["in_flight"]),
        "undone_tasks": float(undone),
        "refused_calls": float(refused),
        "policy_errors": float(sum(o.policy_error is not None for o in outcomes)),
        "mean_steps_to_recovery": sum(steps_list) / len(steps_list) if steps_list else None,
        "mean_time_to_recovery_s": sum(times_list) / len(times_list) if times_list else None,
        "data_loss_tasks": float(unreported),
        "data_loss_rate": unreported / tasks if tasks else None,
        "escalation_rate": claims["escalated"] / tasks if tasks else None,
        "human_pages": float(pages),
        "human_pages_per_day": pages / (duration_s / DAY_S),
        "p50_steps_to_recovery": percentile([float(s) for s in steps_list], 50),
        "p95_steps_to_recovery": percentile([float(s) for s in steps_list], 95),
        "p50_time_to_recovery_s": percentile(times_list, 50),
        "p95_time_to_recovery_s": percentile(times_list, 95),
        "logical_calls": float(logical),
        "retry_amplification": tool_calls / logical if logical else None,
        "secrets_leaked": float(sum(r.secrets_leaked for r in records)),
        "schema_skews": float(sum(r.schema_skews for r in records)),
        "misreads": float(sum(r.misreads for r in records)),
        "model_give_ups": float(sum(r.model_gave_up for r in records)),
        "model_permanent_retries": float(sum(r.model_retried_permanent for r in records)),
        "silent_noticed": float(sum(r.silent_noticed for r in records)),
        "misreported_failures": float(sum(r.misreported for r in records)),
        "human_hours": human_ms / 3_600_000.0,
        "remediations": float(sum(r.remediations for r in records)),
        "failed_remediations": float(sum(r.remediations_failed for r in records)),
        "transport_retries": float(transport),
        "transport_amplification": tool_calls / (tool_calls - transport) if tool_calls else None,
        "agent_amplification": (tool_calls - transport - compensations) / logical if logical else None,
        "rollbacks": float(sum(r.rolled_back for r in records)),
        "dead_letters": float(claims["dead_lettered"]),
        "deduplicated_side_effects": float(sum(r.deduplicated for r in records)),
        "partial_results": float(claims["partial"]),
        **{
            name: float(sum((r.model_turns or {}).get(action, 0) for r in records))
            for name, action in (
                ("repair_turns", "repair"),
                ("schema_reprompts", "reprompt"),
                ("fallback_turns", "fallback"),
                ("stream_resumes", "resume"),
                ("compactions", "compact"),
            )
        },
        "failed_compactions": float(sum(r.compactions_failed for r in records)),
        "makespan_s": max(ended) - min(r.arrival_s for r in records) if ended else None,
    }
    by_reason: Counter = Counter()
    by_kind: Counter = Counter()
    by_family: Counter = Counter()
    failed_by_kind: Counter = Counter()
    failed_by_reason: Counter = Counter()
    for r in records:
        failed_by_kind.update(r.failed_retry_kinds)
        failed_by_reason.update(r.failed_retry_reasons)
        by_reason.update(r.wasted_reasons)
        by_kind.update(r.fault_hits)
        for reason, n in r.wasted_reasons.items():
            by_family[WASTE_FAMILIES.get(reason, reason)] += n
    first: Counter = Counter()
    first_recovered: Counter = Counter()
    for o in faulted:
        first[o.first_fault] += 1
        first_recovered[o.first_fault] += o.recovered
    by_code = Counter(error_code(kind) for _, kind, _, _, _ in fault_log)
    by_tool = Counter(tool for _, _, tool, _, _ in fault_log)
    by_worker = Counter(worker for _, _, _, worker, _ in fault_log)
    counts = {
        "tasks": tasks,
        "faulted": len(faulted),
        "recovered": len(recovered),
        "successes": sum(o.truth == "full" and o.claim == "success" for o in outcomes),
        "silent_failures": sum(o.silent_failure for o in outcomes),
        "escalated": claims["escalated"],
        "data_loss": unreported,
    }
    if not closed_loop:
        counts.update(common_set=len(faulted), common_recovered=len(recovered))
    breakdowns = {
        "claims": dict(sorted(claims.items())),
        "failed_retries_by_kind": dict(sorted(failed_by_kind.items())),
        "failed_retries_by_reason": dict(sorted(failed_by_reason.items())),
        "fault_hits_by_error_code": dict(sorted(by_code.items())),
        "fault_hits_by_kind": dict(sorted(by_kind.items())),
        "fault_hits_by_tool": dict(sorted(by_tool.items())),
        "fault_hits_by_worker": {str(w): n for w, n in sorted(by_worker.items())},
        "faulted_tasks_by_first_fault": dict(sorted(first.items())),
        "misreported_failures_by_way": dict(
            sorted(sum((Counter(r.misreported_ways) for r in records), Counter()).items())
        ),
        "recovered_tasks_by_first_fault": dict(sorted(first_recovered.items())),
        "policy_errors_by_message": dict(sorted(Counter(r.policy_error for r in records if r.policy_error).items())),
        "task_counts": dict(sorted(counts.items())),
        "wasted_retries_by_family": dict(sorted(by_family.items())),
        "wasted_retries_by_reason": dict(sorted(by_reason.items())),
    }
    samples = {
        "steps_to_recovery": sorted(float(s) for s in steps_list),
        "time_to_recovery_s": sorted(rounded(t) for t in times_list),
    }
    return metrics, breakdowns, samples, outcomes


# -- runs under test -----------------------------------------------------------------------


def _lost_with_crashes():
    """crash_and_partition with no heartbeat timeout: dispatches lost with a node are never noticed."""
    scenario, _ = apply_params(
        load_scenario("crash_and_partition"), [("fleet.heartbeat_timeout_s", None)], source="test"
    )
    return scenario


def _cut_short(name: str):
    """A catalogue scenario whose horizon ends at 14:00, the busiest hour: run with no
    drain, the tasks in flight then stay unfinished."""
    scenario, _ = apply_params(load_scenario(name), [("duration_s", 14 * 3600.0)], source="test")
    return scenario


#: (label, scenario factory, policy, errors, seed, World keyword arguments)
CASES = [
    ("default", lambda: load_scenario("default"), "structured", "structured", 3, {}),
    ("default-blind", lambda: load_scenario("default"), "blind-retry", "generic", 4, {}),
    ("crash_and_partition", lambda: load_scenario("crash_and_partition"), "structured", "structured", 2, {}),
    ("crash-lost-tasks", _lost_with_crashes, "backoff", "generic", 8, {}),  # seed 8 loses a task
    ("closed_loop_quota", lambda: load_scenario("closed_loop_quota"), "structured", "structured", 1, {}),
    ("closed_loop_quota-blind", lambda: load_scenario("closed_loop_quota"), "blind-retry", "generic", 2, {}),
    ("flaky_network-cut-short", lambda: _cut_short("flaky_network"), "structured", "structured", 1,
     {"drain_s": 0.0}),
    ("closed_loop_quota-cut-short", lambda: _cut_short("closed_loop_quota"), "structured", "structured", 1,
     {"drain_s": 0.0}),
]  # fmt: skip


def _world(scenario, policy, errors, seed, **kw) -> World:
    return World(scenario, get_policy(policy), get_format(errors), seed, **kw)


@pytest.mark.parametrize("label, make, policy, errors, seed, kw", CASES, ids=[c[0] for c in CASES])
def test_running_aggregates_equal_the_list_based_computation(label, make, policy, errors, seed, kw):
    """Streamed: every metric (bit for bit), breakdown and sample equals the plain list-based
    recomputation from the kept records; so does compute_run, the wrapper on kept records."""
    scenario = make()
    kept = _world(scenario, policy, errors, seed, **kw).run()
    expected_metrics, expected_breakdowns, expected_samples, _ = reference(
        kept.records, kept.fault_log, scenario.fleet, scenario.duration_s
    )
    acc = RunAccumulator(scenario.fleet, duration_s=scenario.duration_s)
    streamed = _world(scenario, policy, errors, seed, sink=acc.add, **kw).run()
    acc.add_faults(streamed.fault_tally)

    assert acc.metrics() == expected_metrics
    assert list(acc.metrics()) == list(expected_metrics)  # the order results serialise in
    assert acc.breakdowns() == expected_breakdowns
    assert acc.samples() == expected_samples
    metrics, breakdowns, _ = compute_run(kept, scenario.fleet)
    assert (metrics, breakdowns) == (expected_metrics, expected_breakdowns)

    # The cases cover what they are here for.
    claims = expected_breakdowns["claims"]
    assert expected_metrics["recovered_tasks"] > 0 or label == "crash-lost-tasks"
    if label == "crash-lost-tasks" or "cut-short" in label:
        assert claims.get("in_flight", 0) > 0, "tasks unfinished or lost at the end of the run"
    if label.startswith("closed_loop"):
        assert [r.id for r in kept.records] != sorted(r.id for r in kept.records), "creation order is not id order"


def _recovered_task(task_id: int, arrival_s: float, time_to_recovery_s: float) -> TaskRecord:
    return TaskRecord(
        id=task_id, template="t", title="t", orchestrator=0, arrival_s=arrival_s, commits=[[1]], append_steps=(),
        executions=[2], claim="success", fault_hits={"network_blip": 1}, first_fault="network_blip",
        first_fault_s=arrival_s, end_s=arrival_s + time_to_recovery_s, step_executions=2,
    )  # fmt: skip


def test_the_float_sum_runs_in_creation_order_whatever_order_records_arrive_in():
    """Float addition depends on order (1e16 + 1 + 1 != 1 + 1 + 1e16): the mean time to
    recovery adds in creation order, as the list-based computation on kept records does,
    however a sink delivers the records."""
    records = [_recovered_task(0, 0.0, 1e16), _recovered_task(1, 5.0, 1.0), _recovered_task(2, 5.0, 1.0)]
    times = [r.end_s - r.first_fault_s for r in records]
    assert sum(times) != sum(reversed(times))  # the trap is real
    expected = reference(records, [], load_scenario("default").fleet, DAY_S)[0]
    for order in (records, records[::-1], [records[1], records[0], records[2]]):
        acc = RunAccumulator(load_scenario("default").fleet, duration_s=DAY_S)
        for r in order:
            acc.add(r)
        assert acc.metrics() == expected
        assert acc.metrics()["mean_time_to_recovery_s"] == sum(times) / 3


@pytest.mark.parametrize("label", ["closed_loop_quota", "crash-lost-tasks"])
def test_run_one_streams_the_result_the_kept_records_give(label):
    """run_one (which streams) gives the metrics, breakdowns, samples and per-task rows, in
    creation order, that the list-based computation gives on the kept records."""
    _, make, policy, errors, seed, _ = next(c for c in CASES if c[0] == label)
    scenario = make()
    kept = _world(scenario, policy, errors, seed).run()
    closed_loop = is_closed_loop(scenario.workload)
    metrics, breakdowns, samples, outcomes = reference(
        kept.records, kept.fault_log, scenario.fleet, scenario.duration_s, closed_loop
    )
    result = runner.run_one(scenario, policy, errors, seed, keep_tasks=True)
    assert result.metrics == {k: rounded(v) for k, v in metrics.items()}
    if closed_loop:
        assert result.task_sets == {}
    else:  # the bitmaps hold exactly the ids of the faulted and of the truly successful tasks
        faulted = {o.id for o in outcomes if o.faulted}
        succeeded = {o.id for o in outcomes if o.truth == "full" and o.claim == "success"}
        assert {i for i in range(len(outcomes) + 8) if decode(result.task_sets["faulted"]) >> i & 1} == faulted
        assert {i for i in range(len(outcomes) + 8) if decode(result.task_sets["succeeded"]) >> i & 1} == succeeded
        assert faulted and succeeded
    assert result.breakdowns == breakdowns
    assert result.samples == samples
    assert result.tasks == [outcome_row(o) for o in outcomes]
    assert runner.run_one(scenario, policy, errors, seed).tasks == []
    # As tasks.csv lines: what csv.DictWriter writes of the same rows, escaped, in task id order.
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[*CSV_LEAD, *result.tasks[0]], lineterminator="\n")
    for row in sorted(result.tasks, key=lambda row: row["id"]):
        writer.writerow(csv_row({"policy": policy, "errors": errors, "seed": seed, **row}))
    lines = runner.run_one(scenario, policy, errors, seed, task_csv=True).tasks_csv
    assert lines == (out.getvalue(), len(outcomes))


@pytest.mark.slow  # about 13 s of simulation; make test-all runs it
def test_streamed_records_are_the_kept_records_in_creation_order():
    """On every catalogue scenario: a kept run's records are in creation order (arrival_s,
    then id: the order the running aggregates sum floats in); a streamed run hands over
    exactly those records, each once, with the same trace and faults."""
    for name in catalogue.names():
        scenario = load_scenario(name)
        kept = _world(scenario, "structured", "structured", 1, trace=True).run()
        assert kept.records == sorted(kept.records, key=creation_order), name
        handed: list[TaskRecord] = []
        streamed = _world(scenario, "structured", "structured", 1, trace=True, sink=handed.append).run()
        assert streamed.records is None
        assert len({r.id for r in handed}) == len(handed) == len(kept.records), name
        assert [dataclasses.asdict(r) for r in sorted(handed, key=creation_order)] == [
            dataclasses.asdict(r) for r in kept.records
        ], name
        assert streamed.trace == kept.trace, name
        assert streamed.fault_log == kept.fault_log, name  # kept while tracing: the timeline draws it
        assert streamed.fault_tally == kept.fault_tally == Counter((k, t, w) for _, k, t, w, _ in kept.fault_log), name
        assert streamed.end_s == kept.end_s


def test_a_streamed_run_without_trace_keeps_no_fault_log():
    """Without a trace, a streamed run keeps the fault tally only (the log grows with the run)."""
    scenario = load_scenario("flaky_network")
    out = _world(scenario, "structured", "structured", 1, sink=lambda record: None).run()
    assert out.records is None and out.fault_log is None
    assert sum(out.fault_tally.values()) > 0
    with pytest.raises(ValueError, match="streamed"):
        compute_run(out, scenario.fleet)


def test_unfinished_tasks_are_handed_over_once_in_a_deterministic_order():
    """Tasks still in flight when the run stops are handed over at its end, in creation
    order, after every finished task; two runs hand over the same records in the same order."""
    scenario = _cut_short("rate_limit_storm")
    orders = []
    for _ in range(2):
        handed: list[TaskRecord] = []
        _world(scenario, "structured", "structured", 1, drain_s=0.0, sink=handed.append).run()
        orders.append([(r.id, r.claim) for r in handed])
        unfinished = [r for r in handed if r.claim == "in_flight"]
        assert len(unfinished) > 1 and handed[-len(unfinished) :] == unfinished
        assert unfinished == sorted(unfinished, key=creation_order)
    assert orders[0] == orders[1]


# -- bounded memory ------------------------------------------------------------------------

PROBE_EVERY_S = 3 * 3600.0


def _live_records() -> int:
    # counted in C (a generator over every object of a long session's worker took seconds a test)
    return operator.countOf(map(type, gc.get_objects()), TaskRecord)


class ProbedWorld(World):
    """A world that counts the TaskRecord objects alive every few simulated hours.

    Each probe counts every TaskRecord in the interpreter (minus those alive before the
    run), so a record kept anywhere (the world, the sink, the accumulator, a cycle the
    paused collector has not freed) is counted.  The sink is wrapped to note each task's
    arrival and end, which gives the tasks in flight at each probe afterwards.
    """

    def __init__(self, *args, sink=None, **kw):
        self.spans: list[tuple[float, float | None]] = []
        self.probes: list[tuple[float, int]] = []
        wrapped = None
        if sink is not None:

            def wrapped(record):
                self.spans.append((record.arrival_s, record.end_s))
                sink(record)

        super().__init__(*args, sink=wrapped, **kw)

    def run(self):
        before = _live_records()

        def probe():
            while self.env.now + PROBE_EVERY_S < self.spec.duration_s:
                yield self.env.timeout(PROBE_EVERY_S)
                self.probes.append((self.env.now, _live_records() - before))

        self.env.process(probe())
        return super().run()

    def in_flight(self, t: float) -> int:
        """Tasks that had arrived and not ended at ``t`` (ends at ``t`` counted in)."""
        return sum(a <= t and (e is None or e >= t) for a, e in self.spans)


def _check_bounded(world: ProbedWorld, tasks: int) -> None:
    assert len(world.probes) >= 6
    for t, live in world.probes:
        assert live <= world.in_flight(t), f"{live} records alive at t={t:g} s, {world.in_flight(t)} tasks in flight"
    assert max(live for _, live in world.probes) < tasks / 10  # far below what a kept run holds


def test_a_streamed_world_keeps_no_finished_record():
    """At every probe the records alive are at most the tasks in flight; a kept run, for
    contrast, holds every record so far."""
    scenario = load_scenario("default")
    was = gc.isenabled()
    gc.disable()  # as in run_one: nothing may rely on the cyclic collector to free records
    try:
        streamed = ProbedWorld(scenario, get_policy("structured"), get_format("structured"), 1, sink=lambda r: None)
        streamed.run()
        kept = ProbedWorld(scenario, get_policy("structured"), get_format("structured"), 1)
        kept_out = kept.run()
    finally:
        if was:
            gc.enable()
    tasks = len(kept_out.records)
    assert len(streamed.spans) == tasks > 500
    _check_bounded(streamed, tasks)
    # The probe sees retention when there is some: the kept run's count only grows.
    counts = [live for _, live in kept.probes]
    assert counts == sorted(counts) and counts[-1] > tasks / 2


# A default day under the probe each (about 2.6 s of CPU): the kept-rows case runs in make test, the
# other two (no rows, rows as CSV) in make test-all.
SLOW = pytest.mark.slow


@pytest.mark.parametrize("keep_tasks", [pytest.param(False, marks=SLOW), True, pytest.param("csv", marks=SLOW)])
def test_run_one_holds_no_record_of_a_finished_task(monkeypatch, keep_tasks):
    """Through run_one (sink, running aggregates, per-task rows when asked): no record of
    a finished task stays alive during the run."""
    worlds: list[ProbedWorld] = []

    class Captured(ProbedWorld):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            worlds.append(self)

    monkeypatch.setattr(runner, "World", Captured)
    rows = {"keep_tasks": keep_tasks is True, "task_csv": keep_tasks == "csv"}
    result = runner.run_one(load_scenario("default"), "blind-retry", "generic", 2, **rows)
    [world] = worlds
    tasks = int(result.metrics["tasks"])
    assert len(world.spans) == tasks and len(result.tasks) == (tasks if keep_tasks is True else 0)
    assert result.tasks_csv == (None if keep_tasks != "csv" else (result.tasks_csv[0], tasks))
    _check_bounded(world, tasks)


# -- determinism ---------------------------------------------------------------------------


def test_the_determinism_check_still_passes_and_sees_every_record():
    """check_determinism (kept records, trace and fault log) passes on streamed-arm scenarios."""
    assert (
        check_determinism(load_scenario("closed_loop_quota"), "closed_loop_quota", [("structured", "structured")], [1])
        == []
    )
    assert check_determinism(_lost_with_crashes(), "crash_and_partition", [("backoff", "generic")], [1]) == []
