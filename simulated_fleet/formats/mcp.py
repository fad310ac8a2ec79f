"""``mcp`` and ``mcp-structured``: a failed MCP tool call, as a tool execution error or a protocol error.

MCP reports a failed ``tools/call`` on one of two channels (the specification's "Error
Handling" for tools, 2025-11-25):

* a **tool execution error**: the server ran the tool and it failed (the API it called
  refused, timed out upstream, found nothing): a ``CallToolResult`` with ``isError: true``
  and text content, which the host hands to the model.  The text is the Python SDK's
  (FastMCP) ``Error executing tool {name}: {e}``, with the message sanitised as the
  specification asks of servers ("Servers MUST ... sanitize tool outputs"; the 1.x SDK
  passed ``str(e)`` through, which is what ``agent-sdk-default`` shows);
* a **protocol error**: no result came back, so the client code sees a JSON-RPC error
  (:class:`~fleetchaos.sim.wire_shapes.McpProtocolError`) and the model usually does not: the
  server could not be reached (the worker it runs on crashed or is cut off: the SDKs'
  ``ConnectionClosed``, -32000) or did not answer before the client's request timeout
  (``RequestTimeout``, -32001).  Which channel a failure takes is read from its kind's record:
  a call whose outcome is unknown timed out at the client; a wire errno of a refused or
  unreachable connection (:data:`CONNECTION_ERRNOS`) never reached the server, and the MCP
  boundary's own failures (:data:`MCP_ERRNOS`) take the channel the specification gives them:
  a server's internal error, an expired session and an unknown tool are protocol errors, a
  tool that ran and failed (``mcp_tool_error``) an ``isError`` result.

``mcp-structured`` is a server that also provides ``structuredContent``: the error as a
stable code, a one-line message, a recovery class and a retry-after in seconds, with the
serialised JSON in the text block as the specification asks for backwards compatibility.
Its shape is AdCP's MCP binding (``structuredContent.adcp_error``: code, message, recovery
``transient``/``correctable``/``terminal``, retry_after; adcontextprotocol/adcp #1560), the
published binding of a structured tool error into ``structuredContent``.
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import plain_success, retry_after_ms
from fleetchaos.sim.formats._vendor import VendorText, shown_kind, vendor_error
from fleetchaos.sim.kinds import FaultKind, rendered_kind
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import sanitise
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.wire_shapes import (
    CallToolResult,
    JsonRpcError,
    McpProtocolError,
    StructuredError,
    TextContent,
    ToolErrorBody,
    wire_json,
)

#: Wire errnos of a connection the client could not open or lost to the server itself.
CONNECTION_ERRNOS = frozenset({"ECONNREFUSED", "EHOSTUNREACH"})

#: The SDKs' protocol error codes for a call that got no result (the TypeScript SDK's ``ErrorCode``).
CONNECTION_CLOSED = (-32000, "Connection closed")
REQUEST_TIMEOUT = (-32001, "Request timed out")


#: Wire errnos of the MCP boundary's own failures -> what the client gets: a JSON-RPC error (code, message), or
#: None for a tool that ran and returned ``isError`` (a result, whatever the kind's outcome).  The codes are the
#: specification's (-32602 for an unknown tool, -32603 for an internal error), the SDKs' -32000 for a restarting
#: server's closed connection and the SDK servers' (-32001 "Session not found", with HTTP 404, for a session id the
#: server no longer knows).
MCP_ERRNOS: dict[str, tuple[int, str] | None] = {
    "ERR_MCP_PROTOCOL": (-32603, "Internal error"),
    "ERR_MCP_CONNECTION_CLOSED": CONNECTION_CLOSED,
    "ERR_MCP_SESSION_NOT_FOUND": (-32001, "Session not found"),
    "ERR_MCP_UNKNOWN_TOOL": (-32602, "Unknown tool"),
    "ERR_MCP_TOOL_ERROR": None,
}


def protocol_error(kind: FaultKind) -> tuple[int, str] | None:
    """The JSON-RPC code and message the client sees when ``kind`` left the call without a result, else None."""
    errno = kind.wire.errno if kind.wire is not None else None
    if errno in MCP_ERRNOS:
        return MCP_ERRNOS[errno]
    if kind.outcome_unknown:
        return REQUEST_TIMEOUT
    if errno in CONNECTION_ERRNOS:
        return CONNECTION_CLOSED
    return None


def recovery_of(kind: FaultKind) -> str:
    """The recovery class of a kind: terminal when it is not recoverable, transient when waiting and
    retrying is the remedy (a transient category, or a retry-after hint), else correctable
    (something must change first: credentials, a worker, a source)."""
    if not kind.contract.recoverable:
        return "terminal"
    if kind.contract.category == "transient" or kind.retry_after:
        return "transient"
    return "correctable"


def request_id(report: AttemptReport) -> str:
    """The JSON-RPC id of the failed call: the task and the failed step."""
    return f"{report.task_id}-{report.failed_step}"


class McpFormat(VendorText):
    """An MCP tool execution error (``isError`` and FastMCP's text, sanitised), or a protocol error.

    The text reveals what the exception's message carries (an HTTP status from a JVM or
    Python client, an errno-like code from a Node client); a protocol error reveals its
    JSON-RPC code to the client code and nothing to the model.  No progress, no retry-after.
    """

    name = "mcp"
    partial_batch = "failed"  # the error object reports the failure
    misread_setting = "mcp"
    misread_factor = DEFAULT_MISREAD_FACTORS["mcp"]
    failure_flag = True  # isError, or a JSON-RPC error: machine-readable either way

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """The failed call as the MCP client gets it."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        # The client sees a protocol error for what really happened: no server wrote it.
        protocol = protocol_error(rendered_kind(report.failure))
        if protocol is not None:
            code, message = protocol
            envelope = McpProtocolError(id=request_id(report), error=JsonRpcError(code=code, message=message))
            return Observation(ok=False, status="failed", worker=report.worker, envelope=envelope)
        result = self.tool_error(report)
        return self.failed(report, text=result.text, envelope=result)

    def tool_error(self, report: AttemptReport) -> CallToolResult:
        """The server's ``CallToolResult`` for a tool that ran and failed."""
        tool = report.step_names[report.failed_step]
        message = sanitise(vendor_error(report, self.secrets).message)
        return CallToolResult(content=(TextContent(text=f"Error executing tool {tool}: {message}"),), is_error=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class McpStructuredFormat(McpFormat):
    """An MCP tool execution error with ``structuredContent``: code, message, recovery, retry-after.

    The code is the kind's stable error code (the table every contract shares), the recovery
    class says whether to wait, change something or stop (:func:`recovery_of`), and a
    failure with a retry-after hint carries it in seconds.  Protocol errors are as in ``mcp``.
    """

    name = "mcp-structured"
    misread_setting = "mcp_structured"
    misread_factor = DEFAULT_MISREAD_FACTORS["mcp_structured"]

    def tool_error(self, report: AttemptReport) -> CallToolResult:
        """The server's ``CallToolResult`` with the structured error and its JSON as the text block."""
        kind = shown_kind(report)
        hint = retry_after_ms(report)
        body = ToolErrorBody(
            code=kind.contract.error_code,
            message=sanitise(vendor_error(report, self.secrets).message),
            recovery=recovery_of(kind),  # type: ignore[arg-type]  # one of RECOVERY by construction
            retry_after=None if hint is None else hint / 1000.0,
        )
        structured = StructuredError(error=body)
        return CallToolResult(
            content=(TextContent(text=wire_json(structured)),), is_error=True, structured_content=structured
        )
