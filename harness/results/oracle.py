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
    v = verdict(record) if judged is None else judged
    return TaskOutcome(
        id=record.id,
        template=record.template,
        title=str(record.title),
        worker=record.worker,
        arrival_s=record.arrival_s,
        end_s=record.end_s,
        truth=v.truth,
        claim=record.claim,
        faulted=v.faulted,
        first_fault=record.first_fault,
        recovered=v.recovered,
        silent_failure=v.silent_failure,
        false_alarm=v.false_alarm,
        calls=record.calls,
        tokens=record.tokens,
        retries=record.retries,
        wasted_retries=record.wasted_retries,
        redone_steps=record.redone_steps,
        duplicate_side_effects=record.duplicate_side_effects,
        steps_to_recovery=v.steps_to_recovery,
        time_to_recovery_s=v.time_to_recovery_s,
        faults=";".join(f"{k}={n}" for k, n in sorted(record.fault_hits.items())) if v.faulted else "",
        policy_error=record.policy_error,
    )
