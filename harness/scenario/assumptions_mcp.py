"""The MCP boundary's assumptions: what an ``isError`` reveals about side effects, how long a respawn varies.

Joined into :data:`~fleetchaos.scenario.assumptions.ASSUMPTIONS`; a scenario without the fault has no path to vary
(:func:`~fleetchaos.scenario.assumptions.concrete`).  Standard library only.
"""

from __future__ import annotations

from fleetchaos.scenario.assumption_record import GROUPS, Assumption

MCP_ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption(
        "faults[mcp_tool_error].committed_probability",
        GROUPS[0],
        "whether a tool that returned isError had already done what it was asked (a retry then does it twice)",
        "0.5: an isError says the tool ran and failed, never where; the MCP specification leaves the result's text "
        "to the server, and no published figure says how often a failing tool had written before it failed, so "
        "the midpoint, as for a cut call (fleet.cut_call_committed_probability). 0 is a tool that validates "
        "everything before writing, 1 one that fails only after its write (a notification, a read-back).",
        (0.0, 0.5, 1.0),
    ),
    Assumption(
        "faults[mcp_server_restart].respawn_cv",
        GROUPS[0],
        "how much a restarting MCP server's respawn time varies around its mean (a wait that outlasts the mean "
        "may still land inside a long respawn)",
        "1.0: a respawn is a process start, a dependency warm-up and a health check, whose sum has a long right "
        "tail; a log-normal with a standard deviation equal to its mean is the usual shape for such start-up "
        "times. mcp_flap sets 0.5; 0 is a fixed restart time (a supervisor's fixed delay).",
        (0.0, 0.5, 1.0, 2.0),
    ),
)

__all__ = ["MCP_ASSUMPTIONS"]
