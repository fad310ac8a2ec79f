"""The MCP boundary's fault kinds: what breaks between the agent's MCP client and a tool server.

A tool reached over the Model Context Protocol fails on one of two channels, and the
difference decides what a retry does (the specification's "Error Handling" for tools):

* a **protocol error** (a JSON-RPC error object): no result came back, the call never
  reached the tool, so nothing took effect and a retry is safe (``mcp_protocol_error``);
* a **tool execution error** (a ``CallToolResult`` with ``isError: true``): the tool ran and
  reports that it failed; what it did before failing may have taken effect, so a retry
  may do it twice (``mcp_tool_error``, its outcome unknown like a timeout's).

Around the channel, three kinds of the connection itself: a server process that dies and
respawns (every call to its tools fails with the connection closed until it is back:
``mcp_server_restart``, a state kind whose handler is in
:mod:`fleetchaos.sim.state_kinds_mcp`), a session the server no longer knows (streamable
HTTP answers 404 to the old session id, so a retry on it fails every time until the client
initialises a new session: ``mcp_session_expired``) and a tool list that drifted (the
server renamed or removed a tool the conversation's list still names, so every call to the
old name is an unknown-tool error until the client lists the tools again:
``mcp_tool_drift``).  The last two are keyed per task and step (one MCP client per agent
run, the tool list in its conversation): the policy actions that clear them,
:class:`~fleetchaos.sim.observation.ReinitSession` and
:class:`~fleetchaos.sim.observation.RefreshTools`, are realised by
:mod:`fleetchaos.sim.mcp_turns`.

Their records sit at the end of the catalogue (:data:`fleetchaos.sim.kinds.KINDS`); they
live here so each module stays one readable size.  Standard library only.
"""

from __future__ import annotations

from fleetchaos.sim.kind_record import (
    EXHAUSTED_RESOURCE,
    PERMANENT_ERROR,
    PERSISTENT,
    RENEWED,
    STATE,
    STATE_CAUSE,
    TRANSIENT,
    TRANSIENT_AGAIN,
    FailureContract,
    FaultKind,
    Waste,
    Wire,
)

PROTOCOL_ERROR = "mcp_protocol_error"
TOOL_ERROR = "mcp_tool_error"
SERVER_RESTART = "mcp_server_restart"
SESSION_EXPIRED = "mcp_session_expired"
TOOL_DRIFT = "mcp_tool_drift"

#: The kinds, in catalogue order.
MCP_KINDS: tuple[FaultKind, ...] = (
    FaultKind(
        name=PROTOCOL_ERROR,
        stage=TRANSIENT,
        contract=FailureContract("MCP_PROTOCOL_ERROR", "transient", True, "retry"),
        fail_fast_s=0.2,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=True,
        retry_helps=True,
        failure_type="unavailable",
        subagent_category="transient",
        alternative=None,
        wire=Wire(500, "Internal Server Error (JSON-RPC -32603)", "ERR_MCP_PROTOCOL"),
        waste=Waste("transient", "the MCP server answers a protocol error again", TRANSIENT_AGAIN),
        remedy=None,
        persistent_scope=None,
        effect="The MCP server answers the tools/call with a JSON-RPC error object (-32603) before the tool runs: no "
        "result, nothing took effect, so a retry is safe; the model usually never reads it (the client raises).",
    ),
    FaultKind(
        name=TOOL_ERROR,
        stage=TRANSIENT,
        contract=FailureContract("MCP_TOOL_ERROR", "transient", True, "verify_then_retry"),
        fail_fast_s=None,
        outcome_unknown=True,
        retry_after=False,
        transport_retryable=False,
        retry_helps=True,
        failure_type="timeout",
        subagent_category="transient",
        alternative=None,
        wire=Wire(500, "Internal Server Error (tool result isError: true)", "ERR_MCP_TOOL_ERROR"),
        waste=Waste("transient", "the tool reports an error again", TRANSIENT_AGAIN),
        remedy=None,
        persistent_scope=None,
        effect="The tool ran for ran_s and returned a result with isError: true, which the model reads; with "
        "committed_probability what it did before failing had taken effect, so a retry without idempotency "
        "does it twice (the ledger counts the duplicate).",
    ),
    FaultKind(
        name=SERVER_RESTART,
        stage=STATE,
        contract=FailureContract("MCP_SERVER_UNAVAILABLE", "transient", True, "retry_with_backoff"),
        fail_fast_s=0.05,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=True,
        retry_helps=True,
        failure_type="unavailable",
        subagent_category="transient",
        alternative=None,
        wire=Wire(502, "Bad Gateway (MCP server connection closed)", "ERR_MCP_CONNECTION_CLOSED"),
        waste=Waste(STATE_CAUSE, "MCP server still respawning", EXHAUSTED_RESOURCE),
        remedy=None,
        persistent_scope=None,
        effect="The MCP server serving the fault's tools dies and respawns: from each restart, for a respawn time "
        "drawn per restart (log-normal, mean respawn_s), every call to its tools fails at once with the connection "
        "closed and takes no effect; then they work again, so a retry that waits long enough succeeds.",
    ),
    FaultKind(
        name=SESSION_EXPIRED,
        stage=PERSISTENT,
        contract=FailureContract("MCP_SESSION_EXPIRED", "auth", True, "reinitialize_session"),
        fail_fast_s=0.1,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=False,
        failure_type="auth_error",
        subagent_category="permission",
        alternative=None,
        wire=Wire(404, "Not Found (MCP session expired)", "ERR_MCP_SESSION_NOT_FOUND"),
        waste=Waste("persistent", "the MCP session is still expired", PERMANENT_ERROR),
        remedy=None,
        persistent_scope=RENEWED,
        effect="The server no longer knows the client's session (streamable HTTP answers 404 to its id) and the tool "
        "does not run; a retry on the same session fails every time, whatever the wait: only a client that "
        "initialises a new session (ReinitSession) gets the call through.",
    ),
    FaultKind(
        name=TOOL_DRIFT,
        stage=PERSISTENT,
        contract=FailureContract("MCP_UNKNOWN_TOOL", "validation", True, "refresh_tool_list"),
        fail_fast_s=0.1,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=False,
        failure_type="not_found",
        subagent_category="validation",
        alternative=None,
        wire=Wire(404, "Not Found (tool not in the server's list)", "ERR_MCP_UNKNOWN_TOOL"),
        waste=Waste("persistent", "the tool list is still stale", PERMANENT_ERROR),
        remedy=None,
        persistent_scope=RENEWED,
        effect="The server renamed or removed the step's tool, and the conversation's tool list still names the "
        "old one: the call is an unknown-tool error (JSON-RPC -32602) and nothing runs, on every try until the "
        "client lists the tools again (RefreshTools); then the call goes to the new name.",
    ),
)

#: The kinds a renewal clears -> the slot of ``sources`` (keyed ``(step, slot)``) that counts a task's renewals of
#: a step: each renewal draws the kind afresh (a new session may expire too, at the same rate).
RENEWAL_SLOTS: dict[str, int] = {
    k.name: -1 - i for i, k in enumerate(k for k in MCP_KINDS if k.persistent_scope == RENEWED)
}

#: The MCP kinds' names.  A wrong envelope never reports a tool failure as one unless its ``reported_as``
#: names it, so adding them left every other failure's envelope draws where they were.
MCP_SIDE_KINDS: frozenset[str] = frozenset(k.name for k in MCP_KINDS)

__all__ = [
    "MCP_KINDS",
    "MCP_SIDE_KINDS",
    "PROTOCOL_ERROR",
    "RENEWAL_SLOTS",
    "SERVER_RESTART",
    "SESSION_EXPIRED",
    "TOOL_DRIFT",
    "TOOL_ERROR",
]
