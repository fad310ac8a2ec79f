"""The metric registry: every metric a run reports, named, defined and directed once.

One :class:`Metric` per metric, in display order (the order results serialise in):
its unit, which way is better, its denominator in words, whether it leads the tables
(headline), gets a paired verdict in a comparison, is gated by default against a
baseline, and how it is shown.  Everything else reads it: the accumulator's order
(:mod:`fleetchaos.results.metrics`), the comparison's verdicts and pooled rates
(:mod:`fleetchaos.runs.runner`), the regression gate (:mod:`fleetchaos.gates.regression`),
the names check (:mod:`fleetchaos.names`), the suite's proportions (:mod:`fleetchaos.testing.suite`), the report
tables (:mod:`fleetchaos.reports`) and the metric table of docs/metrics.md (:func:`markdown_table`; a test keeps the
two equal).  Light to import: the standard library only (the pytest plugin and the reports read it without SimPy or
pydantic).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CLOSED_LOOP_LEAD",
    "DIRECTIONLESS",
    "GATED_METRICS",
    "HEADLINE_METRICS",
    "METRICS",
    "OPEN_LOOP_LEAD",
    "POOLED_RATES",
    "RATES",
    "REGISTRY",
    "VERDICT_METRICS",
    "Metric",
    "direction",
    "is_rate",
    "lead_metrics",
    "markdown_table",
]


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric of a run: what it counts, which way is better, and how it is shown and judged."""

    name: str
    definition: str
    """One line; docs/metrics.md explains the longer ones below its table."""
    unit: str
    """``proportion`` for a rate in [0, 1], else what one unit counts (tasks, seconds, USD...)."""
    denominator: str
    """What the metric is divided by, in words; ``none (a count)`` for totals per run."""
    better: Literal["higher", "lower"] | None
    """Which way is better; None for workload sizes, which get no verdict and no gate."""
    headline: bool = False
    """Leads every table, with its confidence interval."""
    gate: str | None = None
    """The allowed worsening gated when a baseline is given without thresholds
    (``--fleetchaos-baseline`` alone), as a ``--fail-on`` threshold: ``2%`` is 2% of the
    baseline value; None when the metric is not gated by default."""
    pooled: tuple[str, str] | None = None
    """(numerator, denominator) keys of the run's ``task_counts`` breakdown for a task-level
    proportion pooled over seeds with a Wilson interval; None for other metrics."""
    shown_as: Literal["percent", "number"] = "number"
    """How tables show it: rates as percentages, the rest as numbers."""

    @property
    def verdict(self) -> bool:
        """Gets a paired verdict (better / worse / inconclusive) against a comparison's reference arm."""
        return self.name in VERDICT_METRICS

    @property
    def higher_is_better(self) -> bool | None:
        """True when higher is better, False when lower is, None when neither."""
        return None if self.better is None else self.better == "higher"


def _rate(name: str, definition: str, denominator: str, better: Literal["higher", "lower"], pooled, **flags) -> Metric:
    return Metric(name, definition, "proportion", denominator, better, pooled=pooled, shown_as="percent", **flags)


def _count(name: str, definition: str, unit: str, better: Literal["higher", "lower"] | None, **flags) -> Metric:
    return Metric(name, definition, unit, "none (a total per run)", better, **flags)


_RECOVERED = "recovered tasks (null when none)"

#: Every metric, in display order (the order a run's metrics serialise in).
_ALL: tuple[Metric, ...] = (
    _rate(
        "success_rate",
        "tasks whose work fully took effect and that were claimed a success / tasks",
        "all tasks (the same for every arm of an open-loop scenario)",
        "higher",
        ("successes", "tasks"),
        headline=True,
        gate="2%",
    ),
    _rate(
        "common_recovery_rate",
        "tasks of the common set that ended truly successful / the common set; in a comparison the common "
        "set of a seed is every task faulted in any arm on that seed, for a lone run its own faulted tasks "
        "(see Recovery on a common set)",
        "the common set of the seed: the same for every arm (null when empty, and in closed-loop scenarios)",
        "higher",
        ("common_recovered", "common_set"),
        headline=True,
        gate="2%",
    ),
    Metric(
        "goodput_per_day",
        "tasks whose work fully took effect and that were claimed a success / (horizon `duration_s` / 86,400): "
        "the common headline of closed-loop scenarios",
        "tasks per day",
        "simulated days of the horizon (the same for every arm)",
        "higher",
    ),
    _rate(
        "silent_failure_rate",
        "tasks claimed a success whose work did not fully take effect / tasks",
        "all tasks",
        "lower",
        ("silent_failures", "tasks"),
        headline=True,
        gate="2%",
    ),
    _count(
        "wasted_retries",
        "retries dispatched while the true cause of the previous failure still held (see Wasted retries)",
        "retries",
        "lower",
        headline=True,
        gate="2%",
    ),
    _count(
        "failed_retries",
        "retries whose dispatch failed again, whatever the cause (see Failed retries)",
        "retries",
        "lower",
        headline=True,
    ),
    _rate(
        "recovery_rate",
        "recovered tasks / the arm's own faulted tasks (a recovered task met a fault, its work fully took "
        "effect and it was claimed a success); secondary: its denominator differs between arms",
        "the arm's own faulted tasks (null when none)",
        "higher",
        ("recovered", "faulted"),
    ),
    _count("tasks", "tasks that arrived during the horizon (the workload)", "tasks", None),
    _count(
        "faulted_tasks",
        "tasks that met at least one fault, injected or emergent (a 429 from the shared bucket, a full provider's "
        "refusal, a call timeout from queueing)",
        "tasks",
        "lower",
    ),
    _count(
        "recovered_tasks",
        "faulted tasks whose work fully took effect and that were claimed a success",
        "tasks",
        "higher",
    ),
    _count("tool_calls", "tool calls made (each item of a fan-out step is one call)", "calls", "lower"),
    _count(
        "tokens",
        "model tokens consumed: the context each turn read and the tokens of the API calls that ran (see Cost)",
        "tokens",
        "lower",
    ),
    _count(
        "input_tokens",
        "the part of `tokens` the turns read as context: the system prompt, tool results and error texts so far",
        "tokens",
        "lower",
    ),
    _count(
        "cost_usd",
        "modelled cost at the fleet's prices: tokens, tool calls, paged humans' handling hours, silent failures, "
        "tasks left undone and refused requests (see Cost)",
        "USD",
        "lower",
    ),
    _count("token_cost_usd", "the part of `cost_usd` paid for model tokens", "USD", "lower"),
    _count("tool_call_cost_usd", "the part of `cost_usd` paid for tool calls", "USD", "lower"),
    _count("human_cost_usd", "the part of `cost_usd` paid for paged humans' handling hours", "USD", "lower"),
    _count(
        "silent_failure_cost_usd",
        "the part of `cost_usd` for silent failures: each at `fleet.usd_per_silent_failure`",
        "USD",
        "lower",
    ),
    _count(
        "undone_task_cost_usd",
        "the part of `cost_usd` for tasks left undone (`undone_tasks`): each at `fleet.usd_per_undone_task`",
        "USD",
        "lower",
    ),
    _count(
        "refused_call_cost_usd",
        "the part of `cost_usd` for requests refused (`refused_calls`): each at `fleet.usd_per_refused_call`",
        "USD",
        "lower",
    ),
    _count("retries", "dispatches of a task after its first", "dispatches", "lower"),
    _count(
        "redone_steps",
        "executions of a step whose items had all already taken effect (a model call of a real agent's loop: whose "
        "turn had; the next turn is new work)",
        "executions",
        "lower",
    ),
    _count(
        "duplicate_side_effects",
        "extra commits of non-idempotent side effects: per item, commits beyond the first",
        "commits",
        "lower",
    ),
    _count("escalations", "tasks handed to a human (claim `escalated`)", "tasks", "lower"),
    _count("false_alarms", "tasks reported as not done whose work did complete", "tasks", "lower"),
    _count("unfinished_tasks", "tasks still in flight at the drain limit", "tasks", "lower"),
    _count(
        "undone_tasks",
        "tasks the fleet did not finish and did not hand to a human: claimed failed, partial or dead-lettered, "
        "or never reported (in flight at the drain limit)",
        "tasks",
        "lower",
    ),
    _count(
        "refused_calls",
        "tool calls the API or a provider refused: rate limits, a spent quota, a full provider's 503",
        "calls",
        "lower",
    ),
    _count("policy_errors", "tasks given up because their policy misbehaved (see Policy errors)", "tasks", "lower"),
    Metric(
        "mean_steps_to_recovery",
        "mean over recovered tasks of the step executions from the first failed call to completion",
        "steps",
        _RECOVERED,
        "lower",
    ),
    Metric(
        "mean_time_to_recovery_s",
        "mean over recovered tasks of the simulated seconds from the first fault to completion",
        "seconds",
        _RECOVERED,
        "lower",
    ),
    _count(
        "data_loss_tasks",
        "tasks dropped without any report: still claimed `in_flight` at the drain limit (see Data loss)",
        "tasks",
        "lower",
    ),
    _rate("data_loss_rate", "`data_loss_tasks` / tasks", "all tasks", "lower", ("data_loss", "tasks")),
    _rate("escalation_rate", "`escalations` / tasks", "all tasks", "lower", ("escalated", "tasks")),
    _count("human_pages", "pages sent to a human: one per escalation", "pages", "lower"),
    Metric(
        "human_pages_per_day",
        "`human_pages` / (horizon `duration_s` / 86,400)",
        "pages per day",
        "simulated days of the horizon (the drain is not counted)",
        "lower",
    ),
    Metric(
        "p50_steps_to_recovery",
        "median of the recovered tasks' steps to recovery (see Percentiles)",
        "steps",
        _RECOVERED,
        "lower",
    ),
    Metric(
        "p95_steps_to_recovery",
        "95th percentile of the recovered tasks' steps to recovery",
        "steps",
        _RECOVERED,
        "lower",
    ),
    Metric("p50_time_to_recovery_s", "median of the recovered tasks' time to recovery", "seconds", _RECOVERED, "lower"),
    Metric(
        "p95_time_to_recovery_s",
        "95th percentile of the recovered tasks' time to recovery",
        "seconds",
        _RECOVERED,
        "lower",
    ),
    _count(
        "logical_calls",
        "the calls the tasks need when nothing fails: per step, its number of items (the workload), and the model "
        "turns a real agent's loop took beyond one per model step",
        "calls",
        None,
    ),
    Metric(
        "retry_amplification",
        "`tool_calls` / `logical_calls`: tool calls made per logical call (see Amplification)",
        "calls per logical call",
        "logical calls (null when none)",
        "lower",
    ),
    _count(
        "secrets_leaked",
        "planted secrets that reached the orchestrator through the error format (see Secrets)",
        "secrets",
        "lower",
    ),
    _count(
        "schema_skews",
        "envelopes received whose `schema_version` differs from the orchestrator's",
        "envelopes",
        "lower",
    ),
    _count(
        "misreads",
        "failed dispatches the orchestrator read as a success and claimed as done (see Misreads)",
        "dispatches",
        "lower",
    ),
    _count(
        "model_give_ups",
        "failed dispatches the model stopped on before its policy decided, claiming the task failed (see Misreads)",
        "dispatches",
        "lower",
    ),
    _count(
        "model_permanent_retries",
        "retries the model made past its policy's stop on a failure no retry can pass (see Misreads)",
        "retries",
        "lower",
    ),
    _count(
        "silent_noticed",
        "hollow successes (masked failures) the model noticed and retried (see Misreads)",
        "dispatches",
        "higher",
    ),
    _count(
        "misreported_failures",
        "failed dispatches whose structured envelope a worker got wrong, judged against the truth (see Wrong envelopes)",
        "dispatches",
        "lower",
    ),
    _count(
        "human_hours",
        "hours of paged humans' hands-on time, one handling time (`fleet.page_handling`) drawn per escalation",
        "hours",
        "lower",
    ),
    _count("remediations", "remediation agents a policy sent to a worker (`Remediate`)", "remediations", "lower"),
    _count("failed_remediations", "remediations that repaired nothing (see Remediation)", "remediations", "lower"),
    _count(
        "transport_retries",
        "tool calls the transport layers under the agent repeated on their own, every layer's (in `tool_calls`)",
        "calls",
        "lower",
    ),
    Metric(
        "transport_amplification",
        "`tool_calls` / (`tool_calls` - `transport_retries`): calls per request of the agent layer",
        "calls per agent-level call",
        "agent-level calls (null when none)",
        "lower",
    ),
    Metric(
        "agent_amplification",
        "(`tool_calls` - `transport_retries` - compensating calls) / `logical_calls`: the agent layer's own retries",
        "calls per logical call",
        "logical calls (null when none)",
        "lower",
    ),
    _count("rollbacks", "tasks whose committed side effects a policy compensated (`Rollback`)", "tasks", None),
    _count("dead_letters", "tasks parked in the dead-letter queue (claim `dead_lettered`)", "tasks", "lower"),
    _count("deduplicated_side_effects", "repeated side effects an idempotency key stopped", "side effects", None),
    _count(
        "partial_results",
        "tasks claimed partial: reported as part done (an answer resting on a compacted context's summary, a "
        "policy's partial give-up); in `undone_tasks`",
        "tasks",
        None,
    ),
    *(
        _count(name, definition, "turns", None)
        for name, definition in (
            ("repair_turns", "repair turns a policy asked for (`RepairTurn`; see Model-side actions)"),
            ("schema_reprompts", "re-prompts with the tool's schema a policy asked for (`RepromptWithSchema`)"),
            ("fallback_turns", "turns a policy sent to the fallback model (`FallbackModel`)"),
            ("stream_resumes", "cut streams a policy resumed, keeping the calls that committed (`ResumeStream`)"),
            ("compactions", "context compactions a policy asked for (`CompactContext`), failed ones included"),
        )
    ),
    _count("failed_compactions", "compactions whose turn met a fault: the context stayed as it was", "turns", "lower"),
    Metric(
        "makespan_s",
        "simulated seconds from the first arrival to the end of the last task that ended",
        "seconds",
        "none (a span per run)",
        "lower",
    ),
)

#: Metric name -> its record, in display order.
REGISTRY: dict[str, Metric] = {m.name: m for m in _ALL}

#: Every metric name, in display order.
METRICS: tuple[str, ...] = tuple(REGISTRY)

#: Metrics with no better direction (workload sizes): no verdict, no regression gate.
DIRECTIONLESS: frozenset[str] = frozenset(m.name for m in _ALL if m.better is None)

#: The figures every table leads with, with their confidence intervals.
HEADLINE_METRICS: tuple[str, ...] = tuple(m.name for m in _ALL if m.headline)

#: The arm-independent figures a comparison of an open-loop scenario leads with (its
#: conclusion, headline table and first verdicts): every arm meets the same tasks.
OPEN_LOOP_LEAD: tuple[str, ...] = ("success_rate", "common_recovery_rate")

#: The same for a closed-loop scenario, whose clients submit as fast as their tasks end, so
#: that each arm runs its own set of tasks: successful tasks per simulated day.
CLOSED_LOOP_LEAD: tuple[str, ...] = ("goodput_per_day",)


def lead_metrics(closed_loop: bool) -> tuple[str, ...]:
    """The arm-independent metrics a comparison leads with (:data:`OPEN_LOOP_LEAD` or :data:`CLOSED_LOOP_LEAD`)."""
    return CLOSED_LOOP_LEAD if closed_loop else OPEN_LOOP_LEAD


#: Metrics a comparison gives a paired verdict on (each arm against the reference arm), in
#: the order its ``comparisons`` list them (results serialise in it).
VERDICT_METRICS: tuple[str, ...] = (
    "success_rate",
    "common_recovery_rate",
    "goodput_per_day",
    "silent_failure_rate",
    "wasted_retries",
    "failed_retries",
    "recovery_rate",
    "data_loss_rate",
    "escalation_rate",
    "human_pages_per_day",
    "mean_time_to_recovery_s",
    "retry_amplification",
    "cost_usd",
)

#: Metrics a baseline gates when no threshold is given, with their default allowed worsening.
GATED_METRICS: dict[str, str] = {m.name: m.gate for m in _ALL if m.gate is not None}

#: The order results list the pooled rates in (``ArmResult.pooled`` serialises in it).
_POOLED_ORDER = (
    "success_rate",
    "common_recovery_rate",
    "silent_failure_rate",
    "recovery_rate",
    "escalation_rate",
    "data_loss_rate",
)
if set(_POOLED_ORDER) != {m.name for m in _ALL if m.pooled is not None}:  # pragma: no cover - a registry edit
    raise RuntimeError("_POOLED_ORDER must name every metric with a pooled (numerator, denominator)")

#: Task-level rates: name -> (numerator, denominator) keys of a run's ``task_counts``
#: breakdown, pooled over seeds with Wilson intervals.
POOLED_RATES: dict[str, tuple[str, str]] = {
    # Every one has its pair (checked above): the ``is not None`` only tells the type checker so.
    name: pooled
    for name in _POOLED_ORDER
    if (pooled := REGISTRY[name].pooled) is not None
}

#: Metrics that are proportions in [0, 1], shown as percentages.
RATES: tuple[str, ...] = tuple(m.name for m in _ALL if m.shown_as == "percent")


def direction(name: str) -> bool | None:
    """True when higher is better, False when lower is better, None when neither (or unknown)."""
    metric = REGISTRY.get(name)
    return None if metric is None else metric.higher_is_better


def is_rate(name: str) -> bool:
    """Whether ``name`` is a proportion shown as a percentage."""
    metric = REGISTRY.get(name)
    return metric is not None and metric.shown_as == "percent"


def markdown_table() -> str:
    """The metric table of docs/metrics.md, one row per metric in display order."""
    lines = [
        "| metric | definition | unit | denominator | better | headline | verdict | default gate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in _ALL:
        gate = "-" if m.gate is None else ("-" if m.better == "higher" else "+") + m.gate
        flags = ("yes" if m.headline else "", "yes" if m.verdict else "", gate)
        lines.append(
            "| " + " | ".join((f"`{m.name}`", m.definition, m.unit, m.denominator, m.better or "-", *flags)) + " |"
        )
    return "\n".join(lines) + "\n"
