"""The error shapes real stacks put on the wire, as frozen models the real-stack formats render into.

* :class:`CallToolResult`: an MCP ``tools/call`` result, ``isError`` true, with text content
  and, when the server provides it, ``structuredContent`` (:class:`StructuredError`);
* :class:`JsonRpcErrorResponse`: a JSON-RPC 2.0 response whose ``error`` member is an error
  object (``code``, ``message``, ``data``): an MCP protocol error, or any JSON-RPC tool server;
* :class:`ProblemDetails`: an RFC 9457 problem (``type``, ``title``, ``status``, ``detail``,
  ``instance``, extension members);
* :class:`GoogleRpcError`: a ``google.rpc.Status`` as AIP-193 puts it in an HTTP body, its
  ``details`` an ``ErrorInfo`` and, for a failure with a retry-after hint, a ``RetryInfo``.

Field names are Python's; each model serialises to the wire's names (``isError``,
``structuredContent``, ``@type``, ``retryDelay``) with :func:`wire_json`.  None of these
shapes carries a contract version, so each reports the orchestrator's own
(``schema_version``: a ``schema_drift`` fault cannot show in them), and each names its
failure with ``error_code`` (what the driver counts identical failures in a row by), as every
contract in :mod:`fleetchaos.sim.envelopes` does.  Standard library and pydantic only.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fleetchaos.sim.envelope import SCHEMA_VERSION

__all__ = [
    "RECOVERY",
    "CallToolResult",
    "ErrorInfo",
    "GoogleRpcError",
    "JsonRpcError",
    "JsonRpcErrorResponse",
    "McpProtocolError",
    "ProblemDetails",
    "RetryInfo",
    "RpcStatus",
    "StructuredError",
    "TextContent",
    "ToolErrorBody",
    "wire_json",
]

#: The recovery classes of a structured tool error (AdCP's ``recovery``): wait and retry, change
#: something first (credentials, a worker, a source), or stop.
RECOVERY = ("transient", "correctable", "terminal")


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def schema_version(self) -> str:
        """No version travels with this shape: the orchestrator's own (no skew can be seen)."""
        return SCHEMA_VERSION


def wire_json(shape: BaseModel) -> str:
    """``shape`` as it travels: the wire's field names, absent members left out, compact."""
    return shape.model_dump_json(by_alias=True, exclude_none=True)


# -- MCP


class TextContent(_Shape):
    """A text content block of an MCP tool result."""

    type: Literal["text"] = "text"
    text: str


class ToolErrorBody(_Shape):
    """A structured tool error: a stable code, one sanitised line, how to recover, when to come back."""

    code: str = Field(min_length=1, description="a stable error code, e.g. RATE_LIMITED")
    message: str = Field(description="one sanitised line")
    recovery: Literal["transient", "correctable", "terminal"]
    retry_after: float | None = Field(default=None, ge=0, description="seconds to wait before a retry")


class StructuredError(_Shape):
    """The ``structuredContent`` of a failed call: its error under one key."""

    error: ToolErrorBody


class CallToolResult(_Shape):
    """An MCP tool execution error: ``isError`` true, what the model reads as text content."""

    content: tuple[TextContent, ...]
    is_error: bool = Field(serialization_alias="isError")
    structured_content: StructuredError | None = Field(default=None, serialization_alias="structuredContent")

    @property
    def text(self) -> str:
        """The text content, blocks joined by newlines."""
        return "\n".join(block.text for block in self.content)

    @property
    def error_code(self) -> str:
        """The structured error's code, else ``IS_ERROR``: the text alone names no failure."""
        if self.structured_content is not None:
            return self.structured_content.error.code
        return "IS_ERROR"


# -- JSON-RPC 2.0


class JsonRpcError(_Shape):
    """A JSON-RPC 2.0 error object."""

    code: int
    message: str = Field(description="a short description, limited to a concise single sentence")
    data: dict[str, Any] | None = Field(default=None, description="additional information, defined by the server")


class JsonRpcErrorResponse(_Shape):
    """A JSON-RPC 2.0 response carrying an error object."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: int | str
    error: JsonRpcError

    @property
    def error_code(self) -> str:
        """The error object's code, as text (``-32005``)."""
        return str(self.error.code)


class McpProtocolError(JsonRpcErrorResponse):
    """A JSON-RPC error on an MCP session, seen by the client code: its codes are MCP's
    (the SDKs' ``ConnectionClosed`` -32000 and ``RequestTimeout`` -32001), which other JSON-RPC
    servers use for other things, so the client reads them as the protocol it speaks."""


# -- RFC 9457


class ProblemDetails(_Shape):
    """An RFC 9457 problem; extension members are allowed (and nothing standard says whether to retry)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str = "about:blank"
    title: str
    status: int = Field(ge=100, le=599)
    detail: str | None = None
    instance: str | None = None

    @property
    def error_code(self) -> str:
        """The problem type, or the status when the type is ``about:blank`` (the status then is the type)."""
        return self.type if self.type != "about:blank" else str(self.status)


# -- google.rpc (AIP-193)


class ErrorInfo(_Shape):
    """``google.rpc.ErrorInfo``: the proximate cause as a constant ``reason`` within a ``domain``."""

    type_url: Literal["type.googleapis.com/google.rpc.ErrorInfo"] = Field(
        default="type.googleapis.com/google.rpc.ErrorInfo", serialization_alias="@type"
    )
    reason: str = Field(min_length=1, max_length=63, pattern=r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")
    domain: str
    metadata: dict[str, str] | None = None


class RetryInfo(_Shape):
    """``google.rpc.RetryInfo``: how long to wait before retrying, as a JSON ``Duration`` (``"12.5s"``)."""

    type_url: Literal["type.googleapis.com/google.rpc.RetryInfo"] = Field(
        default="type.googleapis.com/google.rpc.RetryInfo", serialization_alias="@type"
    )
    retry_delay: str = Field(serialization_alias="retryDelay", pattern=r"^\d+(\.\d{1,9})?s$")

    @property
    def seconds(self) -> float:
        """The delay in seconds."""
        return float(self.retry_delay[:-1])


class RpcStatus(_Shape):
    """``google.rpc.Status`` as an HTTP body's ``error``: the HTTP code, a message, the canonical status name, details."""

    code: int = Field(description="the HTTP status the canonical code maps to")
    message: str = Field(description="a developer-facing message in English")
    status: str = Field(description="the canonical code's name, e.g. RESOURCE_EXHAUSTED")
    details: tuple[Annotated[ErrorInfo | RetryInfo, Field(discriminator="type_url")], ...] = ()


class GoogleRpcError(_Shape):
    """An AIP-193 error body: ``{"error": Status}``."""

    error: RpcStatus

    def detail(self, kind: type[ErrorInfo] | type[RetryInfo]) -> ErrorInfo | RetryInfo | None:
        """The first detail of ``kind``, or None."""
        return next((d for d in self.error.details if isinstance(d, kind)), None)

    @property
    def error_code(self) -> str:
        """The ErrorInfo reason, else the canonical status name."""
        info = self.detail(ErrorInfo)
        return info.reason if isinstance(info, ErrorInfo) else self.error.status
