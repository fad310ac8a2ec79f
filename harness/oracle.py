"""The oracle: compares each task's final claim with its ground truth.

This is the only place where truth and claim meet.  Its verdicts are the raw material of
every metric; nothing downstream looks at the simulation again.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulated_fleet.ledger import TRUTH_FULL, TaskRecord


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


def judge(record: TaskRecord) -> TaskOutcome:
    """The oracle's verdict on one task.

    * recovered: the task met a fault, yet every item of every step took effect and the
      orchestrator claimed success;
    * silent failure: success was claimed but the truth is not fully complete;
    * false alarm: the work did complete but the orchestrator reported otherwise.
    """
    truth = record.truth
    claim = record.claim
    full = truth == TRUTH_FULL
    faulted = record.faulted
    recovered = faulted and full and claim == "success"
    steps = time = None
    if recovered:
        steps = record.step_executions - record.step_executions_at_first_fault
        time = (record.end_s or 0.0) - (record.first_fault_s or 0.0)
    return TaskOutcome(
        id=record.id,
        template=record.template,
        title=record.title,
        worker=record.worker,
        arrival_s=record.arrival_s,
        end_s=record.end_s,
        truth=truth,
        claim=claim,
        faulted=faulted,
        first_fault=record.first_fault,
        recovered=recovered,
        silent_failure=claim == "success" and not full,
        false_alarm=full and claim in ("failed", "partial", "escalated", "dead_lettered"),
        calls=record.calls,
        tokens=record.tokens,
        retries=record.retries,
        wasted_retries=record.wasted_retries,
        redone_steps=record.redone_steps,
        duplicate_side_effects=record.duplicate_side_effects,
        steps_to_recovery=steps,
        time_to_recovery_s=time,
        faults=";".join(f"{k}={v}" for k, v in sorted(record.fault_hits.items())) if faulted else "",
        policy_error=record.policy_error,
    )
