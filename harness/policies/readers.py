"""What an envelope says, whatever the contract: category, code, retry flag, retry-after hint, resume point.

Every error contract names these things differently (``category`` or ``failure_type``,
``recoverable`` or ``retriable``, ``partial_success`` or ``partial_results``); the blocks and
the presets read them through these functions, so one recipe works on every format.  A
generic format has no envelope: each reader then says None (or "resume from the start").

A tool envelope names no category: its stable ``error_code`` does, through the code table
every contract shares (:data:`CODE_CATEGORIES`, the codes ``fleetchaos faults list`` and
docs/formats.md publish), and a ``timeout`` status is transient whatever its code.
:func:`tree_category` and :func:`tree_recoverable` translate each contract's words into the
AgentToolError vocabulary the structured decision tree branches on.

The wire shapes of real stacks (:mod:`fleetchaos.sim.wire_shapes`) are read for what each
honestly shows: an MCP structured error's code, recovery class and retry-after; a JSON-RPC
error's code (:data:`JSONRPC_CATEGORIES`; an MCP protocol error's by MCP's own codes,
:data:`MCP_PROTOCOL_CATEGORIES`); a problem's HTTP status (the status table raw-text parsing
uses); a google.rpc error's ErrorInfo reason (the shared code table), RetryInfo delay and
the canonical codes AIP-194 says not to retry (:data:`GOOGLE_NOT_RECOVERABLE`).
An MCP result with text content only names no category: its text is read as raw text
(:func:`fleetchaos.policies.raw_errors.parse_raw`).
"""

from __future__ import annotations

from collections.abc import Mapping

from fleetchaos.policies._recovery import resume_from_refs, resume_point
from fleetchaos.policies.raw_errors import STATUS_CATEGORIES
from fleetchaos.sim.calls import CONTEXT_OVERFLOW
from fleetchaos.sim.envelope import AgentToolError
from fleetchaos.sim.envelopes import FailureTypeError, SubagentResult, ToolEnvelope
from fleetchaos.sim.kinds import KINDS
from fleetchaos.sim.model_turns import CUT_STREAM, DENIALS, REPAIRABLE
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.wire_shapes import (
    CallToolResult,
    GoogleRpcError,
    JsonRpcErrorResponse,
    McpProtocolError,
    ProblemDetails,
    RetryInfo,
)

__all__ = [
    "CODE_CATEGORIES",
    "GOOGLE_NOT_RECOVERABLE",
    "JSONRPC_CATEGORIES",
    "MCP_PROTOCOL_CATEGORIES",
    "MODEL_FAULTS",
    "TREE_CATEGORIES",
    "category_of",
    "code_of",
    "model_fault_of",
    "resume_of",
    "retry_after_s_of",
    "retryable_of",
    "suggested_action_of",
    "tree_category",
    "tree_recoverable",
]

#: The shared code table: each stable error code's category (AgentToolError's vocabulary).
CODE_CATEGORIES: dict[str, str] = {kind.contract.error_code: kind.contract.category for kind in KINDS.values()}

#: Each contract's category words in the vocabulary the structured tree branches on
#: (transient, resource, auth, validation, dependency, fatal).  FailureTypeError: a timeout
#: or a rate limit is transient, an unavailable worker a resource, a missing source a
#: dependency, a permanent failure fatal.  SubagentResult: a permission problem is auth, a
#: business rule a dependency (another action is needed); ``unknown`` is left unread.
TREE_CATEGORIES: dict[str, str] = {
    "transient": "transient",
    "resource": "resource",
    "auth": "auth",
    "validation": "validation",
    "dependency": "dependency",
    "fatal": "fatal",
    "timeout": "transient",
    "rate_limited": "transient",
    "auth_error": "auth",
    "unavailable": "resource",
    "not_found": "dependency",
    "permanent": "fatal",
    "permission": "auth",
    "business": "dependency",
}


#: A JSON-RPC error code's category: JSON-RPC 2.0's ``Invalid params`` and the server codes of
#: EIP-1474 (docs/formats.md).  ``Internal error`` (-32603), what a server answers for anything
#: it has no code of its own for, is left unread: it names no category.
JSONRPC_CATEGORIES: dict[int, str] = {
    -32602: "validation",  # Invalid params: the input is wrong, a retry sends it again
    -32001: "dependency",  # Resource not found
    -32002: "transient",  # Resource unavailable: come back later
    -32005: "transient",  # Limit exceeded
}

#: The google.rpc canonical codes AIP-194 says not to retry: the request itself, or the caller's
#: permission, must change first (UNAUTHENTICATED, a credential to refresh, is not among them).
GOOGLE_NOT_RECOVERABLE = frozenset({"PERMISSION_DENIED", "INVALID_ARGUMENT"})

#: An MCP protocol error's category, by the MCP SDKs' codes: a closed connection is a server
#: (a worker) gone, a request timeout is transient.
MCP_PROTOCOL_CATEGORIES: dict[int, str] = {-32000: "resource", -32001: "transient"}


def _shape_category(envelope: object) -> str | None:
    """The category a real stack's wire shape shows, in the structured tree's words; None if it shows none."""
    if isinstance(envelope, McpProtocolError):
        return MCP_PROTOCOL_CATEGORIES.get(envelope.error.code)
    if isinstance(envelope, JsonRpcErrorResponse):
        return JSONRPC_CATEGORIES.get(envelope.error.code)
    if isinstance(envelope, CallToolResult):
        structured = envelope.structured_content
        return CODE_CATEGORIES.get(structured.error.code) if structured is not None else None
    if isinstance(envelope, ProblemDetails):
        return STATUS_CATEGORIES.get(envelope.status)
    if isinstance(envelope, GoogleRpcError):
        return CODE_CATEGORIES.get(envelope.error_code)
    return None


def category_of(observation: Observation) -> str | None:
    """The failure's category word: ``category``, ``error_category`` or ``failure_type``, else None.

    AgentToolError gives ``transient``/``resource``/``auth``/...; SubagentResult gives
    ``transient``/``validation``/``permission``/...; FailureTypeError gives its failure type
    (``timeout``, ``rate_limited``, ...).  A ToolEnvelope gives its code's category from
    :data:`CODE_CATEGORIES` (``transient`` for a ``timeout`` status); a real stack's wire shape
    gives what it shows (:func:`_shape_category`); no envelope gives None.
    """
    envelope = observation.envelope
    if envelope is None:
        return None
    for attr in ("category", "error_category", "failure_type"):
        value = getattr(envelope, attr, None)
        if value is not None:
            return str(value)
    if isinstance(envelope, ToolEnvelope):
        if envelope.status == "timeout":
            return "transient"
        return CODE_CATEGORIES.get(envelope.error_code or "")
    return _shape_category(envelope)


def tree_category(observation: Observation) -> str | None:
    """The failure's category in the structured tree's vocabulary (:data:`TREE_CATEGORIES`), whatever the contract.

    None without an envelope, for a word the table does not translate (a subagent's
    ``unknown``), and for a code the shared table does not know.
    """
    category = category_of(observation)
    return TREE_CATEGORIES.get(category) if category is not None else None


def tree_recoverable(observation: Observation) -> bool | None:
    """Can the orchestrator act on this failure without a human, as the contract says it; None if it does not say.

    AgentToolError's ``recoverable`` and a tool envelope's ``retriable`` say it directly.  A
    failure type with ``retry_recommended`` False is not recoverable when a retry or a
    refresh is all the tree would do (transient and auth), and a subagent's
    ``is_retryable`` speaks for transient failures only.
    """
    envelope = observation.envelope
    if isinstance(envelope, AgentToolError):
        return envelope.recoverable
    if isinstance(envelope, ToolEnvelope):
        return envelope.retriable
    if isinstance(envelope, CallToolResult) and envelope.structured_content is not None:
        return envelope.structured_content.error.recovery != "terminal"
    if isinstance(envelope, GoogleRpcError) and envelope.error.status in GOOGLE_NOT_RECOVERABLE:
        return False
    category = tree_category(observation)
    if isinstance(envelope, FailureTypeError):
        if envelope.retry_recommended is False and category in ("transient", "auth"):
            return False
        return None
    if isinstance(envelope, SubagentResult) and category == "transient":
        return envelope.is_retryable
    return None


#: Each model-side fault's stable code -> what it is for the actions made for it (:mod:`fleetchaos.sim.model_turns`):
#: ``malformed`` (the model's own output is not a call that can run: a repair turn or a re-prompt may fix it),
#: ``denial`` (a refusal or a filter stop: the same model denies it again, another may answer), ``cut`` (a cut
#: stream: resume it keeping what committed), ``overflow`` (the context is past the window: compact it).
MODEL_FAULTS: dict[str, str] = {
    KINDS[name].contract.error_code: family
    for family, names in (
        ("malformed", REPAIRABLE),
        ("denial", DENIALS),
        ("cut", (CUT_STREAM,)),
        ("overflow", (CONTEXT_OVERFLOW.name,)),
    )
    for name in sorted(names)
}


def model_fault_of(observation: Observation) -> str | None:
    """``malformed``, ``denial``, ``cut`` or ``overflow`` when the envelope's error code names a model-side fault
    (:data:`MODEL_FAULTS`); None when it names another, or nothing (a generic "failed" reveals no reason)."""
    code = code_of(observation)
    return MODEL_FAULTS.get(code) if code is not None else None


def suggested_action_of(observation: Observation) -> str | None:
    """The action the envelope suggests (AgentToolError's ``suggested_action``), else None."""
    action = getattr(observation.envelope, "suggested_action", None)
    return str(action) if action is not None else None


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
    if isinstance(envelope, CallToolResult) and envelope.structured_content is not None:
        return envelope.structured_content.error.recovery != "terminal"
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
    if isinstance(envelope, CallToolResult):
        structured = envelope.structured_content
        return structured.error.retry_after if structured is not None else None
    if isinstance(envelope, GoogleRpcError):
        info = envelope.detail(RetryInfo)
        return info.seconds if isinstance(info, RetryInfo) else None
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
