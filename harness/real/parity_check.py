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

import asyncio
import dataclasses
import inspect
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from fleetchaos.errors import UserError
from fleetchaos.policies.readers import category_of, code_of, resume_of, retry_after_s_of, retryable_of
from fleetchaos.real.clocks import VirtualClock, installed
from fleetchaos.real.context import ACTIVE
from fleetchaos.real.decision import Decision
from fleetchaos.real.faults import Fault, UnboundCall
from fleetchaos.real.observe import Surface, observation_of, surface_of
from fleetchaos.real.runtime import injected_fault, load_real_scenario
from fleetchaos.sim import _rng
from fleetchaos.sim.calls import CallModel, CallOutcome
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats._vendor import planted
from fleetchaos.sim.kinds import KINDS, FaultKind
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport

__all__ = ["Call", "Divergence", "ParityReport", "parity"]

SWALLOWED = KINDS["silent_suppression"]
"""How the driver carries on after a tool swallowed a fault: the call looked fine and took no effect."""
TOOL_ERROR = KINDS["network_blip"]
"""How the driver carries on after a tool failed where no fault was injected (the divergence is logged)."""


class Call(NamedTuple):
    """One simulated call, as the team's tool adapter receives it in a parity run."""

    task_id: int
    title: str
    template: str
    tool: str
    step: int
    item: int
    execution: int
    worker: int


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


class _Driver:
    """The parity run's injector and call log: it makes each decided call on the team's tool."""

    def __init__(self, tools: Mapping[str, Callable[[Call], Any]] | None, seed: int, bindings: Any):
        self.tools = tools
        self.seed = seed
        self.bindings = bindings
        self.log: list[tuple] = []
        self.world: Any = None
        self._by_key: dict[int, Any] = {}
        self._scanned = 0
        self.pending: Decision | None = None
        self.notes: list[str] = []
        # (task, step, item) -> what the tool surfaced, when its call ended, the fault's retry-after instant, the fault
        self.surfaces: dict[tuple[int, int, int], tuple[Surface, float, float | None, Fault | None]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._reached = False
        self._again = 0
        """Calls the tool made of its binding after the first, in the current real call (its own retries)."""

    # -- identity ------------------------------------------------------------------------

    def record_of(self, task_key: int) -> Any:
        rec = self._by_key.get(task_key)
        if rec is None:
            run_key = self.world.run_key
            records = self.world.records
            for r in records[self._scanned :]:
                self._by_key[_rng.task_key(run_key, r.id)] = r
            self._scanned = len(records)
            rec = self._by_key[task_key]
        return rec

    @staticmethod
    def attempt_of(key: int, task_key: int, si: int, execution: int, item: int) -> int:
        base = _rng.call_key(_rng.step_key(task_key, si, execution), item)
        if key == base:
            return 0
        for n in range(1, 64):
            if _rng.transport_key(base, n) == key:
                return n
        return -1

    # -- one call ------------------------------------------------------------------------

    def decided(self, node: Any, step: Any, task_key: int, item: int, key: int, outcome: CallOutcome) -> CallOutcome:
        rec = self.record_of(task_key)
        si = step.index
        execution = rec.executions[si]
        attempt = self.attempt_of(key, task_key, si, execution, item)
        kind, _, commits, _ = outcome
        tool = self.tools.get(step.name) if self.tools is not None else None
        if tool is None:  # simulated as is: a tool the team did not hand over, or the plain simulated run
            self.log.append(("call", rec.id, step.name, item, execution, attempt, _name(kind), commits, ""))
            return outcome
        return self._real(tool, rec, node, step, item, execution, attempt, outcome)

    def _real(self, tool: Callable, rec: Any, node: Any, step: Any, item: int, execution: int, attempt: int, outcome):
        kind, duration, commits, retry_at = outcome
        now = self.world.env.now
        names = self.world.templates[_template_index(self.world, rec.template)].names
        fault = injected_fault(
            outcome, step.name, (rec.id, step.index, item, execution), node.index, names, now, self.seed
        )
        d = Decision(self, step.name, rec.id, step.index, item, execution, attempt, kind, duration, commits, fault)
        d.sleeps = False
        self.pending = d
        self.notes = []
        call = Call(rec.id, str(rec.title), rec.template, step.name, step.index, item, execution, node.index)
        value, error = self._invoke(tool, call)
        self.pending = None
        surface = surface_of(value, error, None if self.bindings is None else self.bindings.contract_for(step.name))
        notes = list(self.notes)
        if not d.fired and kind is not None:
            notes.append("the fault never reached the tool's binding")
        elif not self._reached:
            notes.append("the call never reached the tool's binding")
        committed = d.committed
        if kind is None:
            real = (None, duration, committed, None) if surface.ok else (TOOL_ERROR, duration, committed, None)
            if not surface.ok:
                notes.append(f"the tool failed on its own: {surface.describe()}")
        elif kind.stage == "masking":
            real = (kind, duration, False, None) if surface.ok else (TOOL_ERROR, duration, False, None)
        elif surface.ok and self._again:  # its own retry got through: the call took effect, nothing was swallowed
            real = (None, duration, True, None)
            notes.append(
                f"the tool retried the {kind.name} fault inside ({self._again} more call(s) of its binding) and "
                "succeeded: a retry layer of its own, which the simulated run does not have"
            )
        elif surface.ok:
            real = (SWALLOWED, duration, committed, None)
            notes.append(f"the tool swallowed the {kind.name} fault and surfaced a success")
        else:
            real = (kind, duration, committed, retry_at)
        if real[0] is not None and real[0].stage != "masking":
            self.surfaces[(rec.id, step.index, item)] = (surface, now + duration, retry_at, fault)
        self.log.append(
            ("call", rec.id, step.name, item, execution, attempt, _name(real[0]), real[2], "; ".join(notes))
        )
        return real

    def _invoke(self, tool: Callable, call: Call) -> tuple[Any, BaseException | None]:
        self._reached = False
        self._again = 0
        token = ACTIVE.set(self)
        try:
            value = tool(call)
            if inspect.isawaitable(value):
                if self.loop is None:
                    from fleetchaos.real.clocks import new_virtual_loop

                    self.loop = new_virtual_loop()
                value = self.loop.run_until_complete(_awaited(value))
            return value, None
        except Exception as exc:
            return None, exc
        finally:
            ACTIVE.reset(token)

    # -- the injector interface (what the tool's binding asks) ------------------------------

    def begin(self, tool: str, item: Hashable | None, *, attempt: int = 0, idempotency_key: str | None = None):
        d = self.pending
        if d is None or tool != d.tool:
            return None  # another bound tool the real tool calls inside: not part of the step
        if self._reached:
            self._again += 1
            self.notes.append(f"the tool called its binding again (call {attempt or 'repeat'}): passed untouched")
            return None
        self._reached = True
        if isinstance(item, int) and not isinstance(item, bool) and item != d.item:
            self.notes.append(f"the binding keyed the call as item {item}, the driver called item {d.item}")
        return d

    def unbound(self, what: str, why: str) -> None:
        self.notes.append(f"unbound call {what} ({why})")
        if self.bindings is None or self.bindings.unbound == "refuse":
            raise UnboundCall(f"{what}: {why} (parity run)")

    def fired(self, d: Decision) -> None:
        pass

    def met(self, d: Decision) -> None:
        pass

    def committed(self, d: Decision) -> None:
        pass

    def tool_error(self, d: Decision, error: BaseException) -> None:
        pass

    def sleep_sync(self, seconds: float) -> None:
        pass


async def _awaited(value: Any) -> Any:
    return await value


def _template_index(world: Any, name: str) -> int:
    return next(i for i, t in enumerate(world.templates) if t.name == name)


def _name(kind: FaultKind | None) -> str:
    return "ok" if kind is None else kind.name


class _LoggingFormat:
    """The chosen format, logging what each dispatch is seen as (and, in the real run, reading the tools)."""

    def __init__(self, base: Any, driver: _Driver, real: bool, seed: int):
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


def _calls_class(driver: _Driver) -> type[CallModel]:
    class DrivenCalls(CallModel):
        __slots__ = ()

        def decide(self, node, step, rules, task_key, item, key, now, batch_failed, sources, waited=0.0, via=None):
            outcome = CallModel.decide(
                self, node, step, rules, task_key, item, key, now, batch_failed, sources, waited, via
            )
            return driver.decided(node, step, task_key, item, key, outcome)

    return DrivenCalls


def _run(spec: Any, policy: Any, errors: str, seed: int, tools: Mapping | None, bindings: Any) -> tuple[_Driver, list]:
    from fleetchaos.policies.registry import get_policy
    from fleetchaos.sim.world import World

    driver = _Driver(tools, seed, bindings)
    logging_format = _LoggingFormat(get_format(errors, seed), driver, tools is not None, seed)
    policy_obj = get_policy(policy) if isinstance(policy, str) else policy
    world = World(spec, policy_obj, logging_format, seed, call_model=_calls_class(driver))
    driver.world = world
    with installed(VirtualClock()):
        try:
            output = world.run()
        finally:
            if driver.loop is not None:
                driver.loop.close()
    return driver, output.records or []


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
