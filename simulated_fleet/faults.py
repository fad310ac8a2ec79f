"""Fault realisation: turns the fault specs of a scenario into a fixed plan for one seed.

Scheduled faults (disk fills, key revocations, crashes, rate-limit windows, partitions,
swarm parameters) are drawn once, by their kind's handler
(:mod:`fleetchaos.sim.state_kinds`), from streams keyed by the seed, the fault's
position and the worker, so every arm of a comparison faces the same schedule.  Per-call
faults are compiled here into :class:`~fleetchaos.sim.plan.CallRule`s and drawn at call
time from streams keyed by the call's identity (see :mod:`fleetchaos.sim.calls`).
"""

from __future__ import annotations

import math
from typing import TypeVar

from fleetchaos.sim import _rng
from fleetchaos.sim.config import WorldSpec
from fleetchaos.sim.fault_specs import _CallFault, _Fault
from fleetchaos.sim.kinds import fault_kind, kinds_in
from fleetchaos.sim.plan import CALL_STAGES, CallRule, FaultPlan, Placement
from fleetchaos.sim.schedules import Spans, burst_spans, expand_windows
from fleetchaos.sim.state_kinds import STATE_KINDS, state_kind

S_SWARM = _rng.stream_id("fault:swarm")

_FaultT = TypeVar("_FaultT", bound=_Fault)

#: Every per-call fault kind (the kinds met at :data:`~fleetchaos.sim.plan.CALL_STAGES`), as the catalogue stands at import.
CALL_KINDS = kinds_in(*CALL_STAGES)


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


def call_rule(fault: _CallFault, seed: int, index: int, targets: range | list[int], horizon: float) -> CallRule:
    """A per-call fault compiled for the run: its windows and bursts as spans, its targets as sets."""
    spans = Spans(expand_windows(fault.windows, horizon)) if fault.windows else None
    worker_spans = None
    if fault.burst is not None:
        if fault.burst.scope == "fleet":
            burst = Spans(burst_spans(fault.burst, seed, index, -1, horizon))
            worker_spans = {w: burst for w in targets}
        else:
            worker_spans = {w: Spans(burst_spans(fault.burst, seed, index, w, horizon)) for w in targets}
    workers = fault.workers
    return CallRule(
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


def build_plan(spec: WorldSpec, seed: int, ends_s: float = math.inf) -> FaultPlan:
    """Realise every fault of a WorldSpec for ``seed``: per-call faults as rules, the others by their kind's handler.

    ``ends_s`` is the instant from which no call of the run starts (the simulator's
    horizon and drain), when it is known.
    """
    n = spec.fleet.workers
    horizon = spec.duration_s
    plan = FaultPlan.empty(n, apis=[a.name for a in spec.fleet.apis])
    plan.api_of = {tool: i + 1 for i, api in enumerate(spec.fleet.apis) for tool in api.tools}
    plan.ends_s = ends_s
    plan.kinds = tuple(STATE_KINDS.values())
    for index, raw in enumerate(spec.faults):
        fault = resolve_swarm(raw, seed, index)
        plan.resolved.append(fault.model_dump(exclude_defaults=True))
        workers = getattr(fault, "workers", None)
        targets = range(n) if workers is None else workers
        if isinstance(fault, _CallFault):
            plan.rules.append(call_rule(fault, seed, index, targets, horizon))
        else:
            state_kind(fault.kind).schedule(fault, plan, Placement(seed, index, targets, horizon))
    for kind in plan.kinds:
        kind.finish(plan)
    return plan


__all__ = ["CALL_KINDS", "build_plan", "call_rule", "resolve_swarm"]
