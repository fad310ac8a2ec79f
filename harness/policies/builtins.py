"""Built-in recovery policies: pure decision functions over what the orchestrator sees.

The five policies comparisons start from: blind retry, backoff, the structured decision
tree, the failure-type router and raw-text parsing.  The named presets built on them live
in :mod:`fleetchaos.policies.presets`; names are looked up in :mod:`fleetchaos.policies.registry`.

Each policy is a small frozen dataclass with one method, ``decide(observation, history) ->
action``.  Nothing here touches SimPy; the world's driver executes the returned action.
Randomness (jitter) comes only from ``history.rng``, which the driver seeds per task, so a
decision is reproducible from its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fleetchaos.policies._recovery import full_jitter, hinted_delay, resume_from_refs, unknown_branch
from fleetchaos.policies.raw_errors import status_of
from fleetchaos.policies.readers import (
    code_of,
    model_fault_of,
    resume_of,
    retry_after_s_of,
    suggested_action_of,
    tree_category,
    tree_recoverable,
)
from fleetchaos.sim.calls import CONTEXT_OVERFLOW
from fleetchaos.sim.envelopes import FailureTypeError
from fleetchaos.sim.observation import (
    Action,
    CompactContext,
    Escalate,
    FallbackModel,
    GiveUp,
    Observation,
    RefreshCredentials,
    RepairTurn,
    RepromptWithSchema,
    Reroute,
    ResumeStream,
    Retry,
    TaskHistory,
    UseAlternative,
)

#: The suggested actions that name a re-prompt of the model (the model-side kinds' contracts).
REPROMPT_SUGGESTIONS = frozenset({"reprompt_with_schema", "reprompt_with_tool_list"})
#: The action a context overflow's contract suggests (the ``context_overflow`` record's).
COMPACT_SUGGESTION = CONTEXT_OVERFLOW.contract.suggested_action


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
    """Retry any failure after exponential backoff with full jitter, up to ``max_retries``.

    The waits are on the time scale of the faults a fleet meets, not of one call: a
    provider's queue drains in minutes, rate cuts and brownouts last tens of minutes.
    The first wait is up to a minute and each cap doubles (at most half an hour); with
    the default three retries, as many as ``blind-retry``'s, they spread over about three
    and a half minutes on average and up to seven (docs/policies.md, "Time scales").
    """

    max_retries: int = 3
    base_s: float = 60.0
    cap_s: float = 1800.0
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
    * validation or dependency: no blind retry, escalate for triage; but a recoverable
      validation failure that names the model's own malformed output (its code, or the
      re-prompt the envelope suggests) gets the turn made for it (``malformed``: a
      re-prompt with the tool's schema by default, a repair turn, or ``escalate``);
    * fatal, not recoverable, or repeated failure: escalate.  Recoverable failures
      become fatal after ``max_retries`` retries or ``max_same`` identical codes in a row.
    * a refusal or filter stop of the model (its code): ``denial="fallback"`` sends the
      turn to the fallback model once before escalating; a cut stream: ``cut="resume"``
      resumes it keeping the calls that committed instead of retrying it; a context overflow (its code, or the
      ``compact_context`` the envelope suggests): ``overflow="compact"`` compacts the context and dispatches again
      (a partial result at best) instead of escalating.

    It reads every structured contract the project ships (AgentToolError, failure-type,
    subagent-result, tool-envelope), each through its own words
    (:func:`~fleetchaos.policies.readers.tree_category`,
    :func:`~fleetchaos.policies.readers.tree_recoverable`).  Without an envelope (a generic
    format), or with a category a contract leaves unknown, only the unknown branch is
    left: back off and retry ``unknown_retries`` times, then escalate.
    """

    max_retries: int = 5
    max_same: int = 3
    base_s: float = 2.0
    cap_s: float = 120.0
    unknown_retries: int = 1
    malformed: Literal["escalate", "repair", "reprompt"] = "reprompt"
    denial: Literal["escalate", "fallback"] = "escalate"
    cut: Literal["retry", "resume"] = "retry"
    overflow: Literal["escalate", "compact"] = "escalate"
    name: str = "structured"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        category = tree_category(observation)
        if category is None:  # no envelope, or a category its contract leaves unknown
            return unknown_branch(history, self.unknown_retries, self.base_s, self.cap_s, "unclassified failure")
        code = code_of(observation) or category.upper()
        model = model_fault_of(observation)
        repeated = history.retries >= self.max_retries or history.same_failure_streak >= self.max_same
        if model == "denial" and self.denial == "fallback" and history.same_failure_streak <= 1 and not repeated:
            return FallbackModel(0.0, *resume_of(observation))  # another model may answer what this one denies
        overflowed = model == "overflow" or suggested_action_of(observation) == COMPACT_SUGGESTION
        if overflowed and self.overflow == "compact" and not repeated:
            return CompactContext(0.0, *resume_of(observation))  # a shorter context, not the same one again
        if tree_recoverable(observation) is False or category == "fatal":
            return Escalate(f"{code}: not recoverable")
        if category in ("validation", "dependency"):
            malformed = model == "malformed" or suggested_action_of(observation) in REPROMPT_SUGGESTIONS
            if category == "validation" and malformed and self.malformed != "escalate" and not repeated:
                turn = RepairTurn if self.malformed == "repair" else RepromptWithSchema
                return turn(0.0, *resume_of(observation))  # the model's own output: ask it again, not a human
            return Escalate(f"{code}: {category}, needs triage")
        if repeated:
            return Escalate(f"{code}: repeated recoverable failure")
        start, done = resume_of(observation)
        if category == "resource":
            return Reroute(0.0, start, done)
        if category == "auth":
            return RefreshCredentials(start, done)
        delay = hinted_delay(retry_after_s_of(observation), history, self.base_s, self.cap_s)
        if model == "cut" and self.cut == "resume":
            return ResumeStream(delay, start, done)
        return Retry(delay, start, done)


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
    """Reads the HTTP status a failure without an envelope shows (the status format's line, or raw vendor
    text: :func:`fleetchaos.policies.raw_errors.status_of`), then acts on its category.

    Recognised statuses get the structured tree's branches (transient -> back off and
    retry, resource -> reroute, auth -> refresh, anything else -> escalate), always from
    the first step (a status says nothing of progress).  Unrecognised texts (a vendor
    the parser does not know, or no text at all) get ``unknown_retries`` retries, then escalate.
    """

    max_retries: int = 4
    base_s: float = 2.0
    cap_s: float = 120.0
    unknown_retries: int = 1
    name: str = "raw-parse"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        parsed = status_of(observation)
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


__all__ = ["Backoff", "BlindRetry", "FailureTypeRouter", "RawParsing", "StructuredDecisionTree"]
