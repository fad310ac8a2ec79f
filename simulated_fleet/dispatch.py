"""One dispatch: a task's steps run on one worker until one is seen as failed.

:meth:`Dispatcher.attempt` is a SimPy process fragment: per step it takes a tool slot,
asks :meth:`fleetchaos.sim.calls.CallModel.decide` what each item's call meets (one call
per item; a fan-out step's items run in parallel in the one slot), lets a transport
layer retry what it may, waits for the slowest call, releases the slot and writes what
really took effect to the task's ledger record.  It returns the dispatch's
:class:`~fleetchaos.sim.truth.AttemptReport`, the truth an error format renders.

Per tool call: one keyed decision and a handful of list appends; per step: one slot
request, one timeout and one release (the same event pattern as a bare SimPy model).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from functools import partial
from typing import cast

import simpy

from fleetchaos.sim import _rng
from fleetchaos.sim._rng import _GOLDEN, _M1, _M2, _MASK
from fleetchaos.sim.calls import NO_CLIENT, NO_ITEMS, OVERFLOWED, CallModel, CallOutcome, StepRules
from fleetchaos.sim.fault_specs import SourceFault
from fleetchaos.sim.fleet import Worker
from fleetchaos.sim.journal import Journal
from fleetchaos.sim.kinds import MASKING, SOURCE
from fleetchaos.sim.layers import layered_retry
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.model_turns import ModelTurns, TurnPlan
from fleetchaos.sim.plan import DispatchGate, FaultPlan
from fleetchaos.sim.template import Template
from fleetchaos.sim.transport import TransportRetry
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.workload import Task

#: What :meth:`Dispatcher.attempt` returns for a dispatch that saw every step through when the
#: format shows success as a bare "ok" (see ``formats.plain_success``): no report to build or render.
PLAIN_OK = AttemptReport(task_id=-1, worker=-1, start_step=0, failed_step=-1, step_names=())


class Dispatcher:
    """Runs dispatches for one world: the tool calls, their effects and the dispatch's report."""

    def __init__(
        self,
        env: simpy.Environment,
        plan: FaultPlan,
        calls: CallModel,
        journal: Journal,
        run_key: int,
        *,
        partial_step_ok: bool,
        plain_success: bool,
        report_masked: bool = False,
        transport: tuple[TransportRetry, ...],
        idempotent: bool,
        heartbeat_timeout_s: float | None,
    ):
        """``partial_step_ok``: a fan-out step with some failed items is hidden as "ok" (a tool that returns
        what it gathered: the format's ``partial_batch``, or the scenario's ``fleet.partial_batch``);
        ``plain_success`` skips the report of a dispatch that completed; ``transport`` and
        ``idempotent`` come from the policy; ``heartbeat_timeout_s`` is how long an
        orchestrator takes to notice a dispatch lost with a crashed worker (None: never)."""
        self.env = env
        self.plan = plan
        self.calls = calls
        self.journal = journal
        self.run_key = run_key
        self.partial_step_ok = partial_step_ok
        self.plain_success = plain_success
        self.report_masked = report_masked
        self.transport = transport
        # A first failure enters the layers when some layer retries its kind.
        self.transport_on: frozenset[str] = frozenset().union(*(layer.on for layer in transport))
        self.idempotent = idempotent
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.branch_heads = [0] * plan.git_branches
        # The state kinds' checks of a dispatch before it reaches its worker (a partition): usually none.
        self.dispatch_gates: tuple[tuple[str, DispatchGate], ...] = tuple(
            (kind.name, gate) for kind in plan.kinds if (gate := kind.dispatch_gate(plan)) is not None
        )
        self.call_timeout_s = calls.call_timeout_s
        self.turns: ModelTurns | None = None
        """The run's model-side recovery actions (the world sets it)."""
        self.on_orphans_done: Callable[[TaskRecord], None] | None = None
        """Called with a task's record when the last of its orphaned steps ends (the world hands it on then)."""

    def attempt(
        self,
        task: Task,
        tpl: Template,
        rec: TaskRecord,
        w: Worker,
        start: int,
        done: tuple[int, ...],
        sources: dict[tuple[int, int], int],
        workspace: dict[int, float],
        task_key: int,
        turn: TurnPlan | None = None,
    ) -> Generator[simpy.Event, object, AttemptReport | None]:
        """Run the task's steps from ``start`` on ``w`` until one is seen as failed (``task_key``:
        :func:`fleetchaos.sim._rng.task_key` of the task; ``turn``: the turn a model-side recovery action asked
        for, taken when the dispatch reaches its step, :mod:`fleetchaos.sim.model_turns`).

        Returns the dispatch's AttemptReport (:data:`PLAIN_OK` for a success the format
        shows as a bare "ok"), or None when the dispatch was lost with a crashed worker
        and the orchestrator has no dispatch timeout to notice.
        """
        env = self.env
        journal = self.journal
        calls = self.calls
        decide = calls.decide
        transport = self.transport
        transport_on = self.transport_on
        dispatched = env.now
        partial_ok = self.partial_step_ok
        steps = tpl.steps
        step_rules = calls.step_rules(w, tpl)
        masked: list[tuple[int, int, str]] = []
        for kind, gate in self.dispatch_gates:
            fails_in = gate(task.orchestrator, w.index, dispatched)
            if fails_in is not None:  # the dispatch never reaches the worker
                yield env.timeout(fails_in)
                journal.fault(rec, kind, dispatched, tpl.names[start], w.index)
                return self._report(task, tpl, w, start, start, kind, done, masked=masked)
        slots = w.slots
        can_crash = bool(w.crash_spans)
        tracing = journal.trace is not None
        lean = not can_crash and not tracing
        idempotent = self.idempotent
        executions = rec.executions
        all_commits = rec.commits
        window = calls.context_window
        sizes = calls.result_sizes if calls.result_sizes.sigma else None  # None: every result costs its mean
        turn_step = -1 if turn is None else turn.step
        turns = self.turns
        for si in range(start, len(steps)):
            step = steps[si]
            skip = done if si == start else ()
            turned = si == turn_step
            keeps_all = False
            step_decide = decide
            if turned:  # a model-side action's turn of this step (the schema joins the context first)
                assert turn is not None and turns is not None  # the world sets both together
                before = turns.begin(turn, rec)
                if turn.kept:  # a resumed stream keeps the calls that committed: not run, not redone
                    skip = tuple(sorted({*skip, *turn.kept}))
                    keeps_all = len(skip) >= step.fan_out
                step_decide = partial(turns.decide, turn)
            # TaskRecord.begin_execution(si, execution) inlined (a call costs more than its body; a real-code runtime
            # calls it): a step whose every item already took effect is redone (a simulated step is one turn).
            execution = executions[si] + 1
            executions[si] = execution
            rec.step_executions += 1
            commits = all_commits[si]
            if 0 not in commits and not keeps_all:
                rec.redone_steps += 1
            first: CallOutcome | None = None
            if step.tokens:  # TaskRecord.turn(step.tokens), inlined: the turn reads the context so far
                context = rec.context_tokens
                rec.turns += 1
                if context > window:  # refused before the model reads it (no tokens billed): no call is emitted
                    first = OVERFLOWED
                else:
                    rec.tokens += context
                    rec.input_tokens += context
            now = env.now
            wait = slots.acquire(now)
            waited = 0.0
            if wait is not None:
                limit = self.call_timeout_s
                if limit is None:
                    yield wait
                else:  # the call timeout counts from dispatch: a client may give up while the step queues
                    yield wait | env.timeout(limit)
                    if not wait.triggered:
                        return self._gave_up_queued(task, tpl, rec, w, start, si, skip, wait, sources, masked)
                    waited = env.now - now
                now = env.now
            rules = step_rules[si]
            # _rng.step_key(task_key, si, execution), inlined (the same SplitMix64 arithmetic): once per step.
            z = ((task_key ^ (si << 40) ^ execution) + _GOLDEN) & _MASK
            z = ((z ^ (z >> 30)) * _M1) & _MASK
            z = ((z ^ (z >> 27)) * _M2) & _MASK
            step_key = z ^ (z >> 31)
            fan_out = step.fan_out
            batch_rules = rules[2]
            batch_failed = (
                calls.batch_failures(batch_rules, fan_out, task_key, si, step_key, w.index, now)
                if batch_rules and fan_out > 1
                else NO_ITEMS
            )
            # an earlier step this one reads is incomplete: its output is wrong
            garbage = rec.incomplete(step.needs) if step.needs else False
            if first is None and lean and fan_out == 1 and not skip and not step.pushes and not turned:
                # One call on a worker that cannot crash, untraced: the common case; on success, the general path's work.
                first = decide(w, step, rules, task_key, 0, step_key, now, NO_ITEMS, sources, waited)
                if first[0] is None:
                    rec.calls += 1
                    rec.tokens += step.tokens
                    rec.context_tokens += (
                        sizes.of(step.result_tokens, task_key, si, 0, step_key) if sizes else step.result_tokens
                    )
                    yield env.timeout(first[1] if first[1] > 0.0 else 0.0)  # as longest below
                    slots.release()
                    if step.writes_disk:
                        w.disk_used_mb += step.disk_mb
                        workspace[w.index] = workspace.get(w.index, 0.0) + step.disk_mb
                    if garbage:
                        rec.wrong_input_steps += 1
                    else:
                        commits[0] += 1
                    if idempotent and si in tpl.append_steps:
                        rec.deduplicate(si)
                    continue
            longest = 0.0
            # Built only when needed: most steps have every call succeed.
            failed: list[tuple[int, str]] | None = None
            hollow: list[int] | None = None  # looked successful, took no effect (masked failures)
            committed_anyway: list[int] | None = None
            pushes: list[tuple[int, int, int]] | None = None
            succeeded: list[int] = []
            # item -> call duration, for a crash mid-step (only a worker that can crash needs it)
            finish: dict[int, float] | None = {} if can_crash else None
            token_at = None
            traced: list[list] | None = [] if tracing else None  # [item, duration, kind] per call
            called = 0
            for item in range(fan_out):
                if skip and item in skip:
                    continue
                called += 1
                key = step_key ^ (item << 32)  # _rng.call_key(step_key, item)
                if first is None:
                    fault, duration, committed, retry_at = step_decide(
                        w, step, rules, task_key, item, key, now, batch_failed, sources, waited
                    )
                else:  # decided above: the one call of the step failed
                    fault, duration, committed, retry_at = first
                if fault is not None and transport and fault.name in transport_on:
                    fault, duration, committed, retry_at = layered_retry(
                        transport,
                        calls,
                        journal,
                        rec,
                        (fault, duration, committed, retry_at),
                        w,
                        step,
                        rules,
                        task_key,
                        item,
                        key,
                        now,
                        batch_failed,
                        sources,
                        garbage,
                    )
                if duration > longest:
                    longest = duration
                if traced is not None:
                    traced.append([item, duration, None if fault is None else fault.name])
                if finish is not None:
                    finish[item] = duration
                if fault is None:
                    rec.tokens += step.tokens
                    if step.pushes:
                        branch = _rng.branch_of(task_key, len(self.branch_heads))
                        if pushes is None:
                            pushes = []
                        pushes.append((item, branch, self.branch_heads[branch]))
                    else:
                        succeeded.append(item)
                    continue
                if fault.spends_tokens:
                    rec.tokens += step.tokens
                if fault.stage == MASKING:
                    masked.append((si, item, fault.name))
                    journal.fault(rec, fault.name, now, step.name, w.index)
                    if hollow is None:
                        hollow = []
                    hollow.append(item)
                else:
                    if failed is None:
                        failed = []
                    failed.append((item, fault.name))
                    if committed:
                        if committed_anyway is None:
                            committed_anyway = []
                        committed_anyway.append(item)
                    if retry_at is not None and (token_at is None or retry_at < token_at):
                        token_at = retry_at
            rec.calls += called
            if turned and turns is not None and turn is not None:
                turns.end(turn, rec, before)
            took_effect = succeeded + committed_anyway if committed_anyway is not None else succeeded
            if finish is not None:
                crash_at = w.next_crash_after(now)
                if crash_at < now + longest:
                    # Calls that finished before the crash took effect; the rest, and the report, are lost.
                    if not garbage:
                        for item in took_effect:
                            if finish[item] <= crash_at - now:
                                commits[item] += 1
                    if traced is not None:  # calls still running when the worker went down were lost with it
                        for call in traced:
                            if call[1] > crash_at - now:
                                call[1], call[2] = crash_at - now, "node_crash"
                        journal.calls(task.id, w.index, si, step.name, now, traced)
                    yield from self._lose_dispatch(rec, w, now, crash_at, step.name)
                    if self.heartbeat_timeout_s is None:
                        yield env.event()  # nobody will ever notice: the task is lost
                        return None
                    yield env.timeout(self.heartbeat_timeout_s)
                    return self._report(task, tpl, w, start, start, "node_crash", done, masked=masked)
            yield env.timeout(longest)
            slots.release()
            if pushes is not None:
                for item, branch, head in pushes:
                    if self.branch_heads[branch] == head:
                        self.branch_heads[branch] = head + 1
                        succeeded.append(item)
                    else:
                        if failed is None:
                            failed = []
                        failed.append((item, "git_push_conflict"))
                        if traced is not None:
                            for call in traced:
                                if call[0] == item:
                                    call[2] = "git_push_conflict"
                took_effect = succeeded + committed_anyway if committed_anyway is not None else succeeded
            if traced is not None:
                journal.calls(task.id, w.index, si, step.name, now, traced)
            if succeeded or hollow:  # the results that came back (or looked as if they did) join the conversation
                if sizes is None:
                    rec.context_tokens += step.result_tokens * (len(succeeded) + (len(hollow) if hollow else 0))
                else:
                    for item in succeeded + hollow if hollow else succeeded:
                        rec.context_tokens += sizes.of(step.result_tokens, task_key, si, item, step_key ^ (item << 32))
            if step.writes_disk and took_effect:
                written = step.disk_mb * len(took_effect)
                w.disk_used_mb += written
                workspace[w.index] = workspace.get(w.index, 0.0) + written
            if garbage:
                # Ran on incomplete inputs: what it did is wrong, so nothing took effect (as in
                # the transport layer's tries, and for calls that failed yet committed).
                if succeeded:
                    rec.wrong_input_steps += 1
            else:
                for item in took_effect:
                    commits[item] += 1
            if idempotent and si in tpl.append_steps:
                rec.deduplicate(si)
            if failed is None:
                continue
            failed.sort()
            for _item, kind in failed:
                journal.fault(rec, kind, now, step.name, w.index)
            looks_done = succeeded + hollow if hollow is not None else succeeded
            if partial_ok and looks_done:
                continue  # the tool said "ok" with what it gathered: silent partial work
            retry_after = None if token_at is None else max(0.0, token_at - env.now)
            return self._report(
                task,
                tpl,
                w,
                start,
                si,
                failed[0][1],
                tuple(sorted(set(skip) | set(looks_done))),
                retry_after=retry_after,
                item_failures=tuple(failed),
                masked=masked,
                alternatives=self._alternatives_left(rules, failed, sources, w.index, si),
                committed=tuple(committed_anyway) if committed_anyway is not None else (),
            )
        if self.plain_success and not (masked and self.report_masked):  # a hollow success the model may notice
            return PLAIN_OK
        return self._report(task, tpl, w, start, -1, None, (), masked=masked)

    def _gave_up_queued(self, task, tpl, rec, w, start, si, skip, request, sources, masked) -> AttemptReport:
        """The client's call timeout ran out while the step waited for a tool slot: every call of it timed out.

        A tool that cancels its work withdraws the request; otherwise the step stays queued
        and runs when a slot frees, as an orphan nobody waits for (:meth:`_orphan`).
        """
        step = tpl.steps[si]
        items = [i for i in range(step.fan_out) if i not in skip]
        if step.cancels:
            w.slots.cancel(request)
        else:
            rec.orphans += 1
            self.env.process(self._orphan(task, tpl, rec, w, si, items, request, sources))
        now = self.env.now
        for _item in items:
            self.journal.fault(rec, "timeout", now, step.name, w.index)
        return self._report(
            task,
            tpl,
            w,
            start,
            si,
            "timeout",
            tuple(skip),
            item_failures=tuple((i, "timeout") for i in items),
            masked=masked,
        )

    def _orphan(self, task, tpl, rec: TaskRecord, w: Worker, si: int, items, request, sources) -> Generator:
        """A step whose client gave up while it queued: when its slot comes it runs anyway, holds the slot
        for its calls and takes effect (disk writes and shared branches aside), with no one told."""
        env = self.env
        yield request
        step = tpl.steps[si]
        rules = self.calls.step_rules(w, tpl)[si]
        task_key = _rng.task_key(self.run_key, task.id)
        step_key = _rng.step_key(task_key, si, rec.executions[si])
        now = env.now
        longest = 0.0
        took_effect = []
        for item in items:
            fault, duration, committed, _ = self.calls.decide(
                w, step, rules, task_key, item, _rng.call_key(step_key, item), now, NO_ITEMS, sources, NO_CLIENT
            )
            rec.called(fault, step.tokens)
            longest = max(longest, duration)
            if fault is None or committed:
                took_effect.append(item)
            if fault is not None:
                self.journal.fault(rec, fault.name, now, step.name, w.index)
        yield env.timeout(longest)
        w.slots.release()
        if not rec.incomplete(step.needs):
            for item in took_effect:
                rec.commits[si][item] += 1
            if self.idempotent and si in tpl.append_steps:
                rec.deduplicate(si)
        rec.orphans -= 1
        if not rec.orphans and self.on_orphans_done is not None:
            self.on_orphans_done(rec)

    def _report(
        self,
        task,
        tpl,
        w,
        start,
        failed_step,
        failure,
        done_items,
        *,
        retry_after=None,
        item_failures=(),
        masked=(),
        alternatives=0,
        committed=(),
    ) -> AttemptReport:
        version, dropped = self._drift(w.index, self.env.now) if self.plan.drift[w.index] else (None, ())
        return AttemptReport(
            task_id=task.id,
            worker=w.index,
            start_step=start,
            failed_step=failed_step,
            step_names=tpl.names,
            failure=failure,
            fan_out=tpl.steps[failed_step].fan_out if failed_step >= 0 else 1,
            done_items=tuple(done_items),
            retry_after_s=retry_after,
            item_failures=tuple(item_failures),
            masked=tuple(masked),
            alternatives_left=alternatives,
            schema_version=version,
            dropped_fields=dropped,
            committed_items=committed,
        )

    def _lose_dispatch(self, rec: TaskRecord, w: Worker, now: float, crash_at: float, tool: str) -> Generator:
        """The worker crashes mid-step: calls that finished before the crash took effect,
        the rest did not, and no report leaves the worker."""
        yield self.env.timeout(crash_at - now)
        w.slots.release()
        self.journal.fault(rec, "node_crash", crash_at, tool, w.index)

    @staticmethod
    def _alternatives_left(rules: StepRules, failed, sources, worker: int, si: int) -> int:
        """Untried alternative sources for the items that failed with the first failure's kind, when it has them."""
        kind = failed[0][1]
        best = 0
        for rule in rules[0]:  # the persistent rules that apply here
            if rule.kind == kind and rule.info.persistent_scope == SOURCE:
                for item, item_kind in failed:
                    if item_kind == kind:
                        alternatives = cast(SourceFault, rule.spec).alternatives  # its scope's model has them
                        best = max(best, alternatives - sources.get((si, item), 0))
        return best

    def _drift(self, worker: int, now: float) -> tuple[str | None, tuple[str, ...]]:
        drift = self.plan.drift[worker].at(now)
        return drift if drift is not None else (None, ())
