"""One task of a real run: its ledger record and how its calls are identified.

A :class:`TaskScope` is what the run's context variable holds while the team's code
works on a task.  It maps each real call to the identifiers the simulator keys its draws
with (docs/ARCHITECTURE.md, "Determinism"): the step is the template's step whose tool is
the binding's; the item is the binding's extractor's integer (other values are numbered
in first-seen order, flagged "order-keyed"); the execution of a call is how many times
its item has been called in the task, so it does not depend on the order in which
threads call the items.  It equals the simulator's execution number when a retry
resumes after the items that succeeded (they are not called again) and when it restarts
the step (every item is called again).

A model call (a request of a route bound with ``model=True``: the provider's chat
completions) is a turn of the task's conversation.  An agent's loop calls its model turn
after turn, between its tool calls: a model call that follows no failure of the model
step is the conversation's next turn, new work; only one repeated after the step failed is
a retry.  A run that binds its model counts the conversation's turns and tokens on its
model calls alone (:meth:`TaskScope.begin_execution`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fleetchaos.real.faults import UnboundCall
from fleetchaos.sim import _rng
from fleetchaos.sim.kinds import FaultKind
from fleetchaos.sim.layers import LayerTry, next_layer_try, try_key
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.mcp_turns import REFRESH, REINIT, renew
from fleetchaos.sim.plan import RetryAt
from fleetchaos.sim.template import Template
from fleetchaos.sim.waste import RetryWatch

__all__ = ["SCOPE", "TaskInput", "TaskScope"]


class TaskInput(NamedTuple):
    """One task of the scenario's workload, as the team's entrypoint receives it."""

    id: int
    template: str
    title: str
    arrival_s: float
    """Virtual seconds after the run's start at which the task arrives."""
    worker: int
    """The worker whose state (credentials, tool installs) the task's calls meet: round-robin, ``id % workers``."""
    orchestrator: int
    tools: tuple[str, ...]
    """The template's tools, in step order."""
    fan_out: tuple[int, ...]
    """Items per step (parallel calls of a fan-out step)."""


@dataclass(eq=False)
class TaskScope:
    """A task in progress: its record, template, keys and the epochs of its steps."""

    runtime: Any
    task: TaskInput
    record: TaskRecord
    template: Template
    task_key: int
    worker: int
    epochs: list[int]
    """Per step, the most executions any of its items has had (the record's ``executions``)."""
    item_calls: list[dict[int, int]]
    retries: RetryWatch
    """The task's last failure and the retry in flight after it, for the judges."""
    names: list[dict[Hashable, int]] = field(default_factory=list)
    unnamed: list[int] = field(default_factory=list)
    sources: dict[tuple[int, int], int] = field(default_factory=dict)
    batches: dict[tuple[int, int], Mapping[int, FaultKind]] = field(default_factory=dict)
    idempotency: set[str] = field(default_factory=set)
    wrong_input_epochs: set[tuple[int, int]] = field(default_factory=set)
    workspace_mb: float = 0.0
    """Disk the task's committed writes occupy on its worker until the task ends."""
    turns: dict[int, int] = field(default_factory=dict)
    """Per model step, the conversation's turns its calls have served so far (1 until a second turn)."""
    layer_tries: dict[tuple[int, int], LayerTry] = field(default_factory=dict)
    """Per (step, item) whose last call failed as a declared retry layer retries: (the layer, its next try, the
    key of the request it retries), so the item's next call is that try."""
    layer_stack: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    """Per (step, item) inside the declared layers: each layer's (tries it has made past its first, the key of the
    request it is retrying), nearest the tool first."""

    @staticmethod
    def call_key(step_key: int, item: int, attempt: int, layer: LayerTry | None) -> int:
        """A call's key: the item's, an HTTP client's ``attempt``-th try of it, or a declared layer's try."""
        if attempt:
            return _rng.transport_key(_rng.call_key(step_key, item), attempt)
        if layer is not None:
            return try_key(*layer)
        return _rng.call_key(step_key, item)

    def layer_try(self, si: int, item: int) -> LayerTry | None:
        """The declared layer's try the next call of ``si``'s ``item`` is (None: a call of its own)."""
        return self.layer_tries.pop((si, item), None)

    def layer_failed(self, si: int, item: int, tool: str, kind: str, key: int, tried: LayerTry | None) -> None:
        """A call of ``si``'s ``item`` (keyed ``key``; ``tried``: the layer's try it was) failed with ``kind``: the
        item's next call is the declared layers' next try (:func:`~fleetchaos.sim.layers.next_layer_try`), if any."""
        layers = self.runtime.bindings.layers
        if not layers:
            return
        following, stack = next_layer_try(layers, tool, kind, key, tried, self.layer_stack.get((si, item), []))
        if following is None:
            self.layer_stack.pop((si, item), None)
        else:
            self.layer_stack[(si, item)] = stack
            self.layer_tries[(si, item)] = following

    def claim(self, word: str) -> None:
        """Set the task's claim: success, partial, failed, escalated or dead_lettered."""
        self.runtime.set_claim(self, word)

    def use_alternative(self, tool: str, item: int = 0) -> None:
        """The team's code switched ``tool``'s ``item`` to its next alternative source (a not-found fault)."""
        si = self.template.names.index(tool)
        self.sources[(si, item)] = self.sources.get((si, item), 0) + 1
        self.record.alternatives_used += 1

    def renew_mcp(self, session: bool) -> None:
        """The team's MCP client opened a new session (``session``) or listed the tools again after a failure: the
        failed step's session or list is renewed, as the simulator's ReinitSession or RefreshTools renews it.  Before
        any failure (a task's first ``initialize``) nothing is renewed."""
        last = self.retries.last
        if last is not None:
            renew(REINIT if session else REFRESH, last.step, self.sources)

    def item_no(self, si: int, item: Hashable | None, fan_out: int, tool: str) -> tuple[int, bool]:
        """(the item number of a call, whether it was numbered by arrival order)."""
        if isinstance(item, int) and not isinstance(item, bool):
            number, ordered = item, False
        elif item is None:  # no extractor: a single-item step is item 0; a fan-out step numbers its calls
            if fan_out == 1:
                return 0, False
            number = self.unnamed[si] % fan_out
            self.unnamed[si] += 1
            ordered = True
        else:
            if not self.names:
                self.names = [{} for _ in self.epochs]
            seen = self.names[si]
            number = seen.setdefault(item, len(seen))
            ordered = True
        if not 0 <= number < fan_out:
            raise UnboundCall(
                f"{tool}: item {number} of task {self.task.id} is outside the step's fan-out "
                f"(template {self.template.name!r} step {si} has items 0..{fan_out - 1}); fix the binding's item extractor"
            )
        return number, ordered

    def begin_execution(
        self, si: int, execution: int, model: bool, loop: bool, node: Any, now: float, context: int | None = None
    ) -> int:
        """A call begins the ``execution``-th execution of step ``si`` at ``now`` on ``node``: its bookkeeping, the
        retry it may be (judged), and the turn it takes; returns the context tokens the turn read.

        ``model``: the call is a model call; ``loop``: the run binds its model, so only
        model calls are turns (other steps' results and errors still join the context);
        ``context``: the tokens of the model call's own messages, when measured, which a
        retry is judged on (the context the record models otherwise).
        """
        rec = self.record
        last = self.retries.last
        if model:
            retry = last is not None and last.step == si  # a call repeated after its own failure
            turn = self.turns.get(si, 1)
            if execution > 1 and not retry:  # the conversation's next turn
                turn = self.turns[si] = turn + 1
                rec.extra_turns += 1
            rec.begin_execution(si, execution, turn)
        else:
            retry = execution > 1 and last is not None
            rec.begin_execution(si, execution)
        read = rec.input_tokens
        if model or not loop:
            rec.turn(1 if model else self.template.steps[si].tokens)
        if retry:
            rec.retries += 1
            tpl = self.template
            at = RetryAt(
                node,
                rec.id,
                rec.orchestrator,
                tpl,
                self.sources,
                rec.executions,
                now,
                context_tokens=rec.context_tokens if context is None else context,
            )
            self.retries.retry(rec, at, (si, execution))
        return rec.input_tokens - read

    def next_execution(self, si: int, item: int) -> tuple[int, bool]:
        """(the execution number of this call of ``item`` at step ``si``, whether the step's count grew)."""
        counts = self.item_calls[si]
        n = counts.get(item, 0) + 1
        counts[item] = n
        if n > self.epochs[si]:
            self.epochs[si] = n
            return n, True
        return n, False


#: The task the current context works on (None outside a task).
SCOPE: contextvars.ContextVar[TaskScope | None] = contextvars.ContextVar("fleetchaos_real_scope", default=None)
