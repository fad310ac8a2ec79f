"""Metrics of one run, computed from the oracle's verdicts and the ledger.

Definitions, denominators and directions are in docs/metrics.md; keep the two in step.
"""

from __future__ import annotations

from collections import Counter

from simulated_fleet.config import DAY_S, FleetSpec
from simulated_fleet.ledger import TaskRecord
from simulated_fleet.truth import FAILURES, REPORTING_KINDS

from .oracle import TaskOutcome, judge
from .stats import percentile

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
    "data_loss_tasks": False,
    "data_loss_rate": False,
    "escalation_rate": False,
    "human_pages": False,
    "human_pages_per_day": False,
    "p50_steps_to_recovery": False,
    "p95_steps_to_recovery": False,
    "p50_time_to_recovery_s": False,
    "p95_time_to_recovery_s": False,
    "logical_calls": True,
    "retry_amplification": False,
    "secrets_leaked": False,
    "schema_skews": False,
    "misreads": False,
}

#: Metrics that are proportions in [0, 1].
RATES = ("recovery_rate", "silent_failure_rate", "success_rate", "data_loss_rate", "escalation_rate")

#: Metrics with no better direction (workload size): no verdict, no regression gate.
DIRECTIONLESS = frozenset({"tasks", "logical_calls"})

#: Claims that mean the orchestrator never reported on the task at all.
UNREPORTED_CLAIMS = frozenset({"in_flight"})


def direction(name: str) -> bool | None:
    """True when higher is better, False when lower is better, None when neither (or unknown)."""
    if name in DIRECTIONLESS or name not in METRICS:
        return None
    return METRICS[name]


def pages_of(record: TaskRecord) -> int:
    """Human pages a task caused.

    Until the ledger counts pages itself (a ``pages`` field on :class:`TaskRecord`), an
    escalated task counts as one page and any other task as none.
    """
    return int(getattr(record, "pages", record.claim == "escalated"))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def compute(
    records: list[TaskRecord], fleet: FleetSpec, *, duration_s: float | None = None
) -> tuple[dict[str, float | None], dict[str, dict[str, int]], list[TaskOutcome]]:
    """(metrics, breakdowns, per-task outcomes) of one run.

    Prices for ``cost_usd`` come from ``fleet``.  A rate whose denominator is zero (no faulted tasks, say) is ``None``, never 0 or 1.
    ``human_pages_per_day`` needs the run's horizon ``duration_s`` (None without it).
    The breakdowns here come from the records alone; :func:`compute_run` adds those that
    need the run's fault log.
    """
    outcomes = [judge(r) for r in records]
    tasks = len(outcomes)
    faulted: list[TaskOutcome] = []
    recovered: list[TaskOutcome] = []
    claims: Counter[str] = Counter()
    # One pass over the outcomes and one over the records (a run has thousands of tasks;
    # a pass per metric cost as much as judging them).  Every sum is of ints, as before.
    silent = successes = false_alarms = policy_errors = 0
    wasted = calls = tokens = retries = redone = duplicates = 0
    for o in outcomes:
        claims[o.claim] += 1
        if o.faulted:
            faulted.append(o)
            if o.recovered:
                recovered.append(o)
        silent += o.silent_failure
        successes += o.truth == "full" and o.claim == "success"
        false_alarms += o.false_alarm
        policy_errors += o.policy_error is not None
        wasted += o.wasted_retries
        calls += o.calls
        tokens += o.tokens
        retries += o.retries
        redone += o.redone_steps
        duplicates += o.duplicate_side_effects
    wasted_by_reason: Counter[str] = Counter()
    faults_by_kind: Counter[str] = Counter()
    pages = logical = secrets = skews = misreads = 0
    for r in records:
        if r.wasted_reasons:
            wasted_by_reason.update(r.wasted_reasons)
        if r.fault_hits:
            faults_by_kind.update(r.fault_hits)
        pages += pages_of(r)
        logical += sum(map(len, r.commits))
        secrets += r.secrets_leaked
        skews += r.schema_skews
        misreads += r.misreads
    metrics: dict[str, float | None] = {
        "recovery_rate": len(recovered) / len(faulted) if faulted else None,
        "silent_failure_rate": silent / tasks if tasks else None,
        "wasted_retries": float(wasted),
        "tasks": float(tasks),
        "faulted_tasks": float(len(faulted)),
        "recovered_tasks": float(len(recovered)),
        "success_rate": successes / tasks if tasks else None,
        "tool_calls": float(calls),
        "tokens": float(tokens),
        "cost_usd": tokens / 1000.0 * fleet.usd_per_1k_tokens + calls * fleet.usd_per_tool_call,
        "retries": float(retries),
        "redone_steps": float(redone),
        "duplicate_side_effects": float(duplicates),
        "escalations": float(claims["escalated"]),
        "false_alarms": float(false_alarms),
        "unfinished_tasks": float(claims["in_flight"]),
        "policy_errors": float(policy_errors),
        "mean_steps_to_recovery": _mean([o.steps_to_recovery for o in recovered]),  # type: ignore[misc]
        "mean_time_to_recovery_s": _mean([o.time_to_recovery_s for o in recovered]),  # type: ignore[misc]
    }
    steps = [float(o.steps_to_recovery) for o in recovered if o.steps_to_recovery is not None]
    times = [o.time_to_recovery_s for o in recovered if o.time_to_recovery_s is not None]
    unreported = sum(claims[c] for c in UNREPORTED_CLAIMS)
    metrics.update(
        {
            "data_loss_tasks": float(unreported),
            "data_loss_rate": unreported / tasks if tasks else None,
            "escalation_rate": claims["escalated"] / tasks if tasks else None,
            "human_pages": float(pages),
            "human_pages_per_day": pages / (duration_s / DAY_S) if duration_s else None,
            "p50_steps_to_recovery": percentile(steps, 50),
            "p95_steps_to_recovery": percentile(steps, 95),
            "p50_time_to_recovery_s": percentile(times, 50),
            "p95_time_to_recovery_s": percentile(times, 95),
            "logical_calls": float(logical),
            "retry_amplification": metrics["tool_calls"] / logical if logical else None,  # type: ignore[operator]
            "secrets_leaked": float(secrets),
            "schema_skews": float(skews),
            "misreads": float(misreads),
        }
    )
    breakdowns = {
        "wasted_retries_by_reason": dict(sorted(wasted_by_reason.items())),
        "fault_hits_by_kind": dict(sorted(faults_by_kind.items())),
        "claims": dict(sorted(claims.items())),
    }
    return metrics, breakdowns, outcomes


#: The family of each wasted-retry reason the driver records (simulated_fleet.world.WASTE_REASONS).
#: Retries past a deadline or call budget cannot happen: the orchestrator stops a task at its
#: limit before asking the policy (TaskRecord.stopped_by), so that family has no reasons.
WASTE_FAMILIES: dict[str, str] = {
    "credentials still expired": "retried a permanent error",
    "tool still missing": "retried a permanent error",
    "input still invalid": "retried a permanent error",
    "access still denied": "retried a permanent error",
    "same missing source": "retried a permanent error",
    "same failing batch items": "retried a permanent error",
    "before retry-after": "before retry-after",
    "same full disk": "on the same exhausted resource",
    "same exhausted quota": "on the same exhausted resource",
    "worker still down": "on the same exhausted resource",
    "still partitioned": "on the same exhausted resource",
}


def error_code(kind: str) -> str:
    """The structured contract's error code for a fault kind (the kind upper-cased if it has none)."""
    contract = FAILURES.get(kind)
    if contract is not None:
        return contract.error_code
    return REPORTING_KINDS.get(kind, kind.upper())


def detail_breakdowns(
    records: list[TaskRecord], outcomes: list[TaskOutcome], fault_log: list[tuple]
) -> dict[str, dict[str, int]]:
    """Breakdowns by fault kind, error code, tool and worker, and the task counts behind the rates.

    * ``faulted_tasks_by_first_fault`` / ``recovered_tasks_by_first_fault``: tasks by the
      kind of the first fault they met (recovery by fault kind is their ratio);
    * ``fault_hits_by_error_code`` / ``_by_tool`` / ``_by_worker``: faulted calls from the
      run's fault log ``(time_s, kind, tool, worker, task_id)``;
    * ``task_counts``: numerators and denominators of the pooled task-level rates.
    """
    faulted_by_kind: Counter[str] = Counter()
    recovered_by_kind: Counter[str] = Counter()
    faulted = recovered = successes = silent = escalated = data_loss = 0
    for o in outcomes:  # one pass for the breakdowns and the task counts
        if o.faulted:
            faulted += 1
            recovered += o.recovered
            if o.first_fault is not None:
                faulted_by_kind[o.first_fault] += 1
                recovered_by_kind[o.first_fault] += o.recovered
        successes += o.truth == "full" and o.claim == "success"
        silent += o.silent_failure
        escalated += o.claim == "escalated"
        data_loss += o.claim in UNREPORTED_CLAIMS
    by_code: Counter[str] = Counter()
    by_tool: Counter[str] = Counter()
    by_worker: Counter[int] = Counter()
    for _, kind, tool, worker, _ in fault_log:
        by_code[error_code(kind)] += 1
        by_tool[tool] += 1
        by_worker[worker] += 1
    counts = {
        "tasks": len(outcomes),
        "faulted": faulted,
        "recovered": recovered,
        "successes": successes,
        "silent_failures": silent,
        "escalated": escalated,
        "data_loss": data_loss,
    }
    by_family: Counter[str] = Counter()
    for r in records:
        for reason, n in r.wasted_reasons.items():
            by_family[WASTE_FAMILIES.get(reason, reason)] += n
    return {
        "wasted_retries_by_family": dict(sorted(by_family.items())),
        "faulted_tasks_by_first_fault": dict(sorted(faulted_by_kind.items())),
        "recovered_tasks_by_first_fault": dict(sorted(recovered_by_kind.items())),
        "fault_hits_by_error_code": dict(sorted(by_code.items())),
        "fault_hits_by_tool": dict(sorted(by_tool.items())),
        "fault_hits_by_worker": {str(w): n for w, n in sorted(by_worker.items())},
        "task_counts": dict(sorted(counts.items())),
    }


def compute_run(output, fleet: FleetSpec) -> tuple[dict[str, float | None], dict[str, dict[str, int]], list[TaskOutcome]]:
    """(metrics, breakdowns, outcomes) of a whole run: :func:`compute` plus the fault-log breakdowns.

    ``output`` is a :class:`simulated_fleet.world.RunOutput` (records, horizon, fault log).
    """
    metrics, breakdowns, outcomes = compute(output.records, fleet, duration_s=output.duration_s)
    breakdowns.update(detail_breakdowns(output.records, outcomes, output.fault_log))
    return metrics, dict(sorted(breakdowns.items())), outcomes
