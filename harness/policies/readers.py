"""What an envelope says, whatever the contract: category, code, retry flag, retry-after hint, resume point.

Every error contract names these things differently (``category`` or ``failure_type``,
``recoverable`` or ``retriable``, ``partial_success`` or ``partial_results``); the blocks and
the presets read them through these functions, so one recipe works on every format.  A
generic format has no envelope: each reader then says None (or "resume from the start").
"""

from __future__ import annotations

from collections.abc import Mapping

from fleetchaos.policies._recovery import resume_from_refs, resume_point
from fleetchaos.sim.envelope import AgentToolError
from fleetchaos.sim.observation import Observation

__all__ = ["category_of", "code_of", "resume_of", "retry_after_s_of", "retryable_of"]


def category_of(observation: Observation) -> str | None:
    """The failure's category word: ``category``, ``error_category`` or ``failure_type``, else None.

    AgentToolError gives ``transient``/``resource``/``auth``/...; SubagentResult gives
    ``transient``/``validation``/``permission``/...; FailureTypeError gives its failure type
    (``timeout``, ``rate_limited``, ...).  A ToolEnvelope or no envelope gives None.
    """
    envelope = observation.envelope
    for attr in ("category", "error_category", "failure_type"):
        value = getattr(envelope, attr, None)
        if value is not None:
            return str(value)
    return None


def code_of(observation: Observation) -> str | None:
    """The envelope's stable error code (a field or a property of every contract), else None."""
    code = getattr(observation.envelope, "error_code", None)
    return str(code) if code is not None else None


def retryable_of(observation: Observation) -> bool | None:
    """The envelope's retry flag: ``recoverable``, ``retriable``, ``is_retryable`` or ``retry_recommended``; None if not told."""
    envelope = observation.envelope
    for attr in ("recoverable", "retriable", "is_retryable", "retry_recommended"):
        value = getattr(envelope, attr, None)
        if value is not None:
            return bool(value)
    return None


def retry_after_s_of(observation: Observation) -> float | None:
    """The envelope's retry-after hint in simulated seconds, from whichever field carries it; None if absent."""
    envelope = observation.envelope
    ms = getattr(envelope, "retry_after_ms", None)
    if ms is not None:
        return ms / 1000.0
    seconds = getattr(envelope, "retry_after_s", None)
    if seconds is not None:
        return float(seconds)
    metadata = getattr(envelope, "metadata", None) or {}
    if "retry_after_ms" in metadata:
        try:
            return float(metadata["retry_after_ms"]) / 1000.0
        except ValueError:
            return None
    return None


def resume_of(observation: Observation) -> tuple[int, tuple[int, ...]]:
    """Where to resume, from whatever partial-progress field the envelope has: (step, items done); (0, ()) if none."""
    envelope = observation.envelope
    if isinstance(envelope, AgentToolError):
        return resume_point(envelope)
    for attr in ("partial_results", "partial_data"):
        refs = getattr(envelope, attr, None)
        if refs is not None:
            return resume_from_refs(refs)
    data = getattr(envelope, "data", None)
    if isinstance(data, Mapping):
        return resume_from_refs(tuple(data.get("completed_steps", ())) + tuple(data.get("completed_items", ())))
    return 0, ()
