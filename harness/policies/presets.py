"""Named recipes: the reference documents' recovery policies and the classic retry controls.

Every preset is a pure decision function (a frozen dataclass or a :class:`~fleetchaos.policies.blocks.Policy`
joined from blocks); anything that must outlive one task (a retry budget, circuit
breakers) lives in the driver-kept shared state of :class:`~fleetchaos.policies.controls.Controlled`.

* backoff variants (``retry-fixed``, ``backoff-none``, ``backoff-full-jitter``,
  ``backoff-equal-jitter``, ``backoff-decorrelated-jitter``, ``retry-after``): retry any
  failure with one wait formula, for contention studies;
* ``category-tree-remediation``: a category decision tree with an escalation ladder
  (retry, then a remediation agent, then a human), repeated recoverable failures fatal;
* ``coordinator``: retry transient failures once, then report what is missing, never invent it;
* ``recovery-matrix`` (and ``-fail-fast``, ``-all-or-nothing``): a policy per failure class,
  a retry budget, idempotency keys, human approval for high-risk tools, a dead-letter
  queue for poison tasks, and a final-answer guardrail;
* ``budget-aws``, ``budget-grpc``, ``budget-envoy``, ``throttle-sre``, ``breaker-worker``:
  backoff under one shared control each;
* ``layered-transport``: backoff over a transport layer that retries each call itself;
* ``ladder``, ``ladder-breaker``: the remedy ladder for generic errors (:mod:`fleetchaos.policies.generic`),
  alone and under per-worker circuit breakers;
* ``escalate-all``: page a human on every failure (what escalating everything costs);
* ``repair-turn``, ``reprompt-schema``, ``fallback-model``, ``resume-stream``, ``compact-context``,
  ``structured-llm``: the model-side actions (:mod:`fleetchaos.policies.model_recovery`);
* ``reinit-session``, ``refresh-tools``, ``structured-mcp``: the MCP client's actions
  (:mod:`fleetchaos.policies.mcp_recovery`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fleetchaos.policies._recovery import full_jitter, hinted_delay, unknown_branch
from fleetchaos.policies.blocks import Policy
from fleetchaos.policies.breakers import CircuitBreaker
from fleetchaos.policies.budgets import AdaptiveThrottle, AwsRetryQuota, EnvoyRetryBudget, GrpcRetryThrottle
from fleetchaos.policies.builtins import Backoff
from fleetchaos.policies.controls import Controlled
from fleetchaos.policies.generic import RemedyLadder
from fleetchaos.policies.instead import instead_give_up
from fleetchaos.policies.mcp_recovery import MCP_PRESETS
from fleetchaos.policies.model_recovery import MODEL_PRESETS
from fleetchaos.policies.readers import category_of, code_of, resume_of, retry_after_s_of, retryable_of
from fleetchaos.policies.retry_on import retry_always
from fleetchaos.policies.stop import stop_after_attempt, stop_after_delay
from fleetchaos.policies.wait import (
    wait_decorrelated_jitter,
    wait_equal_jitter,
    wait_exponential,
    wait_fixed,
    wait_full_jitter,
    wait_max,
    wait_retry_after,
)
from fleetchaos.sim.observation import (
    Action,
    DeadLetter,
    Escalate,
    GiveUp,
    Observation,
    RecoveryPolicy,
    RefreshCredentials,
    Remediate,
    Reroute,
    Retry,
    Rollback,
    TaskHistory,
    UseAlternative,
)
from fleetchaos.sim.transport import TransportRetry

__all__ = [
    "BACKOFF_VARIANTS",
    "PRESETS",
    "CategoryTreeWithRemediation",
    "Coordinator",
    "EscalateAll",
    "LayeredBackoff",
    "RecoveryMatrix",
    "tool_of",
]

# =======================================================================================
# Backoff variants: one wait formula each, everything else equal


def _backoff_variant(name: str, wait) -> Callable[[], Policy]:
    description = (
        f"Retry any failure until it succeeds (at most 60 dispatches or an hour), waiting {wait!r} "
        "between dispatches: one wait formula, everything else equal, for contention studies."
    )

    def build() -> Policy:
        return Policy(
            retry=retry_always(),
            stop=stop_after_attempt(60) | stop_after_delay(3600.0),
            wait=wait,
            instead=instead_give_up(),
            name=name,
            description=description,
        )

    build.__doc__ = description
    return build


#: The backoff variants' first wait and cap: the time scale of the faults contention studies
#: meet (a provider's queue after a spike, a rate cut of minutes, call timeouts of seconds);
#: waits of a second or two end inside the fault that caused them (docs/policies.md).
BASE_S, CAP_S = 10.0, 600.0

BACKOFF_VARIANTS: dict[str, Callable[[], Policy]] = {
    "retry-immediate": _backoff_variant("retry-immediate", wait_fixed(0.0)),
    "retry-fixed": _backoff_variant("retry-fixed", wait_fixed(2.0)),
    "backoff-none": _backoff_variant("backoff-none", wait_exponential(BASE_S, CAP_S)),
    "backoff-full-jitter": _backoff_variant("backoff-full-jitter", wait_full_jitter(BASE_S, CAP_S)),
    "backoff-equal-jitter": _backoff_variant("backoff-equal-jitter", wait_equal_jitter(BASE_S, CAP_S)),
    "backoff-decorrelated-jitter": _backoff_variant(
        "backoff-decorrelated-jitter", wait_decorrelated_jitter(BASE_S, CAP_S)
    ),
    "retry-after": _backoff_variant("retry-after", wait_max(wait_retry_after(), wait_full_jitter(BASE_S, CAP_S))),
}


def tool_of(observation: Observation) -> str | None:
    """The failed tool's name, from the envelope's context or metadata; None if the format does not say."""
    for attr in ("context", "metadata"):
        values = getattr(observation.envelope, attr, None)
        if values and "tool" in values:
            return str(values["tool"])
    return None


def _is_transient(observation: Observation) -> bool:
    return category_of(observation) in ("transient", "timeout", "rate_limited", "unavailable")


# =======================================================================================
# The category decision tree with a remediation agent and an escalation ladder


@dataclass(frozen=True, slots=True)
class CategoryTreeWithRemediation:
    """A category decision tree whose escalation ladder is retry, then a remediation agent, then a human.

    * transient: back off (honouring retry-after) and retry, resuming from partial success;
    * resource (a lost or full worker): reroute to another worker, resuming;
    * auth, a full disk, or a missing tool: send a remediation agent to the worker (minutes;
      it may fail), then retry there; after ``max_remediations`` the ladder goes up to a human;
    * validation, or not recoverable: a human (page), at once;
    * a recoverable failure repeated ``max_same`` times in a row, or more than
      ``max_retries`` retries in all: it has become fatal, so a human.

    Without a structured envelope only the unknown branch is left: back off and retry
    ``unknown_retries`` times, then page.
    """

    max_retries: int = 4
    max_same: int = 3
    max_remediations: int = 1
    base_s: float = 2.0
    cap_s: float = 120.0
    unknown_retries: int = 1
    guardrail: bool = True
    name: str = "category-tree-remediation"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """Climb the ladder: retry, remediate, page."""
        category = category_of(observation)
        code = code_of(observation)
        if category is None:
            return unknown_branch(history, self.unknown_retries, self.base_s, self.cap_s, "unclassified failure")
        machine_fixable = category == "auth" or code in ("DISK_FULL", "DEPENDENCY_MISSING")
        if retryable_of(observation) is False and not machine_fixable:
            return Escalate(f"{code}: not recoverable")
        if category in ("validation", "fatal"):
            return Escalate(f"{code}: {category}, needs a human")
        if history.retries >= self.max_retries or history.same_failure_streak >= self.max_same:
            return Escalate(f"{code}: repeated recoverable failure is fatal")
        start, done = resume_of(observation)
        if machine_fixable:
            if history.remediations < self.max_remediations:
                return Remediate(start, done)
            return Escalate(f"{code}: remediation did not help")
        if category == "resource":
            return Reroute(0.0, start, done)
        if category == "dependency":  # a missing source: another one, if the contract names it
            return UseAlternative(0.0, start, done)
        return Retry(hinted_delay(retry_after_s_of(observation), history, self.base_s, self.cap_s), start, done)


# =======================================================================================
# The coordinator of subagents


@dataclass(frozen=True, slots=True)
class Coordinator:
    """A coordinator of subagents: retry a transient failure once, then report what is missing.

    It never claims work it was not shown: with usable partial results it reports the
    task partial, otherwise failed.  It does not page anyone; its report goes to the
    user who asked.  A failure it cannot classify counts as not transient.
    """

    transient_retries: int = 1
    base_s: float = 2.0
    cap_s: float = 60.0
    name: str = "coordinator"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """One retry for transient failures, then an honest partial or failed report."""
        start, done = resume_of(observation)
        if (
            _is_transient(observation)
            and retryable_of(observation) is not False
            and history.retries < self.transient_retries
        ):
            hint = retry_after_s_of(observation)
            delay = hint if hint is not None else full_jitter(history, self.base_s, self.cap_s)
            return Retry(delay, start, done)
        if start > 0 or done:
            return GiveUp("partial")
        return GiveUp("failed")


# =======================================================================================
# The recovery policy matrix

#: What the recovery matrix does with a batch whose failed items are out of retries.
BatchMode = Literal["best_effort", "fail_fast", "all_or_nothing"]


@dataclass(frozen=True, slots=True)
class RecoveryMatrix:
    """One recovery per failure class, with the guardrails around it.

    * transient (timeouts, rate limits, network): back off, honouring retry-after, and
      retry up to ``max_retries`` times, resuming; calls carry idempotency keys, so an
      ambiguous timeout retried does not post twice;
    * a failure on a high-risk tool (``high_risk_tools``): a human approves before any
      retry (an escalation, paged);
    * auth: refresh credentials once; resource: reroute; dependency: an alternative source;
    * a batch with failed items, once retries are spent: ``batch_mode`` decides:
      ``best_effort`` keeps what succeeded (reported partial), ``fail_fast`` stops at once
      (reported failed), ``all_or_nothing`` compensates what was committed (rollback);
    * a poison task (``poison_after`` failed dispatches with non-transient errors):
      dead-letter queue;
    * a final-answer guardrail blocks a success claim while the failure flag is up.

    A shared retry budget goes on top (see the ``recovery-matrix`` preset).
    """

    max_retries: int = 3
    base_s: float = 2.0
    cap_s: float = 60.0
    batch_mode: BatchMode = "best_effort"
    high_risk_tools: tuple[str, ...] = ("git_push", "deploy", "payment", "crm_write")
    poison_after: int = 3
    unknown_retries: int = 1
    guardrail: bool = True
    idempotency_keys: bool = True
    name: str = "recovery-matrix"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """Route the failure to its row of the matrix."""
        category = category_of(observation)
        if category is None and observation.envelope is None:
            return unknown_branch(history, self.unknown_retries, self.base_s, self.cap_s, "unclassified failure")
        code = code_of(observation) or "UNKNOWN"
        tool = tool_of(observation)
        if tool is not None and tool in self.high_risk_tools:
            return Escalate(f"{code} on high-risk tool {tool}: needs human approval")
        start, done = resume_of(observation)
        batch = code == "BATCH_ITEM_FAILED" or bool(done)
        if history.retries >= self.max_retries:
            return self._spent(batch, code)
        if _is_transient(observation) and retryable_of(observation) is not False:
            hint = retry_after_s_of(observation)
            delay = max(hint or 0.0, full_jitter(history, self.base_s, self.cap_s))
            return Retry(delay, start, done)
        if history.attempts >= self.poison_after:
            return DeadLetter(f"{code}: failed {history.attempts} times")
        if category == "auth" and history.refreshes == 0:
            return RefreshCredentials(start, done)
        if category == "resource":
            return Reroute(0.0, start, done)
        if category in ("dependency", "not_found") and retryable_of(observation) is not False:
            return UseAlternative(0.0, start, done)
        return self._spent(batch, code)

    def _spent(self, batch: bool, code: str) -> Action:
        if batch and self.batch_mode == "best_effort":
            return GiveUp("partial")
        if batch and self.batch_mode == "all_or_nothing":
            return Rollback(f"{code}: all-or-nothing batch")
        if batch:
            return GiveUp("failed")
        return DeadLetter(f"{code}: no recovery left")


@dataclass(frozen=True, slots=True)
class EscalateAll:
    """Page a human on every failure: no automatic recovery at all."""

    name: str = "escalate-all"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """Always escalate."""
        return Escalate("every failure goes to a human")


@dataclass(frozen=True, slots=True)
class LayeredBackoff:
    """Exponential backoff at the agent level over a transport layer that retries each call itself.

    The agent retries a failed dispatch ``max_retries`` times; under it the transport
    tries each failed call ``transport.attempts`` times.  A dependency that always fails
    costs their product in calls.
    """

    max_retries: int = 3
    base_s: float = 2.0
    cap_s: float = 60.0
    transport: TransportRetry = TransportRetry()  # noqa: RUF009 - frozen, so one shared default is safe
    name: str = "layered-transport"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """Back off with full jitter and retry the dispatch, up to ``max_retries``."""
        if history.retries < self.max_retries:
            return Retry(full_jitter(history, self.base_s, self.cap_s))
        return GiveUp()


def _controlled(name: str, **controls) -> Callable[[], Controlled]:
    def build() -> Controlled:
        return Controlled(Backoff(max_retries=5), name=name, **controls)

    build.__doc__ = f"Backoff (5 retries, full jitter) under {', '.join(f'{k}={v!r}' for k, v in controls.items())}."
    return build


def _budgeted_immediate() -> Controlled:
    """Immediate retries (``retry-immediate``) under a shared AWS-style retry budget: the budget alone, no backoff."""
    return Controlled(BACKOFF_VARIANTS["retry-immediate"](), budget=AwsRetryQuota(), name="retry-immediate-budget")


def _matrix(name: str, batch_mode: BatchMode) -> Callable[[], Controlled]:
    def build() -> Controlled:
        return Controlled(RecoveryMatrix(batch_mode=batch_mode, name=name), budget=AwsRetryQuota(), name=name)

    build.__doc__ = f"The recovery matrix ({batch_mode} batches) under a shared AWS-style retry budget."
    return build


def _ladder_breaker() -> Controlled:
    """The remedy ladder under a circuit breaker per worker: a worker failing across tasks is routed around.

    The breaker is the classic one (5 failures in a row open it for 30 s, one trial call
    half-opens it), the same as ``breaker-worker``'s, so the two differ only in the policy
    under it.
    """
    return Controlled(RemedyLadder(name="ladder-breaker"), breaker=CircuitBreaker(), name="ladder-breaker")


#: Named presets, merged into :data:`fleetchaos.policies.registry.POLICIES`.
PRESETS: dict[str, Callable[[], RecoveryPolicy]] = {
    **BACKOFF_VARIANTS,
    "category-tree-remediation": CategoryTreeWithRemediation,
    "coordinator": Coordinator,
    "recovery-matrix": _matrix("recovery-matrix", "best_effort"),
    "recovery-matrix-fail-fast": _matrix("recovery-matrix-fail-fast", "fail_fast"),
    "recovery-matrix-all-or-nothing": _matrix("recovery-matrix-all-or-nothing", "all_or_nothing"),
    "budget-aws": _controlled("budget-aws", budget=AwsRetryQuota()),
    "retry-immediate-budget": _budgeted_immediate,
    "budget-grpc": _controlled("budget-grpc", budget=GrpcRetryThrottle()),
    "budget-envoy": _controlled("budget-envoy", budget=EnvoyRetryBudget()),
    "throttle-sre": _controlled("throttle-sre", budget=AdaptiveThrottle()),
    "breaker-worker": _controlled("breaker-worker", breaker=CircuitBreaker()),
    "layered-transport": LayeredBackoff,
    "escalate-all": EscalateAll,
    "ladder": RemedyLadder,
    "ladder-breaker": _ladder_breaker,
    **MODEL_PRESETS,
    **MCP_PRESETS,
}
