"""Bare-SimPy skeletons of the fleet, the yardsticks for the harness's speed.

Three event patterns over the same tasks (same arrival process, templates and workers),
with no faults, formats, policies or ledger: what is left is SimPy's own cost of the
events and the least Python that drives them.

* ``per_call``: one SimPy process per task; per tool call one request of the worker's
  slot ``Resource``, one timeout and one release (about 3.6 events per call).  The
  yardstick of the earlier 0.5x target.
* ``per_step``: the same, but a fan-out step's calls share one request, timeout and
  release.
* ``fleetchaos``: the harness's own pattern, like for like (about 1.25 events per call in
  the default scenario, as the harness): a process per task started by a source that
  waits for each arrival; per step one timeout for its calls; a tool slot taken with no
  event when it is free and nothing else is due at that instant, and a wait event (and a
  release event that hands the slot over) only when every slot of the worker is busy, as
  ``fleetchaos.sim.fleet.SlotPool`` does.  The harness's ratio against this one is what its
  own per-call Python costs.

:func:`events_of` counts the events an ``Environment`` scheduled, so each figure can be
printed with its events per call.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

import simpy

from fleetchaos.sim.config import WorldSpec, lognormal_params

PATTERNS = ("per_call", "per_step", "fleetchaos")


@dataclass(frozen=True, slots=True)
class SkeletonTask:
    """One task of the skeleton: when it arrives, where it runs, and its steps."""

    arrival_s: float
    worker: int
    steps: tuple[tuple[int, float, float], ...]
    """(fan_out, mu, sigma) of each step's log-normal duration."""


@dataclass(frozen=True, slots=True)
class SkeletonRun:
    """What a skeleton run did: tool calls made and SimPy events scheduled."""

    calls: int
    events: int


def skeleton_tasks(spec: WorldSpec, seed: int) -> list[SkeletonTask]:
    """The scenario's tasks (same arrival process and templates), dispatched round-robin."""
    from fleetchaos.sim.workload import arrivals

    compiled = []
    for tpl in spec.workload.templates:
        steps = []
        for s in tpl.steps:
            steps.append((s.fan_out, *lognormal_params(s.duration.mean_s, s.duration.cv)))
        compiled.append(tuple(steps))
    n = spec.fleet.workers
    return [
        SkeletonTask(t.arrival_s, t.id % n, compiled[t.template])
        for t in arrivals(spec.workload, seed, spec.duration_s, spec.fleet.orchestrators, spec.fleet.workers)
    ]


def events_of(env: simpy.Environment) -> int:
    """How many events ``env`` has scheduled so far (SimPy numbers each one as it is scheduled)."""
    return next(env._eid)  # type: ignore[attr-defined]  # SimPy's event counter


class _Slots:
    """A worker's tool slots in the harness's event pattern (``SlotPool``, reduced to its events)."""

    __slots__ = ("capacity", "count", "env", "waiting")

    def __init__(self, env: simpy.Environment, capacity: int):
        self.env = env
        self.capacity = capacity
        self.count = 0
        self.waiting: deque[simpy.Event] = deque()

    def acquire(self) -> simpy.Event | None:
        if not self.waiting and self.count < self.capacity:
            self.count += 1
            if self.env.peek() > self.env.now:
                return None
            granted = self.env.event()
            granted.succeed()
            return granted
        event = self.env.event()
        self.waiting.append(event)
        return event

    def release(self) -> None:
        self.count -= 1
        if self.waiting:
            released = self.env.event()
            released.callbacks.append(self._grant)
            released.succeed()

    def _grant(self, _event: simpy.Event) -> None:
        if self.waiting and self.count < self.capacity:
            self.count += 1
            self.waiting.popleft().succeed()


def run_skeleton(spec: WorldSpec, tasks: list[SkeletonTask], seed: int, *, pattern: str = "per_step") -> SkeletonRun:
    """Simulate ``tasks`` with bare SimPy in the given event pattern (see :data:`PATTERNS`)."""
    env = simpy.Environment()
    rng = random.Random(seed)
    lognormal = rng.lognormvariate
    calls = 0

    def per_step(t: SkeletonTask):
        nonlocal calls
        res = resources[t.worker]
        for fan_out, mu, sigma in t.steps:
            req = res.request()
            yield req
            yield env.timeout(lognormal(mu, sigma))
            res.release(req)
            calls += fan_out

    def per_call(t: SkeletonTask):
        nonlocal calls
        res = resources[t.worker]
        for fan_out, mu, sigma in t.steps:
            for _ in range(fan_out):
                req = res.request()
                yield req
                yield env.timeout(lognormal(mu, sigma))
                res.release(req)
                calls += 1

    def like_fleetchaos(t: SkeletonTask):
        nonlocal calls
        slots = pools[t.worker]
        for fan_out, mu, sigma in t.steps:
            wait = slots.acquire()
            if wait is not None:
                yield wait
            longest = max(lognormal(mu, sigma) for _ in range(fan_out))  # the step waits for its slowest call
            yield env.timeout(longest)
            slots.release()
            calls += fan_out

    if pattern == "fleetchaos":
        pools = [_Slots(env, spec.fleet.tool_slots) for _ in range(spec.fleet.workers)]
        body = like_fleetchaos
    elif pattern in ("per_call", "per_step"):
        resources = [simpy.Resource(env, capacity=spec.fleet.tool_slots) for _ in range(spec.fleet.workers)]
        body = per_call if pattern == "per_call" else per_step
    else:
        raise ValueError(f"unknown pattern {pattern!r}: one of {', '.join(PATTERNS)}")

    def source():
        for t in tasks:
            if t.arrival_s > env.now:
                yield env.timeout(t.arrival_s - env.now)
            env.process(body(t))

    env.process(source())
    env.run(until=spec.duration_s * 2)
    return SkeletonRun(calls, events_of(env))
