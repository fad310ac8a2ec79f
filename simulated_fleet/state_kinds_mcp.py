"""The handler of ``mcp_server_restart``: an MCP server that dies and respawns (record in :mod:`fleetchaos.sim.kinds_mcp`).

Each fault is one server, named by its tools.  Its restarts are a Poisson process of
``restarts_per_day`` (and the explicit ``at_s`` instants); each restart keeps the server
down for a respawn time drawn from a log-normal of mean ``respawn_s`` and coefficient of
variation ``respawn_cv``, keyed by the seed, the fault's position and the restart's number,
so every arm meets the same outages.  The server is remote (streamable HTTP): every worker's
calls to its tools meet the same outages.  While it is down a call to one of its tools fails
at once with the connection closed (no retry-after: a dead process announces nothing), and
the wasted-retry judge counts a retry dispatched while it is still down.  No SimPy.
"""

from __future__ import annotations

import math
from typing import cast

from fleetchaos.sim import _rng
from fleetchaos.sim.distribution import lognormal_params
from fleetchaos.sim.fault_specs import _Fault
from fleetchaos.sim.fault_specs_mcp import McpServerRestart
from fleetchaos.sim.kinds_mcp import SERVER_RESTART
from fleetchaos.sim.plan import FaultPlan, Gate, LastFailure, Placement, RetryAt, StateKind
from fleetchaos.sim.schedules import Spans, poisson_times
from fleetchaos.sim.state import NodeView, SharedCapacity, SharedView
from fleetchaos.sim.template import Step

#: The key of the outages of a server that serves every tool (a fault that names no tools).
EVERY_TOOL = "*"

S_RESTART = _rng.stream_id("fault:mcp_server_restart")
S_RESPAWN = _rng.stream_id("fault:mcp_server_respawn")


def respawn_times(fault: McpServerRestart, at: Placement) -> list[tuple[float, float]]:
    """Each restart of the fault's server as (down from, back at), in time order."""
    starts = sorted(
        [*poisson_times(at.seed, S_RESTART, at.position, 0, fault.restarts_per_day, at.horizon_s), *fault.at_s]
    )
    mu, sigma = lognormal_params(fault.respawn_s, fault.respawn_cv)
    spans = []
    for n, start in enumerate(starts):
        z = _rng.normal(_rng.key(at.seed, S_RESPAWN, at.position, n), S_RESPAWN)
        spans.append((start, start + math.exp(mu + sigma * z)))
    return spans


class McpServerRestartKind(StateKind):
    """A remote MCP server down while it respawns: every call to its tools fails until it is back."""

    name = SERVER_RESTART

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """The fault's restarts, each with its drawn respawn time, on each of its tools."""
        fault = cast(McpServerRestart, fault)
        spans = respawn_times(fault, at)
        per_tool = plan.state.setdefault(SERVER_RESTART, {})
        for tool in fault.tools or (EVERY_TOOL,):
            per_tool.setdefault(tool, []).extend(spans)

    def finish(self, plan: FaultPlan) -> None:
        """Each tool's outages merged (two servers of one tool, or a restart during a respawn)."""
        if SERVER_RESTART in plan.state:
            plan.state[SERVER_RESTART] = {tool: Spans(spans) for tool, spans in plan.state[SERVER_RESTART].items()}

    def describe(self, plan: FaultPlan) -> list[str]:
        """One line per outage of each tool's server."""
        return [
            f"tool {tool}: MCP server down from {start:.0f}s, back at {end:.0f}s"
            for tool, spans in plan.state.get(SERVER_RESTART, {}).items()
            for start, end in spans.spans
        ]

    def gate(self, plan: FaultPlan, shared: SharedView, node: NodeView, step: Step) -> Gate | None:
        """A call of a tool whose server restarts fails while the server is down (other tools have no gate)."""
        spans = outages(plan, step.name)
        return None if spans is None else spans.active

    def holds(self, plan: FaultPlan, shared: SharedCapacity, last: LastFailure, retry: RetryAt) -> bool:
        """The failed step's server is still down at the retry's dispatch."""
        spans = outages(plan, retry.tpl.names[last.step])
        return spans is not None and spans.active(retry.now)


def outages(plan: FaultPlan, tool: str) -> Spans | None:
    """When calls of ``tool`` meet a server down: its own server's outages and those of a server of every tool."""
    per_tool = plan.state.get(SERVER_RESTART, {})
    found = [spans for spans in (per_tool.get(tool), per_tool.get(EVERY_TOOL)) if spans is not None]
    if len(found) < 2:
        return found[0] if found else None
    return Spans([*found[0].spans, *found[1].spans])


__all__ = ["EVERY_TOOL", "McpServerRestartKind", "outages", "respawn_times"]
