"""Nodes and shared capacity: workers with tool slots, disks and credentials, and the
fleet-wide API token bucket through which rate limiting emerges from load."""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from collections import deque

import simpy

from fleetchaos.sim.faults import Spans


class TokenBucket:
    """The fleet's shared API rate limit, refilled lazily (no SimPy process).

    The refill rate is ``rate_per_s`` multiplied by the factor of the rate-limit window
    in force, integrated exactly across window edges.  A request that finds no token is
    refused with the time until one will be available: the retry-after hint.

    ``windows`` are ``(start, end, factor)``, disjoint and sorted (as the fault plan gives
    them); each lookup is a binary search, so every API call costs the same however many
    windows a scenario has.
    """

    __slots__ = ("_ends", "burst", "last", "rate", "tokens", "windows")

    def __init__(self, rate_per_s: float, burst: float, windows: list[tuple[float, float, float]]):
        if any(later[0] < earlier[1] for earlier, later in itertools.pairwise(windows)):
            raise ValueError("TokenBucket: rate-limit windows must be disjoint and sorted by start")
        self.rate = rate_per_s
        self.burst = burst
        self.tokens = burst
        self.last = 0.0
        self.windows = windows
        self._ends = [end for _, end, _ in windows]

    def _refill_amount(self, a: float, b: float) -> float:
        amount = self.rate * (b - a)
        windows = self.windows
        # From the first window that ends after a, up to the first that starts at or after b:
        # the others overlap (a, b) by nothing.
        for i in range(bisect_right(self._ends, a), len(windows)):
            start, end, factor = windows[i]
            if start >= b:
                break
            lo = start if start > a else a
            hi = end if end < b else b
            if hi > lo:
                amount -= self.rate * (1.0 - factor) * (hi - lo)
        return amount

    def _window_at(self, t: float) -> int:
        """The index of the first window that ends after ``t`` (the one in force, if any)."""
        return bisect_right(self._ends, t)

    def rate_at(self, now: float) -> float:
        """The refill rate in force at ``now``."""
        i = self._window_at(now)
        if i < len(self.windows) and self.windows[i][0] <= now:
            return self.rate * self.windows[i][2]
        return self.rate

    def take(self, now: float) -> float:
        """Take one token: 0.0 on success, else the seconds until a token is available."""
        if now > self.last:
            if self.windows:
                self.tokens = min(self.burst, self.tokens + self._refill_amount(self.last, now))
            else:
                self.tokens = min(self.burst, self.tokens + self.rate * (now - self.last))
            self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return self._time_to_token(now)

    def charge_refusal(self, now: float, cost: float) -> float:
        """A refused request still costs ``cost`` tokens (down to -burst); the new wait."""
        self.tokens = max(-self.burst, self.tokens - cost)
        return self._time_to_token(now)

    def _time_to_token(self, now: float) -> float:
        need = 1.0 - self.tokens
        t = now
        # Walk forward across window edges until the refill covers the shortfall.
        windows = self.windows
        for _ in range(len(windows) * 2 + 2):
            rate = self.rate_at(t)
            i = self._window_at(t)  # the next edge: the end of the window in force, else the next start
            edge = math.inf if i == len(windows) else (windows[i][1] if windows[i][0] <= t else windows[i][0])
            if rate > 0 and t + need / rate <= edge:
                return t + need / rate - now
            if edge == math.inf:
                return math.inf
            need -= rate * (edge - t)
            t = edge
        return t - now


class SlotPool:
    """A worker's tool slots: the grants of a ``simpy.Resource``, in the same order, at a fraction of its cost.

    A ``Resource`` request costs two SimPy events even when a slot is free (the request,
    then the release), and a tool-slot grab is on the simulation's hottest path.  Here a
    free slot is taken with no event when nothing else is due at this instant, and the
    order of everything is kept exactly as a ``Resource`` would have it:

    * a free slot taken while other events are due now resumes the process after them
      (an already-triggered event), as a granted request would;
    * a released slot goes to the longest waiter when a release event is processed, one
      waiter per release, as ``Resource`` hands it over; a request that arrives in
      between first grants the longest waiter, then queues behind the others.

    ``tests/unit/test_rng_and_fleet.py`` checks the grants against ``simpy.Resource``
    with ties (integer times) and without, and a whole world against one built on
    ``Resource``.  The one difference: a process resumed by an event that other
    processes also wait on may run before them (the world has no such events).
    """

    __slots__ = ("_waiting", "capacity", "count", "env")

    def __init__(self, env: simpy.Environment, capacity: int):
        self.env = env
        self.capacity = capacity
        self.count = 0  # slots granted and not yet released
        self._waiting: deque[simpy.Event] = deque()

    def acquire(self) -> simpy.Event | None:
        """Take a slot: None if it was taken now, else an event to wait for (it fires when the slot is granted)."""
        env = self.env
        if self._waiting:
            if self.count < self.capacity:  # a release is pending: the longest waiter goes first
                self.count += 1
                self._waiting.popleft().succeed()
        elif self.count < self.capacity:
            self.count += 1
            if env.peek() > env.now:
                return None  # nothing else is due now: carrying on is what the request's event would do
            granted = env.event()
            granted.succeed()  # resume after the events already due now
            return granted
        event = env.event()
        self._waiting.append(event)
        return event

    def release(self) -> None:
        """Give a slot back; the longest waiter gets it when the release event is processed."""
        self.count -= 1
        if self._waiting:
            released = self.env.event()
            released.callbacks.append(self._grant_next)
            released.succeed()

    def _grant_next(self, _released: simpy.Event) -> None:
        if self._waiting and self.count < self.capacity:
            self.count += 1
            self._waiting.popleft().succeed()

    @property
    def queued(self) -> int:
        """Dispatches waiting for a slot."""
        return len(self._waiting)


class Worker:
    """One worker node: tool slots, a disk that can fill, and API credentials."""

    __slots__ = (
        "_key_ptr",
        "crash_spans",
        "crashes",
        "credential_lifetime_s",
        "credentials_expire_s",
        "credentials_issued_s",
        "disk_capacity_mb",
        "disk_faults",
        "disk_used_mb",
        "in_flight",
        "index",
        "key_expiries",
        "slots",
    )

    def __init__(
        self,
        env: simpy.Environment,
        index: int,
        tool_slots: int,
        disk_full_spans: list[tuple[float, float]],
        key_expiries: list[float],
        credential_lifetime_s: float,
        crash_spans: list[tuple[float, float]] | None = None,
        disk_capacity_mb: float = math.inf,
    ):
        self.index = index
        self.slots = SlotPool(env, tool_slots)
        self.disk_faults = Spans(disk_full_spans)  # when a fault fills the disk
        self.key_expiries = key_expiries
        self._key_ptr = 0
        self.credentials_issued_s = 0.0
        self.credential_lifetime_s = credential_lifetime_s
        self.in_flight = 0
        self.crashes = Spans(crash_spans or [])  # crashed from start until restarted
        self.crash_spans = self.crashes.spans  # the list itself: a cheap "can it crash at all" on every call
        self.disk_capacity_mb = disk_capacity_mb
        self.disk_used_mb = 0.0
        self.credentials_expire_s = 0.0  # when the current credentials stop working (see _update_expiry)
        self._update_expiry()

    def disk_refuses(self, now: float, mb: float) -> bool:
        """Whether a write of ``mb`` fails: the disk was filled by a fault, or task workspaces fill it."""
        return self.disk_full(now) or self.disk_used_mb + mb > self.disk_capacity_mb

    def down(self, now: float) -> bool:
        """Whether the worker is crashed (not yet restarted) at ``now``."""
        return self.crashes.active(now)

    def next_crash_after(self, now: float) -> float:
        """The start of the next crash strictly after ``now`` (inf if none)."""
        return self.crashes.next_start_after(now)

    def disk_full(self, now: float) -> bool:
        """Whether a fault has filled the disk at ``now``."""
        return self.disk_faults.active(now)

    def clear_disk_fault(self, now: float) -> bool:
        """Free a disk a fault filled (a remediation): the span in force ends at ``now``; False if none was."""
        return self.disk_faults.end_at(now)

    def credentials_expired(self, now: float) -> bool:
        """Whether the worker's API credentials are invalid at ``now``."""
        return now >= self.credentials_expire_s

    def refresh_credentials(self, now: float) -> None:
        """Issue fresh credentials: revocations before ``now`` no longer apply."""
        self.credentials_issued_s = now
        expiries = self.key_expiries
        ptr = self._key_ptr
        while ptr < len(expiries) and expiries[ptr] <= now:
            ptr += 1
        self._key_ptr = ptr
        self._update_expiry()

    def _update_expiry(self) -> None:
        # Checked on every API call, so kept as one instant rather than recomputed:
        # expired at ``now`` iff now >= issued + lifetime or now >= the next revocation.
        expire = self.credentials_issued_s + self.credential_lifetime_s
        if self._key_ptr < len(self.key_expiries):
            expire = min(expire, self.key_expiries[self._key_ptr])
        self.credentials_expire_s = expire
