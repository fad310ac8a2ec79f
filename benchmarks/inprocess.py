"""Figures measured inside one Python process: throughput against the skeletons, a fleet-day, scaling, a sweep.

Each returns plain numbers; ``benchmarks/run.py`` prints them next to their targets.
CPU time (``time.process_time``) where one process is measured, so other load on the
machine moves the figures less than it moves wall time.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Tool calls per task of the default scenario under the structured policy (measured: 5.6 to
#: 5.8 over seeds 1 to 3, retries included), to size scaled runs.
CALLS_PER_TASK = 5.7
#: The arms of a default comparison.
ARMS = tuple((p, e) for p in ("blind-retry", "backoff", "structured") for e in ("generic", "structured"))


def scaled(workers: int, calls: int) -> dict:
    """The default scenario with ``workers`` workers and a workload of about ``calls`` tool calls.

    What the fleet shares grows with the workload: the API rate and burst, and each
    provider's servers and calls in flight, are the default's times the ratio of tasks per
    day, so the load on the shared capacity (and so the mix of faults, rate limits and
    refusals per call) stays the default scenario's at every size.  The load per worker is
    what ``calls / workers`` makes it (the default: about 700 calls per worker a day).
    ``scaled(10, 6_840)`` is the default scenario itself.
    """
    import yaml

    import fleetchaos.catalogue as catalogue

    doc = yaml.safe_load(catalogue.path("default").read_text())
    tasks = round(calls / CALLS_PER_TASK)
    factor = tasks / doc["workload"]["tasks_per_day"]
    doc["name"] = f"scaled-{workers + doc['fleet']['orchestrators']}n-{calls}"
    doc["fleet"]["workers"] = workers
    doc["fleet"]["api_rate_per_s"] = doc["fleet"]["api_rate_per_s"] * factor
    doc["fleet"]["api_burst"] = max(1, round(doc["fleet"]["api_burst"] * factor))
    for provider in doc["fleet"].get("providers", []):
        for field in ("servers", "max_in_flight"):
            if provider.get(field) is not None:
                provider[field] = max(1, round(provider[field] * factor))
    doc["workload"]["tasks_per_day"] = tasks
    return doc


def scenario_of(doc: dict):
    """A validated scenario from a document."""
    from fleetchaos.scenario.load import Scenario

    return Scenario.model_validate(doc)


# -- throughput against the skeletons ----------------------------------------------------


def ratio(seeds: int, workers: int, calls: int) -> dict:
    """Tool calls per CPU second of full runs against each bare-SimPy skeleton, same scenario and seeds.

    The harness is timed as its world's run (``World.run``, SimPy included) and as
    ``run_one`` (plus the oracle and metrics); its events per call are counted as the
    skeletons' are, so the like-for-like pattern can be seen to be like for like.
    """
    from skeleton import PATTERNS, events_of, run_skeleton, skeleton_tasks

    from fleetchaos.policies.registry import get_policy
    from fleetchaos.runs.runner import run_one
    from fleetchaos.sim.formats import get_format
    from fleetchaos.sim.world import World

    spec = scenario_of(scaled(workers, calls))
    run_one(spec, "structured", "structured", 0)  # warm caches (imports, name pools)
    cpu = dict.fromkeys(PATTERNS, 0.0)
    made = dict.fromkeys(PATTERNS, 0)
    events = dict.fromkeys(PATTERNS, 0)
    h_cpu = h_calls = h_events = 0.0
    for seed in range(1, seeds + 1):
        tasks = skeleton_tasks(spec, seed)  # task generation is not charged to the skeletons
        for pattern in PATTERNS:
            t0 = time.process_time()
            done = run_skeleton(spec, tasks, seed, pattern=pattern)
            cpu[pattern] += time.process_time() - t0
            made[pattern] += done.calls
            events[pattern] += done.events
        t0 = time.process_time()
        result = run_one(spec, "structured", "structured", seed)
        h_cpu += time.process_time() - t0
        h_calls += int(result.metrics["tool_calls"] or 0)
        world = World(spec, get_policy("structured"), get_format("structured"), seed, sink=lambda _record: None)
        world.run()
        h_events += events_of(world.env)
    harness_rate = h_calls / h_cpu
    out = {
        "nodes": workers + 2,
        "seeds": seeds,
        "harness_calls": int(h_calls),
        "harness_calls_per_s": round(harness_rate),
        "harness_us_per_call": round(1e6 / harness_rate, 2),
        "harness_events_per_call": round(h_events / h_calls, 3),
    }
    for pattern in PATTERNS:
        rate = made[pattern] / cpu[pattern]
        out[f"{pattern}_skeleton_calls_per_s"] = round(rate)
        out[f"{pattern}_skeleton_us_per_call"] = round(1e6 / rate, 2)
        out[f"{pattern}_skeleton_events_per_call"] = round(events[pattern] / made[pattern], 3)
        out[f"ratio_{pattern}_skeleton"] = round(harness_rate / rate, 3)
    return out


# -- a fleet-day in process ------------------------------------------------------------------


def fleet_day(scenarios: list[str], seeds: int = 1) -> dict:
    """Wall and CPU milliseconds of ``run_one`` per catalogue scenario, over the six default arms."""
    from fleetchaos.runs.runner import run_one
    from fleetchaos.scenario.load import load_scenario

    per_scenario = {}
    run_one(load_scenario("default"), "structured", "structured", 0)  # warm imports and caches
    for name in scenarios:
        spec = load_scenario(name)
        walls, cpus = [], []
        for policy, errors in ARMS:
            for seed in range(1, seeds + 1):
                w0, c0 = time.perf_counter(), time.process_time()
                run_one(spec, policy, errors, seed)
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
        per_scenario[name] = {"wall_ms": statistics.median(walls) * 1e3, "cpu_ms": statistics.median(cpus) * 1e3}
    return {
        "runs_per_scenario": len(ARMS) * seeds,
        "scenarios": {k: {m: round(v, 1) for m, v in d.items()} for k, d in per_scenario.items()},
        "median_wall_ms": round(statistics.median(d["wall_ms"] for d in per_scenario.values()), 1),
        "median_cpu_ms": round(statistics.median(d["cpu_ms"] for d in per_scenario.values()), 1),
    }


# -- scaling -----------------------------------------------------------------------------------


def peak_rss() -> int:
    """This process's peak resident set size in bytes.

    Linux's ``VmHWM`` (``/proc/self/status``) where it exists: ``ru_maxrss`` carries the
    peak of the process this one was forked from across ``exec``, so a child of a large
    benchmark process would report the parent's size.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def scaling_child(workers: int, calls: int) -> None:
    """Runs in a fresh process: one full run, then its figures as JSON on stdout."""
    from fleetchaos.runs.runner import run_one

    spec = scenario_of(scaled(workers, calls))
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_one(spec, "structured", "structured", 1)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = peak_rss()
    figures = {
        "calls": int(result.metrics["tool_calls"] or 0),
        "tasks": int(result.metrics["tasks"] or 0),
        "seconds": seconds,
        "cpu_s": cpu,
        "peak_rss": rss,
    }
    print(json.dumps(figures))


def scaling(points: list[tuple[int, int]], script: Path) -> list[dict]:
    """One fresh process per (workers, target calls), pinned to one core where ``taskset`` exists."""
    from shutil import which

    rows = []
    for workers, calls in points:
        cmd = [sys.executable, str(script), "--child-scaling", f"{workers},{calls}"]
        pin = ["taskset", "-c", "0"] if which("taskset") else []
        out = subprocess.run(pin + cmd, capture_output=True, text=True, check=True, cwd=ROOT).stdout
        row = json.loads(out.strip().splitlines()[-1])
        row.update(nodes=workers + 2, us_per_call=round(row["cpu_s"] / max(1, row["calls"]) * 1e6, 2))
        rows.append(row)
    return rows


# -- a sweep, serial against two processes -----------------------------------------------------


def sweep_speedup(runs: int) -> dict:
    """A sweep of ``runs`` runs of the default scenario, serial and on 2 local processes, in this process."""
    from fleetchaos.runs.executors import LocalProcessExecutor, SerialExecutor
    from fleetchaos.runs.sweep import SweepSpec, plan_sweep, run_sweep

    seeds = max(1, runs // 20)
    spec = SweepSpec(
        policies=["blind-retry", "structured"],
        seeds=seeds,
        params={"faults[0].probability": [0.0, 0.05, 0.1, 0.2, 0.5]},
    )
    plan = plan_sweep(spec)
    t0, c0 = time.perf_counter(), time.process_time()
    serial = run_sweep(plan, executor=SerialExecutor())
    t_serial, cpu_serial = time.perf_counter() - t0, time.process_time() - c0
    before = os.times()
    t0 = time.perf_counter()
    with LocalProcessExecutor(2) as pool:  # pool start-up is charged to the parallel run
        parallel = run_sweep(plan, executor=pool)
    t_parallel = time.perf_counter() - t0
    after = os.times()
    cpu_parallel = sum(after[i] - before[i] for i in range(4))  # this process and its workers
    assert serial.model_dump_json() == parallel.model_dump_json(), "parallel results differ from serial"
    return {
        "runs": len(plan.jobs),
        "serial_s": round(t_serial, 2),
        "parallel_s": round(t_parallel, 2),
        "speedup": round(t_serial / t_parallel, 2),
        "serial_cpu_s": round(cpu_serial, 2),
        "parallel_cpu_s": round(cpu_parallel, 2),
    }
