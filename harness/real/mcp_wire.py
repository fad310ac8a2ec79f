"""The MCP boundary's faults as a streamable-HTTP MCP server puts them on the wire, for a route bound with ``mcp=True``.

An MCP call over streamable HTTP is a JSON-RPC POST (``tools/call``, its tool in ``params.name``).  A fault of
the MCP kinds (:mod:`fleetchaos.sim.kinds_mcp`) met by one is answered as the server would answer it, on the
channel the ``mcp`` format shows (:data:`fleetchaos.sim.formats.mcp.MCP_ERRNOS`), so the team's MCP client meets
it through its own SDK:

* a protocol error: HTTP 200 with a JSON-RPC error object (-32603 Internal error), the request's id;
* an expired session: HTTP 404 with the SDK servers' JSON-RPC error (-32001 Session not found), id null;
* a drifted tool list: HTTP 200 with the specification's error (-32602 Unknown tool: NAME);
* an ``isError`` result: HTTP 200 with a ``CallToolResult`` (``isError: true``, FastMCP's text);
* a restarting server: no answer at all (the connection is refused).

:func:`rpc_call` reads what a request asks for, so the transport can tell a ``tools/call`` from the
``initialize`` that opens a new session and the ``tools/list`` that refreshes the tool list (the renewals,
:mod:`fleetchaos.sim.mcp_turns`).  Standard library only.
"""

from __future__ import annotations

import json
from typing import Any

from fleetchaos.sim.formats.mcp import CONNECTION_CLOSED, MCP_ERRNOS
from fleetchaos.sim.kinds import fault_kind
from fleetchaos.sim.kinds_mcp import SESSION_EXPIRED, TOOL_DRIFT

__all__ = ["INITIALIZE", "LIST_TOOLS", "TOOLS_CALL", "mcp_answer", "rpc_call"]

TOOLS_CALL, INITIALIZE, LIST_TOOLS = "tools/call", "initialize", "tools/list"

#: A JSON-RPC body this large is not read for its method (a tool's arguments can be large; a request is not).
MAX_BODY = 1 << 20


def rpc_call(content: bytes) -> tuple[str | None, Any, str | None]:
    """(the JSON-RPC method, the request's id, the tool a ``tools/call`` names) of a request body; Nones when the
    body is not one JSON-RPC request (a batch, a notification list, something else)."""
    if len(content) > MAX_BODY:
        return None, None, None
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None, None, None
    if not isinstance(body, dict) or not isinstance(body.get("method"), str):
        return None, None, None
    params = body.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return body["method"], body.get("id"), name if isinstance(name, str) else None


def mcp_answer(kind: str, request_id: Any, tool: str) -> tuple[int, bytes] | None:
    """The HTTP status and JSON body the server answers a ``tools/call`` of ``tool`` that met ``kind`` with, or None
    when no answer comes (the server is down: the connection is refused)."""
    wire = fault_kind(kind).wire
    assert wire is not None and wire.errno in MCP_ERRNOS, kind  # an MCP kind: its channel is in the table
    channel = MCP_ERRNOS[wire.errno]
    if channel == CONNECTION_CLOSED:
        return None
    if channel is None:  # the tool ran and failed: a result the model reads
        text = f"Error executing tool {tool}: {wire.reason}"
        result = {"content": [{"type": "text", "text": text}], "isError": True}
        return 200, _json({"jsonrpc": "2.0", "id": request_id, "result": result})
    code, message = channel
    if kind == SESSION_EXPIRED:  # the transport's 404, answered before the request is read: no id
        return 404, _json({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
    if kind == TOOL_DRIFT:
        message = f"{message}: {tool}"
    return 200, _json({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def _json(document: dict) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()
