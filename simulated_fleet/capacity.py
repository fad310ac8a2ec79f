"""Providers with a declared capacity, decided at each call's arrival without SimPy.

A :class:`Provider` is the API, or the backend of some tools, as a scenario declares it
(:class:`~fleetchaos.sim.config.ProviderSpec`): ``servers`` serving calls first come,
first served; a ``slowdown`` curve that makes service longer the more calls are in it;
a ``max_in_flight`` past which it refuses new calls, each refusal still costing it
work.  Everything is decided when a call arrives, from the instants earlier calls leave
(a heap of when each server is next free, a heap of when each call in it leaves), so a
call costs a few heap operations and no event: in a first-come-first-served queue a
call's start depends only on the calls before it.

A client's patience (the call timeout, counted from dispatch) decides what it sees; the
provider's work goes on after the client gave up unless the tool cancels it, which is
what makes a queue of abandoned work, and a retry storm, outlive a spike in load.  A
client that waits for every reply but discards a late one (``fleet.late_reply_s``) is
decided by the call model from the time the reply takes; the provider only counts them.

With a :class:`~fleetchaos.sim.provider_load.LoadSeries` (:meth:`Provider.watch`), each
call's wait, stay and service are added to the run's load over time as they are decided.
"""

from __future__ import annotations

import heapq
import itertools
import math
from bisect import bisect_right

from fleetchaos.sim import _rng
from fleetchaos.sim.config import ProviderSpec
from fleetchaos.sim.provider_load import BUSY, IN_FLIGHT, QUEUE, LoadSeries

#: The stream a call's draw of its service mixture share comes from.
S_SERVICE_MIX = _rng.stream_id("call:service_mixture")

#: What :meth:`Provider.admit` returns for a refused call.
REFUSED = None

_heappop, _heappush, _heapreplace = heapq.heappop, heapq.heappush, heapq.heapreplace


class Provider:
    """One provider's capacity and the calls in it (mutable: one per run)."""

    __slots__ = (
        "_curve",
        "_free",
        "_in_system",
        "_slow",
        "_slow_ends",
        "abandoned",
        "cancelled",
        "late",
        "load",
        "max_in_flight",
        "mixture",
        "name",
        "refused",
        "reject_cost_s",
        "served",
        "status",
    )

    def __init__(self, spec: ProviderSpec, slowdowns: list[tuple[float, float, float]] | None = None):
        """``slowdowns`` are an ``overloaded`` fault's disjoint, sorted ``(start, end, capacity factor)`` windows."""
        self.name = spec.name
        self.status = spec.overload_status
        self.max_in_flight = spec.max_in_flight if spec.admission == "refuse" else None  # queue: never refuses
        self.reject_cost_s = spec.reject_cost_s
        self.mixture: tuple[tuple[float, float], ...] | None = None
        """The service mixture as (cumulative probability, factor) pairs; None without one."""
        if spec.service_mixture:
            bounds = itertools.accumulate(share.probability for share in spec.service_mixture)
            self.mixture = tuple(zip(bounds, (share.factor for share in spec.service_mixture), strict=True))
        self.load: LoadSeries | None = None
        """Its load over time, when the run records it (:meth:`watch`)."""
        self._free: list[float] | None = [0.0] * spec.servers if spec.servers else None  # heap: when each server frees
        self._in_system: list[float] = []  # heap: when each call in the provider leaves it
        self._curve = [(p.in_flight, p.factor) for p in spec.slowdown]
        self._slow = slowdowns or []
        self._slow_ends = [end for _, end, _ in self._slow]
        self.served = 0
        """Calls it accepted (finished in time or not)."""
        self.refused = 0
        """Calls it refused for overload."""
        self.abandoned = 0
        """Accepted calls whose client gave up while it went on working for them."""
        self.cancelled = 0
        """Accepted calls whose client gave up and whose work was dropped."""
        self.late = 0
        """Accepted calls whose reply came after the client's ``late_reply_s`` (and was discarded as failed)."""

    def watch(self, width_s: float, until_s: float) -> LoadSeries:
        """Record its queue, calls in flight and busy servers in bins of ``width_s`` up to ``until_s`` from now on."""
        self.load = LoadSeries(width_s, until_s)
        return self.load

    def service_s(self, work_s: float, key: int) -> float:
        """The service a call keyed ``key`` takes: ``work_s`` times its share's factor (its draw from its key)."""
        return work_s * self.service_factor(_rng.draw(key, S_SERVICE_MIX))

    def service_factor(self, u: float) -> float:
        """The service mixture's factor for a call whose uniform draw is ``u`` (1 outside every share)."""
        for bound, factor in self.mixture or ():
            if u < bound:
                return factor
        return 1.0

    def in_flight(self, now: float) -> int:
        """Calls in the provider at ``now`` (served or waiting, abandoned ones included)."""
        calls = self._in_system
        while calls and calls[0] <= now:
            heapq.heappop(calls)
        return len(calls)

    def saturated(self, now: float, service_s: float, patience_s: float) -> bool:
        """Whether a call arriving at ``now`` with ``service_s`` of work (on an idle provider) would fail
        for want of capacity, read without changing anything (:meth:`admit` decides the same way).

        It would be refused (``max_in_flight`` calls in it, under ``refuse`` admission), or
        answered only after its client's ``patience_s`` ran out: queued behind the calls in
        it, slowed by its curve and its slow windows.  The wasted-retry judge asks this at a retry's dispatch.
        """
        limit = self.max_in_flight
        # Calls gone by ``now`` leave the heap here as at the next admit() (no call arrives before now).
        in_system = self.in_flight(now) if limit is not None or self._curve else 0
        if limit is not None and in_system >= limit:
            return True
        if patience_s == math.inf:
            return False
        work = service_s * self.factor(in_system + 1)
        if self._slow:
            speed = self.speed(now)
            work = work / speed if speed > 0.0 else math.inf
        free = self._free
        start = now if free is None else max(now, free[0])
        return start + work - now > patience_s

    def next_room(self, now: float) -> float:
        """The instant the first call in it leaves (``now`` if it is empty): a refusal's retry-after."""
        self.in_flight(now)
        return self._in_system[0] if self._in_system else now

    def factor(self, in_flight: int) -> float:
        """The slowdown curve at ``in_flight`` calls: linear between points, flat past the ends (1 without a curve)."""
        curve = self._curve
        if not curve:
            return 1.0
        if in_flight <= curve[0][0]:
            return curve[0][1]
        for (n0, f0), (n1, f1) in itertools.pairwise(curve):
            if in_flight <= n1:
                return f0 + (f1 - f0) * (in_flight - n0) / (n1 - n0)
        return curve[-1][1]

    def speed(self, now: float) -> float:
        """The share of its speed left at ``now`` (an ``overloaded`` fault's window), 1.0 outside them."""
        i = bisect_right(self._slow_ends, now)
        if i < len(self._slow) and self._slow[i][0] <= now:
            return self._slow[i][2]
        return 1.0

    def admit(self, now: float, service_s: float, patience_s: float, cancel: bool) -> tuple[float, bool] | None:
        """A call arriving at ``now`` whose work takes ``service_s`` on an idle provider.

        Returns :data:`REFUSED` (None) when it is refused for overload, else ``(seconds
        until the client hears back, whether the work finished within the client's
        patience)``.  A client whose patience runs out hears back after ``patience_s``;
        its call's work goes on to the end (taking effect later) unless ``cancel``, in
        which case it stops then (or never starts, if it was still waiting).
        """
        calls = self._in_system
        while calls and calls[0] <= now:
            _heappop(calls)
        limit = self.max_in_flight
        if limit is not None and len(calls) >= limit:
            self.refused += 1
            cost = self.reject_cost_s
            if cost > 0.0:
                free = self._free
                if free is not None:  # the next free server spends the time refusing
                    begins = max(now, free[0])
                    heapq.heapreplace(free, begins + cost)
                    if self.load is not None:
                        self.load.add(BUSY, begins, begins + cost)
                else:
                    heapq.heappush(calls, now + cost)
                    if self.load is not None:
                        self.load.add(IN_FLIGHT, now, now + cost)
            return REFUSED
        self.served += 1
        work = service_s
        if self._curve:
            work *= self.factor(len(calls) + 1)
        if self._slow:
            # Overlapping slow windows multiply their factors, and tiny ones can underflow to 0: no speed
            # is left, and the work never ends (as with a factor so small that the division overflows).
            speed = self.speed(now)
            work = work / speed if speed > 0.0 else math.inf
        free = self._free
        if free is None:
            start = now
        else:
            start = free[0]
            if start < now:  # max(now, free[0])
                start = now
        finish = start + work
        if finish - now <= patience_s:
            if free is not None:
                _heapreplace(free, finish)
            _heappush(calls, finish)
            if self.load is not None:
                self._record(now, start, finish, finish)
            return finish - now, True
        gave_up = now + patience_s
        if not cancel:
            self.abandoned += 1
            leaves = finish
        else:
            self.cancelled += 1
            leaves = gave_up
        if free is not None and start < leaves:
            heapq.heapreplace(free, min(finish, leaves))
        heapq.heappush(calls, leaves)
        if self.load is not None:
            self._record(now, start, finish, leaves)
        return patience_s, False

    def _record(self, now: float, start: float, finish: float, leaves: float) -> None:
        """A call that arrived at ``now``, was served from ``start`` to ``finish`` and left at ``leaves``."""
        load = self.load
        assert load is not None  # admit() records only while watched
        load.add(IN_FLIGHT, now, leaves)
        if self._free is not None:  # only servers make a call wait, and only their time is utilisation
            load.add(QUEUE, now, min(start, leaves))
            load.add(BUSY, start, min(finish, leaves))


def provider_breakdowns(providers: list[Provider], *, late: bool) -> dict[str, dict[str, int]]:
    """What a run's providers did, as breakdowns: ``provider_calls`` (calls served, refused, abandoned,
    cancelled, and with ``late`` (the fleet discards late replies) answered late) and, for those watched,
    their load over time (:data:`fleetchaos.sim.provider_load.BREAKDOWNS`)."""
    out: dict[str, dict[str, int]] = {
        "provider_calls": {
            f"{p.name} {what}": n
            for p in providers
            for what, n in (
                ("abandoned", p.abandoned),
                ("cancelled", p.cancelled),
                *((("late", p.late),) if late else ()),
                ("refused", p.refused),
                ("served", p.served),
            )
        }
    }
    for p in providers:
        if p.load is not None:
            for name, series in p.load.breakdowns(p.name).items():
                out.setdefault(name, {}).update(series)
    return out


def build_providers(
    specs: list[ProviderSpec], slowdowns: dict[str, list[tuple[float, float, float]]]
) -> list[Provider]:
    """One :class:`Provider` per spec, with its ``overloaded`` windows."""
    return [Provider(spec, slowdowns.get(spec.name)) for spec in specs]


__all__ = ["REFUSED", "Provider", "build_providers", "provider_breakdowns"]
