"""Context compaction: a policy's ``CompactContext`` action as the driver realises it.

A conversation whose context is past the model's window is refused (``context_overflow``), and asking again
reads the same context.  A compaction shrinks it: a model turn reads the part of the conversation after the system
prompt (the tool results and error texts so far, at most a window of it) and writes a summary of
``fleet.model.compaction.summary_tokens`` (never longer than what it summarises) that replaces that part, keeping
the last ``keep_tokens`` of the conversation verbatim.  So, with S the system prompt, C the context and K the kept
tail (at most C - S), the part summarised is P = C - S - K and the context after it is S + min(summary, P) + K.

The turn is a model call like any other: it goes through the fleet's model provider (the API's token bucket, its
capacity, a crashed worker, expired credentials: :meth:`~fleetchaos.sim.calls.CallModel.decide` on a step of its
own, keyed by the task and the compaction's number), meets the model-side transient faults declared on the failed
step (an empty turn, a cut stream, a length stop), reads P (at most the window) as input tokens and writes the
summary as output tokens, and takes ``duration``.  A failed compaction leaves the context as it was: the retry
then meets the overflow again, and the wasted-retry judge, which reads the context at the retry, says so.

What is summarised is lost to the task: the steps whose results were in the context are noted on the ledger
(``TaskRecord.summarised``), and with ``loss_probability`` (a keyed draw) the summary dropped something the
answer needed (``TaskRecord.summary_lost``): a task that finishes with its answer resting on those results (no
step of them executed again since) is partial in truth (``TaskRecord.truth``), and the orchestrator, which knows
it compacted, claims ``claim`` for it (partial by default; ``success`` makes a lost summary a silent failure).
Standard library only; no SimPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleetchaos.sim import _rng
from fleetchaos.sim.calls import NO_ITEMS, CallModel, StepRules
from fleetchaos.sim.config import lognormal_params
from fleetchaos.sim.kinds_model import MODEL_KINDS
from fleetchaos.sim.template import Step

if TYPE_CHECKING:
    from fleetchaos.sim.config import FleetSpec
    from fleetchaos.sim.kind_record import FaultKind
    from fleetchaos.sim.ledger import TaskRecord
    from fleetchaos.sim.state import NodeView
    from fleetchaos.sim.template import Template

S_COMPACT = _rng.stream_id("model:compact")
S_COMPACT_LOSS = _rng.stream_id("model:compact_loss")
#: The compaction turn's name where a tool's would be: it goes where the model's turns go, not to a tool's provider.
COMPACTION_TURN = "compact_context"
_MODEL_KIND_NAMES = frozenset(kind.name for kind in MODEL_KINDS)


class Compaction:
    """One run's context compaction: its settings, its turn's step, and what one compaction does to a task."""

    __slots__ = ("_rules", "calls", "claim", "keep_tokens", "loss_p", "step", "summary_tokens", "window")

    def __init__(self, fleet: FleetSpec, calls: CallModel):
        spec = fleet.model.compaction
        self.calls = calls
        self.summary_tokens = spec.summary_tokens
        self.keep_tokens = spec.keep_tokens
        self.loss_p = spec.loss_probability
        self.claim = spec.claim
        self.window = fleet.model.context_window_tokens
        mu, sigma = lognormal_params(spec.duration.mean_s, spec.duration.cv)
        self.step = Step(
            index=-1,
            name=COMPACTION_TURN,
            fan_out=1,
            uses_api=True,
            writes_disk=False,
            disk_mb=0.0,
            tokens=self.summary_tokens,
            mean_s=spec.duration.mean_s,
            mu=mu,
            sigma=sigma,
            needs=(),
            pushes=False,
        )
        self._rules: dict[tuple[int, int, int], StepRules] = {}

    def rules(self, node: NodeView, tpl: Template, si: int) -> StepRules:
        """What the compaction of a task stopped at step ``si`` on ``node`` can meet: the step's model-side transient
        rules and the state kinds' gates of a model call (no tool's faults, no per-request denial)."""
        cache_key = (node.index, tpl.index, si)
        rules = self._rules.get(cache_key)
        if rules is None:
            transient = self.calls.rules_for(node, tpl, si)[1]
            model = tuple(rule for rule in transient if rule.kind in _MODEL_KIND_NAMES)
            rules = self._rules[cache_key] = ((), model, (), (), *self.calls.gates_for(node, self.step))
        return rules

    def compact(
        self, rec: TaskRecord, node: NodeView, tpl: Template, si: int, task_key: int, n: int, now: float
    ) -> tuple[FaultKind | None, float]:
        """The task's ``n``-th compaction, after its step ``si`` failed, starting at ``now`` on ``node``: the fault
        its turn met (None: the context is compacted) and the seconds it took."""
        key = _rng.key(task_key, S_COMPACT, n)
        fault, took, _, _ = self.calls.decide(
            node, self.step, self.rules(node, tpl, si), task_key, 0, key, now, NO_ITEMS, {}
        )
        system = tpl.system_tokens
        context = rec.context_tokens
        kept = min(self.keep_tokens, max(context - system, 0))
        part = max(context - system - kept, 0)
        summary = min(self.summary_tokens, part)
        read = min(part, self.window)
        rec.turns += 1
        rec.tokens += read
        rec.input_tokens += read
        if fault is not None:
            rec.compactions_failed += 1
            if fault.spends_tokens:
                rec.tokens += summary
            return fault, took
        rec.tokens += summary
        rec.context_tokens = system + summary + kept
        done = {(s, e) for s, (c, e) in enumerate(zip(rec.commits, rec.executions, strict=True)) if e and any(c)}
        rec.summarised = tuple(sorted(done.union(rec.summarised or ())))
        if _rng.draw(key, S_COMPACT_LOSS) < self.loss_p:
            rec.summary_lost = True
        return None, took


__all__ = ["COMPACTION_TURN", "Compaction"]
