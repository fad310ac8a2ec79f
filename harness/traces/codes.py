"""A team's error codes and HTTP statuses, mapped to the simulator's fault kinds.

A failed call is classified by its error code first (``error.type``, or the plain
form's ``error``), compared without regard to case, then by its HTTP status; a code of
three digits is read as an HTTP status too (OpenTelemetry's HTTP conventions put the
status in ``error.type``).  A failure neither maps is *unmapped*: it is counted by its
code and status and listed, never dropped in silence.

A mapping file (YAML or JSON) adds to or overrides the defaults::

    codes:                       # error code -> fault kind (or "ignore": not a fault)
      CRM_WRITE_FORBIDDEN: permission_denied
      E_SANDBOX_OOM: node_crash
    http:                        # HTTP status -> fault kind
      418: validation_error
    defaults: true               # false: only this file's entries
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fleetchaos.sim.kinds import KINDS
from fleetchaos.traces.bounded import TraceFileError

#: Fault kinds a code can name (the simulator's catalogue, in its order), plus ``ignore``.  A wrong
#: envelope is a contract disagreeing with the call's true outcome: a trace records one outcome
#: per call, so no code in it can name that kind.
FAULT_KINDS: tuple[str, ...] = tuple(name for name in KINDS if name != "wrong_envelope")
IGNORE = "ignore"

#: Error codes -> kinds: POSIX errno names, exception class names, gRPC statuses, common
#: API error types, LLM APIs' finish and stop reasons, the structured contract's codes and the
#: simulated vendors' wire codes.
DEFAULT_CODES: dict[str, str] = {
    **dict.fromkeys(
        ["ECONNRESET", "ECONNABORTED", "EPIPE", "ConnectionResetError", "ConnectionAbortedError", "BrokenPipeError",
         "ConnectionError", "NETWORK_UNREACHABLE", "UNAVAILABLE", "ENETRESET", "APIConnectionError", "ConnectError"],
        "network_blip",
    ),
    **dict.fromkeys(
        ["ETIMEDOUT", "TimeoutError", "timeout", "DEADLINE_EXCEEDED", "TOOL_TIMEOUT", "ReadTimeout", "APITimeoutError"],
        "timeout",
    ),
    **dict.fromkeys(
        ["ERR_RATE_LIMITED", "RATE_LIMITED", "RateLimitError", "rate_limit_exceeded", "too_many_requests",
         "RESOURCE_EXHAUSTED", "throttled", "ThrottlingException"],
        "rate_limit",
    ),
    **dict.fromkeys(["ERR_QUOTA_EXCEEDED", "QUOTA_EXCEEDED", "insufficient_quota"], "quota_exhausted"),
    **dict.fromkeys(["ENOSPC", "EDQUOT", "DISK_FULL"], "disk_full"),
    **dict.fromkeys(
        ["ERR_TOKEN_EXPIRED", "AUTH_EXPIRED", "UNAUTHENTICATED", "AuthenticationError", "token_expired",
         "invalid_api_key", "ExpiredTokenException"],
        "expired_key",
    ),
    **dict.fromkeys(
        ["EACCES", "EPERM", "PERMISSION_DENIED", "PermissionError", "PermissionDeniedError", "forbidden",
         "AccessDeniedException"],
        "permission_denied",
    ),
    **dict.fromkeys(["ERR_NOT_FOUND", "NOT_FOUND", "NotFoundError", "not_found"], "not_found"),
    **dict.fromkeys(
        ["ENOENT", "DEPENDENCY_MISSING", "ModuleNotFoundError", "command_not_found"],
        "missing_dependency",
    ),
    **dict.fromkeys(
        ["ERR_INVALID_ARG_VALUE", "VALIDATION_FAILED", "INVALID_ARGUMENT", "ValidationError", "ValueError",
         "invalid_request_error", "BadRequestError", "UnprocessableEntityError"],
        "validation_error",
    ),
    **dict.fromkeys(["ERR_NON_FAST_FORWARD", "GIT_PUSH_REJECTED", "non_fast_forward", "ABORTED"], "git_push_conflict"),
    **dict.fromkeys(["ERR_BATCH_ITEM", "BATCH_ITEM_FAILED"], "partial_batch"),
    **dict.fromkeys(["ECONNREFUSED", "WORKER_LOST"], "node_crash"),
    **dict.fromkeys(["ERR_OVERLOADED", "SERVICE_OVERLOADED", "OVERLOADED", "overloaded_error"], "overloaded"),
    **dict.fromkeys(["EHOSTUNREACH", "NETWORK_PARTITION"], "network_partition"),
    # The model's own faults, as an LLM API's finish or stop reason names them (OpenAI's finish_reason,
    # Anthropic's stop_reason, Gemini's finishReason, Bedrock's stopReason) or as a client raises them.
    **dict.fromkeys(["ERR_MODEL_REFUSAL", "MODEL_REFUSAL", "refusal"], "refusal"),
    **dict.fromkeys(
        ["ERR_CONTENT_FILTER", "CONTENT_FILTERED", "content_filter", "content_filtered", "guardrail_intervened",
         "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "ResponsibleAIPolicyViolation"],
        "content_filter",
    ),
    **dict.fromkeys(
        ["ERR_LENGTH_STOP", "OUTPUT_TRUNCATED", "length", "max_tokens", "max_output_tokens", "LengthFinishReasonError"],
        "truncated_call",
    ),
    **dict.fromkeys(
        ["ERR_INVALID_JSON", "INVALID_TOOL_ARGUMENTS", "MALFORMED_FUNCTION_CALL", "tool_use_failed",
         "OutputParserException"],
        "malformed_args",
    ),
    **dict.fromkeys(["ERR_UNKNOWN_TOOL", "UNKNOWN_TOOL", "UNEXPECTED_TOOL_CALL"], "unknown_tool"),
    **dict.fromkeys(["ERR_DUPLICATE_TOOL_CALL_ID", "DUPLICATE_TOOL_CALL_ID"], "duplicate_call_id"),
    **dict.fromkeys(["ERR_CONTEXT_LENGTH_EXCEEDED", "CONTEXT_LENGTH_EXCEEDED"], "context_overflow"),
    **dict.fromkeys(["ERR_EMPTY_RESPONSE", "EMPTY_RESPONSE"], "empty_turn"),
    **dict.fromkeys(
        ["ERR_STREAM_PREMATURE_CLOSE", "STREAM_INTERRUPTED", "RemoteProtocolError", "ChunkedEncodingError",
         "IncompleteRead"],
        "stream_cut",
    ),
    # The MCP boundary, as the MCP SDKs raise it (the Python SDK's McpError for a JSON-RPC error, FastMCP's
    # ToolError behind an isError result), as OpenTelemetry's MCP conventions record an isError result
    # (error.type tool_error) and as the simulated vendors' wire codes and the contract's codes name it.
    **dict.fromkeys(["ERR_MCP_PROTOCOL", "MCP_PROTOCOL_ERROR", "McpError"], "mcp_protocol_error"),
    **dict.fromkeys(["ERR_MCP_TOOL_ERROR", "MCP_TOOL_ERROR", "IS_ERROR", "ToolError", "tool_error"], "mcp_tool_error"),
    **dict.fromkeys(["ERR_MCP_CONNECTION_CLOSED", "MCP_SERVER_UNAVAILABLE"], "mcp_server_restart"),
    **dict.fromkeys(["ERR_MCP_SESSION_NOT_FOUND", "MCP_SESSION_EXPIRED"], "mcp_session_expired"),
    **dict.fromkeys(["ERR_MCP_UNKNOWN_TOOL", "MCP_UNKNOWN_TOOL"], "mcp_tool_drift"),
}  # fmt: skip

#: HTTP statuses -> kinds, used when the code says nothing.
DEFAULT_HTTP: dict[int, str] = {
    400: "validation_error",
    401: "expired_key",
    403: "permission_denied",
    404: "not_found",
    408: "timeout",
    409: "git_push_conflict",
    422: "validation_error",
    424: "missing_dependency",
    429: "rate_limit",
    502: "network_blip",
    503: "network_blip",
    504: "timeout",
    507: "disk_full",
}

_STATUS = re.compile(r"^[1-5][0-9][0-9]$")


class _MappingFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    codes: dict[str, str] = Field(default_factory=dict)
    http: dict[int, str] = Field(default_factory=dict)
    defaults: bool = True

    @field_validator("codes", "http")
    @classmethod
    def _known_kinds(cls, value: dict) -> dict:
        for key, kind in value.items():
            if kind not in FAULT_KINDS and kind != IGNORE:
                import difflib

                guess = difflib.get_close_matches(str(kind), [*FAULT_KINDS, IGNORE], n=1)
                hint = f"; did you mean {guess[0]!r}?" if guess else ""
                raise ValueError(
                    f"{key}: unknown fault kind {kind!r} (kinds: {', '.join(FAULT_KINDS)}, or ignore){hint}"
                )
        return value

    @field_validator("http")
    @classmethod
    def _statuses(cls, value: dict) -> dict:
        for status in value:
            if not 100 <= status <= 599:
                raise ValueError(f"{status}: not an HTTP status (100..599)")
        return value


class CodeMap:
    """Classifies failed calls into fault kinds and counts what it cannot classify."""

    def __init__(self, codes: dict[str, str] | None = None, http: dict[int, str] | None = None, defaults: bool = True):
        self.codes = {k.lower(): v for k, v in ({**DEFAULT_CODES} if defaults else {}).items()}
        self.codes.update({k.lower(): v for k, v in (codes or {}).items()})
        self.http = {**(DEFAULT_HTTP if defaults else {}), **(http or {})}
        self.unmapped: Counter[tuple[str | None, int | None]] = Counter()
        self._cache: dict[tuple[str | None, int | None], str | None] = {}

    def kind(self, code: str | None, http_status: int | None) -> str | None:
        """The fault kind of a failed call (``"ignore"``: not a fault), or None when unmapped (and counted)."""
        key = (code, http_status)
        try:
            kind = self._cache[key]
        except KeyError:
            kind = self._cache[key] = self._classify(code, http_status)
        if kind is None:
            self.unmapped[key] += 1
        return kind

    def _classify(self, code: str | None, http_status: int | None) -> str | None:
        if code is not None:
            kind = self.codes.get(code.strip().lower())
            if kind is not None:
                return kind
            if http_status is None and _STATUS.match(code.strip()):
                http_status = int(code.strip())
        if http_status is not None:
            return self.http.get(http_status)
        return None

    def unmapped_rows(self) -> list[tuple[str, int]]:
        """Unmapped failures as (description, count), most frequent first."""
        rows = []
        for (code, status), count in self.unmapped.most_common():
            parts = [f"code {code!r}" if code is not None else "no error code"]
            if status is not None:
                parts.append(f"HTTP {status}")
            rows.append((", ".join(parts), count))
        return rows


def load_code_map(path: Path | None) -> CodeMap:
    """The defaults, with a mapping file's entries on top (``path`` None: the defaults alone)."""
    if path is None:
        return CodeMap()
    from fleetchaos.errors import ScenarioError
    from fleetchaos.files import read_user_text
    from fleetchaos.scenario.load import MAX_FILE_BYTES, parse_document

    source = str(path)
    text = read_user_text(path, MAX_FILE_BYTES, option="--codes", what="code mapping", error=TraceFileError)
    try:
        data = parse_document(
            text, source, what="code mapping", needs="give codes: {CODE: kind} or http: {STATUS: kind}"
        )
    except ScenarioError as exc:
        raise TraceFileError(str(exc)) from None
    try:
        spec = _MappingFile.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        rule = error["msg"].removeprefix("Value error, ")
        raise TraceFileError(
            f"{source}: {where}: {rule}; a mapping file has codes: {{CODE: kind}}, http: {{STATUS: kind}} "
            "and defaults: true|false"
        ) from None
    return CodeMap(spec.codes, spec.http, spec.defaults)
