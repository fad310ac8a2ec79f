"""The fleet's shared state that tool calls meet, without SimPy.

The fleet-wide API :class:`TokenBucket` (rate limiting emerges from load), the
:class:`DailyQuota` of API calls, both behind :class:`SharedCapacity`, and each worker's
:class:`NodeState`: a disk that can fill, credentials that expire and are refreshed, a
crash schedule.  The world's :class:`~fleetchaos.sim.fleet.Worker` adds tool slots (a
SimPy resource) to a :class:`NodeState`; a real-code runtime builds its twin of the
fleet's state from these same classes.  They satisfy the protocols :class:`NodeView`
and :class:`SharedView` here, what :meth:`fleetchaos.sim.calls.CallModel.decide` and
the state kinds' gates read.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Protocol

from fleetchaos.sim.config import DAY_S
from fleetchaos.sim.schedules import Spans


class NodeView(Protocol):
    """A worker's state as a call meets it (:class:`fleetchaos.sim.state.NodeState`)."""

    index: int
    keys: tuple[Credentials, ...]
    """Its credentials per API: the model provider's first, then each of ``fleet.apis`` in order."""
    crash_spans: list[tuple[float, float]]
    """Its crash spans: empty for a worker that never crashes (then :meth:`down` is not asked)."""

    def down(self, now: float) -> bool:
        """Whether the worker is crashed at ``now``."""
        ...

    def disk_refuses(self, now: float, mb: float) -> bool:
        """Whether a write of ``mb`` fails at ``now``."""
        ...


class SharedView(Protocol):
    """What every API call shares (:class:`fleetchaos.sim.state.SharedCapacity`)."""

    def take_token(self, now: float) -> float | None:
        """Take a token of the model provider's bucket: None when granted, else the instant one is due."""
        ...

    def token_gate(self, api: int) -> Callable[[float], float | None]:
        """``take_token`` for API ``api`` (0: the model provider; then each of ``fleet.apis`` in order)."""
        ...

    def take_quota(self, now: float) -> float | None:
        """Count the call against the daily quota: None when allowed, else the instant it resets."""
        ...


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

    def available(self, now: float) -> float:
        """The tokens the bucket holds at ``now``, refilled to then; takes nothing and changes nothing."""
        if now <= self.last:
            return self.tokens
        refill = self._refill_amount(self.last, now) if self.windows else self.rate * (now - self.last)
        return min(self.burst, self.tokens + refill)

    def take(self, now: float) -> float | None:
        """Take one token: None on success, else the instant a token is due (the retry-after instant)."""
        last = self.last
        if now > last:
            windows = self.windows
            if windows:
                # No window overlaps (last, now) (the first to end after last starts at or after
                # now): the full rate, as _refill_amount would find after its search.
                i = bisect_right(self._ends, last)
                if i == len(windows) or windows[i][0] >= now:
                    refill = self.rate * (now - last)
                else:
                    refill = self._refill_amount(last, now)
            else:
                refill = self.rate * (now - last)
            self.tokens = min(self.burst, self.tokens + refill)
            self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return None
        return now + self._time_to_token(now)

    def charge_refusal(self, now: float, cost: float) -> float:
        """A refused request still costs ``cost`` tokens (down to -burst); the new seconds until a token is due."""
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


class DailyQuota:
    """A fleet-wide quota of API calls per simulated day (none when ``per_day`` is 0).

    Days are counted separately, in any order: a transport layer's retry may count
    against a day ahead of the step that made it.
    """

    __slots__ = ("_used", "per_day")

    def __init__(self, per_day: int):
        self.per_day = per_day
        self._used: dict[int, int] = {}  # day -> calls counted against the quota

    def spent(self, now: float) -> bool:
        """Whether the day of ``now`` has used its whole quota (a call now would be refused); changes nothing."""
        return bool(self.per_day) and self._used.get(int(now // DAY_S), 0) >= self.per_day

    def take(self, now: float) -> float | None:
        """Count one call at ``now``: None if the quota allows it, else the instant the next day starts."""
        if not self.per_day:
            return None
        day = int(now // DAY_S)
        used = self._used.get(day, 0)
        if used >= self.per_day:
            return (day + 1) * DAY_S
        self._used[day] = used + 1
        return None


class SharedCapacity:
    """What every API call of the fleet shares: the token buckets and the daily quota.

    ``bucket`` is the model provider's; ``buckets`` holds it first, then one per tool API
    of ``fleet.apis`` (a step's ``api`` indexes it).  ``reject_cost`` tokens are taken even
    from a refused request (down to -burst), which lets retry storms persist.
    """

    __slots__ = ("bucket", "buckets", "quota", "reject_cost", "take_quota", "take_token")

    def __init__(
        self, bucket: TokenBucket, quota: DailyQuota, reject_cost: float = 0.0, apis: Sequence[TokenBucket] = ()
    ):
        self.bucket = bucket
        self.buckets = (bucket, *apis)
        self.quota = quota
        self.reject_cost = reject_cost
        # Bound once: both run on every API call.
        self.take_token = self.token_gate(0)
        self.take_quota = quota.take if quota.per_day else unlimited

    def token_gate(self, api: int) -> Callable[[float], float | None]:
        """Take a token of API ``api``'s bucket: None when granted, else the instant one is due."""
        bucket = self.buckets[api]
        if not self.reject_cost:
            return bucket.take
        cost = self.reject_cost

        def take_charged(now: float) -> float | None:
            due = bucket.take(now)
            if due is not None:
                due = now + bucket.charge_refusal(now, cost)
            return due

        return take_charged


def unlimited(now: float) -> None:
    """No daily quota: every call is within it (``SharedCapacity.take_quota`` without one)."""
    return None


def _never(now: float) -> bool:
    """A worker that never crashes is never down."""
    return False


class NodeState:
    """One worker's state that its calls meet: disk, credentials and crash schedule."""

    __slots__ = (
        "crash_spans",
        "crashes",
        "disk_capacity_mb",
        "disk_faults",
        "disk_used_mb",
        "down",
        "index",
        "keys",
    )

    def __init__(
        self,
        index: int,
        disk_full_spans: list[tuple[float, float]],
        key_expiries: list[float],
        credential_lifetime_s: float,
        crash_spans: list[tuple[float, float]] | None = None,
        disk_capacity_mb: float = math.inf,
        api_keys: Sequence[tuple[list[float], float]] = (),
    ):
        self.index = index
        self.disk_faults = Spans(disk_full_spans)  # when a fault fills the disk
        # The model provider's credentials first, then each tool API's (``fleet.apis``), by a step's ``api``.
        self.keys = (
            Credentials(key_expiries, credential_lifetime_s),
            *(Credentials(expiries, lifetime) for expiries, lifetime in api_keys),
        )
        self.crashes = Spans(crash_spans or [])  # crashed from start until restarted
        self.crash_spans = self.crashes.spans  # the list itself: a cheap "can it crash at all"
        # down(now): whether the worker is crashed (not yet restarted) at ``now``.  Asked on
        # every call, so a worker that never crashes answers without a lookup.
        self.down = self.crashes.active if self.crash_spans else _never
        self.disk_capacity_mb = disk_capacity_mb
        self.disk_used_mb = 0.0

    def disk_refuses(self, now: float, mb: float) -> bool:
        """Whether a write of ``mb`` fails: the disk was filled by a fault, or task workspaces fill it."""
        if self.disk_used_mb + mb > self.disk_capacity_mb:
            return True
        faults = self.disk_faults
        return bool(faults.spans) and faults.active(now)  # asked on every write: no lookup without faults

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
        """Whether the worker's credentials for the model provider are invalid at ``now``."""
        return self.keys[0].expired(now)

    def refresh_credentials(self, now: float) -> None:
        """Issue fresh credentials for every API: revocations before ``now`` no longer apply."""
        for key in self.keys:
            key.refresh(now)


class Credentials:
    """A worker's credentials for one API: issued, valid for a lifetime, revoked at scheduled instants."""

    __slots__ = ("_ptr", "expire_s", "issued_s", "lifetime_s", "revocations")

    def __init__(self, revocations: list[float], lifetime_s: float):
        self.revocations = revocations
        """The scheduled revocations, in time order."""
        self.lifetime_s = lifetime_s
        self.issued_s = 0.0
        self._ptr = 0
        self.expire_s = 0.0
        """The instant the current credentials stop working (expired at ``now`` iff ``now >=`` it)."""
        self._update()

    def expired(self, now: float) -> bool:
        """Whether these credentials are invalid at ``now``."""
        return now >= self.expire_s

    def refresh(self, now: float) -> None:
        """Issue fresh credentials: revocations before ``now`` no longer apply."""
        self.issued_s = now
        revocations = self.revocations
        ptr = self._ptr
        while ptr < len(revocations) and revocations[ptr] <= now:
            ptr += 1
        self._ptr = ptr
        self._update()

    def _update(self) -> None:
        # Checked on every API call, so kept as one instant rather than recomputed:
        # expired at ``now`` iff now >= issued + lifetime or now >= the next revocation.
        expire = self.issued_s + self.lifetime_s
        if self._ptr < len(self.revocations):
            expire = min(expire, self.revocations[self._ptr])
        self.expire_s = expire
