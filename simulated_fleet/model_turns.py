"""The model-side recovery actions as the driver realises them: a repair turn, a re-prompt with the tool's schema, a
fallback model, a stream resume with idempotency.

A policy answers a failure with one of the actions of :data:`fleetchaos.sim.observation.MODEL_TURN_ACTIONS`; the
task loop makes a :class:`TurnPlan` of it for the step that failed, and the next dispatch, when it reaches that step,
decides the step's turn through :meth:`ModelTurns.decide` instead of the usual call decision.  Each is an ordinary
turn in every way but the one it changes: it reads the whole context (input tokens), emits the step's calls
(output tokens), goes through the fleet's model provider (its API bucket, its capacity) and can itself fail.

* **Repair turn**: the model is shown its rejected call and the error, and asked again.  After malformed output of
  its own (:data:`REPAIRABLE`: arguments that do not parse, a call cut at the length limit, an unknown tool, an
  empty turn) the call comes back valid with ``fleet.model.repair_valid_probability``, else the same fault again
  (a keyed draw of the turn's call); the model's other faults (a denial, a cut stream) and every tool fault are met
  as usual.  After any other failure it is the step's next turn, decided as usual.
* **Re-prompt with the schema**: a repair turn whose prompt also carries the tool's schema:
  ``fleet.model.schema_tokens`` join the context before the turn (and stay in it), and the call comes back valid
  with ``fleet.model.reprompt_valid_probability``.
* **Fallback model**: the turn goes to ``fleet.model.fallback``.  Its model-side faults are drawn from its own keyed
  stream (a refusal is deterministic for one model and request, so the first model's denial does not hold for the
  second), its denials at the primary's probability times ``denial_factor``; its tokens are counted apart
  (``TaskRecord.fallback_tokens``) and priced at its own prices; its own ``capacity``, when declared, serves the
  turn.  Without a fallback declared the turn goes to the same model again.
* **Stream resume**: after a cut stream, the calls of the cut step that had already committed (the truth the
  client's stream holds: their ids came back before the cut) are kept, not run again, so the ledger counts no
  duplicate; the others are emitted again.  A naive retry runs every one of them again.
* **Context compaction**: a turn of its own, before the retry, replaces the conversation after the system prompt
  by a summary (:mod:`fleetchaos.sim.compaction`); the retry is then an ordinary turn on the shorter context.

The wasted-retry judge reads the same draws (:meth:`ModelTurns.wasted`), so a repair that will pass is never
counted wasted and one that will not is.  Standard library only; no SimPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from fleetchaos.sim import _rng
from fleetchaos.sim.calls import S_COMMIT, CallModel, CallOutcome, StepRules
from fleetchaos.sim.capacity import build_providers
from fleetchaos.sim.compaction import Compaction
from fleetchaos.sim.fault_specs import HangingFault
from fleetchaos.sim.kinds import KINDS, TASK_STEP, FaultKind
from fleetchaos.sim.kinds_model import DETERMINISTIC_DENIAL, MODEL_KINDS, MODEL_OUTPUT_AGAIN
from fleetchaos.sim.mcp_turns import MCP_MODES, renew
from fleetchaos.sim.observation import CompactContext, FallbackModel, RepairTurn, RepromptWithSchema, ResumeStream
from fleetchaos.sim.plan import CallRule, LastFailure, RetryAt
from fleetchaos.sim.state import NodeView
from fleetchaos.sim.template import Step

if TYPE_CHECKING:
    from fleetchaos.sim.config import FleetSpec
    from fleetchaos.sim.ledger import TaskRecord
    from fleetchaos.sim.truth import AttemptReport

#: The model's own malformed output, which a repair turn or a re-prompt may fix: the model-side kinds whose retry is
#: wasted "into the same malformed model output" (their records say so).
REPAIRABLE = frozenset(k.name for k in MODEL_KINDS if k.waste is not None and k.waste.family == MODEL_OUTPUT_AGAIN)
#: Deterministic denials: the same model denies the same request on every try; another model may answer.
DENIALS = frozenset(k.name for k in MODEL_KINDS if k.waste is not None and k.waste.family == DETERMINISTIC_DENIAL)
#: The kind a stream resume acts on: the model-side kind whose outcome is unknown (its calls may have committed).
CUT_STREAM = next(k.name for k in MODEL_KINDS if k.outcome_unknown)
#: Every model-side kind: a fallback model draws these from its own stream.
MODEL_KIND_NAMES = frozenset(kind.name for kind in MODEL_KINDS)

REPAIR, REPROMPT, FALLBACK, RESUME, COMPACT = "repair", "reprompt", "fallback", "resume", "compact"
#: Each action's mode, the key of ``TaskRecord.model_turns``.
MODES: Mapping[type, str] = {
    RepairTurn: REPAIR,
    RepromptWithSchema: REPROMPT,
    FallbackModel: FALLBACK,
    ResumeStream: RESUME,
    CompactContext: COMPACT,
    **MCP_MODES,  # a new MCP session, a fresh tool list: fleetchaos.sim.mcp_turns
}

S_REPAIR = _rng.stream_id("model:repair_valid")
S_FALLBACK = _rng.stream_id("model:fallback")


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """The turn a model-side action asks for: of step ``step``, in ``mode``, after its last turn met ``kind``."""

    step: int
    mode: str
    kind: str | None
    """The failure the step's last turn met (the truth; None when a format showed a completed dispatch as failed)."""
    kept: tuple[int, ...] = ()
    """Items of the step a stream resume keeps: their calls committed before the cut."""


class ModelTurns:
    """One run's model-side recovery: its settings, the fallback's provider, and the turns' decisions."""

    __slots__ = (
        "_split",
        "calls",
        "compaction",
        "denial_factor",
        "fallback",
        "provider",
        "repair_p",
        "reprompt_p",
        "schema_tokens",
    )

    def __init__(self, fleet: FleetSpec, calls: CallModel):
        model = fleet.model
        self.calls = calls
        self.repair_p = model.repair_valid_probability
        self.reprompt_p = model.reprompt_valid_probability
        self.schema_tokens = model.schema_tokens
        self.fallback = model.fallback
        self.denial_factor = self.fallback.denial_factor if self.fallback is not None else 1.0
        capacity = self.fallback.capacity if self.fallback is not None else None
        self.provider = build_providers([capacity], {})[0] if capacity is not None else None
        self.compaction = Compaction(fleet, calls)
        # id(rules) -> (rules, the tool-side rules, the model-side persistent rules, the model-side transient rules)
        self._split: dict[int, tuple[StepRules, StepRules, tuple[CallRule, ...], tuple[CallRule, ...]]] = {}

    def plan(
        self, action: object, report: AttemptReport, rec: TaskRecord, sources: dict[tuple[int, int], int]
    ) -> TurnPlan | None:
        """The turn ``action`` asks for after ``report`` (None when no step failed), counted on ``rec``; an MCP
        renewal is made now, in the task's ``sources``."""
        mode = MODES[type(action)]
        renew(mode, report.failed_step, sources)
        counts = rec.model_turns if rec.model_turns is not None else {}
        counts[mode] = counts.get(mode, 0) + 1
        rec.model_turns = counts
        if report.failed_step < 0:
            return None
        kept: tuple[int, ...] = ()
        if mode == RESUME:
            cut = {item for item, kind in report.item_failures if kind == CUT_STREAM}
            kept = tuple(item for item in report.committed_items if item in cut)
        return TurnPlan(report.failed_step, mode, report.failure, kept)

    def begin(self, turn: TurnPlan, rec: TaskRecord) -> tuple[int, int]:
        """Before the turn: a re-prompt's schema joins the context; returns the tokens counted so far."""
        if turn.mode == REPROMPT:
            rec.context_tokens += self.schema_tokens
        return rec.tokens, rec.input_tokens

    def end(self, turn: TurnPlan, rec: TaskRecord, before: tuple[int, int]) -> None:
        """After the turn's calls: a fallback model's tokens are counted apart, for its prices."""
        if turn.mode == FALLBACK and self.fallback is not None:
            rec.fallback_tokens += rec.tokens - before[0]
            rec.fallback_input_tokens += rec.input_tokens - before[1]

    def _rules(self, rules: StepRules) -> tuple[StepRules, tuple[CallRule, ...], tuple[CallRule, ...]]:
        """``rules`` split into the tool side (every stage, the model-side kinds left out) and the model side."""
        split = self._split.get(id(rules))
        if split is None:
            persistent, transient, *rest = rules
            tool = cast(
                StepRules,
                (
                    tuple(r for r in persistent if r.kind not in MODEL_KIND_NAMES),
                    tuple(r for r in transient if r.kind not in MODEL_KIND_NAMES),
                    *rest,
                ),
            )
            model_p = tuple(r for r in persistent if r.kind in MODEL_KIND_NAMES)
            model_t = tuple(r for r in transient if r.kind in MODEL_KIND_NAMES)
            split = self._split[id(rules)] = (rules, tool, model_p, model_t)  # rules kept: its id stays its own
        return split[1], split[2], split[3]

    def _valid_p(self, turn: TurnPlan) -> float | None:
        """The chance the turn's call comes back valid, for a repair of the model's own malformed output; else None."""
        if turn.kind not in REPAIRABLE:
            return None
        if turn.mode == REPAIR:
            return self.repair_p
        return self.reprompt_p if turn.mode == REPROMPT else None

    def decide(
        self,
        turn: TurnPlan,
        node: NodeView,
        step: Step,
        rules: StepRules,
        task_key: int,
        item: int,
        key: int,
        now: float,
        batch_failed: Mapping[int, FaultKind],
        sources: dict[tuple[int, int], int],
        waited: float = 0.0,
    ) -> CallOutcome:
        """What item ``item``'s call meets in ``turn`` (:meth:`CallModel.decide`'s arguments and answer)."""
        calls = self.calls
        valid_p = self._valid_p(turn)
        fallback = turn.mode == FALLBACK and self.fallback is not None
        if valid_p is None and not fallback:
            return calls.decide(node, step, rules, task_key, item, key, now, batch_failed, sources, waited)
        tool, model_p, model_t = self._rules(rules)
        if valid_p is not None:
            if _rng.draw(key, S_REPAIR) >= valid_p:  # the model's output is malformed again
                kind = KINDS[cast(str, turn.kind)]
                return kind, calls.call_times(node, step, key, now)[0] + (kind.fail_fast_s or 0.0), False, None
            met = self._model_fault(model_p, model_t, node, step, task_key, item, key, now, sources, REPAIRABLE, 0)
        else:
            met = self._model_fault(model_p, model_t, node, step, task_key, item, key, now, sources, (), S_FALLBACK)
        if met is not None:
            return met
        via = self.provider if fallback else None
        return calls.decide(node, step, tool, task_key, item, key, now, batch_failed, sources, waited, via)

    def _model_fault(
        self,
        persistent: tuple[CallRule, ...],
        transient: tuple[CallRule, ...],
        node: NodeView,
        step: Step,
        task_key: int,
        item: int,
        key: int,
        now: float,
        sources: dict[tuple[int, int], int],
        skip: frozenset[str] | tuple[()],
        salt: int,
    ) -> CallOutcome | None:
        """The model-side fault the turn meets (the model's own keyed draws, salted for the fallback), else None."""
        calls = self.calls
        worker = node.index
        for rule in persistent:
            if rule.kind not in skip and self._denied(rule, task_key, step, item, worker, now, sources, salt):
                return rule.info, calls.call_times(node, step, key, now)[0] + rule.fail_s, False, None
        salted = key ^ salt
        for rule in transient:
            if rule.kind in skip:
                continue
            p = rule.constant if rule.constant is not None else rule.probability_at(now, worker)
            if p > 0.0 and _rng.draw(salted, rule.stream) < p:
                kind = rule.info
                if not kind.outcome_unknown:
                    return kind, calls.call_times(node, step, key, now)[0] + rule.fail_s, False, None
                hangs = cast(HangingFault, rule.spec)  # its stage's model has these fields (a test checks it)
                committed = _rng.draw(salted, S_COMMIT ^ rule.stream) < hangs.committed_probability
                return kind, hangs.timeout_s, committed, None
        return None

    def _denied(
        self,
        rule: CallRule,
        task_key: int,
        step: Step,
        item: int,
        worker: int,
        now: float,
        sources: dict[tuple[int, int], int],
        salt: int,
    ) -> bool:
        """A persistent model-side fault hits the turn: the primary's draw, or the fallback's own (salted) draw at
        its own probability for a denial."""
        if not salt or rule.kind not in DENIALS or rule.info.persistent_scope != TASK_STEP:
            return self.calls.persistent_hit(rule, task_key ^ salt, step, item, worker, now, sources)
        p = rule.probability_at(now, worker) * self.denial_factor
        return p > 0.0 and _rng.draw(_rng.persistent_key(task_key ^ salt, step.index), rule.stream) < p

    def wasted(self, turn: TurnPlan, last: LastFailure, retry: RetryAt, task_key: int, step_key: int) -> bool | None:
        """Whether the cause of ``last`` still holds for a retry that is ``turn`` (the same draws :meth:`decide`
        will make), or None when the turn changes nothing the usual judge reads."""
        if turn.step != last.step:
            return None
        step = retry.tpl.steps[last.step]
        if turn.mode == RESUME and last.kind == CUT_STREAM and set(last.items) <= set(turn.kept):
            return False  # every cut call had committed and is kept: nothing is sent again
        valid_p = self._valid_p(turn)
        if valid_p is not None and last.kind == turn.kind:
            return any(_rng.draw(_rng.call_key(step_key, item), S_REPAIR) >= valid_p for item in last.items)
        if turn.mode == FALLBACK and self.fallback is not None and last.kind in MODEL_KIND_NAMES:
            rules = self.calls.rules_for(retry.node, retry.tpl, last.step)
            _, model_p, model_t = self._rules(rules)
            for item in last.items:
                key = _rng.call_key(step_key, item)
                met = self._model_fault(
                    model_p, model_t, retry.node, step, task_key, item, key, retry.now, retry.sources, (), S_FALLBACK
                )
                if met is not None and met[0] is not None and met[0].name == last.kind:
                    return True
            return False
        return None


__all__ = [
    "COMPACT",
    "CUT_STREAM",
    "DENIALS",
    "FALLBACK",
    "MODEL_KIND_NAMES",
    "MODES",
    "REPAIR",
    "REPAIRABLE",
    "REPROMPT",
    "RESUME",
    "ModelTurns",
    "TurnPlan",
]
