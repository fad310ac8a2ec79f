"""Failures of state turned into fault specs: per-worker events, rate-limit cuts, quotas, API tools.

A state fault holds for a while and fails every call that meets it: an expired key
until a refresh, a full disk until a cleanup, a crashed worker until it restarts, a cut
API rate for the cut's length.  They are recognised from runs of identical failures on
one worker (or, for the shared API bucket, fleet-wide windows of refusals).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fleetchaos.calibrate.changepoint import find_windows
from fleetchaos.calibrate.faults import STAGE, Context, Fitted, _clip_windows, _pct, _rate_comment, _window_doc, sig
from fleetchaos.traces.codes import FAULT_KINDS

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from fleetchaos.calibrate.observed import Calls

#: Rate-limit refusals this close to a window's edge belong to it (a cut's first and last
#: refusals are sparse: the bucket's burst is spent first, and callers back off).
RATE_LIMIT_ABSORB_S = 900.0

#: A rate-limit cut is placed at most this long before its first refusals.
MAX_LEAD_S = 7200.0
HOUR_S = 3600.0


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


def fit_worker_events(ctx: Context, name: str) -> list[Fitted]:
    """expired_key, disk_full and node_crash: per-worker events from runs of identical failures."""
    import numpy as np

    calls = ctx.calls
    code = ctx.kind_code(name)
    if not (calls.kind == code).any():
        return []
    if name == "expired_key":
        relevant = np.isin(calls.tool, list(ctx.api_tools))
    elif name == "disk_full":
        relevant = np.isin(calls.tool, np.unique(calls.tool[calls.kind == code]))
    else:
        relevant = np.ones(len(calls), dtype=bool)
    out: list[Fitted] = []
    dropped = 0
    events = []
    for w, at, end, failures in _runs(ctx, name, relevant):
        at_s = at - ctx.origin_s
        if at_s >= ctx.duration_s:
            dropped += 1
            continue
        events.append((w, at_s, end, failures))
    if dropped:
        ctx.notes.append(f"{name}: {dropped} event(s) after the last arrival dropped (drain only)")
    if name == "expired_key":
        if events:
            doc = {"kind": name, "events": [{"worker": int(w), "at_s": round(a, 3)} for w, a, _, _ in events]}
            total = sum(f for *_, f in events)
            out.append(
                Fitted(
                    doc,
                    f"{len(events)} expiries: runs of {total} API calls refused with expired credentials on one worker "
                    "until a call got through (each placed halfway between the last good call and the first refused one)",
                )
            )
        return out
    length = "cleanup_after_s" if name == "disk_full" else "down_s"
    for w, at_s, end, failures in events:
        span = (end - ctx.origin_s - at_s) if end is not None else (ctx.end_s - at_s)
        doc = {"kind": name, "events": [{"worker": int(w), "at_s": round(at_s, 3)}], length: round(max(span, 1.0), 3)}
        how = "until the next good call" if end is not None else "to the end of the traces (no good call after)"
        out.append(Fitted(doc, f"worker {calls.workers[w]!r}: {failures} calls refused in a row, {how}"))
    return out


def _busiest_rate(
    rel: NDArray[np.float64], ends: NDArray[np.float64], index: NDArray[np.int64], bins: int, bin_s: float
) -> float:
    """The busiest bin's calls per second of the capture's time in that bin: the capture's span is from its
    first call to its last call's end, at least a second (as the arrival fit reads it).

    A capture shorter than a bin is not a bin's worth of calls: sixty calls in one minute are a call a
    second, not a tenth of one, and an API rate set from the latter binds the fitted world's own arrivals.
    """
    import numpy as np

    if not len(rel):
        return 0.0
    lo = float(rel.min())
    finite = ends[np.isfinite(ends)]
    hi = max(float(rel.max()), float(finite.max()) if len(finite) else lo, lo + 1.0)
    starts = np.arange(bins) * bin_s
    exposure = np.clip(np.minimum(starts + bin_s, hi) - np.maximum(starts, lo), 1.0, bin_s)
    return float((np.bincount(index, minlength=bins) / exposure).max())


def fit_rate_limit(ctx: Context) -> tuple[list[Fitted], dict, list[str]]:
    """Rate-limit cuts as windows of the shared API bucket, and the bucket's rate (fleet fields and their comments)."""
    import numpy as np

    calls = ctx.calls
    mask = ctx.eligible("rate_limit")
    code = ctx.kind_code("rate_limit")
    times, kinds = calls.start[mask], calls.kind[mask]
    failed = kinds == code
    ok = kinds == -1
    rel = ctx.sim_time(times)
    fleet: dict = {}
    comments: list[str] = []
    bin_s = 600.0
    bins = max(1, math.ceil(ctx.end_s / bin_s))
    index = np.clip((rel // bin_s).astype(np.int64), 0, bins - 1)
    ends = rel + calls.duration[mask]
    peak = _busiest_rate(rel[ok], ends[ok], index[ok], bins, bin_s)
    if not failed.any():
        rate = max(0.5, 2.0 * peak)
        fleet["api_rate_per_s"] = sig(rate)
        comments.append(
            f"no rate-limit failures: the shared API rate is set to twice the busiest 10 minutes "
            f"({peak:.4g} calls/s), so it never binds"
        )
        return [], fleet, comments
    windows, baseline = find_windows(rel, failed, 0.0, ctx.end_s, ctx.bin_s, absorb_s=RATE_LIMIT_ABSORB_S)
    windows = _clip_windows(ctx, windows, "rate_limit")
    inside = np.zeros(len(rel), dtype=bool)
    for w in windows:
        inside |= (rel >= w.start_s) & (rel < w.end_s)
    busy = np.bincount(index[failed & ~inside], minlength=bins) > 0
    served_rates = np.bincount(index[ok & ~inside], minlength=bins)[busy] / bin_s
    rate = float(np.median(served_rates)) if busy.any() else 0.0
    if rate > 0:
        comments.append(
            f"{int((failed & ~inside).sum())} rate-limit failures outside windows: the bucket binds there; its rate is "
            f"the median served rate of the {int(busy.sum())} 10-minute bins with refusals ({rate:.4g} calls/s)"
        )
    else:
        why = (
            "no rate-limit failures outside windows"
            if not busy.any()
            else "no call served in most 10-minute bins with refusals"
        )
        rate = max(0.5, 2.0 * peak)
        comments.append(f"{why}: the API rate is twice the busiest 10 minutes ({peak:.4g} calls/s)")
    burst = 30.0
    fleet["api_rate_per_s"] = sig(max(rate, 1e-6))
    fleet["api_burst"] = burst
    comments.append("api_burst is not observable: the model's default 30 kept")
    out = []
    for w in windows:
        m = (rel >= w.start_s) & (rel < w.end_s)
        served = int((ok & m).sum())
        # Refusals show the cut only once the bucket's burst is spent: while they come, the
        # bucket is empty, so what was served is the cut rate itself ...
        factor = min(1.0, served / (rate * (w.end_s - w.start_s))) if w.end_s > w.start_s else 1.0
        # ... and the cut began as long before the first refusal as the demand of the hour
        # before took to spend the burst at that rate.
        before = (rel >= w.start_s - HOUR_S) & (rel < w.start_s)
        demand = float(before.sum()) / HOUR_S
        drain = demand - factor * rate
        lead = min(burst / drain, MAX_LEAD_S) if drain > 0 else 0.0
        start = max(0.0, w.start_s - lead)
        doc = {"kind": "rate_limit", "capacity_factor": sig(factor), "windows": [_window_doc(start, w.end_s)]}
        out.append(
            Fitted(
                doc,
                f"window found by change-point from {w.start_s:g} s: "
                f"{_rate_comment('API calls refused', w.failures, w.trials)}; {served} served, so the rate was cut to "
                f"{factor:.3g} x {rate:.4g}/s; it began {lead:.0f} s before the first refusals, the time the hour "
                f"before's demand ({demand:.3g} calls/s) took to spend the {burst:g}-call burst",
            )
        )
    del baseline
    return out, fleet, comments


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
