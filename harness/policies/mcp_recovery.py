"""Presets that answer failures with the MCP client's actions: a new session, a fresh tool list
(:mod:`fleetchaos.sim.mcp_turns` realises them).

* ``reinit-session``, ``refresh-tools``: the naive agent loop with one of the actions: every failure, whatever
  it is, gets that action (an MCP client that re-initialises its session, or lists the tools again, before every
  retry), from the resume point the observation reveals, up to ``max_retries``, then give up.  They read nothing,
  so they run on any format; on a failure the action is not made for it is a plain retry at once.
* ``structured-mcp``: the structured decision tree (:class:`~fleetchaos.policies.builtins.StructuredDecisionTree`)
  that also renews what the error names, up to ``max_retries``: an expired session (``MCP_SESSION_EXPIRED`` in an
  envelope, or the MCP client's protocol error "Session not found") gets a new session, a drifted tool
  (``MCP_UNKNOWN_TOOL``, or "Unknown tool") a fresh tool list; every other failure takes the tree's branch (an
  expired session the plain tree reads as auth and refreshes the worker's credentials, which renews nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fleetchaos.policies.builtins import StructuredDecisionTree
from fleetchaos.policies.readers import code_of, resume_of
from fleetchaos.sim.kinds import KINDS
from fleetchaos.sim.kinds_mcp import SESSION_EXPIRED, TOOL_DRIFT
from fleetchaos.sim.observation import (
    Action,
    GiveUp,
    Observation,
    RecoveryPolicy,
    RefreshTools,
    ReinitSession,
    TaskHistory,
)
from fleetchaos.sim.wire_shapes import McpProtocolError

__all__ = ["MCP_PRESETS", "McpRetry", "StructuredMcpTree", "renewal_of"]

_ACTIONS: dict[str, type[ReinitSession | RefreshTools]] = {"reinit": ReinitSession, "refresh": RefreshTools}

#: What each renewal answers: the envelopes' stable code, and the MCP client's protocol-error message.
_RENEWALS: dict[str, type[ReinitSession | RefreshTools]] = {
    KINDS[SESSION_EXPIRED].contract.error_code: ReinitSession,
    KINDS[TOOL_DRIFT].contract.error_code: RefreshTools,
    "Session not found": ReinitSession,
    "Unknown tool": RefreshTools,
}


def renewal_of(observation: Observation) -> type[ReinitSession | RefreshTools] | None:
    """The MCP action the failure names: a new session for an expired one, a fresh list for a drifted tool, else
    None (a generic "failed", or any other failure)."""
    envelope = observation.envelope
    if isinstance(envelope, McpProtocolError):
        return _RENEWALS.get(envelope.error.message)
    code = code_of(observation)
    return _RENEWALS.get(code) if code is not None else None


@dataclass(frozen=True, slots=True)
class McpRetry:
    """Answer every failure with one MCP action (``action``), up to ``max_retries``, then give up.

    ``reinit``: initialise a new session, then retry; ``refresh``: list the tools again, then retry.  The resume
    point is what the observation reveals (the start, on a bare "failed").
    """

    action: Literal["reinit", "refresh"] = "reinit"
    max_retries: int = 3
    name: str = "reinit-session"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        if history.retries >= self.max_retries:
            return GiveUp()
        start, done = resume_of(observation)
        return _ACTIONS[self.action](0.0, start, done)


@dataclass(frozen=True, slots=True)
class StructuredMcpTree(StructuredDecisionTree):
    """The structured decision tree that renews what an MCP failure names (``renew``), up to ``max_retries``."""

    renew: bool = True
    name: str = "structured-mcp"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        renewal = renewal_of(observation) if self.renew else None
        if renewal is not None and history.retries < self.max_retries:
            return renewal(0.0, *resume_of(observation))
        return StructuredDecisionTree.decide(self, observation, history)


def _naive(name: str, action: Literal["reinit", "refresh"]) -> Callable[[], RecoveryPolicy]:
    def build() -> RecoveryPolicy:
        return McpRetry(action=action, name=name)

    build.__doc__ = f"Every failure gets the {action} action (three at most), whatever the error says."
    return build


def _structured_mcp() -> RecoveryPolicy:
    """The structured tree that re-initialises an expired MCP session and refreshes a drifted tool list."""
    return StructuredMcpTree()


#: The presets of this module, by name (joined into :data:`fleetchaos.policies.presets.PRESETS`).
MCP_PRESETS: dict[str, Callable[[], RecoveryPolicy]] = {
    "reinit-session": _naive("reinit-session", "reinit"),
    "refresh-tools": _naive("refresh-tools", "refresh"),
    "structured-mcp": _structured_mcp,
}
