"""Bare-SimPy skeletons of the fleet's event pattern, the yardsticks for the harness's speed.

``per_call=True`` is the issue's skeleton, the one the 0.5x target is set against: one
SimPy process per task; per tool call one request of the worker's slot ``Resource``, one
timeout and one release.  The default, per step, is leaner: a fan-out step's items share
one request, timeout and release, as a dispatch's calls share one slot and one timeout in
the harness.  No faults, formats, policies or ledger: what is left is SimPy's own cost of
the events.  Tasks, templates and workers come from the same scenario, so all models see
the same load.

The harness uses fewer SimPy events than either skeleton: a free tool slot is taken with
no event (``fleetchaos.sim.fleet.SlotPool``), so a step costs one timeout, plus a wait
event only when every slot of the worker is busy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import simpy

from fleetchaos.sim.config import WorldSpec, lognormal_params


@dataclass(frozen=True, slots=True)
class SkeletonTask:
    """One task of the skeleton: when it arrives, where it runs, and its steps."""

    arrival_s: float
    worker: int
    steps: tuple[tuple[int, float, float], ...]
    """(fan_out, mu, sigma) of each step's log-normal duration."""


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


def run_skeleton(spec: WorldSpec, tasks: list[SkeletonTask], seed: int, *, per_call: bool = False) -> int:
    """Simulate ``tasks`` with bare SimPy; returns the number of tool calls made."""
    env = simpy.Environment()
    slots = [simpy.Resource(env, capacity=spec.fleet.tool_slots) for _ in range(spec.fleet.workers)]
    rng = random.Random(seed)
    calls = 0

    def task(t: SkeletonTask):
        nonlocal calls
        res = slots[t.worker]
        for fan_out, mu, sigma in t.steps:
            req = res.request()
            yield req
            yield env.timeout(rng.lognormvariate(mu, sigma))
            res.release(req)
            calls += fan_out

    def task_per_call(t: SkeletonTask):
        nonlocal calls
        res = slots[t.worker]
        for fan_out, mu, sigma in t.steps:
            for _ in range(fan_out):
                req = res.request()
                yield req
                yield env.timeout(rng.lognormvariate(mu, sigma))
                res.release(req)
                calls += 1

    def source():
        for t in tasks:
            if t.arrival_s > env.now:
                yield env.timeout(t.arrival_s - env.now)
            env.process(task_per_call(t) if per_call else task(t))

    env.process(source())
    env.run(until=spec.duration_s * 2)
    return calls
