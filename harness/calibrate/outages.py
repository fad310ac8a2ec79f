"""MCP server restarts: outages every worker meets at once, and the tools that share a server.

A remote MCP server that dies fails every call to its tools, on every worker, until it has
respawned (``mcp_server_restart``).  The traces do not say which tools one server serves;
its outages do.  For each tool, a run of restart failures with no successful call between
is one outage as that tool saw it; two tools whose runs overlap (a run falling between the
other's last success before an outage and its first success after) for at least half of
the runs of the one called less often are served by one server.  Then, over all the calls
to a server's tools, an outage starts halfway between the last success and the first
failure and ends halfway between the last failure and the next success.  Each server is
one fault: its tools, its restarts per day (outages over the days the capture covers:
outages no call met are not seen, so a rarely called server's rate comes out low), and a
log-normal of the outages' lengths as its respawn time.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fleetchaos.calibrate.faults import STAGE, Context, Fitted, sig
from fleetchaos.traces.codes import FAULT_KINDS

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

KIND = "mcp_server_restart"

#: Two tools share a server when at least this share of the runs of the one called less often overlap the other's.
SHARED = 0.5

DAY_S = 86_400.0


def _runs(start: NDArray[np.float64], failed: NDArray[np.bool_]) -> list[tuple[float, float, float, float]]:
    """Runs of failures among calls in time order: (last success before, first failure, last failure, first
    success after), a missing success being the run's own end."""
    runs = []
    n = len(start)
    i = 0
    while i < n:
        if not failed[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and failed[j + 1]:
            j += 1
        before = float(start[i - 1]) if i > 0 else float(start[i])
        after = float(start[j + 1]) if j + 1 < n else float(start[j])
        runs.append((before, float(start[i]), float(start[j]), after))
        i = j + 1
    return runs


def _servers(per_tool: dict[int, list[tuple[float, float, float, float]]]) -> list[list[int]]:
    """The tools grouped by server: joined when their runs overlap (union of pairs, :data:`SHARED`)."""
    tools = sorted(per_tool)
    parent = {t: t for t in tools}

    def root(t: int) -> int:
        while parent[t] != t:
            t = parent[t]
        return t

    for a_i, a in enumerate(tools):
        for b in tools[a_i + 1 :]:
            fewer, more = sorted((per_tool[a], per_tool[b]), key=len)
            overlap = sum(any(lo <= last and first <= hi for lo, _, _, hi in more) for _, first, last, _ in fewer)
            if overlap >= SHARED * len(fewer):
                parent[root(b)] = root(a)
    groups: dict[int, list[int]] = {}
    for t in tools:
        groups.setdefault(root(t), []).append(t)
    return list(groups.values())


def fit_server_restarts(ctx: Context) -> list[Fitted]:
    """One ``mcp_server_restart`` fault per server the traces' outages show."""
    import numpy as np

    calls = ctx.calls
    code = FAULT_KINDS.index(KIND)
    failed = calls.kind == code
    if not failed.any():
        return []
    later = [FAULT_KINDS.index(k) for k, s in STAGE.items() if s > STAGE[KIND]]
    # Calls that reached the server: its failures, successes, and failures of a later stage.
    reached = failed | (calls.kind == -1) | np.isin(calls.kind, later)
    per_tool = {}
    for t in np.unique(calls.tool[failed]).tolist():
        idx = np.flatnonzero(reached & (calls.tool == t))
        idx = idx[np.argsort(calls.start[idx], kind="stable")]
        per_tool[t] = _runs(calls.start[idx], failed[idx])
    days = max(float((calls.start + calls.duration).max()) - float(calls.start.min()), 1.0) / DAY_S
    fits = []
    for server in _servers(per_tool):
        idx = np.flatnonzero(reached & np.isin(calls.tool, server))
        idx = idx[np.argsort(calls.start[idx], kind="stable")]
        outages = _runs(calls.start[idx], failed[idx])
        lengths = np.array(
            [max((last + after) / 2 - (before + first) / 2, 1e-3) for before, first, last, after in outages]
        )
        logs = np.log(lengths)
        sigma = float(logs.std()) if len(logs) > 1 else 0.0
        mean = math.exp(float(logs.mean()) + sigma * sigma / 2)
        cv = math.sqrt(math.expm1(sigma * sigma))
        names = sorted(calls.tools[t] for t in server)
        doc = {
            "kind": KIND,
            "tools": names,
            "restarts_per_day": sig(len(outages) / days),
            "respawn_s": sig(min(max(mean, 1e-3), DAY_S)),
            "respawn_cv": sig(min(cv, 5.0)),
        }
        comment = (
            f"{int(failed[idx].sum())} calls to {', '.join(names)} failed with the server restarting, in "
            f"{len(outages)} outages over {sig(days * 24)} hours of capture (tools whose outages overlap share a "
            f"server); each outage from halfway between its last success and first failure to halfway between its "
            f"last failure and next success: a median of {sig(float(np.median(lengths)))} s (log-normal respawn, mean "
            f"{sig(mean)} s, cv {sig(cv)}); an outage no call met is not seen"
        )
        fits.append(Fitted(doc, comment))
    return fits
