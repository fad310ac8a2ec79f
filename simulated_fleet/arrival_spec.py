"""The scenario models of an arrival-rate schedule (``workload.arrival_schedule``).

A piecewise rate over simulated time (a spike, a ramp, a daily profile) that the
workload's thinning follows (:func:`fleetchaos.sim.workload.arrivals`); re-exported by
:mod:`fleetchaos.sim.config`, where users look.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable
from typing import Literal

from pydantic import Field, model_validator

from fleetchaos.sim.fault_specs import _Strict


class RatePoint(_Strict):
    """One point of an arrival-rate schedule: from ``at_s`` on, tasks arrive at this rate."""

    at_s: float = Field(ge=0, description="simulated seconds (from the start of each period when it repeats)")
    tasks_per_hour: float = Field(ge=0, le=1_000_000, description="mean arrivals per hour at this point")


class ArrivalSchedule(_Strict):
    """The arrival rate over time, as points joined by a step or a straight line.

    ``step``: the rate of the last point at or before the instant.  ``linear``: straight
    lines between neighbouring points; after the last point the rate stays at its value,
    or with ``every_s`` runs to the first point's value at the end of the period.  With
    ``every_s`` the schedule repeats (86400: a profile by time of day); without it, it
    spans the run once.  A spike is two points; 24 hourly points make a daily profile.
    """

    points: list[RatePoint] = Field(min_length=1, max_length=10_000, description="in increasing at_s, the first at 0")
    interpolation: Literal["step", "linear"] = Field(
        default="step", description="step: hold each point's rate until the next; linear: straight lines between"
    )
    every_s: float | None = Field(default=None, gt=0, description="repeat period (default: the schedule runs once)")

    @model_validator(mode="after")
    def _ordered_points(self) -> ArrivalSchedule:
        if self.points[0].at_s != 0:
            raise ValueError(
                f"points[0].at_s is {self.points[0].at_s:g}; the first point must be at 0 so the rate is "
                "defined from the start (add a point at 0 with the rate before it)"
            )
        for i in range(1, len(self.points)):
            if self.points[i].at_s <= self.points[i - 1].at_s:
                raise ValueError(
                    f"points[{i}].at_s {self.points[i].at_s:g} is not after points[{i - 1}].at_s "
                    f"{self.points[i - 1].at_s:g}; list the points in increasing time"
                )
        if self.every_s is not None and self.points[-1].at_s >= self.every_s:
            raise ValueError(
                f"points[{len(self.points) - 1}].at_s {self.points[-1].at_s:g} is not inside the period "
                f"every_s {self.every_s:g}; every point must be before the period ends"
            )
        if not any(p.tasks_per_hour > 0 for p in self.points):
            raise ValueError("every point has tasks_per_hour 0: no task would ever arrive; give one a positive rate")
        return self

    def rate_per_s(self, t: float) -> float:
        """Tasks per simulated second at instant ``t``."""
        return self.compiled()(t)

    def compiled(self) -> Callable[[float], float]:
        """``rate(t)`` in tasks per second, with the points unpacked once (the workload calls it per arrival)."""
        at = [p.at_s for p in self.points]
        per_s = [p.tasks_per_hour / 3600.0 for p in self.points]
        every = self.every_s
        linear = self.interpolation == "linear"
        last = len(at) - 1
        end_at = every if every is not None else math.inf
        end_rate = per_s[0] if every is not None else per_s[-1]

        def rate(t: float) -> float:
            u = t % every if every is not None else t
            i = bisect.bisect_right(at, u) - 1
            if not linear:
                return per_s[i]
            if i < last:
                a, b, ra, rb = at[i], at[i + 1], per_s[i], per_s[i + 1]
            elif end_at < math.inf:
                a, b, ra, rb = at[i], end_at, per_s[i], end_rate
            else:
                return per_s[i]
            return ra + (u - a) / (b - a) * (rb - ra)

        return rate

    def mean_per_s(self, horizon_s: float) -> float:
        """The mean rate over ``[0, horizon_s)`` (for size estimates): exact, piece by piece."""
        rate = self.compiled()
        span = min(horizon_s, self.every_s) if self.every_s is not None else horizon_s
        edges = sorted({0.0, span, *(p.at_s for p in self.points if p.at_s < span)})
        total = 0.0
        for a, b in itertools.pairwise(edges):
            if self.interpolation == "step":
                total += rate(a) * (b - a)
            else:  # a straight line between a and b: its mean is the mean of its ends
                total += (rate(a) + rate(math.nextafter(b, a))) / 2.0 * (b - a)
        return total / span if span > 0 else 0.0


__all__ = ["ArrivalSchedule", "RatePoint"]
