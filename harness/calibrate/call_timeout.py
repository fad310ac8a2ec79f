"""The client's call timeout, and which traced timeouts it accounts for by itself.

A client that gives up on a call after ``T`` seconds leaves a mark in its traces: a
cluster of timeouts that all end ``T`` after they began, and no successful call longer
than ``T`` (a reply that would have come later was never heard).  In a world with that
call timeout (``fleet.call_timeout_s``) such a timeout is not a fault of its own: it is
what a slow call, or one queued behind others at a busy provider, comes to.  So the fit
takes ``T`` and splits the traced timeouts in two:

* **call timeouts**, which the fitted world makes again by itself: a timeout at ``T``
  whose call was likely to outlast ``T`` (its tool's durations, or at a provider its wait
  in the reconstructed queue and its service, say how likely), and a timeout below ``T``
  that no other timeout shares: a hang lasts its fixed time, so a lone shorter timeout
  is the client's patience less a wait before the call went out (a tool slot);
* **hangs** (the ``timeout`` fault): the clusters below ``T``, and the timeouts at ``T``
  beyond the number the calls' chances account for (more than Poisson noise allows),
  the least likely call timeouts taken as them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fleetchaos.traces.codes import FAULT_KINDS

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from fleetchaos.calibrate.observed import Calls

#: Timeouts this close (seconds, or this share of the duration if larger, never more than a second) end at the
#: same time: a client's timeout is one number, measured to the millisecond.
TOLERANCE_S = 0.05
TOLERANCE_SHARE = 0.001
TOLERANCE_MAX_S = 1.0

#: The fewest timeouts at the longest duration that make it a call timeout.
MIN_AT = 3

#: Timeouts at ``T`` are taken as hangs only past this quantile of the Poisson count the calls' chances give.
HANG_QUANTILE = 0.99


def tolerance(duration: float) -> float:
    """How close two durations must be to count as the same."""
    return min(TOLERANCE_MAX_S, max(TOLERANCE_S, TOLERANCE_SHARE * duration))


@dataclass(frozen=True)
class CallTimeout:
    """The fitted call timeout and the timeouts that may be the client's giving up."""

    seconds: float
    at: NDArray[np.bool_]
    """Calls that timed out at ``seconds``."""
    lone: NDArray[np.bool_]
    """Calls that timed out below it at a duration no other timeout shares (call timeouts after a wait)."""

    @property
    def candidates(self) -> NDArray[np.bool_]:
        return self.at | self.lone


def fit_call_timeout(calls: Calls) -> CallTimeout | None:
    """The call timeout the traces show (None without a cluster of timeouts at the longest duration)."""
    import numpy as np

    timed_out = calls.kind == FAULT_KINDS.index("timeout")
    if int(timed_out.sum()) < MIN_AT:
        return None
    d = calls.duration[timed_out]
    top = float(d.max())
    tol = tolerance(top)
    if int((d >= top - tol).sum()) < MIN_AT:
        return None
    ok = calls.duration[calls.kind == -1]
    if len(ok) and float(ok.max()) > top + tol:  # a success longer than the client's patience: not a call timeout
        return None
    at = timed_out & (calls.duration >= top - tol)
    below = np.flatnonzero(timed_out & ~at)
    values = np.sort(calls.duration[below])
    # A duration shared with another timeout below T (within the tolerance) is a hang's.
    near = np.zeros(len(values), dtype=bool)
    if len(values) > 1:
        close = np.diff(values) <= np.clip(TOLERANCE_SHARE * values[1:], TOLERANCE_S, TOLERANCE_MAX_S)
        near[1:] |= close
        near[:-1] |= close
    shared = np.zeros(len(calls), dtype=bool)
    shared[below[np.argsort(calls.duration[below], kind="stable")]] = near
    lone = timed_out & ~at & ~shared
    return CallTimeout(seconds=round(top, 3), at=at, lone=lone)


def hangs_at(
    ct: CallTimeout, calls: Calls, chance: NDArray[np.float64], reached: NDArray[np.bool_]
) -> tuple[NDArray[np.bool_], list[str]]:
    """The timeouts at ``T`` that are hangs, not call timeouts, tool by tool, and what was found.

    ``chance``: each call's chance to outlast ``T`` (NaN where unknown: taken as 1 at ``T``, 0 elsewhere);
    ``reached``: the calls that could have (those that ended, and those at ``T``).  The number of call
    timeouts a tool should show is the sum of its calls' chances; the timeouts at ``T`` past that (more than
    :data:`HANG_QUANTILE` of its Poisson count) are hangs, the least likely call timeouts taken as them.
    """
    import numpy as np
    from scipy.stats import poisson

    hang = np.zeros(len(calls), dtype=bool)
    found = []
    for t in np.unique(calls.tool[ct.at]).tolist():
        idx = np.flatnonzero(ct.at & (calls.tool == t))
        p = np.nan_to_num(chance[idx], nan=1.0)
        others = reached & ~ct.at & (calls.tool == t)
        expected = float(p.sum()) + float(np.nan_to_num(chance[others], nan=0.0).sum())
        if len(idx) <= poisson.ppf(HANG_QUANTILE, max(expected, 1e-9)):
            continue
        extra = len(idx) - math.floor(expected + 0.5)
        hang[idx[np.argsort(p, kind="stable")[:extra]]] = True
        found.append(f"{calls.tools[t]}: {len(idx)} at it, {expected:.3g} expected, {extra} taken as hangs")
    return hang, found


def comment(ct: CallTimeout, calls: Calls, gave_up: NDArray[np.bool_], found: list[str]) -> str:
    """The provenance of ``fleet.call_timeout_s``."""
    timed_out = int((calls.kind == FAULT_KINDS.index("timeout")).sum())
    text = (
        f"{int(ct.at.sum())} of {timed_out} timeouts end {ct.seconds:g} s after they began and no successful call "
        f"lasted longer: the client's call timeout.  {int(gave_up.sum())} timeouts are the client giving up (at it, "
        "a call likely to outlast it; below it, at a duration no other timeout shares: its patience less a wait "
        "before the call went out), which the fitted world makes again; the rest are hangs (the timeout fault)"
    )
    return text + (": " + "; ".join(found) if found else "")
