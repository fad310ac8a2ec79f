"""Runs: one world per (scenario, policy, error format, seed), and comparisons of arms."""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from itertools import product

from simulated_fleet.formats import get_format
from simulated_fleet.world import World

from .metrics import METRICS, compute
from .policies import get_policy
from .results import ArmResult, CompareResult, RunResult, rounded
from .scenario import Scenario
from .stats import DEFAULT_CONFIDENCE, mean_ci

BUILTIN_POLICIES = ("blind-retry", "backoff", "structured")
BUILTIN_FORMATS = ("generic", "structured")


def replay_command(scenario_ref: str, policy: str, errors: str, seed: int) -> str:
    """The command line that reproduces one run exactly."""
    return f"fleetchaos run --scenario {scenario_ref} --policy {policy} --errors {errors} --seed {seed}"


def run_one(
    scenario: Scenario,
    policy: str,
    errors: str,
    seed: int,
    *,
    scenario_ref: str | None = None,
    keep_tasks: bool = False,
) -> RunResult:
    """Simulate one arm on one seed and judge every task."""
    world = World(scenario, get_policy(policy), get_format(errors), seed)
    output = world.run()
    metrics, breakdowns, outcomes = compute(output.records, scenario.fleet)
    return RunResult(
        scenario=scenario.name,
        policy=policy,
        errors=errors,
        seed=seed,
        metrics={k: rounded(v) for k, v in metrics.items()},
        breakdowns=breakdowns,
        fault_schedule=output.plan.describe(),
        replay=replay_command(scenario_ref or scenario.name, policy, errors, seed),
        tasks=[_task_row(o) for o in outcomes] if keep_tasks else [],
    )


def _task_row(outcome) -> dict:
    row = asdict(outcome)
    for key in ("arrival_s", "end_s", "time_to_recovery_s"):
        row[key] = rounded(row[key])
    return row


def _run_job(job: tuple) -> RunResult:
    scenario, policy, errors, seed, ref = job
    return run_one(scenario, policy, errors, seed, scenario_ref=ref)


def _executor(jobs: int) -> Executor | None:
    return None if jobs <= 1 else ProcessPoolExecutor(max_workers=jobs)


def default_jobs() -> int:
    """Worker processes used when the user does not say: one per core."""
    return max(1, os.cpu_count() or 1)


def versions() -> dict[str, str]:
    """Versions of fleetchaos and the libraries that shape its results."""
    out = {}
    for name in ("fleetchaos", "simpy", "pydantic"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    return out


def aggregate(policy: str, errors: str, runs: list[RunResult], confidence: float) -> ArmResult:
    """Means and confidence intervals across the seeds of one arm."""
    metrics: dict[str, float | None] = {}
    ci: dict[str, list[float | None]] = {}
    per_seed: dict[str, list[float | None]] = {}
    for name in METRICS:
        values = [r.metrics.get(name) for r in runs]
        mean, lo, hi = mean_ci(values, confidence)
        metrics[name] = rounded(mean)
        ci[name] = [rounded(lo), rounded(hi)]
        per_seed[name] = values
    breakdowns: dict[str, Counter] = {}
    for r in runs:
        for key, counts in r.breakdowns.items():
            breakdowns.setdefault(key, Counter()).update(counts)
    return ArmResult(
        policy=policy,
        errors=errors,
        metrics=metrics,
        ci=ci,
        per_seed=per_seed,
        breakdowns={k: dict(sorted(v.items())) for k, v in sorted(breakdowns.items())},
    )


def compare(
    scenario: Scenario,
    seeds: list[int],
    *,
    policies: tuple[str, ...] = BUILTIN_POLICIES,
    formats: tuple[str, ...] = BUILTIN_FORMATS,
    jobs: int = 1,
    confidence: float = DEFAULT_CONFIDENCE,
    scenario_ref: str | None = None,
) -> CompareResult:
    """Every policy on every error format, each on the same seeds (so the same faults)."""
    arms = list(product(policies, formats))
    job_list = [(scenario, p, e, s, scenario_ref) for (p, e) in arms for s in seeds]
    executor = _executor(jobs)
    if executor is None:
        results = [_run_job(j) for j in job_list]
    else:
        with executor:
            chunk = max(1, len(job_list) // (jobs * 4))
            results = list(executor.map(_run_job, job_list, chunksize=chunk))
    by_arm: dict[tuple[str, str], list[RunResult]] = {}
    for r in results:
        by_arm.setdefault((r.policy, r.errors), []).append(r)
    return CompareResult(
        scenario=scenario.name,
        description=scenario.description,
        seeds=list(seeds),
        confidence=confidence,
        arms=[aggregate(p, e, by_arm[(p, e)], confidence) for (p, e) in arms],
        versions=versions(),
    )
