"""Trials: a candidate world built into a scenario and simulated, with a cache and a bound on their number."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fleetchaos.errors import UserError
from fleetchaos.scenario.load import Scenario
from fleetchaos.testing.shrink.materialise import TINY_S, CallEvent, KeptFault, StateEvent
from fleetchaos.testing.shrink.properties import MetricProperty, TaskSilent

if TYPE_CHECKING:
    from fleetchaos.results.oracle import TaskOutcome
    from fleetchaos.sim.world import RunOutput  # SimPy: for the type checker only

__all__ = ["Candidate", "TrialBudgetExhausted", "Trials", "state_spec"]


@dataclass(frozen=True)
class Candidate:
    """One explicit world: fault events, tasks, horizon and fleet size."""

    events: tuple
    arrivals: tuple[tuple[float, str], ...] | None
    duration_s: float
    workers: int
    plain: bool = False
    """Each call fault its own probability-1 spec (no placeholders) instead of positional specs."""


class TrialBudgetExhausted(Exception):
    """The trial budget ran out."""


class Trials:
    """The trials of one shrink: each candidate built into a scenario and simulated once (cached), up to ``max_trials``.

    ``fails(candidate)`` is the one question every reduction move asks; the last candidate
    that failed is kept, so a run that stops at the budget still returns a failing run.
    """

    def __init__(
        self,
        scenario: Scenario,
        policy: str,
        errors: str,
        seed: int,
        prop: MetricProperty | TaskSilent | None,
        max_trials: int,
        progress: Callable[[str], None] | None,
        resolved: list[dict],
    ) -> None:
        self.base = scenario
        self.policy = policy
        self.errors = errors
        self.seed = seed
        self.prop = prop
        self.max_trials = max_trials
        self.progress = progress
        self.resolved = resolved
        self.trials = 0
        self.last_failing: Candidate | None = None
        """The last candidate that failed: the current run of every reduction step."""
        self.cache: dict[Candidate, bool] = {}
        self.target: tuple[float, str] | None = (
            (prop.arrival_s, prop.template) if isinstance(prop, TaskSilent) else None
        )

    # -- building -----------------------------------------------------------------

    def build(self, c: Candidate) -> Scenario:
        """The scenario of a candidate."""
        data = self.base.model_dump(mode="json")
        data["duration_s"] = c.duration_s
        data["seeds"] = [self.seed]
        fleet = data["fleet"]
        fleet["workers"] = c.workers
        fleet["overrides"] = [o for o in fleet.get("overrides", []) if o["worker"] < c.workers]
        if c.arrivals is not None:
            data["workload"]["arrivals"] = [{"at_s": a, "template": t} for a, t in c.arrivals]
            data["workload"]["clients"] = None
        data["faults"] = self._faults(c)
        return Scenario.model_validate(data)

    def _faults(self, c: Candidate) -> list[dict]:
        fixed: dict[int, dict] = {}
        free: list[dict] = []
        windows: dict[int, list[float]] = {}
        plain: list[dict] = []
        for e in c.events:
            if isinstance(e, KeptFault):
                fixed[e.index] = dict(self.resolved[e.index])
            elif isinstance(e, CallEvent):
                if c.plain:
                    plain.append(self._plain_call(e))
                else:
                    for i in e.rules:
                        windows.setdefault(i, []).append(e.at_s)
            elif isinstance(e, StateEvent):
                free.append(state_spec(e))
            else:
                free.append(
                    {
                        "kind": "rate_limit",
                        "capacity_factor": e.factor,
                        "windows": [{"start_s": e.at_s, "duration_s": e.length_s}],
                    }
                )
        for index, times in windows.items():
            spec = {k: v for k, v in self.resolved[index].items() if k not in ("windows", "burst", "swarm")}
            spec["windows"] = [{"start_s": t, "duration_s": TINY_S} for t in sorted(set(times))]
            fixed[index] = spec
        if c.plain:
            fixed_list = [fixed[i] for i in sorted(fixed)]
            return plain + fixed_list + free
        out: list[dict] = []
        size = max(fixed) + 1 if fixed else 0
        queue = list(free)
        for i in range(size):
            if i in fixed:
                out.append(fixed[i])
            elif queue:
                out.append(queue.pop(0))
            else:
                out.append({"kind": "network_blip", "probability": 0.0})  # holds a position: see module doc
        return out + queue

    def _plain_call(self, e: CallEvent) -> dict:
        base = {
            k: v
            for k, v in self.resolved[e.rules[0]].items()
            if k not in ("windows", "burst", "swarm", "ramp", "workers", "tools", "templates", "probability")
        }
        return {
            **base,
            "kind": e.kind,
            "probability": 1.0,
            "workers": [e.worker],
            "tools": [e.tool],
            "windows": [{"start_s": e.at_s, "duration_s": TINY_S}],
        }

    # -- trials -------------------------------------------------------------------

    def run(self, scenario: Scenario) -> tuple[dict[str, float | None], list[TaskOutcome], RunOutput]:
        """Simulate one scenario: (metrics, outcomes, output)."""
        from fleetchaos.policies.registry import get_policy
        from fleetchaos.results.metrics import compute_run
        from fleetchaos.results.models import rounded
        from fleetchaos.sim.formats import get_format
        from fleetchaos.sim.world import World

        output = World(scenario, get_policy(self.policy), get_format(self.errors), self.seed).run()
        metrics, _breakdowns, outcomes = compute_run(output, scenario.fleet)
        return {k: rounded(v) for k, v in metrics.items()}, outcomes, output

    def fails(self, c: Candidate) -> bool:
        """Whether the property still holds (the run still fails) on a candidate; one trial unless cached."""
        if c in self.cache:
            if self.cache[c]:
                self.last_failing = c
            return self.cache[c]
        if self.trials >= self.max_trials:
            raise TrialBudgetExhausted
        self.trials += 1
        try:
            scenario = self.build(c)
        except (ValueError, UserError):  # e.g. an event outside a shortened horizon
            self.cache[c] = False
            return False
        metrics, outcomes, _ = self.run(scenario)
        assert self.prop is not None  # only the probe of the original run has none, and it never asks
        result = self.prop.holds(metrics, outcomes)
        self.cache[c] = result
        if result:
            self.last_failing = c
        if self.progress is not None and (self.trials % 10 == 0 or self.trials == 1):
            tasks = len(c.arrivals) if c.arrivals is not None else "?"
            self.progress(
                f"shrink: trial {self.trials}/{self.max_trials}: {len(c.events)} fault events, {tasks} tasks"
                f" -> {'still fails' if result else 'passes'}"
            )
        return result


def state_spec(e: StateEvent) -> dict:
    """The fault spec of one materialised disk fill, key expiry or crash: one explicit event on its worker."""
    spec: dict[str, Any] = {"kind": e.kind, "workers": [e.worker], "events": [{"worker": e.worker, "at_s": e.at_s}]}
    if e.kind == "disk_full":
        spec["cleanup_after_s"] = e.length_s
    elif e.kind == "node_crash":
        spec["down_s"] = e.length_s
    return spec
