"""Metrics of one run, computed from the oracle's verdicts and the ledger.

Definitions, denominators and directions are in docs/metrics.md; keep the two in step.
"""

from __future__ import annotations

from collections import Counter

from simulated_fleet.config import FleetSpec
from simulated_fleet.ledger import TaskRecord

from .oracle import TaskOutcome, judge

#: Metric name -> True when higher is better.  The order is the display order.
METRICS: dict[str, bool] = {
    "recovery_rate": True,
    "silent_failure_rate": False,
    "wasted_retries": False,
    "tasks": True,
    "faulted_tasks": False,
    "recovered_tasks": True,
    "success_rate": True,
    "tool_calls": False,
    "tokens": False,
    "cost_usd": False,
    "retries": False,
    "redone_steps": False,
    "duplicate_side_effects": False,
    "escalations": False,
    "false_alarms": False,
    "unfinished_tasks": False,
    "policy_errors": False,
    "mean_steps_to_recovery": False,
    "mean_time_to_recovery_s": False,
}

#: Metrics that are proportions in [0, 1].
RATES = ("recovery_rate", "silent_failure_rate", "success_rate")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def compute(records: list[TaskRecord], fleet: FleetSpec) -> tuple[dict[str, float | None], dict[str, dict[str, int]], list[TaskOutcome]]:
    """(metrics, breakdowns, per-task outcomes) of one run.

    Prices for ``cost_usd`` come from ``fleet``.  A rate whose denominator is zero (no faulted tasks, say) is ``None``, never 0 or 1.
    """
    outcomes = [judge(r) for r in records]
    tasks = len(outcomes)
    faulted = [o for o in outcomes if o.faulted]
    recovered = [o for o in faulted if o.recovered]
    wasted_by_reason: Counter[str] = Counter()
    faults_by_kind: Counter[str] = Counter()
    claims: Counter[str] = Counter()
    for r in records:
        wasted_by_reason.update(r.wasted_reasons)
        faults_by_kind.update(r.fault_hits)
    for o in outcomes:
        claims[o.claim] += 1
    metrics: dict[str, float | None] = {
        "recovery_rate": len(recovered) / len(faulted) if faulted else None,
        "silent_failure_rate": sum(o.silent_failure for o in outcomes) / tasks if tasks else None,
        "wasted_retries": float(sum(o.wasted_retries for o in outcomes)),
        "tasks": float(tasks),
        "faulted_tasks": float(len(faulted)),
        "recovered_tasks": float(len(recovered)),
        "success_rate": sum(o.truth == "full" and o.claim == "success" for o in outcomes) / tasks if tasks else None,
        "tool_calls": float(sum(o.calls for o in outcomes)),
        "tokens": float(sum(o.tokens for o in outcomes)),
        "cost_usd": sum(o.tokens for o in outcomes) / 1000.0 * fleet.usd_per_1k_tokens
        + sum(o.calls for o in outcomes) * fleet.usd_per_tool_call,
        "retries": float(sum(o.retries for o in outcomes)),
        "redone_steps": float(sum(o.redone_steps for o in outcomes)),
        "duplicate_side_effects": float(sum(o.duplicate_side_effects for o in outcomes)),
        "escalations": float(claims["escalated"]),
        "false_alarms": float(sum(o.false_alarm for o in outcomes)),
        "unfinished_tasks": float(claims["in_flight"]),
        "policy_errors": float(sum(o.policy_error is not None for o in outcomes)),
        "mean_steps_to_recovery": _mean([o.steps_to_recovery for o in recovered]),  # type: ignore[misc]
        "mean_time_to_recovery_s": _mean([o.time_to_recovery_s for o in recovered]),  # type: ignore[misc]
    }
    breakdowns = {
        "wasted_retries_by_reason": dict(sorted(wasted_by_reason.items())),
        "fault_hits_by_kind": dict(sorted(faults_by_kind.items())),
        "claims": dict(sorted(claims.items())),
    }
    return metrics, breakdowns, outcomes
