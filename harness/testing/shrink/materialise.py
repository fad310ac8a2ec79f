"""Materialising a run: the fault events its calls met, its state faults and rate-limit cuts, and its arrivals.

A run's faults are specs with probabilities, windows and bursts; shrinking needs them as a
list of explicit events it can drop one by one.  :func:`materialise` reads them from one
run's output (the fault log and the realised fault plan).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.faults import CALL_KINDS

if TYPE_CHECKING:
    from fleetchaos.sim.world import RunOutput  # SimPy: for the type checker only

__all__ = [
    "STATE_KINDS",
    "TINY_S",
    "CallEvent",
    "Event",
    "KeptFault",
    "RateEvent",
    "StateEvent",
    "event_key",
    "frozen_spec",
    "materialise",
]

#: Width of the window a materialised per-call fault is active in (simulated seconds).
TINY_S = 1e-6

STATE_KINDS = ("disk_full", "expired_key", "node_crash")


@dataclass(frozen=True, order=True)
class CallEvent:
    """A per-call fault a call met at ``at_s``: ``kind`` on ``tool`` of ``worker``, from fault(s) ``rules``."""

    at_s: float
    kind: str
    worker: int
    tool: str
    rules: tuple[int, ...]

    def describe(self) -> str:
        """The event in words."""
        return f"worker {self.worker}: {self.kind} on {self.tool} at {self.at_s:.1f} s"


@dataclass(frozen=True, order=True)
class StateEvent:
    """A disk fill, key expiry or crash of ``worker`` at ``at_s`` lasting ``length_s`` (0 for a key expiry)."""

    at_s: float
    kind: str
    worker: int
    length_s: float

    def describe(self) -> str:
        """The event in words."""
        if self.kind == "disk_full":
            return f"worker {self.worker}: disk full at {self.at_s:.1f} s for {self.length_s:.0f} s"
        if self.kind == "node_crash":
            return f"worker {self.worker}: crashes at {self.at_s:.1f} s, down {self.length_s:.0f} s"
        return f"worker {self.worker}: API key expires at {self.at_s:.1f} s"


@dataclass(frozen=True, order=True)
class RateEvent:
    """A rate-limit cut: the fleet's API rate times ``factor`` from ``at_s`` for ``length_s``."""

    at_s: float
    length_s: float
    factor: float

    def describe(self) -> str:
        """The event in words."""
        return f"fleet: API rate x{self.factor:g} from {self.at_s:.1f} s for {self.length_s:.0f} s"


@dataclass(frozen=True, order=True)
class KeptFault:
    """An original fault spec kept whole (a kind that is not materialised, or a fallback)."""

    index: int
    kind: str
    spec: tuple  # the resolved spec as sorted (key, repr) pairs, only for ordering and hashing
    at_s: float = 0.0

    def describe(self) -> str:
        """The event in words."""
        return f"faults[{self.index}]: {self.kind} as in the original scenario"


Event = CallEvent | StateEvent | RateEvent | KeptFault


def _active(rule, at_s: float, worker: int) -> bool:
    """Whether a compiled call rule's windows and bursts are in force at ``at_s`` on ``worker``."""
    if rule.spans is not None and not rule.spans.active(at_s):
        return False
    if rule.worker_spans is not None:
        spans = rule.worker_spans.get(worker)
        if spans is None or not spans.active(at_s):
            return False
    return True


def materialise(scenario: Scenario, output: RunOutput) -> tuple[list, list[tuple[float, str]], dict[int, str]]:
    """The fault events and arrivals of one run's output.

    Returns (events, arrivals, kinds): ``kinds`` maps each original fault index to its kind.
    Per-call fault kinds become :class:`CallEvent` (one per distinct (instant, kind, worker,
    tool) in the fault log, naming the faults that could have produced it), state faults
    :class:`StateEvent`, rate-limit cuts :class:`RateEvent`; every other fault stays a
    :class:`KeptFault`.
    """
    assert output.records is not None and output.fault_log is not None  # a world without a sink keeps both
    plan = output.plan
    templates = {r.id: r.template for r in output.records}
    rules_by_kind: dict[str, list] = {}
    for rule in plan.rules:
        rules_by_kind.setdefault(rule.kind, []).append(rule)
    calls: set[CallEvent] = set()
    for at_s, kind, tool, worker, task_id in output.fault_log:
        if kind not in CALL_KINDS or kind not in rules_by_kind:
            continue  # state faults, rate limits, emergent timeouts: from the plan or kept below
        template = templates.get(task_id, "")
        sources = tuple(
            r.index for r in rules_by_kind[kind] if r.applies(worker, tool, template) and _active(r, at_s, worker)
        )
        if sources:
            calls.add(CallEvent(at_s, kind, worker, tool, sources))
    events: list = sorted(calls)
    state: list = []
    for w, spans in enumerate(plan.disk_full):
        state += [StateEvent(s, "disk_full", w, e - s) for s, e in spans if s < scenario.duration_s]
    for w, times in enumerate(plan.key_expiries):
        state += [StateEvent(t, "expired_key", w, 0.0) for t in times if t < scenario.duration_s]
    for w, spans in enumerate(plan.crashes):
        state += [StateEvent(s, "node_crash", w, e - s) for s, e in spans if s < scenario.duration_s]
    rates = [RateEvent(s, e - s, f) for s, e, f in plan.rate_windows if s < scenario.duration_s]
    kinds = {i: f.kind for i, f in enumerate(scenario.faults)}
    kept = [
        KeptFault(i, k, frozen_spec(plan.resolved[i]))
        for i, k in kinds.items()
        # A fault on a tool API (``api``) is kept whole: the events above are the model provider's.
        if (k not in CALL_KINDS and k not in STATE_KINDS and k != "rate_limit") or plan.resolved[i].get("api")
    ]
    arrivals = sorted((r.arrival_s, r.template) for r in output.records)
    return sorted(events + state + rates + kept, key=event_key), arrivals, kinds


def event_key(e: Event) -> tuple:
    """Events sort by their instant, then by type and value (a total order, stable across runs)."""
    return (e.at_s, type(e).__name__, repr(e))


def frozen_spec(d: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in d.items()))
