"""The parity run's driver: the simulator's world decides each call, the team's tool makes it.

:class:`Driver` is the injector the team's bindings meet during a parity run and the log both runs keep: for
each decided call of a tool the team handed over, it calls the tool (``tools[name](call)``) with the decision
forced at the tool's binding, reads what the tool surfaced, and tells the world what really happened.  A tool
with declared retry layers of its own (``Bindings(layers=...)``, one or stacked) makes all of the layers' tries
of a call in one call of the tool: the simulated layers decide their tries first (keyed as always), and the
tool's binding meets them in order as its own retries call it again; a tool whose retries make more or fewer
tries than its declared layers is named in the log.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple

from fleetchaos.real.context import ACTIVE
from fleetchaos.real.decision import Decision
from fleetchaos.real.faults import Fault, UnboundCall
from fleetchaos.real.observe import Surface, surface_of
from fleetchaos.real.runtime import injected_fault
from fleetchaos.sim import _rng
from fleetchaos.sim.calls import CallOutcome
from fleetchaos.sim.kinds import KINDS, FaultKind
from fleetchaos.sim.layers import LayerTry, next_layer_try, try_key

__all__ = ["Call", "Driver"]

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


class Driver:
    """The parity run's injector and call log: it makes each decided call on the team's tool."""

    def __init__(self, tools: Mapping[str, Callable[[Call], Any]] | None, seed: int, bindings: Any):
        self.tools = tools
        self.seed = seed
        self.bindings = bindings
        self.log: list[tuple] = []
        self.world: Any = None
        self._by_key: dict[int, Any] = {}
        self._scanned = 0
        self.pending: list[Decision] = []
        """The tries the tool's binding meets in the current real call, in order."""
        self.tries: list[Decision] = []
        """The declared layers' tries of the current call so far (the tool makes them all at the last)."""
        self.layers = bindings.layers if bindings is not None else ()
        self._next: LayerTry | None = None
        """The declared layers' next try of the current request (None: its next call is a request of its own)."""
        self._stack: list = []
        self._try = 0
        self._tool = ""
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

    # -- one call ------------------------------------------------------------------------

    def decided(
        self, node: Any, step: Any, task_key: int, item: int, key: int, outcome: CallOutcome, now: float
    ) -> CallOutcome:
        rec = self.record_of(task_key)
        si = step.index
        execution = rec.executions[si]
        kind, _, commits, _ = outcome
        tried = self._next if self._next is not None and key == try_key(*self._next) else None
        self._try = self._try + 1 if tried is not None else 0
        attempt = self._try  # which try of the request: 0 its first call
        following = None
        if kind is not None and self.layers:  # the declared layers' next try of this request, as the stack runs them
            following, self._stack = next_layer_try(self.layers, step.name, kind.name, key, tried, self._stack)
        self._next = following
        tool = self.tools.get(step.name) if self.tools is not None else None
        if tool is None:  # simulated as is: a tool the team did not hand over, or the plain simulated run
            self.log.append(("call", rec.id, step.name, item, execution, attempt, _name(kind), commits, ""))
            return outcome
        if tried is None:
            self.tries = []
        d = self._decision(rec, node, step, item, execution, attempt, outcome, now)
        self.tries.append(d)
        if following is not None:
            return outcome  # a declared layer tries again: the tool makes every try in one call, at its last
        tries, self.tries = self.tries, []
        return self._real(tool, rec, node, step, item, execution, tries, outcome, now)

    def _decision(self, rec: Any, node: Any, step: Any, item: int, execution: int, attempt: int, outcome, now: float):
        kind, duration, commits, _ = outcome
        names = self.world.templates[_template_index(self.world, rec.template)].names
        ids = (rec.id, step.index, item, execution)
        fault = injected_fault(outcome, step.name, ids, node.index, names, now, self.seed)
        d = Decision(self, step.name, rec.id, step.index, item, execution, attempt, kind, duration, commits, fault)
        d.sleeps = False
        return d

    def _real(
        self, tool: Callable, rec: Any, node: Any, step: Any, item: int, execution: int, tries: list, outcome, at
    ):
        """The team's tool makes the call: each try its binding meets is one of ``tries`` (the declared layer's);
        the last try is decided at ``at``."""
        kind, duration, _, retry_at = outcome
        now = at if len(tries) > 1 else self.world.env.now
        fault = tries[-1].fault
        self.pending = list(tries)
        self.notes = []
        call = Call(rec.id, str(rec.title), rec.template, step.name, step.index, item, execution, node.index)
        value, error = self._invoke(tool, call)
        for d in tries[:-1]:  # the layer's earlier tries, as the tool's own retry made them
            note = "" if d.fired else "the tool's own retry made fewer tries than its declared layer"
            self.log.append(("call", rec.id, step.name, item, execution, d.attempt, _name(d.kind), d.committed, note))
        if self.pending:
            self.notes.append(
                f"the tool's own retry stopped after {len(tries) - len(self.pending)} of {len(tries)} tries"
            )
        d = tries[-1]
        attempt = d.attempt
        self.pending = []
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
                "succeeded: a retry layer of its own, which the simulated run does not have (declare it: Bindings(layers=...))"
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

    def begin(
        self,
        tool: str,
        item: Hashable | None,
        *,
        attempt: int = 0,
        idempotency_key: str | None = None,
        prompt: str | None = None,
    ) -> Decision | None:
        if not self._reached and not self.pending:
            return None  # no call in progress
        if (self.pending and tool != self.pending[0].tool) or (not self.pending and tool != self._tool):
            return None  # another bound tool the real tool calls inside: not part of the step
        if not self.pending:
            self._again += 1
            self.notes.append(f"the tool called its binding again (call {attempt or 'repeat'}): passed untouched")
            return None
        d = self.pending.pop(0)  # the declared layer's next try, when the tool retries inside
        self._reached = True
        self._tool = tool
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
