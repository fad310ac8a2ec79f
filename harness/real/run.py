"""``run_real``: the team's own orchestrator, task by task, under the scenario's fault schedule.

The runtime generates the scenario's tasks for the seed and hands each to the team's
entrypoint inside a task scope.  A sync entrypoint runs the tasks in arrival order on
the sync virtual clock (a task starts at its arrival, or when the one before it ended);
an async entrypoint gets its own virtual-time asyncio loop (looptime), where each task
starts at its virtual arrival, ``concurrency`` at a time.  What the entrypoint returns
becomes the task's claim (``claim(value)``, default ``str``); anything escaping it
(``SystemExit``, ``KeyboardInterrupt`` and every other ``BaseException`` included, in a
task the entrypoint started too) is the claim ``failed`` with the error noted on the task,
as a broken policy is in the simulator (:mod:`fleetchaos.real.containment`).  Only the
user's own Ctrl-C stops the run: while it runs, SIGINT raises
:class:`~fleetchaos.sim.interrupts.UserInterrupt`, which nothing contains.  Every text
noted from the team's code is sanitised: the run's planted secrets and the environment's
secrets by value, the common key shapes by pattern (:mod:`fleetchaos.sim.sanitise`).
The records go through the same oracle and metrics as simulated runs.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.real.clocks import LoopClock, new_virtual_loop
from fleetchaos.real.containment import Containment
from fleetchaos.real.determinism import NondeterministicRun, first_difference
from fleetchaos.real.injections import InjectionReport
from fleetchaos.real.runtime import CLAIMS, Runtime
from fleetchaos.real.scope import TaskInput
from fleetchaos.results.models import RunResult, rounded
from fleetchaos.sim.interrupts import PASS_THROUGH, user_signals

__all__ = ["RealRun", "run_real"]


@dataclass
class RealRun:
    """One real run: its result (the simulator's model, ``mode="real"``), its injections and its records."""

    result: RunResult
    injections: InjectionReport
    records: list = field(repr=False, default_factory=list)
    clock: str = ""
    calls: list = field(repr=False, default_factory=list)
    """Every decided call (:class:`~fleetchaos.real.determinism.CallEntry`), in the order they were decided."""

    def assert_injected(self, unfaulted: Iterable[str] = ()) -> None:
        """Fail unless every tool (but those ``unfaulted`` names) met a fault, every drawn fault fired and no call
        bypassed the bindings."""
        self.injections.assert_injected(unfaulted)

    @property
    def metrics(self) -> dict[str, float | None]:
        """The run's metrics (as for a simulated run)."""
        return self.result.metrics


def _label(entrypoint: Callable) -> str:
    """``real:NAME``: the entrypoint's name (the summary table's policy column)."""
    return "real:" + (getattr(entrypoint, "__name__", None) or type(entrypoint).__name__)


def run_real(
    scenario: Any,
    entrypoint: Callable[[TaskInput, Runtime], Any],
    *,
    seed: int,
    errors: str = "structured",
    bindings: Any = None,
    claim: Callable[[Any], str] = str,
    tasks: int | None = None,
    concurrency: int = 1,
    clock: str = "virtual",
    timing: str | None = None,
    replay: str | None = None,
    keep_tasks: bool = False,
    check_determinism: bool = False,
) -> RealRun:
    """Run ``entrypoint(task, runtime)`` for the scenario's tasks on ``seed`` and judge every task.

    ``tasks`` limits the run to the first tasks of the workload; ``concurrency`` is how
    many async tasks run at once.  ``claim(value)`` turns what the entrypoint returned
    into one of success, partial, failed, escalated, dead_lettered.  With
    ``check_determinism`` the run is done twice and :class:`NondeterministicRun` names
    the first call whose decision or virtual time differs (the second run's result is
    returned when none does).
    """
    if tasks is not None and (isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1):
        raise UserError(f"tasks: must be a whole number >= 1, got {tasks!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise UserError(f"concurrency: must be a whole number >= 1, got {concurrency!r}")
    options = dict(errors=errors, bindings=bindings, clock=clock, timing=timing)
    first = _run_once(scenario, entrypoint, seed, options, claim, tasks, concurrency, replay, keep_tasks)
    if not check_determinism:
        return first
    second = _run_once(scenario, entrypoint, seed, options, claim, tasks, concurrency, replay, keep_tasks)
    differs = first_difference(
        first.calls, second.calls, ([(r.id, r.claim) for r in first.records], [(r.id, r.claim) for r in second.records])
    )
    if differs is not None:
        raise NondeterministicRun(
            f"seed {seed} ran twice with different results: {differs}. Something besides the seed decides "
            "what the code does: threads racing for the run's clock, a subprocess or a wall-clock read, global "
            "state carried from one run to the next (docs/real-code.md, Determinism). "
            f"replay: {first.result.replay}"
        )
    return second


def _run_once(
    scenario: Any,
    entrypoint: Callable[[TaskInput, Runtime], Any],
    seed: int,
    options: dict[str, Any],
    claim: Callable[[Any], str],
    tasks: int | None,
    concurrency: int,
    replay: str | None,
    keep_tasks: bool,
) -> RealRun:
    rt = Runtime(scenario, seed=seed, **options)
    clock = rt.clock_kind
    todo = rt.tasks(tasks)
    is_async = inspect.iscoroutinefunction(entrypoint) or inspect.iscoroutinefunction(
        getattr(entrypoint, "__call__", None)  # noqa: B004 - an async callable object
    )
    team = Containment(rt)
    with user_signals(sigterm=False):  # the user's Ctrl-C stops the run; the code's KeyboardInterrupt does not
        if is_async:
            _run_async(rt, todo, entrypoint, claim, concurrency, clock, team)
        else:
            _run_sync(rt, todo, entrypoint, claim, clock, team)
    team.scrub()
    return _result(rt, _label(entrypoint), replay, keep_tasks)


def _run_sync(
    rt: Runtime, todo: list[TaskInput], entrypoint: Callable, claim: Callable, clock: str, team: Containment
) -> None:
    from fleetchaos.real.clocks import VirtualClock

    virtual = VirtualClock() if clock == "virtual" else None
    with rt.activated(virtual):
        for task in todo:
            if virtual is not None:
                virtual.advance_to(task.arrival_s)
            with rt.task(task) as scope:
                try:
                    value = entrypoint(task, rt)
                except PASS_THROUGH:
                    raise
                except BaseException as exc:  # whatever the code under test raises ends its own task
                    team.failed(scope, exc)
                else:
                    team.claimed(scope, value, claim)


def _run_async(
    rt: Runtime,
    todo: list[TaskInput],
    entrypoint: Callable,
    claim: Callable,
    concurrency: int,
    clock: str,
    team: Containment,
) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UserError(
            "run_real with an async entrypoint starts its own event loop (virtual time needs one); "
            "call it from sync code (a plain `def` test, not an async one)"
        )
    loop = new_virtual_loop() if clock == "virtual" else asyncio.new_event_loop()

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(task: TaskInput) -> None:
            wait = task.arrival_s - rt.now()
            if clock == "virtual" and wait > 0:
                await asyncio.sleep(wait)
            async with gate:
                with rt.task(task) as scope:
                    try:
                        value = await entrypoint(task, rt)
                    except PASS_THROUGH:
                        raise
                    except BaseException as exc:  # whatever the code under test raises ends its own task
                        team.failed(scope, exc)
                    else:
                        team.claimed(scope, value, claim)

        await asyncio.gather(*(one(t) for t in todo))

    try:
        with rt.activated(LoopClock(loop) if clock == "virtual" else None):
            team.drive(loop, main())
            loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


def _result(rt: Runtime, label: str, replay: str | None, keep_tasks: bool) -> RealRun:
    from fleetchaos.results.metrics import RunAccumulator
    from fleetchaos.results.task_rows import outcome_row

    spec = rt.spec
    acc = RunAccumulator(spec.fleet, duration_s=spec.duration_s)
    rows = []
    for rec in rt.records:
        if rec.claim not in CLAIMS:
            rec.claim = "in_flight"
        outcome = acc.add(rec)
        if keep_tasks:
            rows.append(outcome_row(outcome))
    acc.add_faults(rt.journal.fault_tally)
    breakdowns, tokens = acc.breakdowns(), "tokens modelled from the scenario"
    if rt.model_tools:  # a bound model: its calls are the turns, each one's tokens observed or modelled
        turns = {"observed": sum(r.observed_turns for r in rt.records), "turns": sum(r.turns for r in rt.records)}
        breakdowns["model_turns"] = turns
        tokens = f"tokens from the API's usage on {turns['observed']} of {turns['turns']} model turns"
    result = RunResult(
        scenario=spec.name,
        policy=label,
        errors=rt.errors,
        seed=rt.seed,
        metrics={k: rounded(v) for k, v in acc.metrics().items()},
        breakdowns=breakdowns,
        fault_schedule=rt.plan.describe(),
        replay=replay or f"run_real({rt.ref!r}, {label.removeprefix('real:')}, seed={rt.seed})",
        samples=acc.samples(),
        recipe=f"{label} ({rt.clock_description()}; {tokens})",
        mode="real",
    )
    result.tasks = rows
    return RealRun(result, rt.injection_report(), list(rt.records), rt.clock_description(), list(rt.call_log))
