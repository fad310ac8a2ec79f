"""Shared retry controls wired into the driver: retry budgets and circuit breakers over any policy.

:mod:`fleetchaos.policies.budgets` and :mod:`fleetchaos.policies.breakers` hold the controls as
pure transitions over frozen state.  A :class:`Controlled` policy keeps that state where
the driver lets a policy keep state across tasks: one :class:`ControlState` per
orchestrator (``new_shared_state``), updated after every dispatch (``observe``), read when
a retry is decided (``decide``), before every dispatch (``before_dispatch``: the adaptive
throttle) and when a dispatch picks its worker (``choose_worker``).  Everything stays reproducible: the only
draws are the adaptive throttle's, and they come from the task's seeded ``history.rng``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, cast

from fleetchaos.policies.breakers import BreakerBoard, CircuitBreaker, breaker_key
from fleetchaos.policies.budgets import AdaptiveThrottle, AwsRetryQuota, EnvoyLoad, EnvoyRetryBudget, GrpcRetryThrottle
from fleetchaos.policies.raw_errors import status_of
from fleetchaos.policies.readers import code_of
from fleetchaos.sim.observation import (
    MODEL_TURN_ACTIONS,
    Action,
    Escalate,
    GiveUp,
    Observation,
    RefreshCredentials,
    Remediate,
    Reroute,
    Retry,
    TaskHistory,
    UseAlternative,
)
from fleetchaos.sim.truth import FAILURES

#: Actions that send the task out again, so a retry budget must pay for them.
RETRY_ACTIONS = (Retry, Reroute, RefreshCredentials, UseAlternative, Remediate, *MODEL_TURN_ACTIONS)

#: Error codes that mean the backend refused the request for overload (not "accepted" for
#: adaptive throttling): the contract's codes for a 429 and an exhausted quota, and the
#: failure-type contract's ``rate_limited``.
OVERLOAD_CODES = frozenset(
    {
        FAILURES["rate_limit"].error_code,
        FAILURES["quota_exhausted"].error_code,
        FAILURES["overloaded"].error_code,
        "RATE_LIMITED",
    }
)

#: Error codes of a timed-out call (the AWS quota charges a retry after one more): the
#: contract's code and the failure-type contract's ``timeout``.
TIMEOUT_CODES = frozenset({FAILURES["timeout"].error_code, "TIMEOUT"})

#: HTTP statuses a backend answers when it did not accept a request: it refused it for
#: overload (429, 503) or did not answer in time (504).
NOT_ACCEPTED_STATUSES = frozenset({429, 503, 504})


def accepted(observation: Observation, timeouts_accepted: bool = False) -> bool:
    """Whether a dispatch counts as accepted by the backend for adaptive throttling, as its client can tell.

    A success is accepted.  A failure is accepted only when it says what it was and that
    was not a refusal for overload nor a timeout (an error code not in
    :data:`OVERLOAD_CODES` or :data:`TIMEOUT_CODES`, or an HTTP status not in
    :data:`NOT_ACCEPTED_STATUSES`): a backend that answered "invalid input" accepted the
    request, one that refused it or never answered did not.  A failure that says nothing
    (a bare "failed", a vendor text with no status) is not known to be accepted, so it
    is counted as not accepted: the SRE throttle counts every request that was not
    accepted, whatever the format.  With ``timeouts_accepted`` a failure that says it timed
    out (its code, or a 504) counts as accepted.
    """
    if observation.ok:
        return True
    code = code_of(observation)
    if code is not None:
        if code in TIMEOUT_CODES:
            return timeouts_accepted
        return code not in OVERLOAD_CODES
    parsed = status_of(observation)
    if parsed is not None and parsed.status == 504:
        return timeouts_accepted
    return parsed is not None and parsed.status not in NOT_ACCEPTED_STATUSES


Budget = AwsRetryQuota | GrpcRetryThrottle | EnvoyRetryBudget | AdaptiveThrottle


@dataclass(slots=True)
class ControlState:
    """One orchestrator's shared control state (mutable; the driver keeps one per orchestrator and run)."""

    budget: Any = None
    """The budget's frozen state (QuotaState, GrpcTokens, ThrottleWindow), or None."""
    board: BreakerBoard | None = None
    paid: dict[int, int] = field(default_factory=dict)
    """AWS quota: what each task's outstanding retry paid, refunded when it succeeds."""
    refused: int = 0
    """Retries the budget refused (and, for the adaptive throttle, any dispatch it refused locally)."""
    diverted: int = 0
    """Dispatches moved off a worker whose breaker was open."""


@dataclass(frozen=True, slots=True)
class Controlled:
    """``policy`` under shared controls: a retry budget and/or per-worker circuit breakers.

    * ``budget``: an :class:`~fleetchaos.policies.budgets.AwsRetryQuota` (each retry pays 5 tokens, 10
      after a timeout; a success refunds), a :class:`~fleetchaos.policies.budgets.GrpcRetryThrottle`
      (failures drain, successes refill, retries only above half), an
      :class:`~fleetchaos.policies.budgets.EnvoyRetryBudget` (retries in flight at most a share of the
      orchestrator's dispatches in flight) or an :class:`~fleetchaos.policies.budgets.AdaptiveThrottle`
      (the SRE formula: refuse any request, first tries included, with probability
      ``(requests - K*accepts)/(requests+1)``).
      A refused retry becomes ``when_refused`` (give up, or escalate to a human).
    * ``breaker``: a :class:`~fleetchaos.policies.breakers.CircuitBreaker` per worker.  Dispatches skip
      workers whose breaker is open (the next allowed one in rotation), and a retry on an
      open worker becomes a reroute.

    Everything the inner policy decides is otherwise kept as it is.
    """

    policy: Any
    budget: Budget | None = None
    breaker: CircuitBreaker | None = None
    when_refused: Literal["give_up", "escalate"] = "give_up"
    name: str = "controlled"

    @property
    def guardrail(self) -> bool:
        """The inner policy's final-answer guardrail, passed through."""
        return bool(getattr(self.policy, "guardrail", False))

    @property
    def idempotency_keys(self) -> bool:
        """The inner policy's idempotency keys, passed through."""
        return bool(getattr(self.policy, "idempotency_keys", False))

    @property
    def transport(self) -> Any:
        """The inner policy's transport layer, passed through."""
        return getattr(self.policy, "transport", None)

    @property
    def description(self) -> str:
        """The inner policy's description, then the controls it runs under."""
        import inspect

        inner = getattr(self.policy, "description", None) or inspect.getdoc(type(self.policy)) or ""
        controls = [f"a shared retry budget {self.budget!r}"] if self.budget is not None else []
        if self.breaker is not None:
            controls.append(f"a circuit breaker per worker {self.breaker!r}")
        first, _, rest = inner.partition("\n\n")
        under = f" Under {' and '.join(controls)} (one per orchestrator)." if controls else ""
        return f"{first.strip()}{under}" + (f"\n\n{rest}" if rest else "")

    # -- driver hooks ----------------------------------------------------------------

    def new_shared_state(self) -> ControlState:
        """Fresh state for one orchestrator: a full budget, all breakers closed."""
        return ControlState(
            budget=self.budget.initial_state()
            if self.budget is not None and hasattr(self.budget, "initial_state")
            else None,
            board=BreakerBoard(self.breaker) if self.breaker is not None else None,
        )

    def observe(self, observation: Observation, shared: ControlState, now_s: float, task_id: int) -> None:
        """Count one dispatch's outcome in the budget and the worker's breaker."""
        budget = self.budget
        ok = observation.ok
        if isinstance(budget, AwsRetryQuota) and ok:
            shared.budget = budget.on_success(shared.budget, shared.paid.pop(task_id, None))
        elif isinstance(budget, GrpcRetryThrottle):
            shared.budget = budget.on_success(shared.budget) if ok else budget.on_failure(shared.budget)
        elif isinstance(budget, AdaptiveThrottle):
            shared.budget = budget.on_request(shared.budget, now_s)  # every dispatch sent is a request
            if accepted(observation, budget.timeouts_accepted):
                shared.budget = budget.on_accept(shared.budget, now_s)
        if shared.board is not None:
            key = breaker_key(worker=observation.worker)
            board = shared.board
            shared.board = board.on_success(key, now_s) if ok else board.on_failure(key, now_s)

    def choose_worker(self, proposed: int, workers: int, shared: ControlState, now_s: float) -> int:
        """The first worker from ``proposed`` on whose breaker lets a call through (``proposed`` if none does)."""
        if shared.board is None:
            return proposed
        for step in range(workers):
            candidate = (proposed + step) % workers
            board, allowed = shared.board.allow(breaker_key(worker=candidate), now_s)
            if allowed:
                shared.board = board
                shared.diverted += step > 0
                return candidate
        return proposed

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """The inner policy's action, unless the budget refuses the retry or the worker's breaker is open."""
        action = self.policy.decide(observation, history)
        if not isinstance(action, RETRY_ACTIONS):
            return action
        # The driver hands every decision the state this policy's new_shared_state() made
        # (None where no driver keeps shared state).
        shared = cast("ControlState | None", history.shared)
        if shared is None:
            return action
        if self.budget is not None and not self._pay(observation, history, shared):
            shared.refused += 1
            return Escalate("retry budget exhausted") if self.when_refused == "escalate" else GiveUp()
        if (
            isinstance(action, Retry)
            and shared.board is not None
            and shared.board.state(breaker_key(worker=history.worker)).mode == "open"
        ):
            return Reroute(action.delay_s, action.resume_from, action.done_items)
        return action

    def _pay(self, observation: Observation, history: TaskHistory, shared: ControlState) -> bool:
        """Ask the budget for one retry; True when it may go out."""
        budget = self.budget
        if isinstance(budget, AwsRetryQuota):
            timed_out = code_of(observation) in TIMEOUT_CODES or observation.status == "timeout"
            shared.budget, paid = budget.acquire(shared.budget, timeout=timed_out)
            if paid is None:
                return False
            shared.paid[history.task_id] = paid
            return True
        if isinstance(budget, GrpcRetryThrottle):
            return budget.allows_retry(shared.budget)
        if isinstance(budget, EnvoyRetryBudget):
            return budget.allows_retry(EnvoyLoad(history.dispatches_in_flight, history.retries_in_flight))
        return True  # the adaptive throttle judges every dispatch, first tries included: before_dispatch

    def before_dispatch(self, shared: ControlState | None, now_s: float, first: bool, draw: float) -> Action | None:
        """The adaptive throttle's verdict on any dispatch, first tries included (SRE: every request).

        A request goes out with probability ``1 - (requests - K*accepts)/(requests+1)``;
        one refused locally is counted as a request now (SRE counts local rejections too),
        one sent is counted when its dispatch is observed.  Other controls send everything.
        """
        budget = self.budget
        if not isinstance(budget, AdaptiveThrottle) or shared is None:
            return None
        if draw >= budget.reject_probability(shared.budget, now_s):
            return None
        shared.budget = budget.on_request(shared.budget, now_s)
        shared.refused += 1
        return Escalate("throttled locally") if self.when_refused == "escalate" else GiveUp()

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}", f"policy={self.policy!r}"]
        if self.budget is not None:
            parts.append(f"budget={self.budget!r}")
        if self.breaker is not None:
            parts.append(f"breaker={self.breaker!r}")
        if self.when_refused != "give_up":
            parts.append(f"when_refused={self.when_refused!r}")
        return f"Controlled({', '.join(parts)})"


__all__ = [
    "NOT_ACCEPTED_STATUSES",
    "OVERLOAD_CODES",
    "RETRY_ACTIONS",
    "TIMEOUT_CODES",
    "ControlState",
    "Controlled",
    "accepted",
]
