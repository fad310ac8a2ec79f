"""The wasted-retry judge: does the cause of a task's last failure still hold when it is retried?

A metric definition, not part of what happens: the judge reads the truth at the moment a
retry is dispatched and, when the cause of the previous failure still holds, counts the
retry as wasted under the reason the kind's record gives
(:attr:`fleetchaos.sim.kinds.FaultKind.waste`).  The cause is judged against the fault's
truth, never against what an error format passes on: the credentials still expired, the
disk still full, the API token bucket still empty (whatever instant a retry-after hint
named), the day's quota still spent, the worker still down or cut off, the task's context
still past the model's window, the same persistent fault or batch items, and for a transient fault (a blip, a timeout) the
retried call's own keyed draws meeting it again at that instant (after a late reply, the
call's provider still answering it after ``fleet.late_reply_s``: :meth:`CallModel.slow_call`).  It changes nothing in
the run: no draw is consumed, no state is touched.  A retry after a refusal or a timeout
(:data:`fleetchaos.sim.kinds.SATURATION_KINDS`) on a step a provider with a declared
capacity serves is also wasted while that provider is still saturated at the retry's
dispatch: it would refuse a call then, or leave it waiting for a server past the call
timeout.

Each cause a record may name (:data:`fleetchaos.sim.kinds.CAUSES`) has one check here: a
state kind's own (``"state"``) asks the kind's handler
(:meth:`fleetchaos.sim.plan.StateKind.holds`); the others re-read the per-call rules.
:class:`RetryWatch` keeps one task's last failure and the retry after it, for the
simulator's task loop and a real-code runtime alike.

:func:`failed_retry_reason` classifies the other retry metric, ``failed_retries`` (a
retry whose dispatch failed again): what happened, not whether it could have been known.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

from fleetchaos.sim import _rng
from fleetchaos.sim.calls import CallModel
from fleetchaos.sim.fault_specs import BatchFault
from fleetchaos.sim.kinds import PROVIDER_SATURATED, SATURATION_KINDS, fault_kind
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.model_turns import ModelTurns, TurnPlan
from fleetchaos.sim.plan import LastFailure, RetryAt
from fleetchaos.sim.state import SharedCapacity
from fleetchaos.sim.state_kinds import state_kind

#: The reasons of ``failed_retries_by_reason``: how a failed retry relates to the failure before it.
SAME_AFTER_HINT = "same fault, after its retry-after instant"
SAME_BEFORE_HINT = "same fault, before its retry-after instant"
SAME_AGAIN = "same fault again"
OTHER_FAULT = "a different fault"
FAILED_RETRY_REASONS = (SAME_AFTER_HINT, SAME_BEFORE_HINT, SAME_AGAIN, OTHER_FAULT)


def failed_retry_reason(last: LastFailure, dispatched_at: float, failure: str) -> str:
    """Why a retry dispatched at ``dispatched_at`` after ``last`` failed with ``failure``, in one of four words.

    A pure function of the truth: a refusal that named its end (a 429, a spent quota)
    followed by the same refusal is split by whether the retry went before or after that
    instant (obedient waiters that all wake at the hinted instant and are refused
    together land in the first).
    """
    if failure != last.kind:
        return OTHER_FAULT
    if last.retry_at is None:
        return SAME_AGAIN
    return SAME_AFTER_HINT if dispatched_at >= last.retry_at else SAME_BEFORE_HINT


class RetryJudge:
    """Judges each retry of a run at the moment it is dispatched."""

    __slots__ = ("_checks", "calls", "run_key", "shared", "turns")

    def __init__(self, calls: CallModel, run_key: int, shared: SharedCapacity):
        """``calls`` decides the run's calls (its plan and rules), ``shared`` is the fleet's API capacity."""
        self.calls = calls
        self.run_key = run_key
        self.shared = shared
        self.turns: ModelTurns | None = None
        """The run's model-side recovery (set by the simulator's world), whose turns the judge reads."""
        self._checks: dict[str, Callable[[LastFailure, RetryAt], bool]] = {
            "state": self._state,
            "persistent": self._persistent,
            "batch": self._batch,
            "transient": self._transient,
            "provider_saturated": self._provider_saturated,
            "context": self._context,
        }

    def wasted(self, last: LastFailure, retry: RetryAt) -> str | None:
        """The waste reason when the cause of ``last`` still holds for ``retry``, else None.

        The kind's own cause first; then, for a kind a saturated provider produces, the
        provider serving the failed step still saturated.
        """
        waste = fault_kind(last.kind).waste
        if retry.turn is not None and self.turns is not None and waste is not None:
            # a model-side action's turn: the cause holds as the turn's own draws say (fleetchaos.sim.model_turns)
            task_key = _rng.task_key(self.run_key, retry.task_id)
            held = self.turns.wasted(
                cast(TurnPlan, retry.turn), last, retry, task_key, self._retry_step_key(last, retry)
            )
            if held is not None:
                return waste.reason if held else None
        if waste is not None and self._checks[waste.cause](last, retry):
            return waste.reason
        if last.kind in SATURATION_KINDS and self._provider_saturated(last, retry):
            return PROVIDER_SATURATED.reason
        return None

    def _state(self, last: LastFailure, retry: RetryAt) -> bool:
        """The state kind's own handler reads whether its cause still holds (:meth:`fleetchaos.sim.plan.StateKind.holds`)."""
        return state_kind(last.kind).holds(self.calls.plan, self.shared, last, retry)

    def _context(self, last: LastFailure, retry: RetryAt) -> bool:
        """The task's context is still past the model's window: the retry's first turn would be refused again."""
        return retry.context_tokens > self.calls.context_window

    def _persistent(self, last: LastFailure, retry: RetryAt) -> bool:
        """The same persistent fault would hit one of the failed items again."""
        task_key = _rng.task_key(self.run_key, retry.task_id)
        step = retry.tpl.steps[last.step]
        rules = self.calls.rules_for(retry.node, retry.tpl, last.step)[0]
        return any(
            r.kind == last.kind
            and self.calls.persistent_hit(r, task_key, step, item, retry.node.index, retry.now, retry.sources)
            for r in rules
            for item in last.items
        )

    def _batch(self, last: LastFailure, retry: RetryAt) -> bool:
        """A persistent batch rule would choose one of the failed items again (a fresh draw would not)."""
        task_key = _rng.task_key(self.run_key, retry.task_id)
        index = retry.node.index
        batch = self.calls.rules_for(retry.node, retry.tpl, last.step)[2]  # a batch kind's model has ``persistent``
        rules = [r for r in batch if cast(BatchFault, r.spec).persistent]
        chosen = self.calls.batch_failures(
            tuple(rules), retry.tpl.steps[last.step].fan_out, task_key, last.step, 0, index, retry.now
        )
        return any(item in chosen for item in last.items)

    def _retry_step_key(self, last: LastFailure, retry: RetryAt) -> int:
        """The key of the failed step's next execution: the one the retry will dispatch (its calls' draws)."""
        return _rng.step_key(_rng.task_key(self.run_key, retry.task_id), last.step, retry.executions[last.step] + 1)

    def _provider_saturated(self, last: LastFailure, retry: RetryAt) -> bool:
        """The provider serving the failed step would refuse one of the retried calls now, or answer it only
        after the call timeout (its queue and its curve, with the call's own keyed round trip and work)."""
        calls = self.calls
        node, step = retry.node, retry.tpl.steps[last.step]
        provider = calls.provider_of(step)
        if provider is None:
            return False
        limit = calls.call_timeout_s
        step_key = self._retry_step_key(last, retry)
        for item in last.items:
            latency, work, _ = calls.call_times(node, step, _rng.call_key(step_key, item), retry.now)
            if provider.saturated(retry.now, work, math.inf if limit is None else limit - latency):
                return True
        return False

    def _transient(self, last: LastFailure, retry: RetryAt) -> bool:
        """The retried call's own keyed draws meet the same transient fault again at the retry's instant.

        The retry's next execution of the failed step draws with the key that execution
        will have; the fault rule's probability (or the latency spike) is the one in force
        on the retry's worker when the retry is dispatched.
        """
        calls = self.calls
        node, tpl = retry.node, retry.tpl
        step = tpl.steps[last.step]
        rules = calls.rules_for(node, tpl, last.step)
        step_key = self._retry_step_key(last, retry)
        for item in last.items:
            key = _rng.call_key(step_key, item)
            met = calls.transient_fault(node, rules, key, retry.now) or calls.slow_call(node, step, key, retry.now)
            if met is not None and met.name == last.kind:
                return True
        return False


class RetryWatch:
    """One task's retries as the judges see them: its last failure, and the retry in flight after it.

    The simulator's task loop and a real-code runtime's task scope keep one each:
    :meth:`retry` when a retry after :attr:`last` is dispatched (judged wasted or not),
    :meth:`ended` when the retry ends, so a retry that failed again is counted in
    ``failed_retries`` with its reason.  In the simulator a retry is a dispatch, ended
    when the dispatch ends.  In real code it is the repeated execution of a step (its
    items' calls, an HTTP client's own tries included): :meth:`retry` names it
    (``execution``), a failure of one of its calls marks it failing (:meth:`failed`), a try
    of the client's own that gets through takes its item's failure back (:meth:`absorbed`:
    the caller never saw it, as a simulated transport layer's retries are never seen), and
    a call of any other execution, or the task's end, ends it (:meth:`calling`,
    :meth:`finished`), so a later first failure of the task is not taken for the retry
    failing again.
    """

    __slots__ = ("execution", "failing", "judge", "last", "retrying")

    def __init__(self, judge: RetryJudge):
        self.judge = judge
        self.last: LastFailure | None = None
        """The task's last failure, until a retry after it is dispatched."""
        self.retrying: tuple[LastFailure, float] | None = None
        """The failure the retry in flight follows and the instant it was dispatched."""
        self.execution: tuple[int, int] | None = None
        """Real code: the (step, execution) the retry in flight repeats; None in the simulator."""
        self.failing: dict[int, str] = {}
        """Real code: the items of the retry in flight whose calls failed, with the kind."""

    def retry(self, rec: TaskRecord, retry: RetryAt, execution: tuple[int, int] | None = None) -> None:
        """A retry after :attr:`last` is dispatched (in real code: step execution ``execution`` began):
        wasted when its cause still holds; watched until it ends."""
        last = self.last
        assert last is not None, "a retry follows a failure"
        reason = self.judge.wasted(last, retry)
        if reason is not None:
            rec.note_wasted(reason)
        self.retrying = (last, retry.now)
        self.execution = execution
        self.last = None

    def ended(self, rec: TaskRecord, failure: str | None) -> None:
        """The retry in flight ended, failing with ``failure`` (None: it did not fail)."""
        retrying, self.retrying, self.execution = self.retrying, None, None
        self.failing = {}
        if retrying is not None and failure is not None:
            last, dispatched_at = retrying
            rec.note_failed_retry(failure, failed_retry_reason(last, dispatched_at, failure))

    # -- real code: a retry is a step's execution, ended by the calls around it ---------------

    def calling(self, rec: TaskRecord, execution: tuple[int, int]) -> None:
        """A call of step execution ``execution`` begins: a retry of another execution has ended."""
        if self.retrying is not None and execution != self.execution:
            self.finished(rec)

    def failed(self, rec: TaskRecord, failure: LastFailure, execution: tuple[int, int], item: int) -> None:
        """A call of ``execution`` for ``item`` failed: ``failure`` is the task's last, and the retry of that execution
        in flight is failing."""
        if self.retrying is not None and execution == self.execution:
            self.failing.setdefault(item, failure.kind)
        self.last = failure

    def absorbed(self, step: int, item: int) -> None:
        """A client's own try of ``step``'s ``item`` got through: the failure before it never reached the caller."""
        last = self.last
        if last is not None and last.step == step and item in last.items:
            self.last = None
        self.failing.pop(item, None)

    def finished(self, rec: TaskRecord) -> None:
        """The retry in flight ended (another execution began, or the task ended): failed if a call of it still is."""
        self.ended(rec, next(iter(self.failing.values()), None))
