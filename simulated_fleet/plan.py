"""The fault plan of one run: per-call rules and the realised schedules of the state kinds.

:func:`fleetchaos.sim.faults.build_plan` realises a scenario's faults for one seed into
a :class:`FaultPlan`: each per-call fault as a :class:`CallRule` (drawn at call time,
:mod:`fleetchaos.sim.calls`), each scheduled fault by its kind's handler
(:mod:`fleetchaos.sim.state_kinds`) into the plan's schedules.  The world and a
real-code runtime read the same plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from fleetchaos.sim.fault_specs import _CallFault, _Fault
from fleetchaos.sim.kinds import BATCH, MASKING, PERSISTENT, TRANSIENT, FaultKind
from fleetchaos.sim.schedules import Spans
from fleetchaos.sim.state import NodeState, NodeView, SharedCapacity, SharedView
from fleetchaos.sim.template import Step, Template

#: The stages of a tool call whose faults are compiled into :class:`CallRule`s.
CALL_STAGES = (PERSISTENT, TRANSIENT, BATCH, MASKING)


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
    fail_s: float = 0.0
    """Seconds a call it fails takes on top of the round trip (its record's ``fail_fast_s``; 0 for one that hangs)."""

    def __post_init__(self) -> None:
        if self.spans is None and self.worker_spans is None and self.spec.ramp is None:
            self.constant = self.spec.probability
        self.fail_s = self.info.fail_fast_s or 0.0
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
    apis: tuple[str, ...] = ()
    """The tool APIs of ``fleet.apis``, in order: API ``i + 1`` (API 0 is the model provider)."""
    api_of: dict[str, int] = field(default_factory=dict)
    """Each tool API's tools -> its API number (a tool not named calls API 0, the model provider)."""
    api_key_expiries: list[list[list[float]]] = field(default_factory=list)
    """Per tool API, per worker: its revocations (``key_expiries`` are the model provider's)."""
    api_rate_windows: list[list[tuple[float, float, float]]] = field(default_factory=list)
    """Per tool API: its rate cuts (``rate_windows`` are the model provider's)."""
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
    ends_s: float = math.inf
    """No call of the run starts at or after this instant (the simulator's horizon and drain; inf: no end known)."""

    def key_expiries_of(self, api: str | None) -> list[list[float]]:
        """Per worker, the revocations of API ``api``'s credentials (None: the model provider's)."""
        return self.key_expiries if api is None else self.api_key_expiries[self.apis.index(api)]

    def rate_windows_of(self, api: str | None) -> list[tuple[float, float, float]]:
        """The rate cuts of API ``api``'s token bucket (None: the model provider's)."""
        return self.rate_windows if api is None else self.api_rate_windows[self.apis.index(api)]

    def api_name(self, api: int) -> str:
        """How reports name API number ``api``."""
        return "model provider" if api == 0 else f"API {self.apis[api - 1]}"

    state: dict[str, Any] = field(default_factory=dict)
    """What a state kind without a field of its own realised, by kind name (its handler's to read)."""
    kinds: tuple[StateKind, ...] = ()
    """The handlers of the state kinds that built this plan, in the registry's order (``build_plan`` sets it)."""

    @classmethod
    def empty(cls, workers: int, apis: list[str] | tuple[str, ...] = ()) -> FaultPlan:
        """A plan with nothing scheduled yet on a fleet of ``workers`` calling the tool APIs ``apis``."""
        return cls(
            apis=tuple(apis),
            api_key_expiries=[[[] for _ in range(workers)] for _ in apis],
            api_rate_windows=[[] for _ in apis],
            disk_full=[[] for _ in range(workers)],
            key_expiries=[[] for _ in range(workers)],
            crashes=[[] for _ in range(workers)],
            latency=[[] for _ in range(workers)],
            drift=[[] for _ in range(workers)],
        )

    def describe(self) -> list[str]:
        """The scheduled faults in words, for reports and replay: the state kinds' schedules, then the
        windows of the per-call rules, then the fleet-wide settings."""
        lines = [line for kind in self.kinds if not kind.setting for line in kind.describe(self)]
        for rule in self.rules:
            if rule.spans is not None:
                for start, end in rule.spans.spans[:50]:
                    lines.append(f"{rule.kind} (faults[{rule.index}]) active from {start:g}s to {end:g}s")
        lines += [line for kind in self.kinds if kind.setting for line in kind.describe(self)]
        return lines


# -- the state kinds' interface ------------------------------------------------------------

#: When one call meets a state kind's :meth:`StateKind.gate` (:meth:`fleetchaos.sim.calls.CallModel.decide`):
#: the worker itself first, then the call's access, then (after the persistent per-call
#: rules) what the call consumes; kinds met at the same point in the registry's order.
WORKER = 0
ACCESS = 1
RESOURCE = 2

#: A state kind's check of a call on one worker at ``now``: ``gate(now)`` is None or False when the
#: call goes through; else the instant the cause lifts (the retry-after instant, for a kind whose
#: record has ``retry_after``), or True when no instant is known (it lifts when something is done).
Gate = Callable[[float], "float | bool | None"]

#: A state kind's check of one dispatch: ``gate(orchestrator, worker, now)`` is None when the
#: dispatch reaches the worker, else the seconds it waits before it fails.
DispatchGate = Callable[[int, int, float], "float | None"]


class Placement(NamedTuple):
    """Where one scheduled fault is realised."""

    seed: int
    position: int
    """The fault's index in the scenario's ``faults`` (its draws are keyed by it)."""
    targets: Sequence[int]
    """The workers it targets (every worker unless the fault names some)."""
    horizon_s: float


class LastFailure(NamedTuple):
    """What the wasted-retry judge needs of a task's last failed dispatch."""

    kind: str
    retry_at: float | None
    """The instant the refusal named as its end (a retry-after hint), None without one."""
    step: int
    items: tuple[int, ...]
    """The items of ``step`` that failed with ``kind`` (``(0,)`` when none is named)."""


class RetryAt(NamedTuple):
    """A retry at the instant it is dispatched: where it goes and what the task has done so far."""

    node: NodeState
    task_id: int
    orchestrator: int
    tpl: Template
    sources: dict[tuple[int, int], int]
    """The source each (step, item) is on (alternatives taken)."""
    executions: list[int]
    """Executions of each step so far: the retry's next execution of step ``s`` is ``executions[s] + 1``."""
    now: float
    turn: object = None
    """The model-side turn the retry is (a :class:`fleetchaos.sim.model_turns.TurnPlan`), None for a plain retry."""
    context_tokens: int = 0
    """The task's context when the retry is dispatched: what its first turn reads."""


class StateKind:
    """What the world does with one state fault kind; the kind's record (:mod:`fleetchaos.sim.kinds`) says what it is.

    One instance per kind, registered under the record's name in
    :data:`fleetchaos.sim.state_kinds.STATE_KINDS`.  The plan builder, the call decision
    and the wasted-retry judge loop over the registered kinds and call these hooks, so a
    new state kind is its record plus one handler (and its model in
    :mod:`fleetchaos.sim.fault_specs`).  Every hook but :meth:`schedule` has a default that
    does nothing; none imports SimPy, so a real-code runtime meets the kinds the same way.
    """

    name: ClassVar[str] = ""
    """The kind's record name."""
    met: ClassVar[int] = RESOURCE
    """When a call meets :meth:`gate`: :data:`WORKER`, :data:`ACCESS` or :data:`RESOURCE`."""
    setting: ClassVar[bool] = False
    """:meth:`describe` gives a fleet-wide setting, listed after the per-call rules' windows."""
    real_code: ClassVar[bool] = True
    """A real-code run can meet it; False: it needs the simulator's worker topology, and a real run refuses it."""

    def schedule(self, fault: _Fault, plan: FaultPlan, at: Placement) -> None:
        """Realise one fault of this kind into ``plan``, drawing from streams keyed by the seed and ``at.position``."""
        raise NotImplementedError(f"{type(self).__name__}.schedule")

    def finish(self, plan: FaultPlan) -> None:
        """Once every fault is scheduled: merge, sort or index what this kind put in ``plan``."""

    def describe(self, plan: FaultPlan) -> list[str]:
        """What this kind scheduled, in words, one line each."""
        return []

    def gate(self, plan: FaultPlan, shared: SharedView, node: NodeView, step: Step) -> Gate | None:
        """The check a call of ``step`` on ``node`` meets (see :data:`Gate`), or None if this run never refuses one.

        Asked once per worker and step for a run, so a gate is bound to the worker's state
        and can leave out what can never happen there (a worker that never crashes, a step
        that writes nothing): the per-call cost is the gate itself.
        """
        return None

    def dispatch_gate(self, plan: FaultPlan) -> DispatchGate | None:
        """The check every dispatch meets before it reaches its worker (see :data:`DispatchGate`), or None."""
        return None

    def holds(self, plan: FaultPlan, shared: SharedCapacity, last: LastFailure, retry: RetryAt) -> bool:
        """Whether the cause of ``last`` (a failure of this kind) still holds for ``retry``, read from the truth.

        The wasted-retry judge asks it for a kind whose record's ``waste.cause`` is
        ``"state"``; it reads the state at ``retry.now`` (never a retry-after hint) and
        changes nothing.
        """
        raise NotImplementedError(f"{type(self).__name__}.holds")
