"""Latency spikes: windows in which every call takes far longer than its tool usually does.

A spike (``latency_spike``) slows every call on the network path for a while; in the
traces it is a stretch where calls of every tool are slow at once.  A call is *slow* when
it took more than :data:`SLOW_FACTOR` times its tool's median successful duration (a
median stands a spike's slow calls, as long as they are fewer than half; at a provider, its
service, its wait in the queue left out), or timed out at the client's call timeout
without its queue explaining it; the windows are found by the same change-point search as the
failure windows, on the slow calls among all calls, and are a spike when the slow calls in
them are of two tools or more (one tool alone slow is its own backend's trouble: a queue,
a slow dependency).  The spike adds to each call the median
of what the window's successful calls took beyond their tool's median (``add_s``; the
calibrated world's network latency is inside the durations, so a factor on it would add
nothing).  The window's calls are left out of the tools' duration fits: a spike is a
window, not a fat tail on every call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleetchaos.calibrate.changepoint import find_windows
from fleetchaos.calibrate.faults import Context, Fitted, _clip_windows, _window_doc, sig

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: A call is slow when it took more than this many times its tool's median successful duration.
SLOW_FACTOR = 3.0

#: The fewest slow successful calls in the windows to fit a spike on.
MIN_SLOW = 5


def fit_latency_spikes(
    ctx: Context, call_timeout_s: float | None, service: NDArray[np.float64]
) -> tuple[list[Fitted], NDArray[np.bool_]]:
    """The spikes the traces show, and the calls inside them (to leave out of the duration fits).

    ``service``: a provider's calls' service times (NaN elsewhere): a call slow for its wait in the provider's
    queue is not slow on the network, so a provider's calls are judged on their service, and a call the client
    gave up on at the call timeout (:attr:`Context.gave_up`) is no spike's."""
    import numpy as np

    calls = ctx.calls
    inside = np.zeros(len(calls), dtype=bool)
    ok = calls.kind == -1
    took = np.where(np.isfinite(service), service, calls.duration)
    median = np.full(len(calls.tools), np.nan)
    for t in np.unique(calls.tool[ok]).tolist():
        median[t] = float(np.median(took[ok & (calls.tool == t)]))
    base = median[calls.tool]
    slow = ok & (took > SLOW_FACTOR * base)
    if call_timeout_s is not None:
        slow |= (calls.kind >= 0) & (calls.duration >= call_timeout_s - 1e-3) & ~ctx.gave_up
    if int(slow.sum()) < MIN_SLOW:
        return [], inside
    rel = ctx.sim_time(calls.start)
    windows, baseline = find_windows(rel, slow, 0.0, ctx.end_s, ctx.bin_s)
    windows = _clip_windows(ctx, windows, "latency_spike")
    for w in windows:
        inside |= (rel >= w.start_s) & (rel < w.end_s)
    extra = (took - base)[inside & slow & ok]
    if len(extra) < MIN_SLOW or len(np.unique(calls.tool[inside & slow])) < 2:
        # Too few to fit on, or one tool alone slow: its own backend (a queue, a slow dependency), not the network.
        return [], np.zeros(len(calls), dtype=bool)
    add = float(np.median(extra))
    doc = {"kind": "latency_spike", "windows": [_window_doc(w.start_s, w.end_s) for w in windows], "factor": 1,
           "add_s": sig(add)}  # fmt: skip
    comment = (
        f"windows found by change-point on slow calls (over {SLOW_FACTOR:g} times their tool's median, or timed out "
        f"at the call timeout): {sum(w.failures for w in windows):,} of {sum(w.trials for w in windows):,} calls in "
        f"them against {100 * baseline:.3g}% outside; add_s: the median of what their {len(extra)} slow successful "
        "calls took beyond their tool's median; their calls are left out of the duration fits"
    )
    return [Fitted(doc, comment)], inside
