"""The state fault kinds' handlers: how each one is scheduled, met by a call or a dispatch, and judged.

A state kind changes the fleet's state (a disk fills, a key is revoked, a worker
crashes, a partition opens, a rate window narrows the token bucket, the day's quota runs
out) and every call or dispatch that meets that state fails while it holds.  Its record
(:mod:`fleetchaos.sim.kinds`) says what it is; its handler here, a
:class:`~fleetchaos.sim.plan.StateKind`, says what the world does with it:

* :meth:`~fleetchaos.sim.plan.StateKind.schedule` realises a fault of the kind into the
  plan for one seed (:func:`fleetchaos.sim.faults.build_plan` loops over the faults);
* :meth:`~fleetchaos.sim.plan.StateKind.gate` is the check a call meets
  (:meth:`fleetchaos.sim.calls.CallModel.decide` loops over the gates of a worker and
  step), :meth:`~fleetchaos.sim.plan.StateKind.dispatch_gate` the check a dispatch meets;
* :meth:`~fleetchaos.sim.plan.StateKind.holds` tells the wasted-retry judge
  (:mod:`fleetchaos.sim.waste`) whether the cause still holds at a retry.

The reporting kinds with a schedule (schema drift, wrong envelopes) and the kinds whose
state the world realises elsewhere (latency spikes in the latency model, overloaded
providers in :mod:`fleetchaos.sim.capacity`, shared branches in the dispatch) have a
handler too, for their schedule.  :data:`STATE_KINDS` lists them in the order
:meth:`~fleetchaos.sim.plan.FaultPlan.describe` lists their schedules.  No SimPy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from functools import partial
from typing import cast

from fleetchaos.sim import _rng
from fleetchaos.sim.config import DAY_S
from fleetchaos.sim.fault_specs import (
    DiskFull,
    ExpiredKey,
    GitPushConflict,
    LatencySpike,
    NetworkPartition,
    NodeCrash,
    NodeEvent,
    Overloaded,
    QuotaExhausted,
    RateLimit,
    SchemaDrift,
    _Fault,
)
from fleetchaos.sim.kinds import UnknownFaultKind
from fleetchaos.sim.plan import (
    ACCESS,
    WORKER,
    DispatchGate,
    FaultPlan,
    Gate,
    LastFailure,
    Partition,
    Placement,
    RetryAt,
    StateKind,
)
from fleetchaos.sim.schedules import (
    Spans,
    SpanTable,
    disjoint_windows,
    expand_windows,
    merge_spans,
    poisson_times,
)
from fleetchaos.sim.state import NodeView, SharedCapacity, SharedView, unlimited
from fleetchaos.sim.state_kinds_mcp import McpServerRestartKind
from fleetchaos.sim.template import Step

S_DISK = _rng.stream_id("fault:disk_full")
S_KEY = _rng.stream_id("fault:expired_key")
S_RATE = _rng.stream_id("fault:rate_limit")
S_CRASH = _rng.stream_id("fault:node_crash")


def _worker_spans(
    at: Placement, stream: int, per_day: float, events: Iterable[NodeEvent], length_s: float
) -> Iterator[tuple[int, tuple[float, float]]]:
    """(worker, span) of ``length_s`` from each start: ``per_day`` Poisson starts per targeted worker, then ``events``."""
    for w in at.targets:
        for t in poisson_times(at.seed, stream, at.position, w, per_day, at.horizon_s):
            yield w, (t, t + length_s)
    for event in events:
        yield event.worker, (event.at_s, event.at_s + length_s)


class DiskFullKind(StateKind):
    """A disk filled by a fault (or by task workspaces): every write on that worker fails while it is full."""

    name = "disk_full"

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """Poisson fills per targeted worker, and explicit events, each lasting ``cleanup_after_s``."""
        fault = cast(DiskFull, fault)
        for w, span in _worker_spans(at, S_DISK, fault.per_worker_per_day, fault.events, fault.cleanup_after_s):
            plan.disk_full[w].append(span)

    def finish(self, plan: FaultPlan) -> None:
        """Overlapping fills of a worker merge into one span."""
        plan.disk_full[:] = [merge_spans(spans) for spans in plan.disk_full]

    def describe(self, plan: FaultPlan) -> list[str]:
        """One line per fill."""
        return [
            f"worker {w}: disk full from {start:.0f}s to {end:.0f}s"
            for w, spans in enumerate(plan.disk_full)
            for start, end in spans
        ]

    def gate(self, plan: FaultPlan, shared: SharedView, node: NodeView, step: Step) -> Gate | None:
        """A step that writes meets a disk that refuses its write (filled by a fault, or by workspaces)."""
        return partial(node.disk_refuses, mb=step.disk_mb) if step.writes_disk else None

    def holds(self, plan: FaultPlan, shared: SharedCapacity, last: LastFailure, retry: RetryAt) -> bool:
        """The retry's worker would still refuse the failed step's write."""
        return retry.node.disk_refuses(retry.now, retry.tpl.steps[last.step].disk_mb)


class ExpiredKeyKind(StateKind):
    """Revoked API credentials (or credentials past their lifetime): every API call on that worker fails until a refresh."""

    name = "expired_key"
    met = ACCESS

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """Poisson revocations per targeted worker, and explicit events."""
        fault = cast(ExpiredKey, fault)
        expiries = plan.key_expiries_of(fault.api)
        for w in at.targets:
            expiries[w].extend(poisson_times(at.seed, S_KEY, at.position, w, fault.per_worker_per_day, at.horizon_s))
        for event in fault.events:
            expiries[event.worker].append(event.at_s)

    def finish(self, plan: FaultPlan) -> None:
        """Each worker's revocations of each API in time order."""
        for per_worker in (plan.key_expiries, *plan.api_key_expiries):
            for times in per_worker:
                times.sort()

    def describe(self, plan: FaultPlan) -> list[str]:
        """One line per revocation."""
        lines = [f"worker {w}: API key expires at {t:.0f}s" for w, times in enumerate(plan.key_expiries) for t in times]
        for api, per_worker in zip(plan.apis, plan.api_key_expiries, strict=True):
            lines += [f"worker {w}: {api} key expires at {t:.0f}s" for w, times in enumerate(per_worker) for t in times]
        return lines

    def gate(self, plan: FaultPlan, shared: SharedView, node: NodeView, step: Step) -> Gate | None:
        """An API call meets its worker's credentials for the step's API (they expire with their lifetime even
        without a fault).

        A refresh never brings the expiry forward, so a worker whose credentials outlast
        the run has no gate.
        """
        if not step.uses_api:
            return None
        key = node.keys[step.api]
        return None if key.expire_s >= plan.ends_s else key.expired

    def holds(self, plan: FaultPlan, shared: SharedCapacity, last: LastFailure, retry: RetryAt) -> bool:
        """The retry's worker still holds expired credentials for the failed step's API."""
        return retry.node.keys[retry.tpl.steps[last.step].api].expired(retry.now)


class NodeCrashKind(StateKind):
    """A crashed worker: calls in flight are lost (the dispatch's part), calls made while it is down fail fast."""

    name = "node_crash"
    met = WORKER

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """Poisson crashes per targeted worker, and explicit events, each down for ``down_s``."""
        fault = cast(NodeCrash, fault)
        for w, span in _worker_spans(at, S_CRASH, fault.per_worker_per_day, fault.events, fault.down_s):
            plan.crashes[w].append(span)

    def finish(self, plan: FaultPlan) -> None:
        """Overlapping crashes of a worker merge into one span."""
        plan.crashes[:] = [merge_spans(spans) for spans in plan.crashes]

    def describe(self, plan: FaultPlan) -> list[str]:
        """One line per crash."""
        return [
            f"worker {w}: crashed at {start:.0f}s, back at {end:.0f}s"
            for w, spans in enumerate(plan.crashes)
            for start, end in spans
        ]

    def gate(self, plan: FaultPlan, shared: SharedView, node: NodeView, step: Step) -> Gate | None:
        """A call on a worker that is down fails fast (a worker that never crashes has no gate)."""
        return node.down if node.crash_spans else None

    def holds(self, plan: FaultPlan, shared: SharedCapacity, last: LastFailure, retry: RetryAt) -> bool:
        """The retry's worker is still down."""
        return retry.node.down(retry.now)


class RateLimitKind(StateKind):
    """The fleet's API token bucket: empty under load, refilled slower inside a rate-limit fault's windows."""

    name = "rate_limit"

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """The fault's windows and ``per_day`` windows placed at random, each refilling at ``capacity_factor``."""
        fault = cast(RateLimit, fault)
        horizon = at.horizon_s
        spans = list(expand_windows(fault.windows, horizon))
        for i in range(round(fault.per_day * horizon / DAY_S)):
            start = _rng.uniform(_rng.key(at.seed, S_RATE, at.position, i)) * max(horizon - fault.window_s, 0.0)
            spans.append((start, start + fault.window_s))
        plan.rate_windows_of(fault.api).extend((s, e, fault.capacity_factor) for s, e in spans)

    def finish(self, plan: FaultPlan) -> None:
        """Overlapping windows of each API split into disjoint ones whose factors multiply."""
        for windows in (plan.rate_windows, *plan.api_rate_windows):
            windows[:] = disjoint_windows(windows)

    def describe(self, plan: FaultPlan) -> list[str]:
        """One line per window."""
        lines = [f"fleet: API rate x{f:g} from {start:.0f}s to {end:.0f}s" for start, end, f in plan.rate_windows]
        for api, windows in zip(plan.apis, plan.api_rate_windows, strict=True):
            lines += [f"fleet: {api} rate x{f:g} from {start:.0f}s to {end:.0f}s" for start, end, f in windows]
        return lines

    def gate(self, plan: FaultPlan, shared: SharedView, node: NodeView, step: Step) -> Gate | None:
        """An API call takes a token of its API's bucket; without one it is refused until one is due (the
        retry-after hint)."""
        if not step.uses_api:
            return None
        return shared.take_token if step.api == 0 else shared.token_gate(step.api)

    def holds(self, plan: FaultPlan, shared: SharedCapacity, last: LastFailure, retry: RetryAt) -> bool:
        """The failed step's API bucket still holds less than one token (a call now would be refused), whatever
        the hint said."""
        return shared.buckets[retry.tpl.steps[last.step].api].available(retry.now) < 1.0


def partition_at(plan: FaultPlan, orchestrator: int, worker: int, now: float) -> Partition | None:
    """The partition cutting ``orchestrator`` off from ``worker`` at ``now``, if any."""
    for p in plan.partitions:
        if orchestrator in p.orchestrators and (p.workers is None or worker in p.workers) and p.spans.active(now):
            return p
    return None


class NetworkPartitionKind(StateKind):
    """Orchestrators cut off from workers in windows: a dispatch across the cut fails after its connect timeout."""

    name = "network_partition"

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """One partition over the fault's windows."""
        fault = cast(NetworkPartition, fault)
        workers = fault.workers
        plan.partitions.append(
            Partition(
                orchestrators=frozenset(fault.orchestrators),
                workers=None if workers is None else frozenset(workers),
                spans=Spans(expand_windows(fault.windows, at.horizon_s)),
                connect_timeout_s=fault.connect_timeout_s,
            )
        )

    def describe(self, plan: FaultPlan) -> list[str]:
        """One line per window of each partition."""
        lines = []
        for p in plan.partitions:
            group = "all workers" if p.workers is None else f"workers {sorted(p.workers)}"
            for start, end in p.spans.spans:
                lines.append(
                    f"orchestrators {sorted(p.orchestrators)} cut off from {group} from {start:.0f}s to {end:.0f}s"
                )
        return lines

    def dispatch_gate(self, plan: FaultPlan) -> DispatchGate | None:
        """A dispatch across a partition waits its connect timeout, then fails."""
        if not plan.partitions:
            return None

        def cut(orchestrator: int, worker: int, now: float) -> float | None:
            p = partition_at(plan, orchestrator, worker, now)
            return None if p is None else p.connect_timeout_s

        return cut

    def holds(self, plan: FaultPlan, shared: SharedCapacity, last: LastFailure, retry: RetryAt) -> bool:
        """The retry's orchestrator is still cut off from its worker."""
        return partition_at(plan, retry.orchestrator, retry.node.index, retry.now) is not None


class LatencySpikeKind(StateKind):
    """Slower network on some workers in windows; the call model's latency reads it (a slow call times out)."""

    name = "latency_spike"

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """The windows on each targeted worker, with the fault's factor and added seconds."""
        fault = cast(LatencySpike, fault)
        for w in at.targets:
            plan.latency[w].extend(
                (s, e, fault.factor, fault.add_s) for s, e in expand_windows(fault.windows, at.horizon_s)
            )

    def finish(self, plan: FaultPlan) -> None:
        """Each worker's spikes as a table of the spike in force."""
        plan.latency[:] = [SpanTable(entries) for entries in plan.latency]


class SchemaDriftKind(StateKind):
    """Workers on another envelope schema version in windows (a reporting kind: the dispatch's report reads it)."""

    name = "schema_drift"
    real_code = False  # it changes only how a simulated envelope reads

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """The windows (or the whole run) on each targeted worker, with the version and the fields it drops."""
        fault = cast(SchemaDrift, fault)
        spans = expand_windows(fault.windows, at.horizon_s) if fault.windows else [(0.0, math.inf)]
        for w in at.targets:
            plan.drift[w].extend((s, e, fault.version, tuple(fault.missing_fields)) for s, e in spans)

    def finish(self, plan: FaultPlan) -> None:
        """Each worker's drift as a table of the version in force."""
        plan.drift[:] = [SpanTable(entries) for entries in plan.drift]


class WrongEnvelopeKind(StateKind):
    """Envelopes a worker gets wrong: realised from the scenario by :class:`fleetchaos.sim.envelope_errors.EnvelopeErrors`."""

    name = "wrong_envelope"

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """Nothing in the plan: the envelope errors draw per failed call from the call's key."""


class GitPushConflictKind(StateKind):
    """Pushes sharing branches: a push that lost the race is rejected (the dispatch resolves each step's pushes)."""

    name = "git_push_conflict"
    setting = True
    real_code = False  # shared branches are the simulator's

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """The number of shared branches and the tools that push."""
        fault = cast(GitPushConflict, fault)
        plan.git_branches = fault.branches
        plan.git_tools = frozenset(fault.tools)

    def describe(self, plan: FaultPlan) -> list[str]:
        """The branches, when pushes share some."""
        return [f"fleet: pushes share {plan.git_branches} branches"] if plan.git_branches else []


class QuotaExhaustedKind(StateKind):
    """A daily quota of API calls: once spent, every API call fails until the next day starts (the retry-after hint)."""

    name = "quota_exhausted"
    setting = True

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """The calls a day allows."""
        plan.quota_per_day = cast(QuotaExhausted, fault).calls_per_day

    def describe(self, plan: FaultPlan) -> list[str]:
        """The quota, when there is one."""
        return [f"fleet: daily API quota of {plan.quota_per_day} calls"] if plan.quota_per_day else []

    def gate(self, plan: FaultPlan, shared: SharedView, node: NodeView, step: Step) -> Gate | None:
        """An API call counts against the day's quota; once it is spent, refused until the day ends."""
        return shared.take_quota if step.uses_api and shared.take_quota is not unlimited else None

    def holds(self, plan: FaultPlan, shared: SharedCapacity, last: LastFailure, retry: RetryAt) -> bool:
        """The day's quota is still used up (the retry comes before the next day), whatever the hint said."""
        return shared.quota.spent(retry.now)


class OverloadedKind(StateKind):
    """A provider slowed in windows; the provider (:mod:`fleetchaos.sim.capacity`) refuses calls when full."""

    name = "overloaded"

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """The windows in which the named provider serves at ``capacity_factor`` of its speed."""
        fault = cast(Overloaded, fault)
        plan.slowdowns.setdefault(fault.provider, []).extend(
            (s, e, fault.capacity_factor) for s, e in expand_windows(fault.windows, at.horizon_s)
        )

    def finish(self, plan: FaultPlan) -> None:
        """Each provider's windows disjoint, their factors multiplied where they overlap."""
        plan.slowdowns = {name: disjoint_windows(windows) for name, windows in plan.slowdowns.items()}


#: Every state kind's handler by kind name, in the order the plan describes their schedules.
STATE_KINDS: dict[str, StateKind] = {
    k.name: k
    for k in (
        DiskFullKind(),
        ExpiredKeyKind(),
        NodeCrashKind(),
        RateLimitKind(),
        NetworkPartitionKind(),
        LatencySpikeKind(),
        SchemaDriftKind(),
        WrongEnvelopeKind(),
        GitPushConflictKind(),
        QuotaExhaustedKind(),
        OverloadedKind(),
        McpServerRestartKind(),
    )
}


class NoStateHandler(UnknownFaultKind):
    """A scheduled fault whose kind has no handler in :data:`STATE_KINDS`."""

    def __str__(self) -> str:
        return (
            f"fault kind {self.args[0]!r} is not met per call and has no handler (known: {', '.join(STATE_KINDS)}); "
            "a state kind needs a StateKind in fleetchaos.sim.state_kinds.STATE_KINDS"
        )


def state_kind(name: str) -> StateKind:
    """The handler of a state kind; a kind without one raises :class:`NoStateHandler` (never a default)."""
    try:
        return STATE_KINDS[name]
    except KeyError:
        raise NoStateHandler(name) from None


def sim_only() -> tuple[str, ...]:
    """The state kinds a real-code run refuses (they need the simulator's worker topology), in registry order."""
    return tuple(name for name, k in STATE_KINDS.items() if not k.real_code)


__all__ = ["STATE_KINDS", "NoStateHandler", "partition_at", "sim_only", "state_kind"]
