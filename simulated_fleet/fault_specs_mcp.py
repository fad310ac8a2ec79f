"""The scenario models of the MCP boundary's fault kinds (records in :mod:`fleetchaos.sim.kinds_mcp`).

A protocol error and an ``isError`` result are drawn afresh for every call; an expired
session and a drifted tool list once per task and step (the same client and conversation
meet the same stale session or list on every try); a server restart is scheduled: its
restarts are a Poisson process (and explicit instants), each followed by a respawn time
drawn from a log-normal, during which every call to the server's tools fails.
Imported by :mod:`fleetchaos.sim.fault_specs`, which collects every kind's model.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from fleetchaos.sim.fault_base import _CallFault, _Fault


class McpProtocolError(_CallFault):
    """The MCP server answers a call with a JSON-RPC error before the tool runs: nothing took effect."""

    kind: Literal["mcp_protocol_error"] = "mcp_protocol_error"


class McpToolError(_CallFault):
    """The tool ran and returned ``isError: true``; what it did before failing may have taken effect."""

    kind: Literal["mcp_tool_error"] = "mcp_tool_error"
    committed_probability: float = Field(
        default=0.5, ge=0, le=1, description="chance what the tool did before it failed had taken effect"
    )
    ran_s: float = Field(default=5, gt=0, description="how long the tool ran before it returned the error")

    @property
    def timeout_s(self) -> float:
        """The call's duration, as the world reads an unknown outcome's (:class:`~fleetchaos.sim.fault_specs.HangingFault`)."""
        return self.ran_s


class McpServerRestart(_Fault):
    """The MCP server of ``tools`` (every tool by default) dies and respawns; while it is down every call to its tools
    fails."""

    kind: Literal["mcp_server_restart"] = "mcp_server_restart"
    tools: list[str] | None = Field(
        default=None,
        min_length=1,
        description="the server's tools: every call to one fails while it is down (default: every tool: one server)",
    )
    restarts_per_day: float = Field(default=0, ge=0, le=10_000, description="Poisson restarts per simulated day")
    at_s: list[Annotated[float, Field(ge=0)]] = Field(
        default_factory=list, description="explicit restart instants, in simulated seconds"
    )
    respawn_s: float = Field(default=30, gt=0, le=86_400, description="mean time until the server answers again")
    respawn_cv: float = Field(default=1.0, ge=0, le=5, description="coefficient of variation of the respawn time")


class McpSessionExpired(_CallFault):
    """The server answers 404 to the client's session id; every retry on that session fails until it re-initialises."""

    kind: Literal["mcp_session_expired"] = "mcp_session_expired"
    probability: float = Field(
        default=0.01, ge=0, le=1, description="per task and step, and again for each new session the client opens"
    )


class McpToolDrift(_CallFault):
    """The step's tool was renamed or removed on the server; calls to the old name fail until the list is refreshed."""

    kind: Literal["mcp_tool_drift"] = "mcp_tool_drift"
    probability: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="per task and step: the share of conversations whose tool list is stale (again after a refresh)",
    )


__all__ = ["McpProtocolError", "McpServerRestart", "McpSessionExpired", "McpToolDrift", "McpToolError"]
