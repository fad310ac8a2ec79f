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
    UseAlternative,
)
from simulated_fleet.envelopes import FailureTypeError


def full_jitter(history: TaskHistory, base_s: float, cap_s: float) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**retries))."""
    return history.rng.uniform(0.0, min(cap_s, base_s * 2.0**history.retries))


def unknown_branch(history: TaskHistory, retries: int, base_s: float, cap_s: float, reason: str) -> Action:
    """What a policy does with a failure it cannot read: back off and retry ``retries`` times, then escalate."""
    if history.retries < retries:
        return Retry(delay_s=full_jitter(history, base_s, cap_s))
    return Escalate(reason)


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
        if not isinstance(envelope, AgentToolError):  # no envelope, or a contract it does not read
            return unknown_branch(history, self.unknown_retries, self.base_s, self.cap_s, "unclassified failure")
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


def resume_from_refs(refs: tuple[str, ...] | None) -> tuple[int, tuple[int, ...]]:
    """Where to resume from a list of step and item references (``partial_results``); None means from the start."""
    if not refs:
        return 0, ()
    steps = [r for r in refs if parse_item_ref(r) is None]
    start = max((parse_step_ref(r) + 1 for r in steps), default=0)
    items = [parse_item_ref(r) for r in refs]
    done = sorted({p[1] for p in items if p is not None and p[0] == start})
    return start, tuple(done)


@dataclass(frozen=True, slots=True)
class FailureTypeRouter:
    """The failure-type router: each field of a FailureTypeError used for exactly what it says.

    * ``failure_type`` picks the handler: timeout -> retry; auth_error -> refresh
      credentials, then retry; rate_limited -> back off, then retry; unavailable ->
      reroute to another worker; not_found -> an alternative source if one is named,
      else a retry; permanent -> a named alternative (another worker with the tool),
      never a retry, else escalate;
    * ``partial_results`` (when present) -> resume from the failure point, skipping
      completed items; absent (None) -> redo the task from its first step;
    * ``alternatives_suggested`` -> the recovery paths above for not_found and permanent;
    * ``retry_recommended`` False -> no retry and no refresh (reroutes and alternatives
      are still taken); absent (None) -> the type's handler decides alone.

    Caps: ``max_retries`` dispatches after the first, and ``max_same`` identical
    failures in a row, then escalate.  Without a FailureTypeError (another format) it
    backs off and retries ``unknown_retries`` times, then escalates.
    """

    max_retries: int = 4
    max_same: int = 2
    base_s: float = 2.0
    cap_s: float = 120.0
    rate_base_s: float = 15.0
    unknown_retries: int = 1
    name: str = "failure-type-router"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        envelope = observation.envelope
        if not isinstance(envelope, FailureTypeError):
            return unknown_branch(history, self.unknown_retries, self.base_s, self.cap_s, "unclassified failure")
        kind = envelope.failure_type
        if history.retries >= self.max_retries or history.same_failure_streak > self.max_same:
            return Escalate(f"{kind}: recovery budget spent")
        start, done = resume_from_refs(envelope.partial_results)
        alternatives = envelope.alternatives_suggested or ()
        no_retry = envelope.retry_recommended is False
        if kind == "not_found" and "alternative_source" in alternatives:
            return UseAlternative(0.0, start, done)
        if kind == "permanent":
            if "reroute_to_worker_with_tool" in alternatives:
                return Reroute(0.0, start, done)
            return Escalate("permanent: no alternative")
        if kind == "unavailable":
            return Reroute(0.0, start, done)
        if no_retry:
            return Escalate(f"{kind}: retry not recommended")
        if kind == "auth_error":
            return RefreshCredentials(start, done)
        if kind == "rate_limited":
            return Retry(full_jitter(history, self.rate_base_s, self.cap_s), start, done)
        return Retry(full_jitter(history, self.base_s, self.cap_s), start, done)


@dataclass(frozen=True, slots=True)
class RawParsing:
    """Parses raw vendor error text for an HTTP status (see :mod:`harness.raw_errors`), then acts on its category.

    Recognised texts get the structured tree's branches (transient -> back off and
    retry, resource -> reroute, auth -> refresh, anything else -> escalate), always from
    the first step (a raw text says nothing of progress).  Unrecognised texts (a vendor
    the parser does not know) get ``unknown_retries`` blind retries, then escalate.
    """

    max_retries: int = 4
    base_s: float = 2.0
    cap_s: float = 120.0
    unknown_retries: int = 1
    name: str = "raw-parse"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        from .raw_errors import parse_raw

        parsed = parse_raw(observation.text)
        if parsed is None:
            return unknown_branch(history, self.unknown_retries, self.base_s, self.cap_s, "unparsed raw error")
        if history.retries >= self.max_retries:
            return Escalate(f"HTTP {parsed.status}: repeated failure")
        if parsed.category == "transient":
            return Retry(delay_s=full_jitter(history, self.base_s, self.cap_s))
        if parsed.category == "resource":
            return Reroute()
        if parsed.category == "auth":
            return RefreshCredentials()
        return Escalate(f"HTTP {parsed.status}: {parsed.category}")


#: Built-in policies by name.
POLICIES: dict[str, Callable[[], RecoveryPolicy]] = {
    "blind-retry": BlindRetry,
    "backoff": Backoff,
    "structured": StructuredDecisionTree,
    "failure-type-router": FailureTypeRouter,
    "raw-parse": RawParsing,
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
    except (Exception, SystemExit) as exc:  # a module may raise anything, or call sys.exit(), on import
        raise PolicyLookupError(f"policy {name!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from None
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise PolicyLookupError(f"policy {name!r}: module {module_name!r} has no attribute {attr!r}") from None
    try:
        policy = target() if isinstance(target, type) else target
    except Exception as exc:
        raise PolicyLookupError(
            f"policy {name!r}: {attr}() failed ({type(exc).__name__}: {exc}); a policy class must build with no arguments"
        ) from None
    if not callable(getattr(policy, "decide", None)):
        raise PolicyLookupError(f"policy {name!r}: {attr} has no decide(observation, history) method")
    return policy
