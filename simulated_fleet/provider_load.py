"""A provider's load over a run: its queue, the calls in it and its busy servers, per time bin.

A provider decides each call when it arrives (:mod:`fleetchaos.sim.capacity`), so it knows
at once when the call waits, when a server serves it and when it leaves.  A
:class:`LoadSeries` adds each such span to the integrals of the time bins it covers, in a
few operations whatever the span's length (a span that covers whole bins raises a level
that :meth:`LoadSeries.integrals` sums once, at the end).  The integral of a bin divided by
its width is the bin's time-average: mean calls waiting for a server, mean calls in the
provider, and (over the servers) the busy fraction.  A run records them only when its
scenario sets ``goodput_bin_s``: a run without it pays one attribute test per provider call.
"""

from __future__ import annotations

import math

#: The measures a :class:`LoadSeries` keeps, by index: calls waiting for a server, calls in
#: the provider (waiting or served, abandoned ones included), servers busy.
QUEUE, IN_FLIGHT, BUSY = 0, 1, 2

#: The breakdown each measure is recorded as (call-seconds or server-seconds per bin).
BREAKDOWNS = ("provider_queue_by_time", "provider_in_flight_by_time", "provider_busy_by_time")


class LoadSeries:
    """Integrals over time bins of ``width_s`` of a provider's queue, calls in it and busy servers, up to ``until_s``."""

    __slots__ = ("_levels", "_parts", "until_s", "width_s")

    def __init__(self, width_s: float, until_s: float):
        """Bins ``[k * width_s, (k + 1) * width_s)`` from 0; spans are cut at ``until_s`` (the run's end)."""
        if not (width_s > 0 and until_s >= 0 and math.isfinite(until_s)):
            raise ValueError(f"LoadSeries needs a positive bin width and a finite end (got {width_s}, {until_s})")
        self.width_s = width_s
        self.until_s = until_s
        n = int(until_s // width_s) + 2
        # Per measure and bin: the integral of the spans that start or end inside the bin, and
        # the change in the number of spans that cover whole bins from that bin on.
        self._parts = tuple([0.0] * n for _ in BREAKDOWNS)
        self._levels = tuple([0] * n for _ in BREAKDOWNS)

    def add(self, measure: int, start: float, end: float) -> None:
        """One call (or server) counted in ``measure`` from ``start`` until ``end`` (cut at the run's end)."""
        if end > self.until_s:
            end = self.until_s
        if end <= start:
            return
        width = self.width_s
        first, last = int(start // width), int(end // width)
        parts = self._parts[measure]
        if first == last:
            parts[first] += end - start
            return
        parts[first] += (first + 1) * width - start
        parts[last] += end - last * width
        if last > first + 1:
            levels = self._levels[measure]
            levels[first + 1] += 1
            levels[last] -= 1

    def integrals(self, measure: int) -> list[float]:
        """Per bin from 0 to the run's end: the seconds ``measure`` counted (call- or server-seconds)."""
        width = self.width_s
        level = 0
        out = []
        for part, change in zip(self._parts[measure], self._levels[measure], strict=True):
            level += change
            out.append(part + level * width)
        while out and out[-1] == 0.0:
            out.pop()
        return out

    def breakdowns(self, name: str) -> dict[str, dict[str, int]]:
        """The series as breakdowns keyed ``"NAME BIN_START"`` (seconds, zero-padded as ``goodput_by_time``),
        in whole seconds, bins that round to 0 left out."""
        width = self.width_s
        out: dict[str, dict[str, int]] = {}
        for measure, breakdown in enumerate(BREAKDOWNS):
            series = {}
            for k, seconds in enumerate(self.integrals(measure)):
                whole = round(seconds)
                if whole:
                    series[f"{name} {k * width:09.0f}"] = whole
            out[breakdown] = series
        return out


__all__ = ["BREAKDOWNS", "BUSY", "IN_FLIGHT", "QUEUE", "LoadSeries"]
