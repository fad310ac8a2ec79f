"""Fault realisation: turns the fault specs of a scenario into a fixed plan for one seed.

Scheduled faults (disk fills, key expiries, rate-limit windows) are drawn here, once,
from streams keyed by the seed, the fault's position and the worker, so every arm of a
comparison faces the same schedule.  Per-call faults (blips, timeouts) keep their
probabilities here and are drawn at call time from streams keyed by the call's identity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import _rng
from .config import DiskFull, ExpiredKey, NetworkBlip, RateLimit, Timeout, Window, WorldSpec

S_DISK = _rng.stream_id("fault:disk_full")
S_KEY = _rng.stream_id("fault:expired_key")
S_RATE = _rng.stream_id("fault:rate_limit")


@dataclass(frozen=True, slots=True)
class CallRule:
    """A per-call fault that applies to some workers, optionally only inside windows."""

    probability: float
    windows: tuple[tuple[float, float], ...]
    committed_probability: float = 0.0
    timeout_s: float = 0.0

    def probability_at(self, now: float) -> float:
        """The rule's probability for a call starting at ``now``."""
        if not self.windows:
            return self.probability
        for start, end in self.windows:
            if start <= now < end:
                return self.probability
        return 0.0


@dataclass(slots=True)
class FaultPlan:
    """The realised faults of one run.

    ``blips[w]`` and ``timeouts[w]`` are the per-call rules that apply to worker ``w``;
    ``disk_full[w]`` the merged intervals in which its disk is full; ``key_expiries[w]``
    the moments its credentials are revoked; ``rate_windows`` the intervals in which the
    shared API rate is multiplied by a factor.
    """

    blips: list[tuple[CallRule, ...]] = field(default_factory=list)
    timeouts: list[tuple[CallRule, ...]] = field(default_factory=list)
    disk_full: list[list[tuple[float, float]]] = field(default_factory=list)
    key_expiries: list[list[float]] = field(default_factory=list)
    rate_windows: list[tuple[float, float, float]] = field(default_factory=list)

    def describe(self) -> list[str]:
        """The scheduled faults in words, for reports and replay."""
        lines = []
        for w, spans in enumerate(self.disk_full):
            for start, end in spans:
                lines.append(f"worker {w}: disk full from {start:.0f}s to {end:.0f}s")
        for w, times in enumerate(self.key_expiries):
            for t in times:
                lines.append(f"worker {w}: API key expires at {t:.0f}s")
        for start, end, factor in self.rate_windows:
            lines.append(f"fleet: API rate x{factor:g} from {start:.0f}s to {end:.0f}s")
        return lines


def _windows(windows: list[Window]) -> tuple[tuple[float, float], ...]:
    return tuple(sorted((w.start_s, w.start_s + w.duration_s) for w in windows))


def _poisson_times(seed: int, stream: int, fault_index: int, worker: int, per_day: float, horizon_s: float) -> list[float]:
    """Event times of a Poisson process with ``per_day`` events per simulated day."""
    if per_day <= 0:
        return []
    rate = per_day / 86_400.0
    times: list[float] = []
    t = 0.0
    n = 0
    while True:
        u = _rng.uniform(_rng.key(seed, stream, fault_index, worker, n)) or 2.0**-53
        t += -math.log(u) / rate
        if t >= horizon_s:
            return times
        times.append(t)
        n += 1


def _merge(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def build_plan(spec: WorldSpec, seed: int) -> FaultPlan:
    """Realise every fault of ``spec`` for ``seed``."""
    n = spec.fleet.workers
    horizon = spec.duration_s
    blips: list[list[CallRule]] = [[] for _ in range(n)]
    timeouts: list[list[CallRule]] = [[] for _ in range(n)]
    disk: list[list[tuple[float, float]]] = [[] for _ in range(n)]
    keys: list[list[float]] = [[] for _ in range(n)]
    rate: list[tuple[float, float, float]] = []

    for index, fault in enumerate(spec.faults):
        targets = getattr(fault, "workers", None)
        targets = range(n) if targets is None else targets
        if isinstance(fault, NetworkBlip):
            rule = CallRule(fault.probability, _windows(fault.windows))
            for w in targets:
                blips[w].append(rule)
        elif isinstance(fault, Timeout):
            rule = CallRule(
                fault.probability, _windows(fault.windows), fault.committed_probability, fault.timeout_s
            )
            for w in targets:
                timeouts[w].append(rule)
        elif isinstance(fault, DiskFull):
            for w in targets:
                starts = _poisson_times(seed, S_DISK, index, w, fault.per_worker_per_day, horizon)
                disk[w].extend((t, t + fault.cleanup_after_s) for t in starts)
            for event in fault.events:
                disk[event.worker].append((event.at_s, event.at_s + fault.cleanup_after_s))
        elif isinstance(fault, ExpiredKey):
            for w in targets:
                keys[w].extend(_poisson_times(seed, S_KEY, index, w, fault.per_worker_per_day, horizon))
            for event in fault.events:
                keys[event.worker].append(event.at_s)
        elif isinstance(fault, RateLimit):
            spans = list(_windows(fault.windows))
            count = int(round(fault.per_day * horizon / 86_400.0))
            for i in range(count):
                start = _rng.uniform(_rng.key(seed, S_RATE, index, i)) * max(horizon - fault.window_s, 0.0)
                spans.append((start, start + fault.window_s))
            rate.extend((s, e, fault.capacity_factor) for s, e in spans)

    return FaultPlan(
        blips=[tuple(r) for r in blips],
        timeouts=[tuple(r) for r in timeouts],
        disk_full=[_merge(spans) for spans in disk],
        key_expiries=[sorted(times) for times in keys],
        rate_windows=_disjoint(rate),
    )


def _disjoint(windows: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """Split overlapping rate windows into disjoint ones whose factors multiply."""
    edges = sorted({t for s, e, _ in windows for t in (s, e)})
    out: list[tuple[float, float, float]] = []
    for a, b in zip(edges, edges[1:]):
        factor = 1.0
        for s, e, f in windows:
            if s <= a and b <= e:
                factor *= f
        if factor < 1.0:
            if out and out[-1][1] == a and out[-1][2] == factor:
                out[-1] = (out[-1][0], b, factor)
            else:
                out.append((a, b, factor))
    return out
