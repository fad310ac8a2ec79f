"""Fault realisation: turns the fault specs of a scenario into a fixed plan for one seed.

Scheduled faults (disk fills, key revocations, crashes, rate-limit windows, bursts,
swarm parameters) are drawn here, once, from streams keyed by the seed, the fault's
position and the worker, so every arm of a comparison faces the same schedule.  Per-call
faults keep a compiled rule here and are drawn at call time from streams keyed by the
call's identity (see :mod:`fleetchaos.sim.calls`).

Span lookups use a forward-only pointer: simulated time never goes back, so finding
whether a moment is inside a schedule is amortised O(1).
"""

from __future__ import annotations

import heapq
import itertools
import math
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TypeVar

from fleetchaos.sim import _rng
from fleetchaos.sim.config import DAY_S, WorldSpec
from fleetchaos.sim.fault_specs import (
    Burst,
    DiskFull,
    ExpiredKey,
    GitPushConflict,
    LatencySpike,
    NetworkPartition,
    NodeCrash,
    Overloaded,
    QuotaExhausted,
    RateLimit,
    SchemaDrift,
    Window,
    _CallFault,
    _Fault,
)
from fleetchaos.sim.kinds import BATCH, MASKING, PERSISTENT, TRANSIENT, FaultKind, fault_kind, kinds_in

S_DISK = _rng.stream_id("fault:disk_full")
S_KEY = _rng.stream_id("fault:expired_key")
S_RATE = _rng.stream_id("fault:rate_limit")
S_CRASH = _rng.stream_id("fault:node_crash")
S_BURST = _rng.stream_id("fault:burst")
S_SWARM = _rng.stream_id("fault:swarm")

_FaultT = TypeVar("_FaultT", bound=_Fault)

#: The stages of a tool call whose faults are compiled into :class:`CallRule`s.
CALL_STAGES = (PERSISTENT, TRANSIENT, BATCH, MASKING)
#: Every per-call fault kind (the kinds met at :data:`CALL_STAGES`), as the catalogue stands at import.
CALL_KINDS = kinds_in(*CALL_STAGES)


class Spans:
    """Sorted, disjoint [start, end) intervals, looked up by binary search.

    Queries may come in any order: a transport layer's retry meets the fleet as it will
    stand a few seconds ahead, and the step then goes on at its own instant.
    """

    __slots__ = ("_ends", "spans")

    def __init__(self, spans: list[tuple[float, float]]):
        self.spans = _merge(spans)
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


@dataclass(slots=True)
class CallRule:
    """A compiled per-call fault.  ``spans`` None means always active."""

    kind: str
    info: FaultKind
    """The kind's record (its stage, fail-fast time, persistent scope)."""
    index: int
    spec: _CallFault
    spans: Spans | None
    worker_spans: dict[int, Spans] | None
    workers: frozenset[int] | None
    tools: frozenset[str] | None
    templates: frozenset[str] | None
    stream: int
    constant: float | None = None
    """The probability when it never changes (no windows, bursts or ramp), else None."""
    items: frozenset[int] | None = None
    """Only these items of a fan-out step (a model with an ``items`` field), else every item."""

    def __post_init__(self) -> None:
        if self.spans is None and self.worker_spans is None and self.spec.ramp is None:
            self.constant = self.spec.probability
        items = getattr(self.spec, "items", None)
        self.items = None if items is None else frozenset(items)

    def applies(self, worker: int, tool: str, template: str) -> bool:
        """Whether the rule targets this worker, tool and template at all."""
        return (
            (self.workers is None or worker in self.workers)
            and (self.tools is None or tool in self.tools)
            and (self.templates is None or template in self.templates)
        )

    def probability_at(self, now: float, worker: int) -> float:
        """The rule's probability for a call starting at ``now`` on ``worker``."""
        if self.constant is not None:
            return self.constant
        if self.spans is not None and not self.spans.active(now):
            return 0.0
        if self.worker_spans is not None:
            spans = self.worker_spans.get(worker)
            if spans is None or not spans.active(now):
                return 0.0
        ramp = self.spec.ramp
        if ramp is None:
            return self.spec.probability
        if now <= ramp.start_s:
            return ramp.from_probability
        if now >= ramp.end_s:
            return ramp.to_probability
        frac = (now - ramp.start_s) / (ramp.end_s - ramp.start_s)
        return ramp.from_probability + frac * (ramp.to_probability - ramp.from_probability)


@dataclass(slots=True)
class Partition:
    """Orchestrators cut off from workers during spans."""

    orchestrators: frozenset[int]
    workers: frozenset[int] | None
    spans: Spans
    connect_timeout_s: float


@dataclass(slots=True)
class FaultPlan:
    """The realised faults of one run (mutable span pointers: one plan per world)."""

    rules: list[CallRule] = field(default_factory=list)
    disk_full: list[list[tuple[float, float]]] = field(default_factory=list)
    key_expiries: list[list[float]] = field(default_factory=list)
    crashes: list[list[tuple[float, float]]] = field(default_factory=list)
    rate_windows: list[tuple[float, float, float]] = field(default_factory=list)
    partitions: list[Partition] = field(default_factory=list)
    latency: list = field(default_factory=list)
    """Per worker: (start, end, factor, add) spikes while building, then a :class:`SpanTable`."""
    drift: list = field(default_factory=list)
    """Per worker: (start, end, version, missing fields) while building, then a :class:`SpanTable`."""
    git_branches: int = 0
    git_tools: frozenset[str] = frozenset()
    quota_per_day: int = 0
    slowdowns: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    """Per provider name: (start, end, capacity factor) windows of an ``overloaded`` fault."""
    resolved: list[dict] = field(default_factory=list)
    """Each fault's parameters after swarm draws, for reports and replay."""

    def describe(self) -> list[str]:
        """The scheduled faults in words, for reports and replay."""
        lines = []
        for w, spans in enumerate(self.disk_full):
            for start, end in spans:
                lines.append(f"worker {w}: disk full from {start:.0f}s to {end:.0f}s")
        for w, times in enumerate(self.key_expiries):
            for t in times:
                lines.append(f"worker {w}: API key expires at {t:.0f}s")
        for w, spans in enumerate(self.crashes):
            for start, end in spans:
                lines.append(f"worker {w}: crashed at {start:.0f}s, back at {end:.0f}s")
        for start, end, factor in self.rate_windows:
            lines.append(f"fleet: API rate x{factor:g} from {start:.0f}s to {end:.0f}s")
        for p in self.partitions:
            group = "all workers" if p.workers is None else f"workers {sorted(p.workers)}"
            for start, end in p.spans.spans:
                lines.append(
                    f"orchestrators {sorted(p.orchestrators)} cut off from {group} from {start:.0f}s to {end:.0f}s"
                )
        for rule in self.rules:
            if rule.spans is not None:
                for start, end in rule.spans.spans[:50]:
                    lines.append(f"{rule.kind} (faults[{rule.index}]) active from {start:g}s to {end:g}s")
        if self.git_branches:
            lines.append(f"fleet: pushes share {self.git_branches} branches")
        if self.quota_per_day:
            lines.append(f"fleet: daily API quota of {self.quota_per_day} calls")
        return lines


def _merge(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
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
    return _merge(spans)


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


def resolve_swarm(fault: _FaultT, seed: int, index: int) -> _FaultT:
    """The fault with its ``swarm`` parameters drawn for this seed."""
    if not fault.swarm:
        return fault
    updates: dict[str, float] = {}
    for name, (low, high) in sorted(fault.swarm.items()):
        u = _rng.uniform(_rng.key(seed, S_SWARM, index, _rng.stream_id(name)))
        value = low + u * (high - low)
        if type(fault).model_fields[name].annotation is int:
            value = round(value)
        updates[name] = value
    return type(fault).model_validate({**fault.model_dump(), **updates, "swarm": None})


def build_plan(spec: WorldSpec, seed: int) -> FaultPlan:
    """Realise every fault of a WorldSpec for ``seed``."""
    n = spec.fleet.workers
    horizon = spec.duration_s
    plan = FaultPlan(
        disk_full=[[] for _ in range(n)],
        key_expiries=[[] for _ in range(n)],
        crashes=[[] for _ in range(n)],
        latency=[[] for _ in range(n)],
        drift=[[] for _ in range(n)],
    )
    rate: list[tuple[float, float, float]] = []
    for index, raw in enumerate(spec.faults):
        fault = resolve_swarm(raw, seed, index)
        plan.resolved.append(fault.model_dump(exclude_defaults=True))
        workers = getattr(fault, "workers", None)
        targets = range(n) if workers is None else workers
        if isinstance(fault, _CallFault):
            spans = Spans(expand_windows(fault.windows, horizon)) if fault.windows else None
            worker_spans = None
            if fault.burst is not None:
                if fault.burst.scope == "fleet":
                    burst = Spans(burst_spans(fault.burst, seed, index, -1, horizon))
                    worker_spans = {w: burst for w in targets}
                else:
                    worker_spans = {w: Spans(burst_spans(fault.burst, seed, index, w, horizon)) for w in targets}
            plan.rules.append(
                CallRule(
                    kind=fault.kind,
                    info=fault_kind(fault.kind),
                    index=index,
                    spec=fault,
                    spans=spans,
                    worker_spans=worker_spans,
                    workers=None if workers is None else frozenset(workers),
                    tools=None if fault.tools is None else frozenset(fault.tools),
                    templates=None if fault.templates is None else frozenset(fault.templates),
                    stream=_rng.stream_id(f"call:{fault.kind}:{index}"),
                )
            )
        elif isinstance(fault, DiskFull):
            for w in targets:
                starts = poisson_times(seed, S_DISK, index, w, fault.per_worker_per_day, horizon)
                plan.disk_full[w].extend((t, t + fault.cleanup_after_s) for t in starts)
            for event in fault.events:
                plan.disk_full[event.worker].append((event.at_s, event.at_s + fault.cleanup_after_s))
        elif isinstance(fault, ExpiredKey):
            for w in targets:
                plan.key_expiries[w].extend(poisson_times(seed, S_KEY, index, w, fault.per_worker_per_day, horizon))
            for event in fault.events:
                plan.key_expiries[event.worker].append(event.at_s)
        elif isinstance(fault, NodeCrash):
            for w in targets:
                starts = poisson_times(seed, S_CRASH, index, w, fault.per_worker_per_day, horizon)
                plan.crashes[w].extend((t, t + fault.down_s) for t in starts)
            for event in fault.events:
                plan.crashes[event.worker].append((event.at_s, event.at_s + fault.down_s))
        elif isinstance(fault, RateLimit):
            rate_spans = list(expand_windows(fault.windows, horizon))
            count = round(fault.per_day * horizon / DAY_S)
            for i in range(count):
                start = _rng.uniform(_rng.key(seed, S_RATE, index, i)) * max(horizon - fault.window_s, 0.0)
                rate_spans.append((start, start + fault.window_s))
            rate.extend((s, e, fault.capacity_factor) for s, e in rate_spans)
        elif isinstance(fault, NetworkPartition):
            plan.partitions.append(
                Partition(
                    orchestrators=frozenset(fault.orchestrators),
                    workers=None if workers is None else frozenset(workers),
                    spans=Spans(expand_windows(fault.windows, horizon)),
                    connect_timeout_s=fault.connect_timeout_s,
                )
            )
        elif isinstance(fault, LatencySpike):
            for w in targets:
                plan.latency[w].extend(
                    (s, e, fault.factor, fault.add_s) for s, e in expand_windows(fault.windows, horizon)
                )
        elif isinstance(fault, SchemaDrift):
            drift_spans = expand_windows(fault.windows, horizon) if fault.windows else [(0.0, math.inf)]
            for w in targets:
                plan.drift[w].extend((s, e, fault.version, tuple(fault.missing_fields)) for s, e in drift_spans)
        elif isinstance(fault, GitPushConflict):
            plan.git_branches = fault.branches
            plan.git_tools = frozenset(fault.tools)
        elif isinstance(fault, QuotaExhausted):
            plan.quota_per_day = fault.calls_per_day
        elif isinstance(fault, Overloaded):
            plan.slowdowns.setdefault(fault.provider, []).extend(
                (s, e, fault.capacity_factor) for s, e in expand_windows(fault.windows, horizon)
            )
    for w in range(n):
        plan.disk_full[w] = _merge(plan.disk_full[w])
        plan.crashes[w] = _merge(plan.crashes[w])
        plan.key_expiries[w].sort()
        plan.latency[w] = SpanTable(plan.latency[w])
        plan.drift[w] = SpanTable(plan.drift[w])
    plan.rate_windows = _disjoint(rate)
    plan.slowdowns = {name: _disjoint(windows) for name, windows in plan.slowdowns.items()}
    return plan


def _disjoint(windows: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
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
