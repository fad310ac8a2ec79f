"""The model-side fault kinds: what breaks in the orchestrator's own model call, not in the tool it calls.

A turn of the task's conversation (:mod:`fleetchaos.sim.conversation`) asks the model for
the step's tool call; these kinds are what comes back instead of a well-formed call: a
refusal or a content-filter stop (deterministic: the same request is denied on every
try, so a retry of it is always wasted, counted in its own family), arguments that do not
parse, a call cut at the length limit, a tool name that does not exist, two calls under
one id, an empty turn, a stream cut after some calls already committed.  Each is one
record, met at an existing stage: a refusal, a filter stop and a length stop are keyed per task and step (the same
prompt gets the same answer), the rest are drawn per execution.  Their records sit in the
catalogue (:data:`fleetchaos.sim.kinds.KINDS`) after the per-call tool kinds; they live
here so each module stays one readable size.  Standard library only.
"""

from __future__ import annotations

from fleetchaos.sim.kind_record import (
    CONTEXT_CAUSE,
    CONVERSATION,
    PERMANENT_ERROR,
    PERSISTENT,
    TASK_STEP,
    TRANSIENT,
    TRANSIENT_AGAIN,
    FailureContract,
    FaultKind,
    Waste,
    Wire,
)

#: The wasted-retry family of a refusal or a filter stop retried as it was (docs/metrics.md, ``wasted_retries``).
DETERMINISTIC_DENIAL = "retried a deterministic denial"
#: The family of a retry into the same malformed output of the model.
MODEL_OUTPUT_AGAIN = "into the same malformed model output"

#: The kinds, in catalogue order.
MODEL_KINDS: tuple[FaultKind, ...] = (
    FaultKind(
        name="refusal",
        stage=PERSISTENT,
        contract=FailureContract("MODEL_REFUSAL", "fatal", False, "rephrase_or_escalate"),
        fail_fast_s=2.0,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=False,
        failure_type="permanent",
        subagent_category="business",
        alternative=None,
        wire=Wire(400, "Bad Request (stop_reason: refusal)", "ERR_MODEL_REFUSAL"),
        waste=Waste("persistent", "the model refuses the same request again", DETERMINISTIC_DENIAL),
        remedy=None,
        persistent_scope=TASK_STEP,
        effect="The model declines the step's request (stop reason: refusal) and emits no tool call; the same "
        "request is refused on every try, so only a changed request or another model gets past it.",
    ),
    FaultKind(
        name="content_filter",
        stage=PERSISTENT,
        contract=FailureContract("CONTENT_FILTERED", "fatal", False, "rephrase_or_escalate"),
        fail_fast_s=1.0,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=False,
        failure_type="permanent",
        subagent_category="business",
        alternative=None,
        wire=Wire(400, "Bad Request (finish_reason: content_filter)", "ERR_CONTENT_FILTER"),
        waste=Waste("persistent", "the filter stops the same request again", DETERMINISTIC_DENIAL),
        remedy=None,
        persistent_scope=TASK_STEP,
        effect="The provider's content filter stops the model's answer (its finish reason: a content filter) before any "
        "tool call; the same request is stopped on every try.",
    ),
    FaultKind(
        name="truncated_call",
        stage=PERSISTENT,
        contract=FailureContract("OUTPUT_TRUNCATED", "validation", False, "raise_max_tokens"),
        fail_fast_s=20.0,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=False,
        failure_type="permanent",
        subagent_category="validation",
        alternative=None,
        wire=Wire(422, "Unprocessable Entity (finish_reason: length)", "ERR_LENGTH_STOP"),
        waste=Waste("persistent", "the call is cut at the same length again", MODEL_OUTPUT_AGAIN),
        remedy=None,
        persistent_scope=TASK_STEP,
        effect="The model's tool call is cut at the output length limit mid-arguments (a length stop) and is not "
        "run; the same request is cut again on every try until the limit is raised or the request shortened.",
    ),
    FaultKind(
        name="malformed_args",
        stage=TRANSIENT,
        contract=FailureContract("INVALID_TOOL_ARGUMENTS", "validation", True, "reprompt_with_schema"),
        fail_fast_s=3.0,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=True,
        failure_type="permanent",
        subagent_category="validation",
        alternative=None,
        wire=Wire(400, "Bad Request (invalid tool arguments)", "ERR_INVALID_JSON"),
        waste=Waste("transient", "the model emits malformed arguments again", MODEL_OUTPUT_AGAIN),
        remedy=None,
        persistent_scope=None,
        effect="The model emits a tool call whose arguments do not parse or break the tool's schema; the call is "
        "refused before it runs and takes no effect; asked again, the model usually emits a valid call.",
    ),
    FaultKind(
        name="unknown_tool",
        stage=TRANSIENT,
        contract=FailureContract("UNKNOWN_TOOL", "validation", True, "reprompt_with_tool_list"),
        fail_fast_s=3.0,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=True,
        failure_type="not_found",
        subagent_category="validation",
        alternative=None,
        wire=Wire(404, "Not Found (no such tool)", "ERR_UNKNOWN_TOOL"),
        waste=Waste("transient", "the model names a missing tool again", MODEL_OUTPUT_AGAIN),
        remedy=None,
        persistent_scope=None,
        effect="The model calls a tool that does not exist (a hallucinated or renamed name); nothing runs; asked "
        "again, the model usually names a real tool.",
    ),
    FaultKind(
        name="duplicate_call_id",
        stage=TRANSIENT,
        contract=FailureContract("DUPLICATE_TOOL_CALL_ID", "validation", True, "retry_turn"),
        fail_fast_s=3.0,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=True,
        failure_type="permanent",
        subagent_category="validation",
        alternative=None,
        wire=Wire(400, "Bad Request (duplicate tool_call_id)", "ERR_DUPLICATE_TOOL_CALL_ID"),
        waste=Waste("transient", "the model repeats a tool-call id again", MODEL_OUTPUT_AGAIN),
        remedy=None,
        persistent_scope=None,
        effect="The model's turn emits two tool calls with the same id; the turn is rejected as a whole (a 400 "
        "validation error naming the repeated id) before any of its calls is dispatched, so the tool did not run "
        "and nothing took effect; asked again, the model usually emits distinct ids.",
    ),
    FaultKind(
        name="empty_turn",
        stage=TRANSIENT,
        contract=FailureContract("EMPTY_RESPONSE", "transient", True, "retry"),
        fail_fast_s=2.0,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=True,
        retry_helps=True,
        failure_type="unavailable",
        subagent_category="transient",
        alternative=None,
        wire=Wire(502, "Bad Gateway (empty response)", "ERR_EMPTY_RESPONSE"),
        waste=Waste("transient", "the model answers empty again", MODEL_OUTPUT_AGAIN),
        remedy=None,
        persistent_scope=None,
        effect="The model's turn comes back with neither text nor a tool call; nothing runs; a retry normally "
        "gets a real turn.",
    ),
    FaultKind(
        name="stream_cut",
        stage=TRANSIENT,
        contract=FailureContract("STREAM_INTERRUPTED", "transient", True, "resume_with_idempotency"),
        fail_fast_s=None,
        outcome_unknown=True,
        retry_after=False,
        transport_retryable=False,
        retry_helps=True,
        failure_type="timeout",
        subagent_category="transient",
        alternative=None,
        wire=Wire(502, "Bad Gateway (stream closed mid-response)", "ERR_STREAM_PREMATURE_CLOSE"),
        waste=Waste("transient", "the stream is cut again", TRANSIENT_AGAIN),
        remedy=None,
        persistent_scope=None,
        effect="The model's streamed answer is cut timeout_s into the stream, with a half-emitted tool call; with "
        "committed_probability the calls it emitted before the cut had already run, so a retry without "
        "idempotency runs them twice (the ledger counts the duplicates).",
    ),
    FaultKind(
        name="context_overflow",
        stage=CONVERSATION,
        contract=FailureContract("CONTEXT_LENGTH_EXCEEDED", "validation", False, "compact_context"),
        fail_fast_s=0.5,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=False,
        failure_type="permanent",
        subagent_category="validation",
        alternative=None,
        wire=Wire(400, "Bad Request (context_length_exceeded)", "ERR_CONTEXT_LENGTH_EXCEEDED"),
        waste=Waste(CONTEXT_CAUSE, "the context is still past the model's window", PERMANENT_ERROR),
        remedy=None,
        persistent_scope=None,
        effect="Not declared: it emerges.  A model turn whose context (the system prompt, every tool result and "
        "error text so far) is past fleet.model.context_window_tokens is refused (a 400: the context length exceeded) "
        "before it emits a call, so nothing runs; the context only grows, so a plain retry reads it again and is "
        "refused again: only a shorter context gets past it.  The action made for it is CompactContext (the "
        "compact-context preset, and structured-llm on CONTEXT_LENGTH_EXCEEDED): a summary replaces the conversation, "
        "and the task finishes as a partial result at best.",
    ),
)

#: Kinds met in the orchestrator's own model turn (the records above), not in
#: a tool: a worker's wrong envelope never names one unless its ``reported_as`` does, so a
#: model-side kind added to the catalogue leaves every tool failure's envelope draws unchanged.
MODEL_SIDE_KINDS: frozenset[str] = frozenset(k.name for k in MODEL_KINDS)

__all__ = ["DETERMINISTIC_DENIAL", "MODEL_KINDS", "MODEL_OUTPUT_AGAIN", "MODEL_SIDE_KINDS"]
