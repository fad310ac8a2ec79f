"""The real-code runtime: the simulated environment around a team's real agent code.

A :class:`Runtime` keeps simulating what the environment does: the scenario's fault plan for the seed, the keyed
draws, and a twin of the fleet's shared state built from the simulator's own classes (the API token bucket and daily
quota, each worker's credentials).  Each real call that reaches a binding is identified as the simulator identifies its
calls (:mod:`fleetchaos.real.scope`) and decided by the simulator's own :meth:`fleetchaos.sim.calls.CallModel.decide`,
so a call meets the same faults as the simulated call for the same seed, whatever order real calls arrive in.  What
really took effect goes to the same :class:`~fleetchaos.sim.ledger.TaskRecord` the oracle and the metrics read.

Fault kinds that need the simulator's worker topology (:data:`SIM_ONLY`) and providers with a declared capacity (a
queue in arrival order, racy across real threads) stay simulation-only; a scenario with either is refused before
anything runs.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Hashable, Iterator
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.real.clocks import LoopClock, VirtualClock, installed
from fleetchaos.real.context import ACTIVE, active_runs
from fleetchaos.real.decision import Decision
from fleetchaos.real.determinism import CallEntry
from fleetchaos.real.fault_text import injected_fault
from fleetchaos.real.faults import UnboundCall
from fleetchaos.real.injections import OK, InjectionCounter, InjectionReport
from fleetchaos.real.scope import SCOPE, TaskInput, TaskScope
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim import _rng
from fleetchaos.sim.assembly import assemble
from fleetchaos.sim.calls import OVERFLOWED, CallOutcome
from fleetchaos.sim.kinds import MASKING, fault_kind
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.plan import LastFailure
from fleetchaos.sim.state import NodeState
from fleetchaos.sim.state_kinds import sim_only
from fleetchaos.sim.waste import RetryWatch
from fleetchaos.sim.workload import arrivals

__all__ = ["CLAIMS", "SIM_ONLY", "Runtime", "check_real_scenario", "injected_fault", "load_real_scenario"]

#: Fault kinds real-code mode leaves to the simulator (their handler's ``real_code`` is False):
#: shared branches that single-process real code does not have, or a change only in how a
#: simulated envelope reads.
SIM_ONLY = sim_only()

#: What a task's claim may be.
CLAIMS = ("success", "partial", "failed", "escalated", "dead_lettered")

S_GLOBAL_RANDOM = _rng.stream_id("real:global-random")


def check_real_scenario(spec: Scenario, ref: str) -> None:
    """Refuse a scenario real-code mode cannot run, with one message naming the field, value and fix."""
    refused = sim_only()  # read now: a state kind registered later is checked too
    for i, fault in enumerate(spec.faults):
        if fault.kind in refused:
            raise UserError(
                f"{ref}: faults[{i}].kind: {fault.kind} is simulation-only in real-code mode (got {fault.kind}); "
                f"run it in the simulator, or drop it from the scenario for real runs (simulation-only: {', '.join(refused)})"
            )
    if spec.fleet.providers:  # calls queue for a provider in arrival order: real threads would decide that order
        provider_names = ", ".join(p.name for p in spec.fleet.providers)
        raise UserError(
            f"{ref}: fleet.providers: providers with a declared capacity are simulation-only in real-code mode "
            f"(got {provider_names}); run the scenario in the simulator, or drop fleet.providers (and its overloaded faults) "
            "for real runs"
        )
    workload = spec.workload
    if workload.clients is not None and workload.arrivals is None:
        raise UserError(
            f"{ref}: workload.clients: real-code mode runs open-loop arrivals (got clients {workload.clients}); "
            "use tasks_per_day or explicit arrivals for real runs"
        )
    for t, template in enumerate(workload.templates):
        names = [s.tool for s in template.steps]
        for tool in names:
            if names.count(tool) > 1:
                raise UserError(
                    f"{ref}: workload.templates[{t}].steps: tool {tool!r} appears {names.count(tool)} times in template "
                    f"{template.name!r}; real-code mode maps a call to its step by tool name, so give each step its own tool"
                )


def load_real_scenario(scenario: Scenario | str) -> tuple[Scenario, str]:
    """(the scenario, how to name it) from a Scenario, a catalogue name or a path; checked for real-code mode."""
    from fleetchaos.scenario.load import load_scenario

    if isinstance(scenario, Scenario):
        spec, ref = scenario, scenario.name
    elif isinstance(scenario, str) or hasattr(scenario, "__fspath__"):
        ref = str(scenario)
        spec = load_scenario(ref)
    else:
        raise UserError(
            f"scenario: expected a catalogue name, a scenario file or a Scenario, got {type(scenario).__name__}"
        )
    check_real_scenario(spec, ref)
    return spec, ref


class Runtime:
    """The environment of one real run: fault plan, keyed draws, a twin of the fleet's state, the ledger.

    Use it as a context manager (``with Runtime(...) as rt:``, which installs the sync
    virtual clock in this thread), or let :func:`fleetchaos.real.run_real` drive it.  In
    a task scope (``with rt.task(task) as scope:``) every call of a bound tool is decided
    and recorded.
    """

    def __init__(
        self,
        scenario: Scenario | str,
        *,
        seed: int,
        errors: str = "structured",
        bindings: Any = None,
        clock: str = "virtual",
        timing: str | None = None,
    ):
        """Build the run's environment for ``seed``.

        ``clock`` is ``"virtual"`` (the default) or ``"real"`` (the escape hatch for code
        that breaks under patched time).  ``timing="simulated"`` (the default with a
        virtual clock) makes each call take its simulated duration; ``"measured"`` (the
        default with the real clock) moves time only by the code's own waits.
        """
        from fleetchaos.real.bindings import Bindings

        if clock not in ("virtual", "real"):
            raise UserError(f"clock: must be 'virtual' or 'real', got {clock!r}")
        timing = timing or ("simulated" if clock == "virtual" else "measured")
        if timing not in ("simulated", "measured"):
            raise UserError(f"timing: must be 'simulated' or 'measured', got {timing!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise UserError(f"seed: must be a whole number >= 0, got {seed!r}")
        self.spec, self.ref = load_real_scenario(scenario)
        self.seed = seed
        self.errors = errors
        self.bindings = bindings if bindings is not None else Bindings()
        self.clock_kind = clock
        self.timing = timing
        self.assembly = assembly = assemble(self.spec, seed, NodeState, clock=self.now)
        self.plan, self.nodes, self.calls = assembly.plan, assembly.nodes, assembly.calls
        self.journal, self.run_key = assembly.journal, assembly.run_key
        self.tokeniser = assembly.tokeniser
        self.templates = {t.name: t for t in assembly.templates}
        self.model_tools = frozenset(r.tool for r in self.bindings.routes if r.model)  # its calls are turns (scope)
        # The checks a call's dispatch meets (a partition cutting the orchestrator off from the worker).
        self.dispatch_gates = tuple(
            (fault_kind(kind.name), gate) for kind in self.plan.kinds if (gate := kind.dispatch_gate(self.plan))
        )
        self.injections = InjectionCounter()
        self.records: list[TaskRecord] = []
        self.tools_used: set[str] = set()
        self.call_log: list[CallEntry] = []
        """Every decided call: who it is, what it met and when (what a run-twice check compares)."""
        self._lock = threading.RLock()
        self._clock: VirtualClock | LoopClock | None = None
        self._clock_thread: int | None = None
        self._real_start = time.perf_counter()
        self.unslept_s = 0.0
        """Virtual seconds of injected waits not slept: calls in threads other than the clock's."""
        self._stack: contextlib.ExitStack | None = None

    # -- activation ------------------------------------------------------------------------

    def __enter__(self) -> Runtime:
        self._stack = contextlib.ExitStack()
        clock = VirtualClock() if self.clock_kind == "virtual" else None
        self._stack.enter_context(self.activated(clock))
        return self

    def __exit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()

    @contextlib.contextmanager
    def activated(self, clock: VirtualClock | LoopClock | None) -> Iterator[Runtime]:
        """Make this run the one in force in this context: its clock installed, global ``random`` seeded.

        The global ``random`` module (SDK jitter, tenacity's jitter) is seeded from the run's
        seed and restored afterwards; faults never read it.
        """
        state = random.getstate()
        random.seed(_rng.key(self.seed, S_GLOBAL_RANDOM))
        token = ACTIVE.set(self)
        active_runs(+1)
        self._clock, self._clock_thread = clock, threading.get_ident()
        try:
            if clock is not None:
                with installed(clock):
                    yield self
            else:
                yield self
        finally:
            active_runs(-1)
            ACTIVE.reset(token)
            random.setstate(state)

    # -- time ----------------------------------------------------------------------------

    def now(self) -> float:
        """The run's time: virtual seconds, or real seconds since the run was built with the real clock."""
        clock = self._clock
        if clock is None:
            return time.perf_counter() - self._real_start
        return clock.now()

    def sleep_sync(self, seconds: float) -> None:
        """Wait an injected call's duration in sync code (virtual in the clock's thread; not at all elsewhere)."""
        if seconds <= 0:
            return
        if self._clock is not None and threading.get_ident() != self._clock_thread:
            with self._lock:
                self.unslept_s += seconds
            return
        time.sleep(seconds)

    def transport(self, inner: Any = None, *, module: Any = None) -> Any:
        """A chaos transport for httpx or httpx2 (``inner``'s module, else ``module``) over ``inner``."""
        from fleetchaos.real.transport import chaos_transport

        return chaos_transport(self.bindings, inner, module)

    # -- tasks ---------------------------------------------------------------------------

    def tasks(self, limit: int | None = None) -> list[TaskInput]:
        """The scenario's tasks for the seed, in arrival order (the first ``limit``)."""
        spec = self.spec
        fleet = spec.fleet
        names = [t.name for t in spec.workload.templates]
        out: list[TaskInput] = []
        for task in arrivals(spec.workload, self.seed, spec.duration_s, fleet.orchestrators, fleet.workers):
            if limit is not None and len(out) >= limit:
                break
            template = spec.workload.templates[task.template]
            out.append(
                TaskInput(
                    id=task.id,
                    template=names[task.template],
                    title=str(task.title),
                    arrival_s=task.arrival_s,
                    worker=task.id % fleet.workers,
                    orchestrator=task.orchestrator,
                    tools=tuple(s.tool for s in template.steps),
                    fan_out=tuple(s.fan_out for s in template.steps),
                )
            )
        return out

    @contextlib.contextmanager
    def task(self, task: TaskInput) -> Iterator[TaskScope]:
        """Work on ``task``: calls in this context are its calls; its record is kept when the scope ends."""
        tpl = self.templates[task.template]
        n = len(tpl.steps)
        rec = tpl.record(task.id, task.title, task.orchestrator, task.arrival_s)
        rec.worker = task.worker
        scope = TaskScope(
            runtime=self,
            task=task,
            record=rec,
            template=tpl,
            task_key=_rng.task_key(self.run_key, task.id),
            worker=task.worker,
            epochs=[0] * n,
            item_calls=[{} for _ in range(n)],
            unnamed=[0] * n,
            retries=RetryWatch(self.assembly.judge),
        )
        with self._lock:
            self.records.append(rec)
            self.tools_used.update(tpl.names)
        token = SCOPE.set(scope)
        try:
            yield scope
        finally:
            SCOPE.reset(token)
            rec.end_s = self.now()
            scope.retries.finished(rec)
            with self._lock:  # the task's workspace is cleaned up when it ends
                self.nodes[scope.worker].disk_used_mb -= scope.workspace_mb

    def set_claim(self, scope: TaskScope, word: str) -> None:
        """Record what the team's orchestrator claims for a task (an unknown word is a policy error)."""
        rec = scope.record
        if word not in CLAIMS:
            rec.policy_error = f"claim {word!r} is not one of {', '.join(CLAIMS)}; counted as failed"[:500]
            word = "failed"
        if word == "escalated":
            self.assembly.page(rec, 1)
        else:
            rec.claim = word

    def refresh_credentials(self) -> None:
        """The team's code refreshed the current task's worker credentials (or a bound refresh route was hit)."""
        scope = SCOPE.get()
        if scope is None:
            raise UnboundCall("refresh_credentials: called outside a task scope")
        with self._lock:
            self.nodes[scope.worker].refresh_credentials(self.now())
            scope.record.refreshes += 1

    # -- one call ------------------------------------------------------------------------

    def unbound(self, what: str, why: str) -> None:
        """A call that matched no binding: counted, then refused unless the bindings let it pass."""
        with self.injections.lock:
            self.injections.unbound[(what, why)] += 1
        if self.bindings.unbound == "refuse":
            raise UnboundCall(
                f"{what}: {why}; refused so that no call bypasses the fault plan "
                "(bind it, or pass Bindings(unbound='pass') to let such calls through untouched)"
            )

    def begin(
        self,
        tool: str,
        item: Hashable | None,
        *,
        attempt: int = 0,
        idempotency_key: str | None = None,
        prompt: str | None = None,
    ) -> Decision | None:
        """Decide one call of ``tool`` in the current task: the same decision the simulator makes for it.  A model
        call whose ``prompt`` (its messages as text) is past the window meets ``context_overflow``."""
        scope = SCOPE.get()
        if scope is None or scope.runtime is not self:
            self.unbound(tool, "called outside a task scope (with rt.task(task): ...)")
            return None
        tpl = scope.template
        try:
            si = tpl.names.index(tool)
        except ValueError:
            self.unbound(tool, f"not a step of template {tpl.name!r} ({', '.join(tpl.names)})")
            return None
        step = tpl.steps[si]
        rec = scope.record
        with self._lock:
            item_no, ordered = scope.item_no(si, item, step.fan_out, tool)
            if ordered:
                self.injections.order_keyed.add(tool)
            now = self.now()
            node = self.nodes[scope.worker]
            model, read = tool in self.model_tools, 0
            context = self.tokeniser.count(prompt) if model and prompt is not None else None
            layer = scope.layer_try(si, item_no) if attempt == 0 else None  # the team's own retry layer's try
            if attempt == 0 and layer is None:
                execution, new_epoch = scope.next_execution(si, item_no)
                scope.retries.calling(rec, (si, execution))
                if new_epoch:
                    read = scope.begin_execution(si, execution, model, bool(self.model_tools), node, now, context)
            else:
                execution = max(scope.item_calls[si].get(item_no, 0), 1)
                rec.transport_retries += 1
            step_key = _rng.step_key(scope.task_key, si, execution)
            rules = self.calls.rules_for(node, tpl, si)
            batch = scope.batches.get((si, execution))
            if batch is None:
                batch = self.calls.batch_failures(
                    rules[2], step.fan_out, scope.task_key, si, step_key, scope.worker, now
                )
                scope.batches[(si, execution)] = batch
            key = scope.call_key(step_key, item_no, attempt, layer)
            overflowed = context is not None and context > self.calls.context_window
            outcome = (
                self._cut_off(rec.orchestrator, scope.worker, now)
                or (OVERFLOWED if overflowed else None)
                or self.calls.decide(node, step, rules, scope.task_key, item_no, key, now, batch, scope.sources)
            )
            kind, duration, commits, retry_at = outcome
            if attempt == 0 and self.bindings.layers:
                self._count_layer_tries(rec, layer, kind.name if kind is not None else None)
            emitted = step.tokens if model or not self.model_tools else 0  # a bound model's calls emit them all
            rec.called(kind, emitted, step.result_tokens)
            if kind is not None:
                self.journal.fault(rec, kind.name, now, tool, scope.worker)
                if kind.stage != MASKING:  # a failure the caller sees (unless the client's own retry takes it back)
                    failure = LastFailure(kind.name, retry_at, si, (item_no,))
                    scope.retries.failed(rec, failure, (si, execution), item_no)
                    scope.layer_failed(si, item_no, tool, kind.name, key, layer)
            if (attempt or layer) and (kind is None or kind.stage == MASKING):  # the client's own retry got through
                scope.retries.absorbed(si, item_no)
            self.injections.drawn[tool, OK if kind is None else kind.name] += 1
            self.call_log.append(
                CallEntry(rec.id, tool, item_no, execution, attempt, OK if kind is None else kind.name, now, duration)
            )
        ids = (rec.id, si, item_no, execution)
        fault = injected_fault(outcome, tool, ids, scope.worker, tpl.names, now, self.seed)
        if fault is not None and kind is not None and kind.stage != MASKING:
            with self._lock:  # the error text the team's code hands its model joins the context
                rec.read(self.tokeniser.count(str(fault)))
        return Decision(
            self,
            tool,
            rec.id,
            si,
            item_no,
            execution,
            attempt,
            kind,
            duration,
            commits,
            fault,
            sleeps=self.timing == "simulated",
            idempotency_key=idempotency_key,
            modelled=(read, emitted) if model else None,
            context=(self.calls.context_window, context) if context is not None and kind is OVERFLOWED[0] else None,
        )

    def _count_layer_tries(self, rec: TaskRecord, layer: tuple[int, int, int] | None, kind: str | None) -> None:
        """The declared layers' tries, counted as the simulator counts them (nearest the tool first): a request
        enters the layers when its first call fails with a kind one of them retries (one try of each layer), and a
        layer's retry is one more try of it and of each layer under it.  An HTTP client's own retries are no
        declared layer's."""
        layers = self.bindings.layers
        if layer is None and (kind is None or not any(kind in each.on for each in layers)):
            return
        if rec.layer_tries is None:
            rec.layer_tries = [0] * len(layers)
        for level in range(len(layers) if layer is None else layer[0] + 1):
            rec.layer_tries[level] += 1

    def _cut_off(self, orchestrator: int, worker: int, now: float) -> CallOutcome | None:
        """A call across a partition: it fails after the connect timeout, having reached nothing."""
        for kind, gate in self.dispatch_gates:
            fails_in = gate(orchestrator, worker, now)
            if fails_in is not None:
                return (kind, fails_in, False, None)
        return None

    # -- what the injection points report -------------------------------------------------

    def fired(self, d: Decision) -> None:
        """An injection point realised a fault."""
        with self.injections.lock:
            self.injections.fired[d.tool, d.kind.name if d.kind else OK] += 1

    def met(self, d: Decision) -> None:
        """A fault reached the caller."""
        with self.injections.lock:
            self.injections.met[d.tool, d.kind.name if d.kind else OK] += 1

    def committed(self, d: Decision) -> None:
        """A call's side effect took effect (deduplicated by its idempotency key; void on incomplete input)."""
        scope = SCOPE.get()
        if scope is None or scope.record.id != d.task_id:
            return
        rec = scope.record
        step = scope.template.steps[d.step]
        with self._lock:
            if step.needs and rec.incomplete(step.needs):
                if (d.step, d.execution) not in scope.wrong_input_epochs:
                    scope.wrong_input_epochs.add((d.step, d.execution))
                    rec.wrong_input_steps += 1
                return
            key = d.idempotency_key
            if key is not None:
                if key in scope.idempotency:
                    rec.deduplicated += 1
                    return
                scope.idempotency.add(key)
            rec.commits[d.step][d.item] += 1
            if step.disk_mb:  # the write occupies the worker's disk until the task ends
                self.nodes[scope.worker].disk_used_mb += step.disk_mb
                scope.workspace_mb += step.disk_mb

    def usage(self, d: Decision, input_tokens: int, output_tokens: int) -> None:
        """A model call's response reported its ``usage`` (input and output tokens)."""
        if d.modelled is not None and (scope := SCOPE.get()) is not None and scope.record.id == d.task_id:
            with self._lock:  # the observed tokens replace the modelled ones
                scope.record.observed(d.modelled, input_tokens, output_tokens)

    def tool_error(self, d: Decision, error: BaseException) -> None:
        """The wrapped call raised on its own: nothing took effect (the team's code sees its own error)."""

    # -- results ---------------------------------------------------------------------------

    def injection_report(self) -> InjectionReport:
        """Per tool and kind: drawn, fired, met; and the calls that bypassed the bindings."""
        return self.injections.report(self.tools_used, self.seed)

    def clock_description(self) -> str:
        """Which clock ran, for reports."""
        if self._clock is None:
            return "real clock (measured timing)"
        extra = ""
        if isinstance(self._clock, LoopClock) and self._clock.blocking_sleeps:
            extra = f"; {self._clock.blocking_sleeps} blocking sleep(s) in the loop thread not slept"
        if self.unslept_s:
            extra += f"; {self.unslept_s:g} injected virtual s in worker threads not slept"
        return f"virtual clock ({self.timing} timing{extra})"
