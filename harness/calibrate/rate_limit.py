"""The shared API bucket from its refusals: which tools take from it, its rate and burst, and its rate cuts.

What a trace shows of a token bucket is the calls it admitted, the calls it refused, and
each refusal's retry-after hint.  A bucket's hint is the time until its next token, so
it is at most one token's refill time, 1 / the rate in force; the longest hints of a
stretch of refusals give that stretch's rate.  From them:

* **Its tools**: the tools it refused, and the API tools it would have refused by now
  had they taken from it (:func:`bucket_tools`).  The others take from a bucket of their
  own (``fleet.apis``, named :data:`OTHER_API`, with their own credentials and a rate
  that never binds): counting a tool the limit spares as its demand makes the fitted
  world refuse calls the traces never refused.
* **Its cuts**: windows of refusals found by change-point detection; in each, the hints
  split where their scale drops (the cut ended and the backlog meets the full rate), and
  the cut is the slow part before.  Its rate is one token per the gap between the instants its
  refusals were told to come back (:func:`_token_interval`; without hints: the calls it
  admitted, as the bucket is empty while it refuses).
* **Its full rate**: the same, from the refusals outside cuts, when the bucket binds
  there (else the served rate of the busiest refused stretches, else twice the busiest
  ten minutes, so it never binds).
* **Its burst**: the smallest the traces allow, the most calls it admitted in any
  stretch beyond what the full rate refilled in it.
* **Each cut's start**: the bucket is full when a cut begins and refuses its first call
  once the calls admitted since have spent the burst beyond the cut's refill.  The cut
  starts where the fitted world's demand (its arrivals of each hour times the bucket
  calls a task makes) spends the burst by the first refusal, so that its days meet
  their first refusal there on average (the traced day's own calls spent it once, by
  chance early or late).  A larger burst with an earlier start fits the same refusals;
  the traces do not tell them apart.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fleetchaos.calibrate.changepoint import PENALTY, find_windows
from fleetchaos.calibrate.faults import Context, Fitted, _clip_windows, _rate_comment, _window_doc, sig
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

#: The API of the tools that met API failures but never a rate limit, when the traces show rate limits.
OTHER_API = "other_api"

#: Refusals outside the cuts that say the bucket binds at its full rate (fewer are chance: a herd at one instant).
MIN_REFUSALS = 3

#: A tool never rate-limited is taken off the limited bucket when it would have got through so often this unlikely.
SPARED_ALPHA = 1e-3

#: A stretch of refusals is a cut apart from its neighbours when its hints' scale is at least this many times theirs.
HINT_RATIO = 2.0


def limited_tools(
    calls: Calls, candidates: set[int], limited: NDArray[np.bool_]
) -> tuple[set[int], dict[int, int], float]:
    """The candidate tools a limit (``limited``: the calls it refused) takes in, the ones it spared with the calls
    they made while it refused others, and the share of the limited tools' calls it refused then.

    A tool the limit refused is limited.  One it never refused is too unless its calls in the minutes it refused
    others' would all have got through less often than :data:`SPARED_ALPHA` at the share it refused theirs: a
    tool called after another that met the limit rarely gets its turn while the limit holds.
    """
    import numpy as np

    refused = set(np.unique(calls.tool[limited]).tolist()) & candidates
    minute = (calls.start // 60).astype(np.int64)
    busy = np.isin(minute, np.unique(minute[limited]))
    share = float(limited[busy & np.isin(calls.tool, list(refused))].mean()) if refused else 0.0
    spared: dict[int, int] = {}
    for t in sorted(candidates - refused):
        n = int((busy & (calls.tool == t)).sum())
        if n and (1.0 - share) ** n < SPARED_ALPHA:
            spared[t] = n
    return candidates - set(spared), spared, share


def bucket_tools(calls: Calls, api_tools: set[int]) -> tuple[set[int], set[int], list[str]]:
    """The API tools that take from the rate-limited bucket (:func:`limited_tools`), the others
    (:data:`OTHER_API`), and notes."""
    limited = calls.kind == FAULT_KINDS.index("rate_limit")
    if not limited.any():
        return set(api_tools), set(), []
    bucket, spared, share = limited_tools(calls, api_tools, limited)
    notes = [
        f"tool {calls.tools[t]!r}: calls an API but was never rate-limited in {n} calls made in minutes when "
        f"{100 * share:.3g}% of the limited tools' calls were: its calls go to an API of their own ({OTHER_API}), "
        "whose rate never binds"
        for t, n in spared.items()
    ]
    return bucket, set(spared), notes


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


def _best_split(hints: NDArray[np.float64]) -> int | None:
    """Where a run of hints changes scale: ``k`` such that ``hints[:k]`` and ``hints[k:]`` are each uniform on
    (0, their longest) and the split gains more log-likelihood than the change-point penalty; None if none does."""
    import numpy as np

    n = len(hints)
    if n < 4 or float(hints.max()) <= 0:
        return None
    h = np.maximum(hints, 1e-9)
    head = np.maximum.accumulate(h)[:-1]  # longest of hints[:k] for k = 1 .. n-1
    tail = np.maximum.accumulate(h[::-1])[::-1][1:]  # longest of hints[k:]
    k = np.arange(1, n)
    gain = n * math.log(float(h.max())) - k * np.log(head) - (n - k) * np.log(tail)
    best = int(np.argmax(gain))
    ratio = max(head[best], tail[best]) / min(head[best], tail[best])
    if 2.0 * float(gain[best]) > PENALTY * math.log(n) and ratio >= HINT_RATIO:
        return best + 1
    return None


def _cut_stretch(times: NDArray[np.float64], hints: NDArray[np.float64]) -> int:
    """How many of a window's refusals (in time order) met the cut: all of them, or those before a trailing
    stretch of short hints, the backlog the cut left meeting the full rate.

    Refusals in the cut's last 1 / rate seconds have short hints too, since a hint runs to the next token and the
    full rate resumes at the cut's end: their hints shrink with the time left, so they span no more time than
    their longest hint.  A trailing stretch that does is the backlog, one that does not is the cut's own end.
    Short hints early in a cut are the part of a token the bucket held as it began: they stay in it.
    """
    k = _best_split(hints)
    if k is None:
        return len(hints)
    tail = float(hints[k:].max())
    if float(hints[:k].max()) > tail and float(times[-1] - times[k]) > 2.0 * tail:
        return k
    return len(hints)


def _token_interval(times: NDArray[np.float64], hints: NDArray[np.float64], admitted: NDArray[np.float64]) -> float:
    """Seconds per token of a stretch of refusals at one rate, from the distinct instants its refusals were told to
    come back: the gap between two of them over the calls admitted in it (each took one token), their median,
    never shorter than its longest hint.

    Every refusal between two admitted calls is told the same instant (when the bucket next holds a token), and
    while the bucket stays empty each call it admits takes the token refilled since the last; a single hint is
    shorter by the part of a token the bucket held when it refused.  A gap of many admitted calls is between
    stretches the bucket refused apart (the afternoon's and the evening's), at another rate: only estimates
    within a factor of :data:`HINT_RATIO` of the longest hint (and never below half of it) count.
    """
    import numpy as np

    longest = float(hints.max())
    due = np.sort(times + hints)
    due = due[np.concatenate(([True], np.diff(due) > 0.1 * longest))]  # one instant, told in rounded seconds
    if len(due) < 2:
        return longest
    took = np.searchsorted(admitted, due[1:], side="left") - np.searchsorted(admitted, due[:-1], side="left")
    per_token = np.diff(due) / np.maximum(took, 1)
    kept = per_token[(per_token >= 0.5 * longest) & (per_token <= 1.5 * HINT_RATIO * longest)]
    return max(longest, float(np.median(kept))) if len(kept) else longest


def _smallest_burst(admitted: NDArray[np.float64], rate: float) -> float:
    """The least burst that admits every call at ``admitted`` (sorted times) with refills at ``rate``: the most
    calls in any stretch [t_i, t_j] beyond rate x (t_j - t_i)."""
    import numpy as np

    if not len(admitted):
        return 1.0
    j = np.arange(len(admitted), dtype=np.float64)
    level = j - rate * admitted
    return max(1.0, float((level - np.minimum.accumulate(level)).max()) + 1.0)


def _cut_start(ctx: Context, first: float, cut_rate: float, burst: float, calls_per_task: float, floor: float) -> float:
    """When a cut full of ``burst`` tokens refuses its first call at ``first`` on average in the fitted world: its
    demand (the fitted arrivals of each hour times the bucket calls a task makes) spends the burst beyond the
    cut's refill by then; ``floor`` when it does not by then."""
    spent, t, step = 0.0, first, 60.0
    while t > floor:
        hour = int(max(t - step, 0.0) // 3600.0) % 24
        demand = ctx.tasks_per_hour[hour] / 3600.0 * calls_per_task if ctx.tasks_per_hour else 0.0
        gain = (demand - cut_rate) * step
        if gain > 0 and spent + gain >= burst:
            return max(floor, t - step * (burst - spent) / gain)
        spent += gain
        t -= step
    return floor


def _calls_per_task(calls: Calls, tools: set[int]) -> float:
    """The bucket calls a task makes as its template runs: per task that met no failure (the templates' own
    tasks), else per task."""
    import numpy as np

    failed = np.zeros(len(calls.task_ids), dtype=bool)
    failed[calls.task[calls.kind != -1]] = True
    on_bucket = np.isin(calls.tool, list(tools))
    clean = ~failed[calls.task]
    if clean.any():
        return float((on_bucket & clean).sum()) / len(np.unique(calls.task[clean]))
    return float(on_bucket.sum()) / max(1, len(calls.task_ids))


def fit_rate_limit(ctx: Context) -> tuple[list[Fitted], dict, list[str]]:
    """Rate-limit cuts as windows of the shared API bucket, and the bucket's rate (fleet fields and their comments)."""
    import numpy as np

    calls = ctx.calls
    mask = ctx.eligible("rate_limit")
    code = ctx.kind_code("rate_limit")
    order = np.argsort(calls.start[mask], kind="stable")
    rel = ctx.sim_time(calls.start[mask])[order]
    kinds = calls.kind[mask][order]
    hint_col = calls.retry_after[mask][order]
    failed = kinds == code
    ok = kinds == -1
    fleet: dict = {}
    comments: list[str] = []
    bin_s = 600.0
    bins = max(1, math.ceil(ctx.end_s / bin_s))
    index = np.clip((rel // bin_s).astype(np.int64), 0, bins - 1)
    ends = rel + calls.duration[mask][order]
    peak = _busiest_rate(rel[ok], ends[ok], index[ok], bins, bin_s)
    if not failed.any():
        from fleetchaos.sim.config import FleetSpec

        rate = max(0.5, 2.0 * peak)
        fleet["api_rate_per_s"] = sig(rate)
        # The deepest burst the traced calls needed at that rate: twice it, so a burstier simulated day still passes.
        needed = math.ceil(_smallest_burst(rel[kinds != code], rate) - 1e-6)
        default = float(FleetSpec.model_fields["api_burst"].default)
        text = (
            f"no rate-limit failures: the shared API rate is set to twice the busiest 10 minutes "
            f"({peak:.4g} calls/s), so it never binds"
        )
        if 2 * needed > default:
            fleet["api_burst"] = 2 * needed
            text += (
                f"; its burst to twice the most calls admitted in any stretch beyond that rate's refill ({needed}), "
                "so neither does a burst of calls"
            )
        comments.append(text)
        return [], fleet, comments
    windows, _ = find_windows(rel, failed, 0.0, ctx.end_s, ctx.bin_s, absorb_s=RATE_LIMIT_ABSORB_S)
    windows = _clip_windows(ctx, windows, "rate_limit")
    refused_at, hints = rel[failed], hint_col[failed]
    cuts = []  # (window, first refusal, last refusal, end, refusals in the cut)
    for w in windows:
        idx = np.flatnonzero((refused_at >= w.start_s) & (refused_at < w.end_s))
        if not len(idx):
            continue
        if np.isfinite(hints[idx]).all():
            # The cut held until the latest instant its refusals were told to come back, and no later than the
            # first refusal of the full rate after it.
            b = _cut_stretch(refused_at[idx], hints[idx])
            end = float((refused_at[idx[:b]] + hints[idx[:b]]).max())
            end = min(end, float(refused_at[idx[b]])) if b < len(idx) else end
        else:
            b, end = len(idx), w.end_s
        first, last = float(refused_at[idx[0]]), float(refused_at[idx[b - 1]])
        cuts.append((w, first, last, end, idx[:b]))
    admitted = rel[kinds != code]  # every call that got past the bucket took a token (sorted: rel is)
    in_cut = np.zeros(len(rel), dtype=bool)
    for _w, first, _last, end, _ in cuts:
        in_cut |= (rel >= first) & (rel < end)
    outside = failed & ~in_cut
    told = outside & np.isfinite(hint_col) & (hint_col > 0)
    if told.sum() >= MIN_REFUSALS:
        rate = 1.0 / _token_interval(rel[told], hint_col[told], admitted)
        comments.append(
            f"{int(outside.sum())} rate-limit failures outside the cuts: the bucket binds there; its rate is "
            f"{rate:.4g} calls/s, one token per {1 / rate:.4g} s as their retry-after hints tell it"
        )
    elif outside.sum() >= MIN_REFUSALS and not told.any():
        busy = np.bincount(index[outside], minlength=bins) > 0
        served_rates = np.bincount(index[ok & ~in_cut], minlength=bins)[busy] / bin_s
        rate = float(np.median(served_rates))
        comments.append(
            f"{int(outside.sum())} rate-limit failures outside the cuts: the bucket binds there; its rate is the "
            f"median served rate of the {int(busy.sum())} 10-minute bins with refusals ({rate:.4g} calls/s)"
        )
    else:
        rate = 0.0
    if rate <= 0:
        rate = max(0.5, 2.0 * peak)
        comments.append(
            f"{int(outside.sum())} rate-limit failures outside the cuts: the API rate is twice the busiest 10 "
            f"minutes ({peak:.4g} calls/s), so it binds only in them"
        )
    burst = math.ceil(_smallest_burst(admitted, rate) - 1e-6)
    fleet["api_rate_per_s"] = sig(max(rate, 1e-6))
    fleet["api_burst"] = burst
    comments.append(
        f"api_burst {burst}: the smallest the traces allow (the most calls admitted in any stretch beyond what "
        f"{sig(rate):.4g} calls/s refilled in it); a larger burst fits the same refusals with each cut starting earlier"
    )
    out = []
    floor = 0.0
    per_task = _calls_per_task(calls, ctx.bucket_tools)
    for w, first, last, end, refusals in cuts:
        cut_hints = hints[refusals]
        if len(refusals) and np.isfinite(cut_hints).all() and cut_hints.max() > 0:
            cut_rate = 1.0 / _token_interval(refused_at[refusals], cut_hints, admitted)
            how = f"one token per {1 / cut_rate:.4g} s, as its refusals' retry-after hints tell it"
        else:
            served = int((ok & (rel >= first) & (rel < end)).sum())
            cut_rate = served / (end - first) if end > first else rate
            how = f"{served} calls served while it refused"
        factor = min(1.0, cut_rate / rate)
        start = _cut_start(ctx, first, factor * rate, burst, per_task, max(floor, first - MAX_LEAD_S))
        floor = end
        doc = {"kind": "rate_limit", "capacity_factor": sig(factor), "windows": [_window_doc(start, end)]}
        out.append(
            Fitted(
                doc,
                f"window found by change-point from {w.start_s:g} s; the cut's refusals from {first:.0f} s to "
                f"{last:.0f} s: {_rate_comment('API calls refused', len(refusals), int(((rel >= first) & (rel < end)).sum()))}; "
                f"its rate {factor * rate:.4g} calls/s from {how}; it began at {start:.0f} s, so that the fitted arrivals' "
                f"{per_task:.3g} bucket calls a task spend the {burst}-call burst beyond that rate's refill by the first "
                "refusal",
            )
        )
    return out, fleet, comments


def other_api(ctx: Context, tools: set[int]) -> tuple[dict, str]:
    """The ``fleet.apis`` entry of the API tools the rate limit spared (:data:`OTHER_API`), and its comment."""
    import numpy as np

    calls = ctx.calls
    mask = np.isin(calls.tool, list(tools)) & (calls.kind == -1)
    rel = ctx.sim_time(calls.start[mask])
    bins = max(1, math.ceil(ctx.end_s / 600.0))
    index = np.clip((rel // 600.0).astype(np.int64), 0, bins - 1)
    peak = _busiest_rate(rel, rel + calls.duration[mask], index, bins, 600.0)
    names = sorted(calls.tools[t] for t in tools)
    doc = {"name": OTHER_API, "tools": names, "rate_per_s": sig(max(0.5, 2.0 * peak))}
    return doc, (
        f"{OTHER_API}: the API tools never rate-limited while others were; its rate is twice their busiest 10 minutes "
        f"({peak:.4g} calls/s), so it never binds, and its credentials expire apart"
    )
