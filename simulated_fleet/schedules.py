"""Schedules in time: spans, payloads in force, windows, bursts and Poisson event times.

What a fault plan is made of (:mod:`fleetchaos.sim.plan`), and the draws that place
scheduled faults in time for one seed.  Every lookup is a binary search, so asking
whether an instant is inside a schedule costs the same however long the schedule is.
Standard library and the keyed draws only.
"""

from __future__ import annotations

import heapq
import itertools
import math
from bisect import bisect_right
from typing import TYPE_CHECKING

from fleetchaos.sim import _rng
from fleetchaos.sim.config import DAY_S

if TYPE_CHECKING:
    from fleetchaos.sim.fault_specs import Burst, Window

S_BURST = _rng.stream_id("fault:burst")


class Spans:
    """Sorted, disjoint [start, end) intervals, looked up by binary search.

    Queries may come in any order: a transport layer's retry meets the fleet as it will
    stand a few seconds ahead, and the step then goes on at its own instant.
    """

    __slots__ = ("_ends", "spans")

    def __init__(self, spans: list[tuple[float, float]]):
        self.spans = merge_spans(spans)
        self._ends = [end for _, end in self.spans]

    def _at(self, now: float) -> int:
        """The index of the first span that ends after ``now`` (``len(spans)`` if none does)."""
        return bisect_right(self._ends, now)

    def active(self, now: float) -> bool:
        """Whether ``now`` is inside a span."""
        i = bisect_right(self._ends, now)
        return i < len(self.spans) and self.spans[i][0] <= now

    def next_start_after(self, now: float) -> float:
        """The start of the first span that starts strictly after ``now`` (inf if none)."""
        spans = self.spans
        i = self._at(now)
        if i < len(spans) and spans[i][0] <= now:
            i += 1
        return spans[i][0] if i < len(spans) else math.inf

    def end_at(self, now: float) -> bool:
        """End the span in force at ``now`` there (a remediation freed the disk); False if none is."""
        i = self._at(now)
        if i < len(self.spans) and self.spans[i][0] <= now:
            self.spans[i] = (self.spans[i][0], now)
            self._ends[i] = now
            return True
        return False

    def __bool__(self) -> bool:
        return bool(self.spans)

    def __eq__(self, other: object) -> bool:  # plans compare by value (the same seed gives the same plan)
        return isinstance(other, Spans) and self.spans == other.spans

    __hash__ = None  # type: ignore[assignment]  # mutable (end_at): not a dict key


class SpanTable:
    """Spans that may overlap, each with a payload; the payload in force at an instant.

    ``entries`` are ``(start, end, *payload)``.  Where spans overlap, the first in sorted
    order wins (a worker in two latency spikes at once suffers the earlier one).  Built
    into disjoint pieces once, so a lookup is a binary search however many spans there are.
    """

    __slots__ = ("_ends", "_pieces", "entries")

    def __init__(self, entries: list[tuple]):
        self.entries = sorted(entries)
        self._pieces: list[tuple] = []
        edges = sorted({t for entry in self.entries for t in entry[:2]})
        active: list[int] = []  # heap of indices into entries: the smallest is the first in sorted order
        nxt = 0
        for a, b in itertools.pairwise(edges):
            while nxt < len(self.entries) and self.entries[nxt][0] <= a:
                heapq.heappush(active, nxt)
                nxt += 1
            while active and self.entries[active[0]][1] <= a:
                heapq.heappop(active)  # the winner ended; later ones may still be in force
            if active:
                self._pieces.append((a, b, self.entries[active[0]][2:]))
        self._ends = [end for _, end, _ in self._pieces]

    def at(self, now: float) -> tuple | None:
        """The payload of the first entry in force at ``now``, or None."""
        i = bisect_right(self._ends, now)
        if i < len(self._pieces) and self._pieces[i][0] <= now:
            return self._pieces[i][2]
        return None

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __eq__(self, other: object) -> bool:  # plans compare by value (the same seed gives the same plan)
        return isinstance(other, SpanTable) and self.entries == other.entries

    __hash__ = None  # type: ignore[assignment]  # mutable-looking value: not a dict key


def merge_spans(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def expand_windows(windows: list[Window], horizon_s: float) -> list[tuple[float, float]]:
    """Windows as (start, end) spans, recurring ones repeated up to the horizon."""
    spans = []
    for w in windows:
        start = w.start_s
        while start < horizon_s:
            spans.append((start, start + w.duration_s))
            if w.every_s is None:
                break
            start += w.every_s
    return merge_spans(spans)


def burst_spans(burst: Burst, seed: int, index: int, unit: int, horizon_s: float) -> list[tuple[float, float]]:
    """Bad phases of a two-state process with exponential phase lengths, starting good."""
    spans = []
    t = 0.0
    n = 0
    while t < horizon_s:
        u = _rng.uniform(_rng.key(seed, S_BURST, index, unit, n)) or 2.0**-53
        t += -math.log(u) * burst.mean_good_s
        v = _rng.uniform(_rng.key(seed, S_BURST, index, unit, n, 1)) or 2.0**-53
        bad = -math.log(v) * burst.mean_bad_s
        if t < horizon_s:
            spans.append((t, t + bad))
        t += bad
        n += 1
    return spans


def poisson_times(seed: int, stream: int, index: int, worker: int, per_day: float, horizon_s: float) -> list[float]:
    """Event times of a Poisson process with ``per_day`` events per simulated day."""
    rate = per_day / DAY_S
    if rate <= 0.0:  # also a positive per_day so small that the rate underflows to zero
        return []
    times: list[float] = []
    t = 0.0
    n = 0
    while True:
        u = _rng.uniform(_rng.key(seed, stream, index, worker, n)) or 2.0**-53
        t += -math.log(u) / rate
        if t >= horizon_s:
            return times
        times.append(t)
        n += 1


def disjoint_windows(windows: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """Split overlapping rate windows into disjoint ones whose factors multiply.

    A sweep over the edges: the windows in force between two neighbouring edges are kept
    by index, and their factors multiply in the windows' order (so the floats do not
    depend on how the sweep met them).
    """
    edges = sorted({t for s, e, _ in windows for t in (s, e)})
    starts = sorted(range(len(windows)), key=lambda i: windows[i][0])
    active: dict[int, float] = {}
    nxt = 0
    out: list[tuple[float, float, float]] = []
    for a, b in itertools.pairwise(edges):
        while nxt < len(starts) and windows[starts[nxt]][0] <= a:
            active[starts[nxt]] = windows[starts[nxt]][2]
            nxt += 1
        for i in [i for i in active if windows[i][1] <= a]:
            del active[i]  # ended at or before a: no longer covers [a, b)
        factor = 1.0
        for i in sorted(active):
            factor *= active[i]
        if factor < 1.0:
            if out and out[-1][1] == a and out[-1][2] == factor:
                out[-1] = (out[-1][0], b, factor)
            else:
                out.append((a, b, factor))
    return out
