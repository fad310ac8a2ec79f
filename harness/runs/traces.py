"""Traced runs: one run of the simulator as a :class:`~fleetchaos.results.models.Timeline`, and the arms a report traces.

A traced run records every dispatch, recovery action and task end
(``World(..., trace=True)``); with the run's fault plan and fault log that is what the
fleet timeline and the error-code chart draw.  Only the events those charts need are
kept, so a timeline stays small enough to travel inside ``results.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from functools import partial
from typing import TYPE_CHECKING, Any

from fleetchaos.results.metrics import error_code
from fleetchaos.results.models import ArmResult, Timeline, rounded
from fleetchaos.results.registry import lead_metrics
from fleetchaos.runs.cache import Need, active_cache, using_cache
from fleetchaos.runs.executors import map_chunks, runs_this_code
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.workload import is_closed_loop

if TYPE_CHECKING:
    from fleetchaos.sim.world import RunOutput  # SimPy: for the type checker only

#: Recovery actions a timeline keeps (a plain Retry shows as the next dispatch instead).
TIMELINE_ACTIONS = frozenset({"Reroute", "RefreshCredentials", "Escalate", "GiveUp", "UseAlternative"})


def _t(value: float) -> float:
    return rounded(value)


def timeline_of(
    output: RunOutput, *, label: str, policy: str, errors: str, seed: int, replay: str, workers: int
) -> Timeline:
    """The timeline of one run from its :class:`fleetchaos.sim.world.RunOutput`.

    ``output.trace`` must have been recorded (``World(..., trace=True)``).  Unknown trace
    events are ignored, so a simulator that traces more does not break the charts.  Fault
    spans are clipped to the end of the simulation.
    """
    if output.trace is None:
        raise ValueError("timeline_of needs a traced run: build the World with trace=True")
    assert output.fault_log is not None  # a traced world keeps its fault log
    plan = output.plan
    end = float(output.end_s)

    def span(a: float, b: float) -> tuple[float, float]:
        return (_t(min(a, end)), _t(min(b, end)))

    attempts: dict[int, int] = {}
    dispatches: list[tuple[float, int, int, int]] = []
    actions: list[tuple[float, int, int, str]] = []
    for event in output.trace:
        t, kind = event[0], event[1]
        if kind == "dispatch":
            task, worker = int(event[2]), int(event[3])
            attempts[task] = attempts.get(task, 0) + 1
            dispatches.append((_t(t), worker, task, attempts[task]))
        elif kind == "action" and str(event[4]) in TIMELINE_ACTIONS:
            actions.append((_t(t), int(event[3]), int(event[2]), str(event[4])))
    faults = [
        (_t(t), int(worker), str(kind), error_code(str(kind)), str(tool))
        for t, kind, tool, worker, _task in output.fault_log
    ]
    partitions: list[tuple[float, float, list[int] | None]] = []
    for p in getattr(plan, "partitions", []):
        cut = None if p.workers is None else sorted(p.workers)
        partitions.extend((*span(a, b), cut) for a, b in p.spans.spans if a < end)
    return Timeline(
        label=label,
        policy=policy,
        errors=errors,
        seed=seed,
        replay=replay,
        workers=workers,
        duration_s=_t(output.duration_s),
        end_s=_t(end),
        disk_full=[[span(a, b) for a, b in spans if a < end] for spans in plan.disk_full],
        key_expiries=[[_t(t) for t in times if t < end] for times in plan.key_expiries],
        rate_windows=[(*span(a, b), rounded(f)) for a, b, f in plan.rate_windows if a < end],
        dispatches=dispatches,
        faults=faults,
        actions=actions,
        crashes=[[span(a, b) for a, b in spans if a < end] for spans in getattr(plan, "crashes", [])],
        partitions=sorted(partitions, key=lambda x: (x[0], x[1])),
    )


def representative_arms(arms: list[ArmResult], metric: str = "success_rate") -> list[tuple[str, ArmResult]]:
    """The arms a report traces: the best and the worst by the mean of ``metric`` (one if they coincide)."""
    ranked = [a for a in arms if a.metrics.get(metric) is not None] or list(arms)
    if not ranked:
        return []

    def key(arm: ArmResult) -> float:
        return arm.metrics.get(metric) or 0.0

    best = max(ranked, key=key)
    worst = min(ranked, key=key)
    word = metric.replace("_", " ")
    if best is worst:
        return [(f"best {word}", best)]
    return [(f"best {word}", best), (f"worst {word}", worst)]


#: One traced run to make: (scenario, policy, errors, seed, scenario_ref, params, label).
TracedJob = tuple[Scenario, str, str, int, str | None, tuple[tuple[str, Any], ...], str]


def traced_timelines(
    run: Callable[..., Any],
    scenario: Scenario,
    arms: list[ArmResult],
    seed: int,
    scenario_ref: str | None = None,
    params: Sequence[tuple[str, Any]] = (),
    on_trace: Callable[[str, str, int, Any], object] | None = None,
    executor: Executor | None = None,
) -> list:
    """Timelines of ``seed`` for the best and the worst arm on the lead metric, each run again with tracing on.

    ``run(job, on_trace=None)`` makes one traced run of a :data:`TracedJob` and returns its
    result (:func:`fleetchaos.runs.runner._traced_run`, passed in: the runner imports this
    module).  Given an ``executor``, the runs are made side by side on it; with
    ``on_trace(policy, errors, seed, output)``, which receives each traced run's world
    output, they are made in this process, one after the other.
    """
    picks = representative_arms(arms, lead_metrics(is_closed_loop(scenario.workload))[0])
    jobs: list[TracedJob] = [
        (scenario, arm.policy, arm.errors, seed, scenario_ref, tuple(params), label) for label, arm in picks
    ]
    if on_trace is None and executor is not None:
        cache = active_cache()
        keys = [_traced_key(job) for job in jobs] if cache is not None else [None] * len(jobs)
        hits = cache.get_many({k: Need() for k in keys if k is not None}) if cache is not None else {}
        traced: dict[int, Any] = {i: hits[k] for i, k in enumerate(keys) if k is not None and k in hits}

        def keep(indexed: tuple[int, Any]) -> None:
            traced[indexed[0]] = indexed[1]
            key = keys[indexed[0]]
            if cache is not None and key is not None and runs_this_code(executor):
                cache.put(key, indexed[1])

        todo = [(i, job) for i, job in enumerate(jobs) if i not in traced]
        map_chunks(executor, partial(_indexed, run), todo, keep)
        return [traced[i].timeline for i in range(len(jobs))]
    out = []
    for job, (_, arm) in zip(jobs, picks):
        hand = None
        if on_trace is not None:

            def hand(output, arm=arm) -> None:
                on_trace(arm.policy, arm.errors, seed, output)

        out.append(run(job, hand).timeline)
    return out


def _traced_key(job: TracedJob) -> str | None:
    from fleetchaos.runs.cache_key import run_key, scenario_digest

    scenario, policy, errors, seed, scenario_ref, params, label = job
    return run_key(
        scenario_digest(scenario), policy, errors, seed, scenario_ref=scenario_ref, params=params, trace_label=label
    )


def _indexed(run: Callable[..., Any], item: tuple[int, TracedJob]) -> tuple[int, Any]:
    index, job = item
    with using_cache(None):  # looked up and stored by the planning process
        return index, run(job)
