"""Runs: one world per (scenario, policy, error format, seed), and comparisons of arms."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from itertools import product
from typing import Any

from fleetchaos.errors import RunTimeLimitError, UserError
from fleetchaos.names import DEFAULT_ERRORS, DEFAULT_POLICIES
from fleetchaos.policies.registry import get_policy
from fleetchaos.results.common_set import apply_common_sets
from fleetchaos.results.metrics import RunAccumulator
from fleetchaos.results.models import CompareResult, RunResult, rounded
from fleetchaos.results.stats import DEFAULT_CONFIDENCE
from fleetchaos.results.task_rows import csv_lines, row_dict, row_values
from fleetchaos.runs.arm_stats import aggregate, paired_comparisons, with_task_sets
from fleetchaos.runs.cache import Need, active_cache, using_cache
from fleetchaos.runs.cache_key import job_keys, run_key, scenario_digest
from fleetchaos.runs.cluster import as_executor, ship_modules
from fleetchaos.runs.executors import MAX_CHUNK, map_chunks, open_executor, runs_this_code, tapered, workers_of
from fleetchaos.runs.limits import check_kept, default_time_limit, time_limit_text, wall_clock_limit
from fleetchaos.runs.replay import replay_command
from fleetchaos.runs.traces import TracedJob, traced_timelines
from fleetchaos.runs.variant import RunJob, Variant
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.capacity import provider_breakdowns
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.interrupts import (
    PASS_THROUGH,
    ProcessExitRefused,
    WallClockExceeded,
    exception_parts,
    policy_text,
    process_exits_refused,
    user_signals,
)
from fleetchaos.sim.workload import is_closed_loop
from fleetchaos.sim.world import World


def run_one(
    scenario: Scenario,
    policy: str,
    errors: str,
    seed: int,
    *,
    scenario_ref: str | None = None,
    keep_tasks: bool = False,
    task_csv: bool = False,
    params: Sequence[tuple[str, Any]] = (),
    trace: bool = False,
    trace_label: str = "traced run",
    on_trace: Callable[[Any], object] | None = None,
    time_limit_s: float | None = None,
) -> RunResult:
    """Simulate one arm on one seed and judge every task, or serve the same result from the run cache.

    Inside :func:`fleetchaos.runs.cache.using_cache` (every command, unless ``--no-cache``)
    a run made before by the same code is served from the cache, byte for byte what it
    would be made again (a run whose world output ``on_trace`` wants is always made).
    See :func:`simulate` for the arguments.
    """
    cache = active_cache() if on_trace is None else None
    key = need = None
    if cache is not None:
        key = run_key(
            scenario_digest(scenario),
            policy,
            errors,
            seed,
            scenario_ref=scenario_ref,
            params=params,
            trace_label=trace_label if trace else None,
        )
        need = Need(tasks=keep_tasks, csv=task_csv)
        hit = cache.get(key, need) if key is not None else None
        if hit is not None:
            return hit
    result = simulate(
        scenario,
        policy,
        errors,
        seed,
        scenario_ref=scenario_ref,
        keep_tasks=keep_tasks,
        task_csv=task_csv,
        params=params,
        trace=trace,
        trace_label=trace_label,
        on_trace=on_trace,
        time_limit_s=time_limit_s,
    )
    if cache is not None and key is not None and need is not None:
        cache.put(key, result, need)
    return result


def simulate(
    scenario: Scenario,
    policy: str,
    errors: str,
    seed: int,
    *,
    scenario_ref: str | None = None,
    keep_tasks: bool = False,
    task_csv: bool = False,
    params: Sequence[tuple[str, Any]] = (),
    trace: bool = False,
    trace_label: str = "traced run",
    on_trace: Callable[[Any], object] | None = None,
    time_limit_s: float | None = None,
) -> RunResult:
    """Simulate one arm on one seed and judge every task.

    ``params`` only labels the result (and its replay command): they must already be
    applied to ``scenario`` (see :func:`fleetchaos.scenario.params.apply_params`).  With ``trace`` the
    run records its events and the result carries a :class:`~fleetchaos.results.models.Timeline`
    (labelled ``trace_label``) for the timeline charts; ``on_trace``, if given, then receives
    the world's :class:`~fleetchaos.sim.world.RunOutput` (to export its traces).  A run still going after
    ``time_limit_s`` of wall-clock time (default :func:`fleetchaos.runs.limits.default_time_limit`)
    raises :class:`~fleetchaos.errors.RunTimeLimitError`.  With ``keep_tasks`` the result carries
    a row per task (``RunResult.tasks``); with ``task_csv``, the same rows as tasks.csv lines
    (``RunResult.tasks_csv``, :func:`fleetchaos.results.task_rows.csv_lines`).
    """
    closed_loop = is_closed_loop(scenario.workload)
    acc = RunAccumulator(
        scenario.fleet,
        duration_s=scenario.duration_s,
        goodput_bin_s=getattr(scenario, "goodput_bin_s", None),
        closed_loop=closed_loop,
    )
    # Per-task rows, when wanted, are built as each task ends (its record is dropped) and
    # put back in the world's creation order, (arrival_s, id), once the run is over.
    # A row is a dict for RunResult.tasks, else a list (what tasks.csv lines are written from).
    rows: list[tuple[float, int, Any]] | None = [] if keep_tasks or task_csv else None
    journal = None  # the world's journal, once it is built: what a traced run keeps

    def sink(record) -> None:
        if rows is None:
            acc.fold(record)  # the verdict only: no per-task row is built
        else:
            row = row_values(record, acc.fold(record))
            rows.append((record.arrival_s, record.id, row_dict(row) if keep_tasks else row))
        if journal is not None:  # a run that keeps what it did stays within its memory (runs.limits.check_kept)
            events = len(journal.trace or ()) + len(journal.fault_log or ())
            check_kept(len(rows or ()), events, f"policy {policy} on {errors}, seed {seed}")

    replay = replay_command(scenario_ref or scenario.name, policy, errors, seed, params, gated=bool(scenario.expect))
    limit = default_time_limit(scenario) if time_limit_s is None else time_limit_s
    try:
        with wall_clock_limit(limit), user_signals(sigterm=False), process_exits_refused():
            policy_obj = get_policy(policy)
            world = World(scenario, policy_obj, get_format(errors), seed, trace=trace, sink=sink)
            if rows is not None or trace:
                journal = world.journal
            if acc.goodput_bin_s is not None:  # each provider's load over time, in goodput's bins
                for provider in world.calls.providers:
                    provider.watch(acc.goodput_bin_s, scenario.duration_s + world.drain_s)
            with _gc_paused():
                output = world.run()
                acc.add_faults(output.fault_tally)
                metrics, breakdowns = acc.metrics(), acc.breakdowns()
    except ProcessExitRefused as exc:
        raise UserError(
            f"policy {policy} on {errors}, seed {seed}: the policy called {exc}, which would end fleetchaos itself "
            "(with no result and no message); a policy fails its task by raising an exception: remove the call; "
            f"replay it with: {replay}"
        ) from None
    except WallClockExceeded:
        raise RunTimeLimitError(
            f"policy {policy} on {errors}, seed {seed}: still running after {time_limit_text(limit)} of wall-clock "
            f"time, so it was stopped (a policy that blocks in real time: time.sleep, network, input()?); "
            f"replay it with: {replay}; or allow longer with --time-limit SECONDS"
        ) from None
    if world.calls.providers:  # what each provider did, and its load over time (only where one is declared)
        breakdowns.update(provider_breakdowns(world.calls.providers, late=scenario.fleet.late_reply_s is not None))
        breakdowns = dict(sorted(breakdowns.items()))
    ordered = [row for _, _, row in sorted(rows, key=lambda x: (x[0], x[1]))] if rows is not None else []
    timeline = None
    if trace:
        from fleetchaos.runs.traces import timeline_of

        timeline = timeline_of(
            output,
            label=trace_label,
            policy=policy,
            errors=errors,
            seed=seed,
            replay=replay,
            workers=scenario.fleet.workers,
        )
        if on_trace is not None:
            on_trace(output)
    result = RunResult(
        scenario=scenario.name,
        policy=policy,
        errors=errors,
        seed=seed,
        metrics={k: rounded(v) for k, v in metrics.items()},
        breakdowns=breakdowns,
        fault_schedule=output.plan.describe() + (world.envelope_errors.describe() if world.envelope_errors else []),
        replay=replay,
        params=dict(params),
        samples=acc.samples(),
        timeline=timeline,
        recipe=policy_recipe(policy_obj),
        misread_probability=rounded(min(1.0, world.reading.misread_p)),
        policy_name=str(getattr(policy_obj, "name", "") or policy),
        task_sets={} if closed_loop else acc.task_ids.encoded(),
    )
    # Assigned, not validated: validation would copy every row (pydantic builds new dicts),
    # doubling the peak memory of a run with per-task rows.  The rows are plain dicts of
    # numbers, strings and None built by row_values, so they serialise the same either way.
    if keep_tasks:
        result.tasks = ordered
    if task_csv:
        lines = csv_lines(policy, errors, seed, [list(r.values()) for r in ordered] if keep_tasks else ordered)
        result.tasks_csv = (lines, len(ordered))
    return result


def policy_recipe(policy: Any) -> str:
    """What a result records of the policy it ran: its repr (parameters, or a composed recipe).

    A class without a repr of its own would print a memory address, which differs from run
    to run; it is recorded as ``module:QualName()`` instead, so results stay byte-identical.
    """
    try:
        cls = type(policy)
        if cls.__repr__ is object.__repr__:
            return f"{cls.__module__}:{cls.__qualname__}()"
        return policy_text(repr(policy), limit=2000)  # sanitised: a repr may show what the policy saw
    except PASS_THROUGH:
        raise
    except BaseException as exc:  # a user's __repr__ may raise anything: the run must not
        name, _ = exception_parts(exc)
        return f"{policy_text(type(policy).__qualname__)} (repr failed: {name})"


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the length of one run.

    A run allocates hundreds of thousands of small, acyclic objects (records, events,
    reports) that reference counting frees; the cyclic collector only rescans them, at a
    cost that grows with the run (17% of a 300k-call run, see docs/performance.md).
    The previous state is restored afterwards; the collector's next pass frees any cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# Runs in one process never overlap: a threaded executor (a Dask worker with several
# threads) would otherwise interleave runs that share per-process caches.
_RUN_LOCK = threading.Lock()


def _run_chunk(chunk: tuple[Variant, tuple[tuple[int, str, str, int], ...]]) -> list[tuple[int, RunResult]]:
    """Run one chunk (runs of one variant) in a worker; results tagged with their job index."""
    variant, items = chunk
    out = []
    with _RUN_LOCK, using_cache(None):  # the planning process looks runs up and stores them
        for index, policy, errors, seed in items:
            result = run_one(
                variant.scenario,
                variant.policy_spec(policy),
                errors,
                seed,
                scenario_ref=variant.ref,
                params=variant.scenario_params,
                keep_tasks=variant.keep_tasks,
                task_csv=variant.task_csv,
                time_limit_s=variant.time_limit_s,
            )
            out.append((index, result))
    return out


def _traced_run(job: TracedJob, on_trace: Callable[[Any], object] | None = None) -> RunResult:
    """One traced run of a report's timelines (:func:`fleetchaos.runs.traces.traced_timelines`), maybe in a worker."""
    scenario, policy, errors, seed, scenario_ref, params, label = job
    with _RUN_LOCK:  # the cache is used only where the process has one active (a traced run with on_trace: never)
        return run_one(
            scenario,
            policy,
            errors,
            seed,
            scenario_ref=scenario_ref,
            params=params,
            trace=True,
            trace_label=label,
            on_trace=on_trace,
        )


def run_jobs(
    variants: Sequence[Variant],
    jobs: Sequence[RunJob],
    *,
    executor: Executor,
    on_result: Callable[[int, RunResult], None] | None = None,
    max_chunk: int | None = None,
) -> list[RunResult]:
    """Run every job on ``executor``; results in job order, whatever order they finish in.

    Jobs are batched into chunks of one variant each, so a worker receives a scenario once
    per chunk; chunks shrink towards the end (:func:`~fleetchaos.runs.executors.tapered`)
    so the workers finish together.  ``on_result(index, result)`` is called in this thread as each run finishes
    (to store it or move a progress bar).  On Ctrl-C or an error, pending chunks are
    cancelled and the exception propagates; runs already handed to ``on_result`` stay handed.
    """
    executor = as_executor(executor)  # a distributed.Client from the Python API: sized from its live cluster
    limit = max_chunk or getattr(executor, "max_chunk", None) or MAX_CHUNK
    results: list[RunResult | None] = [None] * len(jobs)
    cache = active_cache()
    keys = job_keys(variants, jobs) if cache is not None else [None] * len(jobs)
    needs = [Need(tasks=variants[j.variant].keep_tasks, csv=variants[j.variant].task_csv) for j in jobs]
    if cache is not None:
        hits = cache.get_many({k: needs[i] for i, k in enumerate(keys) if k is not None})
        for index, key in enumerate(keys):
            if key is not None and key in hits:
                results[index] = hits[key]
                if on_result is not None:
                    on_result(index, hits[key])
    by_variant: dict[int, list[tuple[int, str, str, int]]] = {}
    for index, job in enumerate(jobs):
        if results[index] is None:
            by_variant.setdefault(job.variant, []).append((index, job.policy, job.errors, job.seed))
    groups = list(by_variant.items())
    chunks = [
        (variants[groups[g][0]], tuple(part))
        for g, part in tapered([items for _, items in groups], workers_of(executor), limit)
    ]

    def done(batch: list[tuple[int, RunResult]]) -> None:
        for index, result in batch:
            results[index] = result
            key = keys[index]
            if store and cache is not None and key is not None:
                cache.put(key, result, needs[index])  # before on_result, which may drop its rows
            if on_result is not None:
                on_result(index, result)

    # Only results of this code enter the cache (a cluster running another version does not).
    store = cache is not None and bool(chunks) and runs_this_code(executor)
    try:
        if chunks:
            ship_modules(executor, [variants[j.variant].policy_spec(j.policy) for j in jobs], [j.errors for j in jobs])
        map_chunks(executor, _run_chunk, chunks, done)
    finally:
        if cache is not None:
            cache.flush()
    return results  # type: ignore[return-value]  # every slot is filled once map_chunks returns


def versions() -> dict[str, str]:
    """Versions of fleetchaos and the libraries that shape its results."""
    out = {}
    for name in ("fleetchaos", "simpy", "pydantic"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    return out


def compare(
    scenario: Scenario,
    seeds: list[int],
    *,
    policies: tuple[str, ...] = DEFAULT_POLICIES,
    errors: tuple[str, ...] = DEFAULT_ERRORS,
    arms: Sequence[tuple[str, str]] | None = None,
    jobs: int = 1,
    confidence: float = DEFAULT_CONFIDENCE,
    scenario_ref: str | None = None,
    scheduler: str | None = None,
    executor: Executor | None = None,
    on_result: Callable[[RunResult], None] | None = None,
    keep_tasks: bool = False,
    task_csv: bool = False,
    trace: bool = False,
    on_trace: Callable[[str, str, int, Any], object] | None = None,
    params: Sequence[tuple[str, Any]] = (),
    time_limit_s: float | None = None,
    done: Mapping[tuple[str, str, int], RunResult] | None = None,
) -> CompareResult:
    """Every policy on every error format, each on the same seeds (so the same faults).

    Runs go to ``executor`` if given (the caller owns it), else to a Dask cluster at
    ``scheduler``, else to ``jobs`` local processes (in-process when ``jobs`` is 1).
    ``on_result`` gets each run as it finishes; the result depends on no executor or job count.
    With ``keep_tasks`` the runs it gets carry their per-task rows (dropped right after),
    with ``task_csv`` the same as tasks.csv lines (``RunResult.tasks_csv``, dropped likewise).
    With ``trace`` the first seed of the best and the worst arm is run again with tracing
    on (side by side on the executor) and the comparison carries their timelines;
    ``on_trace(policy, errors, seed, output)`` receives each of those runs' world output
    (those runs are then made in this process).  ``params`` (``--param`` values already
    applied to ``scenario``) label every run and its replay command.  ``time_limit_s`` bounds
    each run's wall-clock time (:mod:`fleetchaos.runs.limits`).  Runs in ``done`` (by policy,
    format and seed: a resumed comparison's stored runs) are not run again nor handed on.
    """
    arms = list(arms) if arms is not None else list(product(policies, errors))
    done = done or {}
    job_list = [RunJob(0, p, e, s) for (p, e) in arms for s in seeds if (p, e, s) not in done]
    variants = [
        Variant(
            scenario, scenario_ref, tuple(params), keep_tasks=keep_tasks, task_csv=task_csv, time_limit_s=time_limit_s
        )
    ]

    def hand_on(_index: int, result: RunResult) -> None:
        if on_result is not None:
            on_result(result)
        result.tasks = []
        result.tasks_csv = None

    owned = executor is None
    pool = open_executor(jobs, scheduler) if executor is None else executor
    try:
        fresh = iter(run_jobs(variants, job_list, executor=pool, on_result=hand_on) if job_list else [])
        results = [done[(p, e, s)] if (p, e, s) in done else next(fresh) for (p, e) in arms for s in seeds]
        apply_common_sets(results)  # every arm's recovery on the tasks faulted in any arm, seed by seed
        by_arm: dict[tuple[str, str], list[RunResult]] = {}
        for r in results:
            by_arm.setdefault((r.policy, r.errors), []).append(r)
        arm_results = [with_task_sets(aggregate(p, e, by_arm[(p, e)], confidence), by_arm[(p, e)])
                       for (p, e) in arms]  # fmt: skip
        timelines = (
            traced_timelines(_traced_run, scenario, arm_results, seeds[0], scenario_ref, params, on_trace, pool)
            if trace and seeds
            else []
        )
    finally:
        if owned:
            pool.shutdown()
    return CompareResult(
        scenario=scenario.name,
        description=scenario.description,
        seeds=list(seeds),
        confidence=confidence,
        arms=arm_results,
        versions=versions(),
        comparisons=paired_comparisons(arm_results, confidence),
        timelines=timelines,
        scenario_config=scenario.model_dump(mode="json"),
        closed_loop=is_closed_loop(scenario.workload),
    )
