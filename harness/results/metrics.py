"""Metrics of one run, computed from the oracle's verdicts and the ledger.

:class:`RunAccumulator` folds task records one at a time (as a streamed run hands them over);
:func:`compute` and :func:`compute_run` wrap it for runs that kept their records.  Names,
definitions and directions: :mod:`fleetchaos.results.registry` (docs/metrics.md), in whose order
:meth:`RunAccumulator.metrics` returns them.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

from fleetchaos.results.common_set import TaskIdSets
from fleetchaos.results.models import rounded
from fleetchaos.results.oracle import TaskOutcome, Verdict, judge, verdict
from fleetchaos.results.stats import percentile
from fleetchaos.results.token_cost import token_cost_usd
from fleetchaos.sim.config import DAY_S, FleetSpec
from fleetchaos.sim.kinds import REFUSAL_KINDS, fault_kind, waste_families
from fleetchaos.sim.ledger import TRUTH_FULL, TaskRecord
from fleetchaos.sim.model_turns import COMPACT, FALLBACK, REPAIR, REPROMPT, RESUME

if TYPE_CHECKING:
    from fleetchaos.sim.world import RunOutput  # SimPy: for the type checker only

#: Claims that mean the orchestrator never reported on the task at all.
UNREPORTED_CLAIMS = frozenset({"in_flight"})

#: Claims of a task the fleet did not finish: reported as not done, or never reported.  Each
#: costs ``fleet.usd_per_undone_task`` (someone must take it up); an escalated task costs its
#: page instead (``fleet.page_handling``).
UNDONE_CLAIMS = ("failed", "partial", "dead_lettered", *sorted(UNREPORTED_CLAIMS))


def pages_of(record: TaskRecord) -> int:
    """Human pages a task caused: one per escalation (``TaskRecord.pages``)."""
    return record.pages


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


#: The family of each wasted-retry reason the driver records (each fault kind's
#: ``FaultKind.waste`` in fleetchaos.sim.kinds).  Retries past a deadline or call budget
#: cannot happen: the orchestrator stops a task at its limit before asking the policy
#: (TaskRecord.stopped_by), so that family has no reasons.
WASTE_FAMILIES: dict[str, str] = waste_families()


def error_code(kind: str) -> str:
    """The structured contract's error code for a fault kind (an unknown kind is an error)."""
    return fault_kind(kind).contract.error_code


#: The model-side recovery actions a task's record counts (``TaskRecord.model_turns``), each a count of its own.
_MODEL_ACTIONS = (REPAIR, REPROMPT, FALLBACK, RESUME, COMPACT)
MODEL_ACTION_COUNTS = ("repair_turns", "schema_reprompts", "fallback_turns", "stream_resumes", "compactions")
_NO_ACTIONS = (0,) * len(_MODEL_ACTIONS)


#: Per-task integer counts a run sums, in the order :func:`task_counts` returns them.
#: Every metric and breakdown that is a sum over tasks, or a ratio of such sums, reads
#: these totals.  Adding such a metric is one name here, one value in
#: :func:`task_counts` and one line in :meth:`RunAccumulator.metrics` (or
#: :meth:`RunAccumulator.breakdowns`); the runner, the world and the wrappers below need
#: no change.  Counts of claims and policy errors are not here: the accumulator's ``claims``
#: and ``policy_errors`` counters already hold them (:meth:`RunAccumulator.totals`).
_COMPUTED_COUNTS: tuple[str, ...] = (
    "tasks",
    "faulted",
    "recovered",
    "successes",
    "silent_failures",
    "false_alarms",
    "pages",
    "logical_calls",
    "human_ms",
    "duplicate_side_effects",
    "refused_calls",
    *MODEL_ACTION_COUNTS,
)

#: The tail of TASK_COUNTS read straight off the record: TaskRecord attribute names, in order (one is renamed).
RECORD_COUNTS: tuple[str, ...] = (
    "calls",
    "tokens",
    "input_tokens",
    "retries",
    "wasted_retries",
    "failed_retries",
    "redone_steps",
    "secrets_leaked",
    "schema_skews",
    "misreads",
    "misreported",
    "model_gave_up",
    "model_retried_permanent",
    "silent_noticed",
    "remediations",
    "remediations_failed",
    "transport_retries",
    "compensations",
    "rolled_back",
    "deduplicated",
    "fallback_tokens",
    "fallback_input_tokens",
    "compactions_failed",
)
TASK_COUNTS: tuple[str, ...] = (*_COMPUTED_COUNTS, *({"rolled_back": "rollbacks"}.get(n, n) for n in RECORD_COUNTS))
_record_counts = attrgetter(*RECORD_COUNTS)  # one C call for all of them: this runs once per task


def _refusals(hits: Mapping[str, int]) -> int:
    """Requests of a task the API or a provider refused (:data:`fleetchaos.sim.kinds.REFUSAL_KINDS`)."""
    return sum(hits.get(kind, 0) for kind in REFUSAL_KINDS)


def task_counts(record: TaskRecord, judged: Verdict) -> tuple[int, ...]:
    """One task's value of each of :data:`TASK_COUNTS`, in that order (booleans count as 0 or 1)."""
    claim = record.claim
    return (
        1,
        judged.faulted,
        judged.recovered,
        judged.truth == TRUTH_FULL and claim == "success",
        judged.silent_failure,
        judged.false_alarm,
        pages_of(record),
        sum(map(len, record.commits)) + record.extra_turns,  # the workload, and the turns a real loop took
        round(record.human_s * 1000.0),  # whole milliseconds: an integer sum, exact in any order
        record.duplicate_side_effects,
        _refusals(record.fault_hits) if record.fault_hits else 0,
        *(_NO_ACTIONS if record.model_turns is None else map(record.model_turns.get, _MODEL_ACTIONS, _NO_ACTIONS)),
        *_record_counts(record),
    )


#: The TASK_COUNTS totals the ``task_counts`` breakdown reports: the numerators and
#: denominators of the pooled task-level rates (fleetchaos.results.registry.POOLED_RATES).
POOLED_COUNTS = (
    "tasks",
    "faulted",
    "recovered",
    "successes",
    "silent_failures",
    "escalated",
    "data_loss",
    "common_set",
    "common_recovered",
)

#: The breakdowns :func:`compute` returns (from the records alone), in its order.
RECORD_BREAKDOWNS = (
    "wasted_retries_by_reason",
    "failed_retries_by_kind",
    "failed_retries_by_reason",
    "fault_hits_by_kind",
    "claims",
)


#: Tasks whose counts are summed together: bounded memory, one C-level column sum per block.
_SUM_EVERY = 256


class RunAccumulator:
    """Running aggregates of one run: task records folded in one at a time, in any order.

    The one implementation of a run's metrics: :func:`compute` and :func:`compute_run`
    fold a list of records through it, and :func:`fleetchaos.runs.runner.run_one` folds each
    record as the world hands it over (``World(..., sink=acc.add)``), so no per-task
    record outlives its task.  What it keeps grows only with the recovered tasks: their
    steps and time to recovery, needed whole for exact percentiles and the samples.

    Float results do not depend on the order records arrive in: the one float sum (the
    mean time to recovery) adds the recovered tasks' times in the world's creation order,
    by ``(arrival_s, id)``, the order of :attr:`RunOutput.records` (tasks start at their
    arrival; tasks arriving at the same instant start in id order).  Every other total is
    a sum of integers.
    """

    def __init__(
        self,
        fleet: FleetSpec | None,
        *,
        duration_s: float | None = None,
        goodput_bin_s: float | None = None,
        closed_loop: bool = False,
    ):
        """``fleet`` prices ``cost_usd``; ``duration_s`` (the horizon) gives the per-day figures;
        ``goodput_bin_s`` adds the ``goodput_by_time`` breakdown in bins that long; ``closed_loop``
        (clients submitting as their tasks end) leaves the common set undefined."""
        self.fleet = fleet
        self.duration_s = duration_s
        self.goodput_bin_s = goodput_bin_s
        self.goodput: Counter[int] = Counter()  # bin -> tasks that completed in truth and in claim, by end
        self.closed_loop = closed_loop
        self.task_ids = TaskIdSets()
        self._sums: list[int] = [0] * len(TASK_COUNTS)  # in TASK_COUNTS order
        self._pending: list[tuple[int, ...]] = []  # counts of tasks not yet summed (at most _SUM_EVERY)
        self.claims: Counter[str] = Counter()
        self.wasted_by_reason: Counter[str] = Counter()
        self.failed_by_kind: Counter[str] = Counter()
        self.failed_by_reason: Counter[str] = Counter()
        self.fault_hits_by_kind: Counter[str] = Counter()
        self.misreported_by_way: Counter[str] = Counter()
        self.faulted_by_first: Counter[str] = Counter()
        self.recovered_by_first: Counter[str] = Counter()
        self.fault_calls: Counter[tuple[str, str, int]] = Counter()  # (kind, tool, worker): the fault log, tallied
        # Counted per message, not per policy: the report names each distinct problem.  The driver
        # truncates messages to 500 characters; a message that varies per task is one entry each.
        self.policy_errors: Counter[str] = Counter()
        self.stopped_by: Counter[str] = Counter()  # the orchestrator's own limits that ended tasks
        self.layer_tries: list[int] = []  # tries of each transport layer, nearest the tool first
        self.throttled = 0  # dispatches a policy refused locally before they went out (before_dispatch)
        self.first_arrival_s = math.inf
        self.last_end_s = -math.inf
        # (arrival_s, id, steps_to_recovery, time_to_recovery_s) of each recovered task: the
        # only per-task values kept, because exact percentiles and samples need them all.
        self._recoveries: list[tuple[float, int, int, float]] = []

    @property
    def totals(self) -> dict[str, int]:
        """The sum of each of :data:`TASK_COUNTS` over the tasks folded in so far, and the
        task counts the claim and policy-error counters give."""
        self._sum_pending()
        totals = dict(zip(TASK_COUNTS, self._sums))
        claims = self.claims
        totals["escalated"] = claims["escalated"]
        totals["unfinished"] = claims["in_flight"]
        totals["data_loss"] = sum(claims[claim] for claim in UNREPORTED_CLAIMS)
        totals["dead_letters"] = claims["dead_lettered"]
        totals["partial"] = claims["partial"]
        totals["undone"] = sum(claims[claim] for claim in UNDONE_CLAIMS)
        totals["policy_errors"] = sum(self.policy_errors.values())  # one entry per task with an error
        if not self.closed_loop:  # a lone run's common set is its own faulted tasks (a comparison widens it)
            totals["common_set"] = totals["faulted"]
            totals["common_recovered"] = totals["recovered"]
        return totals

    def _sum_pending(self) -> None:
        # Column sums of a block of tasks' counts run in C (zip and sum); integers, so the
        # totals are exact whatever the blocking.
        if self._pending:
            self._sums = list(map(operator.add, self._sums, map(sum, zip(*self._pending))))
            self._pending.clear()

    def add(self, record: TaskRecord) -> TaskOutcome:
        """Judge one task and fold it in; returns the oracle's full outcome (for per-task rows)."""
        return judge(record, self.fold(record))

    def fold(self, record: TaskRecord) -> Verdict:
        """Judge one task and fold it in; returns the oracle's verdict.

        The per-task hot path of every run: everything here is a handful of operations.
        """
        judged = verdict(record)
        pending = self._pending
        pending.append(task_counts(record, judged))
        if len(pending) >= _SUM_EVERY:
            self._sum_pending()
        self.claims[record.claim] += 1
        if record.wasted_reasons:
            self.wasted_by_reason.update(record.wasted_reasons)
        if record.failed_retries:
            self.failed_by_kind.update(record.failed_retry_kinds)
            self.failed_by_reason.update(record.failed_retry_reasons)
        # A closed loop's arms run different tasks, so it has no common set (and its open-loop
        # tasks' ids start at 10**9: their bitmap alone would take 125 MB).
        if not self.closed_loop and (judged.faulted or judged.truth == TRUTH_FULL):
            self.task_ids.add(record.id, judged.faulted, judged.truth == TRUTH_FULL and record.claim == "success")
        if record.fault_hits:
            self.fault_hits_by_kind.update(record.fault_hits)
        if record.misreported_ways:
            self.misreported_by_way.update(record.misreported_ways)
        if record.policy_error is not None:
            self.policy_errors[record.policy_error] += 1
        if record.stopped_by is not None:
            self.stopped_by[record.stopped_by] += 1
        if (
            self.goodput_bin_s is not None
            and record.claim == "success"
            and record.end_s is not None
            and record.truth == "full"
        ):
            self.goodput[int(record.end_s // self.goodput_bin_s)] += 1
        if record.throttled:
            self.throttled += record.throttled
        if record.layer_tries is not None:
            if len(self.layer_tries) < len(record.layer_tries):
                self.layer_tries.extend([0] * (len(record.layer_tries) - len(self.layer_tries)))
            for i, n in enumerate(record.layer_tries):
                self.layer_tries[i] += n
        # The latest end and the earliest arrival: the same whatever order records arrive in.
        if record.end_s is not None and record.end_s > self.last_end_s:
            self.last_end_s = record.end_s
        if record.arrival_s < self.first_arrival_s:
            self.first_arrival_s = record.arrival_s
        if judged.faulted and record.first_fault is not None:
            self.faulted_by_first[record.first_fault] += 1
            self.recovered_by_first[record.first_fault] += judged.recovered  # a 0 entry is kept
        if judged.recovered:
            self._recoveries.append(
                (record.arrival_s, record.id, judged.steps_to_recovery, judged.time_to_recovery_s)  # type: ignore[arg-type]  # verdict() sets both for a recovered task
            )
        return judged

    def add_faults(self, tally: Mapping[tuple[str, str, int], int]) -> None:
        """Fold in faulted calls counted by (kind, tool, worker) (``RunOutput.fault_tally``)."""
        self.fault_calls.update(tally)

    def _recovered(self) -> tuple[list[int], list[float]]:
        """Steps and times to recovery of the recovered tasks, in creation order."""
        ordered = sorted(self._recoveries, key=lambda x: (x[0], x[1]))
        return [x[2] for x in ordered], [x[3] for x in ordered]

    def metrics(self) -> dict[str, float | None]:
        """Every metric of the registry (:data:`fleetchaos.results.registry.METRICS`), in its order (the order results serialise in).

        A rate whose denominator is zero is None, never 0 or 1.
        """
        t = self.totals
        tasks = t["tasks"]
        faulted = t["faulted"]
        recovered = t["recovered"]
        calls = t["calls"]
        logical = t["logical_calls"]
        steps, times = self._recovered()
        step_values = [float(s) for s in steps if s is not None]
        time_values = [x for x in times if x is not None]
        fleet = self.fleet
        token_cost = tool_cost = human_cost = silent_cost = undone_cost = refused_cost = cost = None
        if fleet is not None:
            token_cost = token_cost_usd(t, fleet)
            tool_cost = calls * fleet.usd_per_tool_call
            human_cost = t["human_ms"] / 3_600_000.0 * fleet.usd_per_human_hour
            silent_cost = t["silent_failures"] * fleet.usd_per_silent_failure
            undone_cost = t["undone"] * fleet.usd_per_undone_task
            refused_cost = t["refused_calls"] * fleet.usd_per_refused_call
            cost = token_cost + tool_cost + human_cost + silent_cost + undone_cost + refused_cost
        days = self.duration_s / DAY_S if self.duration_s else None
        common = t.get("common_set", 0)
        out: dict[str, float | None] = {
            "success_rate": t["successes"] / tasks if tasks else None,
            "common_recovery_rate": t["common_recovered"] / common if common else None,
            "goodput_per_day": t["successes"] / days if days else None,
            "silent_failure_rate": t["silent_failures"] / tasks if tasks else None,
            "wasted_retries": float(t["wasted_retries"]),
            "failed_retries": float(t["failed_retries"]),
            "recovery_rate": recovered / faulted if faulted else None,
            "tasks": float(tasks),
            "faulted_tasks": float(faulted),
            "recovered_tasks": float(recovered),
            "tool_calls": float(calls),
            "tokens": float(t["tokens"]),
            "input_tokens": float(t["input_tokens"]),
            "cost_usd": cost,
            "token_cost_usd": token_cost,
            "tool_call_cost_usd": tool_cost,
            "human_cost_usd": human_cost,
            "silent_failure_cost_usd": silent_cost,
            "undone_task_cost_usd": undone_cost,
            "refused_call_cost_usd": refused_cost,
            "retries": float(t["retries"]),
            "redone_steps": float(t["redone_steps"]),
            "duplicate_side_effects": float(t["duplicate_side_effects"]),
            "escalations": float(t["escalated"]),
            "false_alarms": float(t["false_alarms"]),
            "unfinished_tasks": float(t["unfinished"]),
            "undone_tasks": float(t["undone"]),
            "refused_calls": float(t["refused_calls"]),
            "policy_errors": float(t["policy_errors"]),
            "mean_steps_to_recovery": _mean(steps),
            "mean_time_to_recovery_s": _mean(times),
            "data_loss_tasks": float(t["data_loss"]),
            "data_loss_rate": t["data_loss"] / tasks if tasks else None,
            "escalation_rate": t["escalated"] / tasks if tasks else None,
            "human_pages": float(t["pages"]),
            "human_pages_per_day": t["pages"] / days if days else None,
            "p50_steps_to_recovery": percentile(step_values, 50),
            "p95_steps_to_recovery": percentile(step_values, 95),
            "p50_time_to_recovery_s": percentile(time_values, 50),
            "p95_time_to_recovery_s": percentile(time_values, 95),
            "logical_calls": float(logical),
            "retry_amplification": float(calls) / logical if logical else None,
            "secrets_leaked": float(t["secrets_leaked"]),
            "schema_skews": float(t["schema_skews"]),
            "misreads": float(t["misreads"]),
            "model_give_ups": float(t["model_gave_up"]),
            "model_permanent_retries": float(t["model_retried_permanent"]),
            "silent_noticed": float(t["silent_noticed"]),
            "misreported_failures": float(t["misreported"]),
            "human_hours": t["human_ms"] / 3_600_000.0,
            "remediations": float(t["remediations"]),
            "failed_remediations": float(t["remediations_failed"]),
            "transport_retries": float(t["transport_retries"]),
            # Layered retries: calls per transport-level request, and dispatch-level calls per
            # logical call; their product is the retry amplification (without compensations).
            "transport_amplification": float(calls) / (calls - t["transport_retries"]) if calls else None,
            "agent_amplification": (calls - t["transport_retries"] - t["compensations"]) / logical if logical else None,
            "rollbacks": float(t["rollbacks"]),
            "dead_letters": float(t["dead_letters"]),
            "deduplicated_side_effects": float(t["deduplicated"]),
            "partial_results": float(t["partial"]),
            **{name: float(t[name]) for name in MODEL_ACTION_COUNTS},
            "failed_compactions": float(t["compactions_failed"]),
            "makespan_s": self.last_end_s - self.first_arrival_s if self.last_end_s > -math.inf else None,
        }
        return out

    def breakdowns(self) -> dict[str, dict[str, int]]:
        """Every breakdown, sorted by name (see :func:`compute_run`)."""
        totals = self.totals
        by_family: Counter[str] = Counter()
        families = waste_families()  # read now: every reason the judge records has a family
        for reason, n in self.wasted_by_reason.items():
            by_family[families[reason]] += n
        by_code: Counter[str] = Counter()
        by_tool: Counter[str] = Counter()
        by_worker: Counter[int] = Counter()
        for (kind, tool, worker), n in self.fault_calls.items():
            by_code[error_code(kind)] += n
            by_tool[tool] += n
            by_worker[worker] += n
        out = {
            "wasted_retries_by_reason": dict(sorted(self.wasted_by_reason.items())),
            "failed_retries_by_kind": dict(sorted(self.failed_by_kind.items())),
            "failed_retries_by_reason": dict(sorted(self.failed_by_reason.items())),
            "fault_hits_by_kind": dict(sorted(self.fault_hits_by_kind.items())),
            "claims": dict(sorted(self.claims.items())),
            "wasted_retries_by_family": dict(sorted(by_family.items())),
            "policy_errors_by_message": dict(sorted(self.policy_errors.items())),
            "faulted_tasks_by_first_fault": dict(sorted(self.faulted_by_first.items())),
            "recovered_tasks_by_first_fault": dict(sorted(self.recovered_by_first.items())),
            "fault_hits_by_error_code": dict(sorted(by_code.items())),
            "fault_hits_by_tool": dict(sorted(by_tool.items())),
            "fault_hits_by_worker": {str(w): n for w, n in sorted(by_worker.items())},
            "misreported_failures_by_way": dict(sorted(self.misreported_by_way.items())),
            "task_counts": dict(sorted((name, totals[name]) for name in POOLED_COUNTS if name in totals)),
        }
        if self.stopped_by:  # only when a limit ended a task: results without one stay as they were
            out["tasks_stopped_by_limit"] = dict(sorted(self.stopped_by.items()))
        if self.goodput_bin_s is not None:  # keyed by the bin's start in seconds, zero-padded so keys sort in time
            out["goodput_by_time"] = {f"{b * self.goodput_bin_s:09.0f}": n for b, n in sorted(self.goodput.items())}
        if self.throttled:  # only when a policy refused a request locally
            out["dispatches_refused_locally"] = {"dispatches": self.throttled}
        if self.layer_tries:  # only with transport layers: tries per layer, the ratio of neighbours its amplification
            out["transport_tries_by_layer"] = {f"layer {i + 1}": n for i, n in enumerate(self.layer_tries)}
        return dict(sorted(out.items()))

    def samples(self) -> dict[str, list[float]]:
        """Sorted per-task values of the recovered tasks, for distributions (ECDF) across seeds."""
        steps, times = self._recovered()
        return {
            "steps_to_recovery": sorted(float(s) for s in steps if s is not None),
            "time_to_recovery_s": sorted(rounded(x) for x in times if x is not None),
        }


def compute(
    records: Iterable[TaskRecord], fleet: FleetSpec, *, duration_s: float | None = None
) -> tuple[dict[str, float | None], dict[str, dict[str, int]], list[TaskOutcome]]:
    """(metrics, breakdowns, per-task outcomes) of one run's records.

    Prices for ``cost_usd`` come from ``fleet``.  A rate whose denominator is zero (no faulted tasks, say) is ``None``, never 0 or 1.
    ``human_pages_per_day`` needs the run's horizon ``duration_s`` (None without it).
    The breakdowns here come from the records alone; :func:`compute_run` adds those that
    need the run's fault log.  A thin wrapper over :class:`RunAccumulator`.
    """
    acc = RunAccumulator(fleet, duration_s=duration_s)
    outcomes = [acc.add(r) for r in records]
    every = acc.breakdowns()
    return acc.metrics(), {name: every[name] for name in RECORD_BREAKDOWNS}, outcomes


def compute_run(
    output: RunOutput, fleet: FleetSpec
) -> tuple[dict[str, float | None], dict[str, dict[str, int]], list[TaskOutcome]]:
    """(metrics, breakdowns, outcomes) of a whole run: :func:`compute` plus the fault-log breakdowns.

    ``output`` is a :class:`fleetchaos.sim.world.RunOutput` of a world that kept its
    records (no sink).  A thin wrapper over :class:`RunAccumulator`.
    """
    if output.records is None:
        raise ValueError("compute_run needs the run's records: the world streamed them to a sink")
    acc = RunAccumulator(fleet, duration_s=output.duration_s)
    outcomes = [acc.add(r) for r in output.records]
    acc.add_faults(output.fault_tally)
    return acc.metrics(), acc.breakdowns(), outcomes
