"""A bare-SimPy skeleton of the harness's event pattern, the yardstick for its speed.

One SimPy process per task; per step execution one request of the worker's slot
``Resource``, one timeout and one release (a fan-out step's items share one slot and one
timeout, exactly as in ``simulated_fleet.world``).  No faults, formats, policies or
ledger: what is left is SimPy's own cost of the same events.  Tasks, templates and
workers come from the same scenario, so both models see the same load.

``per_call=True`` is the issue's literal reading instead: one request, timeout and
release per tool call, so a fan-out step of 5 items costs 5 of each.  It charges the
skeleton more events per call than the harness does, so its ratio flatters the harness;
the per-step skeleton is the strict yardstick.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import simpy

from simulated_fleet.config import WorldSpec


@dataclass(frozen=True, slots=True)
class SkeletonTask:
    """One task of the skeleton: when it arrives, where it runs, and its steps."""

    arrival_s: float
    worker: int
    steps: tuple[tuple[int, float, float], ...]
    """(fan_out, mu, sigma) of each step's log-normal duration."""


def skeleton_tasks(spec: WorldSpec, seed: int) -> list[SkeletonTask]:
    """The scenario's tasks (same arrival process and templates), dispatched round-robin."""
    from simulated_fleet.workload import arrivals

    compiled = []
    for tpl in spec.workload.templates:
        steps = []
        for s in tpl.steps:
            sigma2 = math.log1p(s.duration.cv**2)
            steps.append((s.fan_out, math.log(s.duration.mean_s) - sigma2 / 2.0, math.sqrt(sigma2)))
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
