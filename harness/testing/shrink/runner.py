"""shrink(): from a failing run to a minimal failing run, and the :class:`ShrinkResult` it returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.faults import CALL_KINDS
from fleetchaos.testing.shrink.documents import scenario_document
from fleetchaos.testing.shrink.materialise import CallEvent, materialise
from fleetchaos.testing.shrink.moves import minimise, reproduce
from fleetchaos.testing.shrink.properties import MetricProperty, TaskSilent, task_property
from fleetchaos.testing.shrink.trials import Candidate, TrialBudgetExhausted, Trials

__all__ = ["MAX_TRIALS", "ShrinkResult", "shrink"]

#: Default bound on the number of trial runs.
MAX_TRIALS = 500


@dataclass
class ShrinkResult:
    """A minimal failing run and how it was found."""

    scenario: Scenario
    policy: str
    errors: str
    seed: int
    prop: TaskSilent | MetricProperty
    events: list
    original_events: int
    original_tasks: int
    tasks: int
    original_duration_s: float
    duration_s: float
    original_workers: int
    workers: int
    trials: int
    notes: list[str] = field(default_factory=list)
    budget_exhausted: bool = False
    met: list[CallEvent] = field(default_factory=list)
    """The per-call faults the calls of the minimal run met (from its fault log)."""

    def schedule_lines(self) -> list[str]:
        """The minimal schedule in words: the per-call faults the minimal run's calls met, then the other events."""
        others = [e for e in self.events if not isinstance(e, CallEvent)]
        shown = list(self.met) + others
        return [e.describe() for e in sorted(shown, key=lambda e: (e.at_s, e.describe()))]

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "property": self.prop.describe(),
            "policy": self.policy,
            "errors": self.errors,
            "seed": self.seed,
            "fault_events": {"original": self.original_events, "minimal": len(self.events)},
            "tasks": {"original": self.original_tasks, "minimal": self.tasks},
            "duration_s": {"original": self.original_duration_s, "minimal": self.duration_s},
            "workers": {"original": self.original_workers, "minimal": self.workers},
            "trials": self.trials,
            "budget_exhausted": self.budget_exhausted,
            "schedule": self.schedule_lines(),
            "notes": list(self.notes),
            "scenario": scenario_document(self.scenario),
        }


def shrink(
    scenario: Scenario,
    policy: str,
    errors: str,
    seed: int,
    *,
    task_silent: int | None = None,
    prop: MetricProperty | TaskSilent | None = None,
    max_trials: int = MAX_TRIALS,
    progress: Callable[[str], None] | None = None,
) -> ShrinkResult:
    """Reduce a failing run to a minimal run on which the property still holds.

    Give either ``task_silent`` (a task id of the original run that ended as a silent
    failure) or ``prop`` (e.g. ``parse_property("recovery_rate<0.7")``).  A UserError if
    the property does not hold on the original run.  ``progress`` receives a line every
    few trials.
    """
    if (task_silent is None) == (prop is None):
        raise UserError("shrink: give exactly one of --task-silent N or --property EXPR")
    probe = Trials(scenario, policy, errors, seed, prop, max_trials, progress, [])
    metrics, outcomes, output = probe.run(scenario)
    if task_silent is not None:
        prop = task_property(outcomes, task_silent)
    assert prop is not None  # exactly one of task_silent and prop is given (checked above)
    if task_silent is None and not prop.holds(metrics, outcomes):
        if isinstance(prop, TaskSilent):
            raise UserError(
                f"prop: on the original run it is not so that {prop.describe()}; give a property that holds"
            )
        value = metrics.get(prop.metric)
        shown = "undefined" if value is None else f"{value:g}"
        raise UserError(
            f"--property {prop.expression()}: the original run does not fail it ({prop.metric} is {shown}); "
            "give a property that holds on the run you want to shrink"
        )
    resolved = list(output.plan.resolved)
    for i, f in enumerate(scenario.faults):  # the kind is a default, so exclude_defaults dropped it
        resolved[i] = {"kind": f.kind, **resolved[i]}
    s = Trials(scenario, policy, errors, seed, prop, max_trials, progress, resolved)
    s.trials = 1
    events, arrivals, kinds = materialise(scenario, output)
    notes: list[str] = []
    original_events = len(events)
    current = Candidate(tuple(events), tuple(arrivals), scenario.duration_s, scenario.fleet.workers)
    budget_out = False
    try:
        current = reproduce(s, current, kinds, notes)
        current = minimise(s, current)
    except TrialBudgetExhausted:
        budget_out = True
        if s.last_failing is not None:
            current = s.last_failing
        notes.append(f"stopped at the trial budget ({max_trials}); the run below is the smallest failing one found")
    minimal = s.build(current)
    _m, _o, final = s.run(minimal)
    assert final.fault_log is not None  # a world without a sink keeps its fault log
    met = sorted({CallEvent(t, k, w, tool, ()) for t, k, tool, w, _task in final.fault_log if k in CALL_KINDS})
    return ShrinkResult(
        met=met,
        scenario=minimal.model_copy(
            update={
                "name": f"{scenario.name}-shrunk",
                "description": f"Minimal run shrunk from {scenario.name} (policy {policy}, errors {errors}, seed {seed}) "
                f"on which {prop.describe()}.",
            }
        ),
        policy=policy,
        errors=errors,
        seed=seed,
        prop=prop,
        events=list(current.events),
        original_events=original_events,
        original_tasks=len(arrivals),
        tasks=len(current.arrivals) if current.arrivals is not None else len(arrivals),
        original_duration_s=scenario.duration_s,
        duration_s=current.duration_s,
        original_workers=scenario.fleet.workers,
        workers=current.workers,
        trials=s.trials,
        notes=notes,
        budget_exhausted=budget_out,
    )
