"""Shrinking: reduce a failing run to a minimal run that still fails.

A *run* is a scenario, a policy, an error format and a seed; a *failing property* is
something that should not happen in it ("task 17 ended as a silent failure",
``recovery_rate<0.7``).  :func:`shrink` reduces the run in four moves, re-simulating a
candidate run for every step (a *trial*) and keeping a reduction only if the property
still holds on it:

1. **Materialise** the run into an explicit world: the tasks become explicit
   ``workload.arrivals`` (arrival time and template of every record), every per-call fault
   the fault log shows a call meeting becomes a narrow window (``[t, t + 1 µs)``) of the
   fault that produced it, disk fills, key expiries and crashes become explicit
   ``events`` (with their cleanup and down times), and rate-limit cuts become explicit
   windows.  The materialised run is checked; a fault kind whose materialised form no
   longer fails (an emergent effect of load, say) keeps its original spec, and the
   result says so.
2. **Delta debugging** (Zeller's ddmin) over the list of fault events, then over the
   tasks.
3. **Shorten**: the horizon (just past the last task and event), the length of disk
   fills, crashes and rate-limit windows, and the number of workers.
4. **Tidy**: try the plain form (each remaining call fault its own spec with
   probability 1, ``workers: [w]``, ``tools: [tool]``); keep it if it still fails.

Identity of a task across trials: ids change when tasks are dropped (ids follow
arrival order), so a task is named by its **arrival time and template** (the pair
:class:`TaskSilent` holds), never by its id.

Fidelity: a per-call fault draws from a stream keyed by the call and by the fault's
position in ``faults``, so a materialised fault keeps its original position and
probability (placeholder faults with probability 0 hold the positions of faults that
were dropped); the same call at the same instant then draws the same outcome, including
which items of a fan-out fail and whether a timeout committed.  Dropping a task that
arrives *before* the failing one renumbers the later tasks, which moves them to other
workers (round-robin dispatch) and changes their draws: such reductions are tried but
usually rejected.

Deterministic: the same run and property give the same minimal run.  The number of
trials is bounded (``max_trials``); when the budget runs out the smallest failing run
found so far is returned.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.names import check_metric
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.faults import CALL_KINDS

#: Width of the window a materialised per-call fault is active in (simulated seconds).
TINY_S = 1e-6
#: Default bound on the number of trial runs.
MAX_TRIALS = 500
#: Tolerance when matching a task by its arrival time (task rows round to 6 digits).
ARRIVAL_TOLERANCE_S = 1e-3

_STATE_KINDS = ("disk_full", "expired_key", "node_crash")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}
_PROPERTY = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


# -- properties -----------------------------------------------------------------------


@dataclass(frozen=True)
class TaskSilent:
    """The property "the task that arrived at ``arrival_s`` with ``template`` ended as a silent failure"."""

    arrival_s: float
    template: str
    original_id: int

    def holds(self, metrics: dict, outcomes: Sequence) -> bool:
        """Whether the task (matched by arrival time and template) is a silent failure in this run."""
        return any(o.silent_failure for o in self.matching(outcomes))

    def matching(self, outcomes: Sequence) -> list:
        """The task outcomes that are this task (by arrival time and template)."""
        return [
            o
            for o in outcomes
            if o.template == self.template and abs(o.arrival_s - self.arrival_s) <= ARRIVAL_TOLERANCE_S
        ]

    def describe(self) -> str:
        """The property in words."""
        return (
            f"the {self.template} task arriving at {self.arrival_s:.3f} s (task {self.original_id} of the "
            "original run) ends as a silent failure"
        )


@dataclass(frozen=True)
class MetricProperty:
    """The property "``metric`` ``op`` ``threshold``" on one run's metrics (e.g. ``recovery_rate<0.7``)."""

    metric: str
    op: str
    threshold: float

    def holds(self, metrics: dict, outcomes: Sequence) -> bool:
        """Whether the metric is defined and satisfies the comparison."""
        value = metrics.get(self.metric)
        return value is not None and _OPS[self.op](float(value), self.threshold)

    def expression(self) -> str:
        """The property as the user writes it."""
        return f"{self.metric}{self.op}{self.threshold:g}"

    def describe(self) -> str:
        """The property in words."""
        return f"{self.expression()} holds"


def parse_property(text: str) -> MetricProperty:
    """Parse ``METRIC OP NUMBER`` (OP one of < <= > >= == !=); a UserError names the mistake."""
    match = _PROPERTY.match(text or "")
    if match is None:
        raise UserError(
            f"--property {text!r}: expected METRIC OP NUMBER, e.g. 'recovery_rate<0.7' or "
            "'silent_failure_rate>0' (OP: <, <=, >, >=, ==, !=)"
        )
    name, op, number = match.groups()
    check_metric(name, f"--property {text!r}")
    value = float(number)
    if not math.isfinite(value):
        raise UserError(f"--property {text!r}: the threshold must be a finite number")
    return MetricProperty(name, op, value)


# -- fault events ----------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class CallEvent:
    """A per-call fault a call met at ``at_s``: ``kind`` on ``tool`` of ``worker``, from fault(s) ``rules``."""

    at_s: float
    kind: str
    worker: int
    tool: str
    rules: tuple[int, ...]

    def describe(self) -> str:
        """The event in words."""
        return f"worker {self.worker}: {self.kind} on {self.tool} at {self.at_s:.1f} s"


@dataclass(frozen=True, order=True)
class StateEvent:
    """A disk fill, key expiry or crash of ``worker`` at ``at_s`` lasting ``length_s`` (0 for a key expiry)."""

    at_s: float
    kind: str
    worker: int
    length_s: float

    def describe(self) -> str:
        """The event in words."""
        if self.kind == "disk_full":
            return f"worker {self.worker}: disk full at {self.at_s:.1f} s for {self.length_s:.0f} s"
        if self.kind == "node_crash":
            return f"worker {self.worker}: crashes at {self.at_s:.1f} s, down {self.length_s:.0f} s"
        return f"worker {self.worker}: API key expires at {self.at_s:.1f} s"


@dataclass(frozen=True, order=True)
class RateEvent:
    """A rate-limit cut: the fleet's API rate times ``factor`` from ``at_s`` for ``length_s``."""

    at_s: float
    length_s: float
    factor: float

    def describe(self) -> str:
        """The event in words."""
        return f"fleet: API rate x{self.factor:g} from {self.at_s:.1f} s for {self.length_s:.0f} s"


@dataclass(frozen=True, order=True)
class KeptFault:
    """An original fault spec kept whole (a kind that is not materialised, or a fallback)."""

    index: int
    kind: str
    spec: tuple  # the resolved spec as sorted (key, repr) pairs, only for ordering and hashing
    at_s: float = 0.0

    def describe(self) -> str:
        """The event in words."""
        return f"faults[{self.index}]: {self.kind} as in the original scenario"


Event = CallEvent | StateEvent | RateEvent | KeptFault


# -- the world a trial runs --------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One explicit world: fault events, tasks, horizon and fleet size."""

    events: tuple
    arrivals: tuple[tuple[float, str], ...] | None
    duration_s: float
    workers: int
    plain: bool = False
    """Each call fault its own probability-1 spec (no placeholders) instead of positional specs."""


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


class _Budget(Exception):
    """The trial budget ran out."""


class _Shrinker:
    def __init__(
        self,
        scenario: Scenario,
        policy: str,
        errors: str,
        seed: int,
        prop,
        max_trials: int,
        progress: Callable[[str], None] | None,
        resolved: list[dict],
    ):
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
                free.append(_state_spec(e))
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

    def run(self, scenario: Scenario):
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
            raise _Budget
        self.trials += 1
        try:
            scenario = self.build(c)
        except (ValueError, UserError):  # e.g. an event outside a shortened horizon
            self.cache[c] = False
            return False
        metrics, outcomes, _ = self.run(scenario)
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


def ddmin(items: list, test: Callable[[list], bool]) -> list:
    """Zeller's ddmin: a 1-minimal sublist of ``items`` on which ``test`` holds (``test(items)`` must hold).

    Deterministic: chunks are tried in order, subsets before complements.
    """
    if test([]):
        return []
    n = 2
    while len(items) >= 2:
        chunks = _split(items, n)
        for chunk in chunks:
            if test(chunk):
                items, n = chunk, 2
                break
        else:
            for i in range(len(chunks)):
                rest = [x for j, ch in enumerate(chunks) if j != i for x in ch]
                if n > 2 and test(rest):
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(items):
                    break
                n = min(2 * n, len(items))
    return items


def _split(items: list, n: int) -> list[list]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]


def _state_spec(e: StateEvent) -> dict:
    spec: dict[str, Any] = {"kind": e.kind, "workers": [e.worker], "events": [{"worker": e.worker, "at_s": e.at_s}]}
    if e.kind == "disk_full":
        spec["cleanup_after_s"] = e.length_s
    elif e.kind == "node_crash":
        spec["down_s"] = e.length_s
    return spec


def _active(rule, at_s: float, worker: int) -> bool:
    """Whether a compiled call rule's windows and bursts are in force at ``at_s`` on ``worker``."""
    if rule.spans is not None and not rule.spans.active(at_s):
        return False
    if rule.worker_spans is not None:
        spans = rule.worker_spans.get(worker)
        if spans is None or not spans.active(at_s):
            return False
    return True


def materialise(scenario: Scenario, output) -> tuple[list, list[tuple[float, str]], dict[int, str]]:
    """The fault events and arrivals of one run's output.

    Returns (events, arrivals, kinds): ``kinds`` maps each original fault index to its kind.
    Per-call fault kinds become :class:`CallEvent` (one per distinct (instant, kind, worker,
    tool) in the fault log, naming the faults that could have produced it), state faults
    :class:`StateEvent`, rate-limit cuts :class:`RateEvent`; every other fault stays a
    :class:`KeptFault`.
    """
    plan = output.plan
    templates = {r.id: r.template for r in output.records}
    rules_by_kind: dict[str, list] = {}
    for rule in plan.rules:
        rules_by_kind.setdefault(rule.kind, []).append(rule)
    calls: set[CallEvent] = set()
    for at_s, kind, tool, worker, task_id in output.fault_log:
        if kind not in CALL_KINDS or kind not in rules_by_kind:
            continue  # state faults, rate limits, emergent timeouts: from the plan or kept below
        template = templates.get(task_id, "")
        sources = tuple(
            r.index for r in rules_by_kind[kind] if r.applies(worker, tool, template) and _active(r, at_s, worker)
        )
        if sources:
            calls.add(CallEvent(at_s, kind, worker, tool, sources))
    events: list = sorted(calls)
    state: list = []
    for w, spans in enumerate(plan.disk_full):
        state += [StateEvent(s, "disk_full", w, e - s) for s, e in spans if s < scenario.duration_s]
    for w, times in enumerate(plan.key_expiries):
        state += [StateEvent(t, "expired_key", w, 0.0) for t in times if t < scenario.duration_s]
    for w, spans in enumerate(plan.crashes):
        state += [StateEvent(s, "node_crash", w, e - s) for s, e in spans if s < scenario.duration_s]
    rates = [RateEvent(s, e - s, f) for s, e, f in plan.rate_windows if s < scenario.duration_s]
    kinds = {i: f.kind for i, f in enumerate(scenario.faults)}
    kept = [
        KeptFault(i, k, _frozen(plan.resolved[i]))
        for i, k in kinds.items()
        if k not in CALL_KINDS and k not in _STATE_KINDS and k != "rate_limit"
    ]
    arrivals = sorted((r.arrival_s, r.template) for r in output.records)
    return sorted(events + state + rates + kept, key=_event_key), arrivals, kinds


def _event_key(e) -> tuple:
    return (e.at_s, type(e).__name__, repr(e))


def _frozen(d: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in d.items()))


def _needed_workers(events: Sequence, resolved: list[dict]) -> int:
    need = 0
    for e in events:
        if isinstance(e, (CallEvent, StateEvent)):
            need = max(need, e.worker + 1)
        elif isinstance(e, KeptFault):
            need = max(need, *(w + 1 for w in resolved[e.index].get("workers") or [0]))
    if any(isinstance(e, CallEvent) for e in events):
        for e in events:
            if isinstance(e, CallEvent):
                for i in e.rules:
                    need = max(need, *(w + 1 for w in resolved[i].get("workers") or [0]))
    return max(need, 1)


def task_property(outcomes: Sequence, task_id: int) -> TaskSilent:
    """The :class:`TaskSilent` property of task ``task_id`` of a run; a UserError if it was not a silent failure."""
    match = [o for o in outcomes if o.id == task_id]
    if not match:
        raise UserError(f"--task-silent {task_id}: the run has no task {task_id} (tasks 0..{len(outcomes) - 1})")
    o = match[0]
    if not o.silent_failure:
        silent = [x.id for x in outcomes if x.silent_failure][:10]
        hint = (
            f"silent failures in this run: tasks {', '.join(map(str, silent))}"
            if silent
            else "this run has no silent failures"
        )
        raise UserError(
            f"--task-silent {task_id}: task {task_id} did not end as a silent failure (truth {o.truth}, "
            f"claim {o.claim}); {hint}"
        )
    return TaskSilent(o.arrival_s, o.template, task_id)


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
    probe = _Shrinker(scenario, policy, errors, seed, prop, max_trials, progress, [])
    metrics, outcomes, output = probe.run(scenario)
    if task_silent is not None:
        prop = task_property(outcomes, task_silent)
    elif not prop.holds(metrics, outcomes):  # type: ignore[union-attr]
        value = metrics.get(prop.metric)  # type: ignore[union-attr]
        shown = "undefined" if value is None else f"{value:g}"
        raise UserError(
            f"--property {prop.expression()}: the original run does not fail it ({prop.metric} is {shown}); "  # type: ignore[union-attr]
            "give a property that holds on the run you want to shrink"
        )
    resolved = list(output.plan.resolved)
    for i, f in enumerate(scenario.faults):  # the kind is a default, so exclude_defaults dropped it
        resolved[i] = {"kind": f.kind, **resolved[i]}
    s = _Shrinker(scenario, policy, errors, seed, prop, max_trials, progress, resolved)
    s.trials = 1
    events, arrivals, kinds = materialise(scenario, output)
    notes: list[str] = []
    original_events = len(events)
    current = Candidate(tuple(events), tuple(arrivals), scenario.duration_s, scenario.fleet.workers)
    budget_out = False
    try:
        current = _verify(s, current, kinds, notes)
        current = _reduce(s, current)
    except _Budget:
        budget_out = True
        if s.last_failing is not None:
            current = s.last_failing
        notes.append(f"stopped at the trial budget ({max_trials}); the run below is the smallest failing one found")
    minimal = s.build(current)
    _m, _o, final = s.run(minimal)
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


def _verify(s: _Shrinker, c: Candidate, kinds: dict[int, str], notes: list[str]) -> Candidate:
    """The materialised candidate, with fallbacks to original specs until it fails like the original."""
    if s.fails(c):
        return c
    events = list(c.events)
    materialised = sorted(
        {e.kind for e in events if isinstance(e, (CallEvent, StateEvent))}
        | ({"rate_limit"} if any(isinstance(e, RateEvent) for e in events) else set())
    )
    for kind in materialised:
        events = [e for e in events if not (isinstance(e, (CallEvent, StateEvent, RateEvent)) and _kind(e) == kind)]
        events += [KeptFault(i, k, _frozen(s.resolved[i])) for i, k in kinds.items() if k == kind]
        events.sort(key=_event_key)
        notes.append(f"{kind}: the materialised events did not reproduce the failure; the original spec is kept")
        c = Candidate(tuple(events), c.arrivals, c.duration_s, c.workers)
        if s.fails(c):
            return c
    c = Candidate(c.events, None, c.duration_s, c.workers)
    notes.append("workload: the explicit arrivals did not reproduce the failure; the original workload is kept")
    if s.fails(c):
        return c
    raise UserError("shrink: the failure could not be reproduced from the materialised run; nothing to shrink")


def _kind(e) -> str:
    return "rate_limit" if isinstance(e, RateEvent) else e.kind


def _reduce(s: _Shrinker, c: Candidate) -> Candidate:
    """ddmin over events, then tasks; then shorter horizon, windows and fewer workers; then the plain form."""

    def with_events(events):
        return Candidate(tuple(events), c.arrivals, c.duration_s, c.workers)

    events = ddmin(list(c.events), lambda sub: s.fails(with_events(sub)))
    c = with_events(events)
    if c.arrivals is not None:
        target = [a for a in c.arrivals if s.target is not None and _same(a, s.target)]
        others = [a for a in c.arrivals if a not in target]

        def with_arrivals(sub):
            return Candidate(c.events, tuple(sorted(target + list(sub))), c.duration_s, c.workers)

        if target:  # first the cheap cut: every task arriving after the failing one
            before = [a for a in others if a[0] <= target[0][0]]
            if len(before) < len(others) and s.fails(with_arrivals(before)):
                others = before
        others = _shortest_prefix(others, lambda sub: s.fails(with_arrivals(sub)))
        # cheap, and kept if the budget runs out in ddmin below (with_arrivals reads c when called)
        c = _cut_horizon(s, with_arrivals(others))
        kept = ddmin(others, lambda sub: s.fails(with_arrivals(sub)))
        c = with_arrivals(kept)
    c = _cut_horizon(s, c)
    # windows: halve disk fills, crashes and rate-limit cuts while the run still fails
    for i, e in enumerate(c.events):
        if isinstance(e, (StateEvent, RateEvent)) and e.length_s > 0:
            for _ in range(8):
                cur = c.events[i]
                half = round(cur.length_s / 2, 3)
                if half < 1:
                    break
                smaller = (
                    StateEvent(cur.at_s, cur.kind, cur.worker, half)
                    if isinstance(cur, StateEvent)
                    else RateEvent(cur.at_s, half, cur.factor)
                )
                trial = Candidate((*c.events[:i], smaller, *c.events[i + 1 :]), c.arrivals, c.duration_s, c.workers)
                if not s.fails(trial):
                    break
                c = trial
    # workers: the fewest that still fail (round-robin dispatch depends on the count)
    need = _needed_workers(c.events, s.resolved)
    for n in range(need, min(c.workers, need + 5)):
        fewer = Candidate(c.events, c.arrivals, c.duration_s, n)
        if s.fails(fewer):
            c = fewer
            break
    # the plain form: each call fault its own probability-1 spec, no placeholders
    if any(isinstance(e, CallEvent) for e in c.events):
        plain = Candidate(c.events, c.arrivals, c.duration_s, c.workers, plain=True)
        if s.fails(plain):
            c = plain
    return c


def _cut_horizon(s: _Shrinker, c: Candidate) -> Candidate:
    """The candidate with its horizon just past its last task and last event, if it still fails."""
    last = max([a for a, _ in c.arrivals or ()] + [e.at_s for e in c.events] + [0.0])
    horizon = float(math.floor(last) + 1)
    if horizon < c.duration_s:
        shorter = Candidate(c.events, c.arrivals, horizon, c.workers)
        if s.fails(shorter):
            return shorter
    return c


def _shortest_prefix(items: list, test: Callable[[list], bool]) -> list:
    """The shortest prefix found failing by doubling then bisecting (dropping later tasks keeps earlier ids).

    ``test(items)`` must hold.  Prefix lengths 1, 2, 4, ... are tried; between the last
    passing and the first failing length a bisection narrows it (assuming that, in
    between, longer prefixes fail when shorter ones do; only tested prefixes are kept).
    """
    n = len(items)
    size = 1
    while size < n and not test(items[:size]):
        size *= 2
    if size >= n:
        lo, hi = size // 2, n
    else:
        lo, hi = size // 2, size
    # invariant: items[:hi] fails (hi == n fails by the precondition), items[:lo] passes or lo == 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if test(items[:mid]):
            hi = mid
        else:
            lo = mid
    return items[:hi]


def _same(a: tuple[float, str], b: tuple[float, str]) -> bool:
    return a[1] == b[1] and abs(a[0] - b[0]) <= ARRIVAL_TOLERANCE_S


# -- output ---------------------------------------------------------------------------


def scenario_document(scenario: Scenario) -> dict:
    """A scenario as a plain document for YAML or JSON (defaults of faults left out, kinds kept)."""
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    data["faults"] = [{"kind": f.kind, **f.model_dump(mode="json", exclude_defaults=True)} for f in scenario.faults]
    first = {k: data.pop(k) for k in ("name", "description") if k in data}
    return {**first, **data}


def scenario_yaml(scenario: Scenario) -> str:
    """A scenario as YAML text that :func:`fleetchaos.scenario.load.parse_scenario` reads back unchanged."""
    import yaml

    return yaml.safe_dump(scenario_document(scenario), sort_keys=False, width=100)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def regression_test(result: ShrinkResult, scenario_file: str) -> str:
    """A pytest module that runs the minimal scenario and asserts the property does NOT hold.

    It fails while the bug exists and passes once it is fixed.  ``scenario_file`` is the
    YAML file's name, looked up next to the test module.
    """
    p = result.prop
    lines = "\n".join(f"#   {line}" for line in result.schedule_lines()) or "#   (no fault events)"
    header = f'''"""Regression test written by `fleetchaos shrink`: fails while the bug exists.

Property that must not hold: {p.describe()}.
"""

# Minimal failing schedule ({_count(len(result.events), "fault event")}, {result.tasks} tasks, {result.duration_s:g} s,
# {result.workers} workers; shrunk from {result.original_events} fault events and {result.original_tasks} tasks
# in {result.trials} trial runs):
{lines}

from pathlib import Path

from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import load_scenario

SCENARIO = Path(__file__).with_name({scenario_file!r})
POLICY = {result.policy!r}
ERRORS = {result.errors!r}
SEED = {result.seed!r}


def _run():
    return run_one(load_scenario(str(SCENARIO)), POLICY, ERRORS, SEED, scenario_ref=str(SCENARIO), keep_tasks=True)
'''
    if isinstance(p, TaskSilent):
        body = f'''

ARRIVAL_S = {p.arrival_s!r}
TEMPLATE = {p.template!r}


def test_task_is_not_a_silent_failure():
    """The {p.template} task arriving at {p.arrival_s:.3f} s must not end as a silent failure."""
    result = _run()
    task = [t for t in result.tasks if t["template"] == TEMPLATE and abs(t["arrival_s"] - ARRIVAL_S) <= {ARRIVAL_TOLERANCE_S!r}]
    assert task, f"no {{TEMPLATE}} task arrived at {{ARRIVAL_S}} s; replay: {{result.replay}}"
    assert not task[0]["silent_failure"], (
        f"task {{task[0]['id']}} ({{TEMPLATE}}, arrived {{ARRIVAL_S:.3f}} s) ended as a silent failure: "
        f"claim {{task[0]['claim']}}, truth {{task[0]['truth']}}, faults {{task[0]['faults']}}; replay: {{result.replay}}"
    )
'''
    else:
        body = f'''

METRIC = {p.metric!r}
THRESHOLD = {p.threshold!r}


def test_{p.metric}_property_does_not_hold():
    """{p.expression()} must not hold on the minimal run."""
    result = _run()
    value = result.metrics.get(METRIC)
    assert value is None or not (value {p.op} THRESHOLD), (
        f"{{METRIC}} = {{value}} still satisfies {p.expression()}; replay: {{result.replay}}"
    )
'''
    return header + body
