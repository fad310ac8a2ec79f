"""The oracle: compares each task's final claim with its ground truth.

This is the only place where truth and claim meet.  Its verdicts are the raw material of
every metric; nothing downstream looks at the simulation again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from fleetchaos.sim.ledger import TRUTH_FULL, TaskRecord


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """One task's truth against its claim, with the effort spent on it."""

    id: int
    template: str
    title: str
    worker: int
    arrival_s: float
    end_s: float | None
    truth: str
    claim: str
    faulted: bool
    first_fault: str | None
    recovered: bool
    silent_failure: bool
    false_alarm: bool
    calls: int
    tokens: int
    retries: int
    wasted_retries: int
    redone_steps: int
    duplicate_side_effects: int
    steps_to_recovery: int | None
    time_to_recovery_s: float | None
    faults: str
    policy_error: str | None


class Verdict(NamedTuple):
    """The oracle's verdict on one task: what a run's metrics need of it, and no more.

    A plain tuple, built once per task on the hot path; :class:`TaskOutcome` adds the
    task's identity and effort for per-task rows.
    """

    truth: str
    faulted: bool
    recovered: bool
    silent_failure: bool
    false_alarm: bool
    steps_to_recovery: int | None
    time_to_recovery_s: float | None


#: Claims that report a failure to the caller (a false alarm when the work did complete).
FAILURE_CLAIMS = frozenset({"failed", "partial", "escalated", "dead_lettered"})


def verdict(record: TaskRecord) -> Verdict:
    """The oracle's verdict on one task.

    * recovered: the task met a fault, yet every item of every step took effect and the
      orchestrator claimed success;
    * silent failure: success was claimed but the truth is not fully complete;
    * false alarm: the work did complete but the orchestrator reported otherwise.
    """
    truth = record.truth
    claim = record.claim
    full = truth == TRUTH_FULL
    faulted = bool(record.fault_hits)
    recovered = faulted and full and claim == "success"
    steps = time = None
    if recovered:
        steps = record.step_executions - record.step_executions_at_first_fault
        time = (record.end_s or 0.0) - (record.first_fault_s or 0.0)
    return Verdict(
        truth, faulted, recovered, claim == "success" and not full, full and claim in FAILURE_CLAIMS, steps, time
    )


def judge(record: TaskRecord, judged: Verdict | None = None) -> TaskOutcome:
    """The oracle's verdict on one task with the task's identity and effort (a per-task row).

    ``judged`` is the task's :func:`verdict` when the caller already has it.
    """
    return TaskOutcome(*outcome_values(record, verdict(record) if judged is None else judged))


def outcome_values(record: TaskRecord, v: Verdict) -> tuple:
    """The fields of the task's :class:`TaskOutcome`, in their order, as a plain tuple.

    What :func:`judge` builds its outcome from, and what per-task rows are made of without
    building the dataclass (:mod:`fleetchaos.results.task_rows`): one definition for both.
    """
    return (
        record.id,
        record.template,
        str(record.title),
        record.worker,
        record.arrival_s,
        record.end_s,
        v.truth,
        record.claim,
        v.faulted,
        record.first_fault,
        v.recovered,
        v.silent_failure,
        v.false_alarm,
        record.calls,
        record.tokens,
        record.retries,
        record.wasted_retries,
        record.redone_steps,
        record.duplicate_side_effects,
        v.steps_to_recovery,
        v.time_to_recovery_s,
        ";".join(f"{k}={n}" for k, n in sorted(record.fault_hits.items())) if v.faulted else "",
        record.policy_error,
    )
