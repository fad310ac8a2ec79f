"""The MCP client's two recovery actions as the driver realises them: a new session, a fresh tool list.

A policy answers a failure with :class:`~fleetchaos.sim.observation.ReinitSession` or
:class:`~fleetchaos.sim.observation.RefreshTools`; the task loop makes a turn of the failed step of it, as it does
for the model-side actions (:meth:`fleetchaos.sim.model_turns.ModelTurns.plan`), and the renewal is made there:

* **Re-initialise the session**: the client sends ``initialize`` again, and the failed step's calls go out on the
  new session from then on;
* **Refresh the tool list**: the client lists the tools again, and the failed step's calls go to the tools' current
  names from then on.

The two kinds they clear, ``mcp_session_expired`` and ``mcp_tool_drift``, are keyed per task, step and renewal
(:data:`fleetchaos.sim.kinds.RENEWED`): a task's renewals of a step are counted in its ``sources`` under the
kind's slot (:data:`fleetchaos.sim.kinds_mcp.RENEWAL_SLOTS`), so the call decision and the wasted-retry judge,
which both read ``sources``, draw the renewed session or list afresh: it holds at the kind's rate, as any session or
list does.  A renewal made after another failure renews all the same (an MCP client that re-initialises before
every retry), and changes nothing else.  Standard library only; no SimPy.
"""

from __future__ import annotations

from collections.abc import Mapping

from fleetchaos.sim.kinds_mcp import RENEWAL_SLOTS, SESSION_EXPIRED, TOOL_DRIFT
from fleetchaos.sim.observation import RefreshTools, ReinitSession

REINIT, REFRESH = "reinit", "refresh"
#: Each action's mode, the key of ``TaskRecord.model_turns``.
MCP_MODES: Mapping[type, str] = {ReinitSession: REINIT, RefreshTools: REFRESH}
#: The kind each mode renews.
RENEWS: Mapping[str, str] = {REINIT: SESSION_EXPIRED, REFRESH: TOOL_DRIFT}


def renew(mode: str, step: int, sources: dict[tuple[int, int], int]) -> None:
    """Count a renewal of ``step`` in a task's ``sources`` when ``mode`` is one (nothing for another mode, or when
    no step failed)."""
    kind = RENEWS.get(mode)
    if kind is not None and step >= 0:
        slot = (step, RENEWAL_SLOTS[kind])
        sources[slot] = sources.get(slot, 0) + 1


__all__ = ["MCP_MODES", "REFRESH", "REINIT", "RENEWS", "renew"]
