"""Built-in recovery policies: pure decision functions over what the orchestrator sees.

Each policy is a small frozen dataclass with one method, ``decide(observation,
history) -> action``.  Nothing here touches SimPy; the world's driver executes the
returned action.  Randomness (jitter) comes only from ``history.rng``, which the driver
seeds per task, so a decision is reproducible from its inputs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from simulated_fleet.envelope import AgentToolError, parse_item_ref, parse_step_ref
from simulated_fleet.observation import (
    Action,
    Escalate,
    GiveUp,
    Observation,
    RecoveryPolicy,
    RefreshCredentials,
    Reroute,
    Retry,
    TaskHistory,
)


def full_jitter(history: TaskHistory, base_s: float, cap_s: float) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**retries))."""
    return history.rng.uniform(0.0, min(cap_s, base_s * 2.0**history.retries))


def resume_point(envelope: AgentToolError) -> tuple[int, tuple[int, ...]]:
    """Where to resume, from the envelope's partial_success: (step, items already done)."""
    partial = envelope.partial_success
    if partial is None:
        return 0, ()
    start = 0
    for ref in partial.completed_steps:
        start = max(start, parse_step_ref(ref) + 1)
    done = []
    for ref in partial.artifacts:
        parsed = parse_item_ref(ref)
        if parsed is not None and parsed[0] == start:
            done.append(parsed[1])
    return start, tuple(sorted(done))


@dataclass(frozen=True, slots=True)
class BlindRetry:
    """Retry any failure at once on the same worker, from the start, up to ``max_retries``."""

    max_retries: int = 3
    name: str = "blind-retry"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        if history.retries < self.max_retries:
            return Retry()
        return GiveUp()


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry any failure after exponential backoff with full jitter, up to ``max_retries``."""

    max_retries: int = 3
    base_s: float = 2.0
    cap_s: float = 60.0
    name: str = "backoff"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        if history.retries < self.max_retries:
            return Retry(delay_s=full_jitter(history, self.base_s, self.cap_s))
        return GiveUp()


@dataclass(frozen=True, slots=True)
class StructuredDecisionTree:
    """The category decision tree of a structured error contract.

    * transient: wait the retry-after hint (plus a little jitter so waiters do not all
      return at once) or back off, then retry, resuming from partial success;
    * resource: reroute to another worker, resuming;
    * auth: refresh the worker's credentials, then retry, resuming;
    * validation or dependency: no blind retry, escalate for triage;
    * fatal, not recoverable, or repeated failure: escalate.  Recoverable failures
      become fatal after ``max_retries`` retries or ``max_same`` identical codes in a row.

    Without an envelope (a generic format) only the unknown branch is left: back off and
    retry ``unknown_retries`` times, then escalate.
    """

    max_retries: int = 5
    max_same: int = 3
    base_s: float = 2.0
    cap_s: float = 120.0
    unknown_retries: int = 1
    name: str = "structured"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        envelope = observation.envelope
        if envelope is None:
            if history.retries < self.unknown_retries:
                return Retry(delay_s=full_jitter(history, self.base_s, self.cap_s))
            return Escalate("unclassified failure")
        if not envelope.recoverable or envelope.category == "fatal":
            return Escalate(f"{envelope.error_code}: not recoverable")
        if envelope.category in ("validation", "dependency"):
            return Escalate(f"{envelope.error_code}: {envelope.category}, needs triage")
        if history.retries >= self.max_retries or history.same_failure_streak >= self.max_same:
            return Escalate(f"{envelope.error_code}: repeated recoverable failure")
        start, done = resume_point(envelope)
        if envelope.category == "resource":
            return Reroute(0.0, start, done)
        if envelope.category == "auth":
            return RefreshCredentials(start, done)
        if envelope.retry_after_ms is not None:
            delay = envelope.retry_after_ms / 1000.0 + history.rng.uniform(0.0, self.base_s)
        else:
            delay = full_jitter(history, self.base_s, self.cap_s)
        return Retry(delay, start, done)


#: Built-in policies by name.
POLICIES: dict[str, Callable[[], RecoveryPolicy]] = {
    "blind-retry": BlindRetry,
    "backoff": Backoff,
    "structured": StructuredDecisionTree,
}


class PolicyLookupError(LookupError):
    """A policy name or import path that does not resolve to a policy."""


def get_policy(name: str) -> RecoveryPolicy:
    """A built-in policy by name, or a user policy by import path ``pkg.module:Name``."""
    if name in POLICIES:
        return POLICIES[name]()
    if ":" not in name:
        known = ", ".join(sorted(POLICIES))
        raise PolicyLookupError(
            f"unknown policy {name!r}: use one of {known}, or an import path like mypkg.policies:MyPolicy"
        )
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise PolicyLookupError(f"policy {name!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from None
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise PolicyLookupError(f"policy {name!r}: module {module_name!r} has no attribute {attr!r}") from None
    policy = target() if isinstance(target, type) else target
    if not callable(getattr(policy, "decide", None)):
        raise PolicyLookupError(f"policy {name!r}: {attr} has no decide(observation, history) method")
    return policy
