"""Failures of state turned into fault specs: per-worker events, quotas, API tools.

A state fault holds for a while and fails every call that meets it: an expired key
until a refresh, a full disk until a cleanup, a crashed worker until it restarts.  They
are recognised from runs of identical failures on one worker (an expired key's per API).
The shared API bucket's rate cuts are :mod:`fleetchaos.calibrate.rate_limit`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleetchaos.calibrate.faults import STAGE, Context, Fitted, _pct
from fleetchaos.calibrate.rate_limit import OTHER_API
from fleetchaos.traces.codes import FAULT_KINDS

if TYPE_CHECKING:
    from fleetchaos.calibrate.observed import Calls


def _runs(ctx: Context, name: str, relevant):
    """Per worker, stretches where ``name`` failures follow each other with no clear call between.

    Yields (worker, at_s, end_s or None, failures): ``at_s`` is halfway between the last
    clear call and the first failure, ``end_s`` halfway between the last failure and the
    next clear call (None when none came).
    """
    import numpy as np

    calls = ctx.calls
    code = ctx.kind_code(name)
    stage = STAGE[name]
    later_or_ok = np.isin(calls.kind, [-1] + [FAULT_KINDS.index(k) for k, s in STAGE.items() if s > stage])
    idx = np.flatnonzero(relevant & ((calls.kind == code) | later_or_ok))
    order = np.lexsort((calls.start[idx], calls.worker[idx]))
    idx = idx[order]
    w_col, t_col, k_col = calls.worker[idx], calls.start[idx], calls.kind[idx]
    i = 0
    n = len(idx)
    while i < n:
        if k_col[i] != code:
            i += 1
            continue
        w = int(w_col[i])
        prev = t_col[i - 1] if i > 0 and w_col[i - 1] == w else None
        j = i
        while j + 1 < n and w_col[j + 1] == w and k_col[j + 1] == code:
            j += 1
        nxt = t_col[j + 1] if j + 1 < n and w_col[j + 1] == w else None
        at = (prev + t_col[i]) / 2 if prev is not None else t_col[i]
        end = (t_col[j] + nxt) / 2 if nxt is not None else None
        yield w, float(at), None if end is None else float(end), j - i + 1
        i = j + 1


def _events(ctx: Context, name: str, relevant) -> list[tuple[int, float, float | None, int]]:
    """The runs of ``name`` failures among the ``relevant`` calls that start before the last arrival."""
    events = []
    dropped = 0
    for w, at, end, failures in _runs(ctx, name, relevant):
        at_s = at - ctx.origin_s
        if at_s >= ctx.duration_s:
            dropped += 1
            continue
        events.append((w, at_s, end, failures))
    if dropped:
        ctx.notes.append(f"{name}: {dropped} event(s) after the last arrival dropped (drain only)")
    return events


def _expiries(ctx: Context, api: str | None, tools: set[int]) -> list[Fitted]:
    """Expired keys of one API: a run of its calls refused with expired credentials on one worker is an expiry."""
    import numpy as np

    events = _events(ctx, "expired_key", np.isin(ctx.calls.tool, list(tools)))
    if not events:
        return []
    doc: dict = {"kind": "expired_key", "events": [{"worker": int(w), "at_s": round(a, 3)} for w, a, _, _ in events]}
    if api is not None:
        doc["api"] = api
    total = sum(f for *_, f in events)
    on = "API" if api is None else f"{api} API"
    return [
        Fitted(
            doc,
            f"{len(events)} expiries: runs of {total} {on} calls refused with expired credentials on one worker "
            "until a call got through (each placed halfway between the last good call and the first refused one)",
        )
    ]


def fit_worker_events(ctx: Context, name: str) -> list[Fitted]:
    """expired_key, disk_full and node_crash: per-worker events from runs of identical failures."""
    import numpy as np

    calls = ctx.calls
    code = ctx.kind_code(name)
    if not (calls.kind == code).any():
        return []
    if name == "expired_key":
        groups = [(None, ctx.bucket_tools), (OTHER_API, ctx.api_tools - ctx.bucket_tools)]
        return [f for api, tools in groups if tools for f in _expiries(ctx, api, tools)]
    if name == "disk_full":
        relevant = np.isin(calls.tool, np.unique(calls.tool[calls.kind == code]))
    else:
        relevant = np.ones(len(calls), dtype=bool)
    out: list[Fitted] = []
    events = _events(ctx, name, relevant)
    length = "cleanup_after_s" if name == "disk_full" else "down_s"
    for w, at_s, end, failures in events:
        span = (end - ctx.origin_s - at_s) if end is not None else (ctx.end_s - at_s)
        doc = {"kind": name, "events": [{"worker": int(w), "at_s": round(at_s, 3)}], length: round(max(span, 1.0), 3)}
        how = "until the next good call" if end is not None else "to the end of the traces (no good call after)"
        out.append(Fitted(doc, f"worker {calls.workers[w]!r}: {failures} calls refused in a row, {how}"))
    return out


def fit_quota(ctx: Context) -> list[Fitted]:
    """A daily API quota: the API calls served in a day before its first quota refusal."""
    import numpy as np

    calls = ctx.calls
    code = ctx.kind_code("quota_exhausted")
    if not (calls.kind == code).any():
        return []
    mask = ctx.eligible("quota_exhausted")
    rel = ctx.sim_time(calls.start[mask])
    kinds = calls.kind[mask]
    days = (rel // 86_400).astype(np.int64)
    served = []
    for d in np.unique(days[kinds == code]).tolist():
        m = days == d
        order = np.argsort(rel[m], kind="stable")
        k = kinds[m][order]
        first = int(np.argmax(k == code))
        served.append(int((k[:first] == -1).sum()))
    quota = max(1, int(np.median(served)))
    return [
        Fitted(
            {"kind": "quota_exhausted", "calls_per_day": quota},
            f"API calls served before the first quota refusal, per day: {served} (median)",
        )
    ]


def uses_api(calls: Calls, api_fail_codes: list[int]) -> tuple[set[int], list[str]]:
    """Tools that call the shared API, and notes on the ones that do not.

    A tool is taken not to call the API when, with no API failure of its own, it
    succeeded on a worker whose credentials were expired at the time (inside a run of
    expired-key refusals of other tools on that worker); every other tool is.
    """
    import numpy as np

    failing = np.isin(calls.kind, api_fail_codes)
    tools = set(range(len(calls.tools)))
    if not failing.any():
        return tools, ["no API failures (expired key, rate limit, quota) seen: every tool is taken to call the API"]
    api = set(np.unique(calls.tool[failing]).tolist())
    expired = FAULT_KINDS.index("expired_key")
    notes = []
    order = np.lexsort((calls.start, calls.worker))
    worker, kind, tool = calls.worker[order], calls.kind[order], calls.tool[order]
    evidence: dict[int, int] = {}
    # A success of a tool between two expired-key refusals on the same worker: the key was expired then.
    last_expired = np.full(len(order), False)
    state = False
    current = -1
    for i in range(len(order)):
        if worker[i] != current:
            current, state = worker[i], False
        if kind[i] == expired:
            state = True
        elif tool[i] in api and kind[i] == -1:
            state = False  # an API call got through: the credentials were good again
        last_expired[i] = state
    next_expired = np.full(len(order), False)
    state = False
    current = -1
    for i in range(len(order) - 1, -1, -1):
        if worker[i] != current:
            current, state = worker[i], False
        if kind[i] == expired:
            state = True
        elif tool[i] in api and kind[i] == -1:
            state = False
        next_expired[i] = state
    for t in (tool[(kind == -1) & last_expired & next_expired]).tolist():
        if t not in api:
            evidence[t] = evidence.get(t, 0) + 1
    for t, n in sorted(evidence.items()):
        notes.append(
            f"tool {calls.tools[t]!r}: {n} calls succeeded on workers whose credentials were expired at the time: "
            "taken not to call the shared API (uses_api: false)"
        )
    # The API bucket is shared: in minutes when API calls were refused as rate-limited, a tool
    # that is never refused, over more calls than chance allows, does not take from it.
    limited = FAULT_KINDS.index("rate_limit")
    minute = (calls.start // 60).astype(np.int64)
    busy = np.unique(minute[calls.kind == limited])
    in_busy = np.isin(minute, busy)
    api_calls = in_busy & np.isin(calls.tool, list(api))
    if api_calls.any():
        r = float((calls.kind[api_calls] == limited).mean())
        for t in sorted(tools - api - set(evidence)):
            n = int((in_busy & (calls.tool == t)).sum())
            if n and (1.0 - r) ** n < 1e-3:
                evidence[t] = n
                notes.append(
                    f"tool {calls.tools[t]!r}: never rate-limited in {n} calls made in minutes when "
                    f"{_pct(r)} of API calls were: taken not to call the shared API (uses_api: false)"
                )
    return tools - set(evidence), notes
