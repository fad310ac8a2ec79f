"""Sim/real parity: the policy driver on the team's real tools must reproduce the simulated run.

Both runs are the simulator's own :class:`~fleetchaos.sim.world.World` with the same
policy, format and seed.  In the real run every decided tool call is also made on the
team's tool (``tools[name](call)``) with the decision forced at the tool's binding, and
the run continues from what really happened: whether the side effect took effect
(the wrapped function returned), and what the tool surfaced, read into the observation
the policy gets (the tool's own error fields; the dispatch's progress from the driver).
A tool that reports every fault as the contract says and commits as the ledger assumes
reproduces the simulated task records exactly; otherwise the report names the first
call where the runs part, which is a contract gap or a modelling gap, never noise.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.policies.readers import category_of, code_of, resume_of, retry_after_s_of, retryable_of
from fleetchaos.real.clocks import VirtualClock, installed
from fleetchaos.real.observe import Surface, observation_of
from fleetchaos.real.parity_driver import Call, Driver
from fleetchaos.real.runtime import load_real_scenario
from fleetchaos.sim.calls import CallModel
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats._vendor import planted
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport

__all__ = ["Call", "Divergence", "ParityReport", "parity"]


@dataclass(frozen=True)
class Divergence:
    """The first event where the real run parts from the simulated one."""

    index: int
    task_id: int
    what: str
    sim: tuple
    real: tuple
    call: tuple = ()
    """The real call the divergence follows from (the task's last faulted call), when it is not the event itself."""

    def describe(self) -> str:
        """One paragraph naming the call and both sides."""
        text = (
            f"first divergence at event {self.index}, task {self.task_id}: {self.what}\n"
            f"  simulated: {_event_text(self.sim)}\n  real:      {_event_text(self.real)}"
        )
        if self.call:
            text += f"\n  after the call: {_event_text(self.call)}"
        return text


def _event_text(event: tuple) -> str:
    if not event:
        return "(no event: the run ended)"
    if event[0] == "call":
        _, task, tool, item, execution, attempt, kind, committed, note = event
        text = f"task {task} {tool} item {item} execution {execution}{f' try {attempt}' if attempt else ''}: "
        text += f"{kind}, {'committed' if committed else 'no effect'}"
        return text + (f" ({note})" if note else "")
    _, task, ok, status, code, category, retryable, retry_ms, resume, secrets = event
    if ok:
        return f"task {task} dispatch seen as ok"
    return (
        f"task {task} dispatch seen as {status}: code {code}, category {category}, retryable {retryable}, "
        f"retry_after_ms {retry_ms}, resume {resume}, secrets {secrets}"
    )


@dataclass(frozen=True)
class ParityReport:
    """Per task, simulated versus real records, and the first divergent event (None: identical)."""

    scenario: str
    policy: str
    errors: str
    seed: int
    tasks: int
    differing_tasks: tuple[int, ...]
    first_divergence: Divergence | None
    rows: tuple[tuple[int, str, str, str, str, str, bool], ...]
    """(task id, template, sim claim, sim truth, real claim, real truth, records equal)."""

    @property
    def identical(self) -> bool:
        """Every event and every task record agreed."""
        return self.first_divergence is None and not self.differing_tasks

    def describe(self) -> str:
        """What a failing parity assertion prints."""
        head = f"parity of {self.policy} on {self.errors} errors, scenario {self.scenario}, seed {self.seed}"
        if self.identical:
            return f"{head}: the {self.tasks} real task records equal the simulated ones"
        text = f"{head}: {len(self.differing_tasks)} of {self.tasks} task records differ"
        if self.first_divergence is not None:
            text += "\n" + self.first_divergence.describe()
        return text

    def to_markdown(self) -> str:
        """``parity.md``: the verdict, the first divergence, and per task sim versus real."""
        lines = [f"# Parity: {self.scenario}", "", self.describe().replace("\n", "\n\n"), ""]
        lines += [
            "After the first divergence the runs legitimately part (the policy decided on different "
            "observations): the first one is the finding.",
            "",
            "| task | template | sim claim | sim truth | real claim | real truth | same record |",
            "|---:|---|---|---|---|---|---|",
        ]
        for task, template, sc, st, rc, rtr, same in self.rows:
            lines.append(f"| {task} | {template} | {sc} | {st} | {rc} | {rtr} | {'yes' if same else '**no**'} |")
        return "\n".join(lines) + "\n"


def _seen(task_id: int, obs: Observation) -> tuple:
    ms = retry_after_s_of(obs)
    return (
        "seen",
        task_id,
        obs.ok,
        obs.status,
        code_of(obs),
        category_of(obs),
        retryable_of(obs),
        None if ms is None else round(ms * 1000),
        None if obs.ok else resume_of(obs),
        obs.secrets,
    )


class _LoggingFormat:
    """The chosen format, logging what each dispatch is seen as (and, in the real run, reading the tools)."""

    def __init__(self, base: Any, driver: Driver, real: bool, seed: int):
        self.base = base
        self.driver = driver
        self.real = real
        self.name = base.name
        self.partial_batch = getattr(base, "partial_batch", None)  # None: the scenario's, as in the sim
        self.misread_setting = getattr(base, "misread_setting", None)  # the scenario's factor for it, as in the sim
        self.misread_factor = getattr(base, "misread_factor", 1.0)
        self.failure_flag = getattr(base, "failure_flag", False)
        self.secrets = planted(seed).all()

    def render(self, report: AttemptReport) -> Observation:
        obs = self.base.render(report)
        if self.real and not report.completed:
            items = [i for i, _ in report.item_failures] or [0]
            now = self.driver.world.env.now
            found = [self.driver.surfaces.pop((report.task_id, report.failed_step, i), None) for i in items]
            seen = [_rebased(*f, now) for f in found if f is not None]
            if found[0] is not None:
                # The worker reports the first failed item, with the earliest retry-after any item gave.
                surface = seen[0]
                hints = [s.fields["retry_after_ms"] for s in seen if "retry_after_ms" in s.fields]
                if hints:
                    surface = dataclasses.replace(surface, fields={**surface.fields, "retry_after_ms": min(hints)})
                obs = observation_of(surface, obs)
                leaked = sum(1 for s in self.secrets if s in surface.text)
                obs = dataclasses.replace(obs, secrets=leaked)
        self.driver.log.append(_seen(report.task_id, obs))
        return obs


def _rebased(surface: Surface, call_end: float, retry_at: float | None, fault: Any, now: float) -> Surface:
    """The tool's retry-after hint as the dispatch reports it at ``now`` (the end of the step).

    A tool's hint counts from its own response; the worker reports the step's failure
    when its slowest call ends, so it passes the hint on as the instant it points to.
    A hint the tool passed on unchanged points exactly at the fault's instant.
    """
    ms = surface.fields.get("retry_after_ms")
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return surface
    if fault is not None and retry_at is not None and ms == fault.retry_after_ms:
        instant = retry_at
    else:
        instant = call_end + ms / 1000.0
    rebased = math.ceil(round(max(0.0, instant - now) * 1000.0, 6))
    return dataclasses.replace(surface, fields={**surface.fields, "retry_after_ms": rebased})


def _calls_class(driver: Driver) -> type[CallModel]:
    class DrivenCalls(CallModel):
        __slots__ = ()

        def decide(self, node, step, rules, task_key, item, key, now, batch_failed, sources, waited=0.0, via=None):
            outcome = CallModel.decide(
                self, node, step, rules, task_key, item, key, now, batch_failed, sources, waited, via
            )
            return driver.decided(node, step, task_key, item, key, outcome, now)

    return DrivenCalls


def _run(spec: Any, policy: Any, errors: str, seed: int, tools: Mapping | None, bindings: Any) -> tuple[Driver, list]:
    from fleetchaos.policies.registry import get_policy
    from fleetchaos.sim.world import World

    driver = Driver(tools, seed, bindings)
    logging_format = _LoggingFormat(get_format(errors, seed), driver, tools is not None, seed)
    policy_obj = get_policy(policy) if isinstance(policy, str) else policy
    layers = bindings.layers if bindings is not None else ()
    if layers and not getattr(policy_obj, "transport", None):  # the team's own retry layers, on both sides
        policy_obj = _Layered(policy_obj, layers)
    world = World(spec, policy_obj, logging_format, seed, call_model=_calls_class(driver))
    driver.world = world
    with installed(VirtualClock()):
        try:
            output = world.run()
        finally:
            if driver.loop is not None:
                driver.loop.close()
    return driver, output.records or []


class _Layered:
    """A policy with the team's declared retry layers (``Bindings.layers``) as its transport layers."""

    def __init__(self, policy: Any, layers: tuple):
        self._policy = policy
        self.transport = layers

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)

    def decide(self, observation: Observation, history: Any) -> Any:
        return self._policy.decide(observation, history)


def _comparable(rec: Any) -> dict:
    out = dataclasses.asdict(rec)
    out.pop("title", None)
    return out


def parity(
    scenario: Any,
    *,
    policy: str | Any,
    tools: Mapping[str, Callable[[Call], Any]],
    errors: str = "structured",
    seed: int = 1,
    bindings: Any = None,
) -> ParityReport:
    """Run ``policy`` on the scenario twice for ``seed``: simulated, and on the team's ``tools``; compare.

    ``tools[name](call)`` makes the real call of scenario tool ``name`` for a :class:`Call`
    (task, step, item, execution); its binding (``@fleetchaos.tool`` or a route) meets the
    decided fault.  Tools not in ``tools`` stay simulated.
    """
    spec, ref = load_real_scenario(scenario)
    from fleetchaos.names import check_formats

    check_formats((errors,), "errors")
    known = {s.tool for t in spec.workload.templates for s in t.steps}
    unknown = sorted(set(tools) - known)
    if unknown:
        raise UserError(
            f"tools: {', '.join(unknown)} is not a tool of scenario {ref} (tools: {', '.join(sorted(known))})"
        )
    sim_driver, sim_records = _run(spec, policy, errors, seed, None, bindings)
    real_driver, real_records = _run(spec, policy, errors, seed, dict(tools), bindings)
    first = _first_divergence(sim_driver.log, real_driver.log)
    rows = []
    differing = []
    real_by_id = {r.id: r for r in real_records}
    for rec in sim_records:
        other = real_by_id.get(rec.id)
        same = other is not None and _comparable(rec) == _comparable(other)
        if not same:
            differing.append(rec.id)
        rows.append(
            (
                rec.id,
                rec.template,
                rec.claim,
                rec.truth,
                other.claim if other else "-",
                other.truth if other else "-",
                same,
            )
        )
    name = policy if isinstance(policy, str) else getattr(policy, "name", type(policy).__name__)
    return ParityReport(spec.name, name, errors, seed, len(sim_records), tuple(differing), first, tuple(rows))


def _first_divergence(sim: list[tuple], real: list[tuple]) -> Divergence | None:
    for i, (a, b) in enumerate(zip(sim, real)):
        if a != b:
            if a[0] == "call" or b[0] == "call":
                return Divergence(i, a[1], "a tool call", a, b)
            cause = next((e for e in reversed(real[:i]) if e[0] == "call" and e[1] == b[1] and e[6] != "ok"), ())
            return Divergence(i, a[1], "what a dispatch is seen as", a, b, cause)
    if len(sim) != len(real):
        i = min(len(sim), len(real))
        longer = sim if len(sim) > len(real) else real
        return Divergence(
            i, longer[i][1], "one run has more events", sim[i] if i < len(sim) else (), real[i] if i < len(real) else ()
        )
    return None
