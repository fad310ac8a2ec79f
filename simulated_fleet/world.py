"""The SimPy world: a fleet, a workload, a fault plan, an error format and a policy.

One SimPy process per task: the task loop below.  A task is dispatched to a worker
(:mod:`fleetchaos.sim.dispatch` runs its steps, :mod:`fleetchaos.sim.calls` decides each
tool call) until a step is seen as failed; the error format renders that dispatch into
an observation; the recovery policy, contained by
:class:`~fleetchaos.sim.containment.ContainedPolicy`, decides; this loop turns the
decision into SimPy events.  Before each retry the wasted-retry judge
(:mod:`fleetchaos.sim.waste`) checks whether the last failure's cause still holds.
Every fact about what really happened is written to the task's ledger record.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, cast

import simpy

from fleetchaos.sim import _rng
from fleetchaos.sim.assembly import assemble
from fleetchaos.sim.calls import CallModel
from fleetchaos.sim.compaction import COMPACTION_TURN
from fleetchaos.sim.config import DAY_S, WorldSpec
from fleetchaos.sim.containment import ContainedPolicy
from fleetchaos.sim.dispatch import PLAIN_OK, Dispatcher
from fleetchaos.sim.envelope import SCHEMA_VERSION
from fleetchaos.sim.envelope_errors import EnvelopeErrors
from fleetchaos.sim.envelopes import StampedEnvelope
from fleetchaos.sim.fleet import Worker, first_worker, reroute
from fleetchaos.sim.formats import ErrorFormat, bound, counted, partial_batch_of
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.model_turns import COMPACT, ModelTurns, TurnPlan
from fleetchaos.sim.observation import (
    MODEL_TURN_ACTIONS,
    DeadLetter,
    Escalate,
    GiveUp,
    RecoveryPolicy,
    RefreshCredentials,
    Remediate,
    Reroute,
    Retry,
    Rollback,
    TaskHistory,
    UseAlternative,
)
from fleetchaos.sim.plan import FaultPlan, LastFailure, RetryAt
from fleetchaos.sim.reading import ModelReading
from fleetchaos.sim.remediation import repair, rollback
from fleetchaos.sim.resume import resume_point
from fleetchaos.sim.template import Template
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.waste import RetryWatch
from fleetchaos.sim.workload import Task, TitleSource, arrivals, closed_loop_task, is_closed_loop

S_POLICY = _rng.stream_id("policy")
S_REMEDIATION = _rng.stream_id("remediation:duration")
S_REMEDIATION_OK = _rng.stream_id("remediation:success")
S_ADMIT = _rng.stream_id("policy:before_dispatch")

#: The first id of open-loop tasks that arrive beside closed-loop clients (an arrival schedule's spike).
OPEN_LOOP_IDS = 1_000_000_000


@dataclass(slots=True)
class RunOutput:
    """Everything one simulated run produced."""

    records: list[TaskRecord] | None
    """Every task's record in creation order (tasks start at their arrival, ties in id
    order); None when the world streamed them to a sink instead."""
    plan: FaultPlan
    duration_s: float
    end_s: float
    fault_log: list[tuple[float, str, str, int, int]] | None = field(default_factory=list)
    """Every fault a call met: (time_s, kind, tool, worker, task_id), in time order; None
    when the world streamed its records and was not tracing (it grows with the run)."""
    trace: list[tuple] | None = field(default=None)
    fault_tally: dict[tuple[str, str, int], int] = field(default_factory=dict)
    """Faulted calls counted by (kind, tool, worker), kept in every mode: bounded by the
    fleet and the fault catalogue, not by the length of the run."""


class World:
    """One run: build it, then :meth:`run` it once."""

    def __init__(
        self,
        spec: WorldSpec,
        policy: RecoveryPolicy,
        errors: ErrorFormat,
        seed: int,
        *,
        max_actions: int | None = None,
        drain_s: float = DAY_S,
        trace: bool = False,
        sink: Callable[[TaskRecord], None] | None = None,
        call_model: type[CallModel] = CallModel,
    ):
        """Build a run.

        With ``sink``, each task's record is handed to ``sink(record)`` when the task ends
        and the world keeps no reference to it; the records of tasks still in flight when
        the run stops are handed over at the end of :meth:`run`, in creation order.  The
        run's output then has no records, and no fault log unless ``trace`` is on, so
        memory stays bounded by the tasks in flight.  Without a sink every record is kept
        and returned in :attr:`RunOutput.records`.  ``max_actions`` overrides the
        scenario's ``fleet.max_actions_per_task``.

        ``call_model`` decides every tool call: :class:`~fleetchaos.sim.calls.CallModel`,
        or a subclass that also runs each decided call on real code (real-code mode's
        parity driver, :mod:`fleetchaos.real.parity`), so both decide with one function.
        """
        self.spec = spec
        self.errors = errors = bound(errors, seed)  # a format that plants per-run secrets, bound to this run
        self.seed = seed
        self.drain_s = drain_s
        self.env = env = simpy.Environment()
        fleet = spec.fleet
        slots = {o.worker: o.tool_slots for o in fleet.overrides if o.tool_slots is not None}

        def worker(i: int, *state: Any) -> Worker:  # a node's state with its tool slots
            return Worker(env, i, slots.get(i, fleet.tool_slots), *state)

        # The full fault log is kept when records are (shrinking and the determinism check
        # read both) or when tracing (the timeline draws it); a streamed run keeps the tally.
        self.assembly = assembly = assemble(
            spec,
            seed,
            worker,
            clock=lambda: env.now,
            ends_s=spec.duration_s + drain_s,  # run() stops there
            call_model=call_model,
            keep_log=sink is None or trace,
            trace=trace,
        )
        self.plan: FaultPlan = assembly.plan
        self.workers: list[Worker] = assembly.nodes
        self.calls = assembly.calls
        self.journal = assembly.journal
        self.run_key = assembly.run_key
        self.templates = assembly.templates
        self.refresh_s = fleet.credential_refresh_s
        self.tokeniser = assembly.tokeniser
        self.reading = ModelReading.build(fleet, errors, assembly.run_key)
        self.policy = ContainedPolicy(policy, fleet.orchestrators)
        self.max_actions = fleet.max_actions_per_task if max_actions is None else max_actions
        self.guarded = self.policy.guardrail and bool(getattr(errors, "failure_flag", False))
        self.checkpoints = fleet.checkpoints
        partial_batch = partial_batch_of(errors, fleet)  # the format's contract, else the scenario's
        self.count_partial = partial_batch == "count"
        self.remediation = fleet.remediation
        self.load = [[0, 0] for _ in range(fleet.orchestrators)]  # per orchestrator: dispatches, retries in flight
        self.least_loaded = fleet.dispatch == "least_loaded"
        self.sink = sink
        self.records: list[TaskRecord] | None = [] if sink is None else None
        self._open: dict[int, TaskRecord] = {}  # with a sink: records of started, unended tasks by id
        # The run's part of the per-task keys, folded once (_rng.extend adds the task's parts).
        self._admit_key = _rng.key(self.run_key, S_ADMIT)
        self._policy_key = _rng.key(seed, S_POLICY)
        self.envelope_errors = EnvelopeErrors.build(spec, seed)  # None unless a scenario makes envelopes wrong
        self.dispatcher = Dispatcher(
            env,
            assembly.plan,
            self.calls,
            self.journal,
            self.run_key,
            partial_step_ok=partial_batch == "ok",
            # A plain successful dispatch needs no report or rendering, unless the policy
            # observes every outcome (shared controls count successes too).
            plain_success=bool(getattr(getattr(errors, "render", None), "plain_success", False))
            and not self.policy.observes,
            report_masked=self.reading.notice_silent_p > 0.0,  # the model may notice a hollow success
            transport=self.policy.transport,
            idempotent=self.policy.idempotent,
            heartbeat_timeout_s=fleet.heartbeat_timeout_s,
        )
        self.dispatcher.on_orphans_done = self._orphans_done
        # The model-side recovery actions' turns: the dispatch takes them, the judge reads their draws.
        self.dispatcher.turns = assembly.judge.turns = self.turns = ModelTurns(fleet, self.calls)
        self._next_task_id = 0

    # -- running -----------------------------------------------------------------------

    def run(self) -> RunOutput:
        """Simulate the horizon, then let in-flight tasks drain for up to ``drain_s``."""
        workload = self.spec.workload
        if is_closed_loop(workload):
            titles = TitleSource(self.seed)
            assert workload.clients is not None  # is_closed_loop: a closed loop has clients
            for client in range(workload.clients):
                self.env.process(self._client(client, titles))
            if workload.arrival_schedule is not None:  # open-loop tasks on top of the clients (a spike)
                self.env.process(self._source(OPEN_LOOP_IDS))
        else:
            self.env.process(self._source())
        self.env.run(until=self.spec.duration_s + self.drain_s)
        if self.sink is not None:
            # Tasks still in flight (unfinished at the drain limit, lost with a crashed
            # worker) are handed over now, in creation order, so nothing is left behind.
            unfinished, self._open = self._open, {}
            for rec in unfinished.values():
                self.sink(rec)
        journal = self.journal
        return RunOutput(
            self.records,
            self.plan,
            self.spec.duration_s,
            self.env.now,
            journal.fault_log,
            journal.trace,
            journal.fault_tally,
        )

    def _source(self, first_id: int = 0) -> Generator:
        """Open-loop arrivals; beside closed-loop clients their ids start at ``first_id``, apart from the clients'."""
        env = self.env
        spec = self.spec
        for task in arrivals(spec.workload, self.seed, spec.duration_s, spec.fleet.orchestrators, spec.fleet.workers):
            now = env.now
            if task.arrival_s > now:
                yield env.timeout(task.arrival_s - now)
            if first_id:
                task = task._replace(id=first_id + task.id)
            else:
                self._next_task_id = task.id + 1
            env.process(self._task(task))

    def _client(self, client: int, titles: TitleSource) -> Generator:
        """A closed-loop client: submit, wait for the task to end, think, repeat."""
        env = self.env
        spec = self.spec
        n = 0
        while True:
            task_id = self._next_task_id
            self._next_task_id += 1
            task, think_s = closed_loop_task(
                spec.workload, self.seed, client, n, task_id, env.now, spec.fleet.orchestrators, titles
            )
            if env.now + think_s >= spec.duration_s:
                return
            yield env.timeout(think_s)
            yield env.process(self._task(task))
            n += 1

    # -- one task --------------------------------------------------------------------

    def _task(self, task: Task) -> Generator:
        env = self.env
        policy = self.policy
        emit = self.journal.emit
        tracing = self.journal.trace is not None
        tpl = self.templates[task.template]
        rec = tpl.record(task.id, task.title, task.orchestrator, task.arrival_s)
        if self.records is not None:
            self.records.append(rec)
        else:
            self._open[task.id] = rec  # handed to the sink when the task ends
        if tracing:
            emit("task", task.id, tpl.name)
        # The policy's view of the task is built at its first failure: most tasks never fail.
        history: TaskHistory | None = None
        attempts = 0
        worker = task.id % len(self.workers) if not self.least_loaded else first_worker(self.workers, task.id)
        task_key = _rng.task_key(self.run_key, task.id)
        start = 0
        done: tuple[int, ...] = ()
        sources: dict[tuple[int, int], int] = {}
        workspace: dict[int, float] = {}  # worker -> MB this task's files occupy there
        watch: RetryWatch | None = None  # the task's retries for the judges, from its first failure on
        actions = 0
        failed_seen = 0  # failed observations already in the task's context
        reading = self.reading
        load = self.load[task.orchestrator]
        shared = policy.shared[task.orchestrator]
        turn: TurnPlan | None = None  # the turn a model-side action asked for, taken by the next dispatch
        while True:
            attempts += 1
            if policy.admits:
                draw = _rng.uniform(_rng.extend(self._admit_key, task.id, attempts))
                refused = policy.before_dispatch(shared, env.now, attempts == 1, draw, rec)
                if refused is not None:  # refused locally: the task ends as the policy said, nothing is sent
                    rec.throttled += 1
                    if isinstance(refused, Escalate):
                        self.assembly.page(rec, actions + 1)
                    else:
                        rec.claim = refused.claim
                    break
            if policy.chooses:
                worker = policy.choose_worker(worker, len(self.workers), shared, env.now, rec)
            if history is not None:
                history.attempts = attempts
                history.worker = worker
            w = self.workers[worker]
            rec.worker = worker
            if watch is not None and watch.last is not None:
                watch.retry(
                    rec,
                    RetryAt(
                        w, task.id, task.orchestrator, tpl, sources, rec.executions, env.now, turn, rec.context_tokens
                    ),
                )
            if tracing:
                emit("dispatch", task.id, worker, start)
            w.in_flight += 1
            retrying = attempts > 1
            load[0] += 1
            load[1] += retrying
            report = yield from self.dispatcher.attempt(
                task, tpl, rec, w, start, done, sources, workspace, task_key, turn
            )
            turn = None
            load[0] -= 1
            load[1] -= retrying
            w.in_flight -= 1
            failure = "node_crash" if report is None else report.failure  # None: every step completed
            if watch is not None:
                watch.ended(rec, failure)
            if report is None:  # lost with a crashed worker, and nobody is waiting for it
                return
            if report is PLAIN_OK:  # rendering it would give the bare "ok" observation
                rec.claim = "success"
                break
            obs = self.errors.render(report)
            if self.count_partial:  # a partly failed fan-out step says how many of its items failed
                obs = counted(obs, report)
            if self.envelope_errors is not None and obs.envelope is not None:
                obs, wrong = self.envelope_errors.apply(
                    self.errors, report, obs, env.now, rec.executions[report.failed_step]
                )
                if wrong:
                    rec.note_misreport(wrong)
            rec.secrets_leaked += obs.secrets
            if not obs.ok:  # TaskRecord.read, inlined: the error text joins the conversation's context
                rec.context_tokens += self.tokeniser.observation(obs)
            if tracing:
                self.journal.observation(task.id, worker, obs, report)
            envelope = cast("StampedEnvelope | None", obs.envelope)  # every contract is stamped
            if envelope is not None and envelope.schema_version != SCHEMA_VERSION:
                rec.schema_skews += 1
            if policy.observes:
                policy.observe(obs, shared, env.now, rec)
            if obs.ok:
                if report.masked and actions < self.max_actions and reading.notices_silent(task.id, attempts):
                    # The model noticed a hollow result: it retries from the first step that returned one.
                    rec.silent_noticed += 1
                    actions += 1
                    start, done = report.masked[0][0], ()
                    if watch is not None:
                        watch.last = None  # no reported cause for the judges to check
                    rec.retries += 1
                    if history is not None:
                        history.retries += 1
                    continue
                rec.claim = "success"
                break
            failed_seen += 1
            if history is None:
                history = TaskHistory(
                    task_id=task.id,
                    attempts=attempts,
                    worker=worker,
                    rng=random.Random(_rng.extend(self._policy_key, task.id)),
                    orchestrator=task.orchestrator,
                    shared=shared,
                )
            if reading.reads_as_success(task.id, attempts, failed_seen):
                if self.guarded:
                    rec.misreads_caught += 1  # the guardrail saw the failure flag and blocked the success claim
                else:
                    rec.misreads += 1
                    rec.claim = "success"  # the orchestrator read the failure as a success
                    break
            history.now_s = env.now
            history.elapsed_s = env.now - task.arrival_s
            history.dispatches_in_flight, history.retries_in_flight = load
            code = envelope.error_code if envelope is not None else obs.status
            history.same_failure_streak = history.same_failure_streak + 1 if code == history.last_code else 1
            history.last_code = code
            actions += 1
            stop = self._limit_reached(tpl, rec, history, actions)
            if not stop and reading.gives_up(task.id, attempts, failed_seen):
                rec.model_gave_up += 1  # the model stopped before its policy decided
                rec.claim = "failed"
                break
            action = GiveUp() if stop else policy.decide(obs, history, rec)
            if not stop and reading.retries_past(action, failure, task.id, attempts, failed_seen):
                rec.model_retried_permanent += 1  # the model retried what its policy rightly stopped on
                action = Retry()
            retry_at = env.now + report.retry_after_s if report.retry_after_s is not None else None
            failed_items = tuple(i for i, k in report.item_failures if k == report.failure) or (0,)
            if watch is None:
                watch = RetryWatch(self.assembly.judge)
            # None when a format showed a completed dispatch as failed: then no cause holds for the judge to check
            watch.last = None if failure is None else LastFailure(failure, retry_at, report.failed_step, failed_items)
            kind = type(action)  # canonical: exactly one of the action classes
            if tracing:
                emit("action", task.id, worker, kind.__name__)
            if isinstance(action, Escalate):
                # The claim is reported at once; the paged human's hours are charged to the
                # run (cost, human hours), their own work is outside the simulation.
                self.assembly.page(rec, actions)
                break
            if isinstance(action, GiveUp):
                rec.claim = action.claim
                break
            if isinstance(action, DeadLetter):
                rec.claim = "dead_lettered"
                break
            if isinstance(action, Rollback):
                yield from rollback(self.env, rec, self.calls.latency_mean)
                rec.claim = "failed"
                break
            start, done = resume_point(action.resume_from, action.done_items, report, tpl.fan_outs, self.checkpoints)
            if isinstance(action, MODEL_TURN_ACTIONS):
                turn = self.turns.plan(action, report, rec, sources)
                if turn is not None and turn.mode == COMPACT:  # a turn of its own, before the retry
                    yield from self._compact(rec, w, tpl, turn.step, task_key)
                    turn = None
            if isinstance(action, RefreshCredentials):
                if self.refresh_s > 0:
                    yield env.timeout(self.refresh_s)
                w.refresh_credentials(env.now)
                rec.refreshes += 1
                history.refreshes += 1
            elif isinstance(action, Remediate):
                yield from self._remediate(rec, w, report, tpl, task.id, actions)
                history.remediations += 1
            else:
                if isinstance(action, Reroute):
                    worker = reroute(self.workers, worker, self.least_loaded)
                    rec.reroutes += 1
                    history.reroutes += 1
                elif isinstance(action, UseAlternative):
                    for item in range(tpl.fan_outs[start]):
                        if item not in done:
                            sources[(start, item)] = sources.get((start, item), 0) + 1
                    rec.alternatives_used += 1
                history.last_delay_s = action.delay_s
                if action.delay_s > 0:
                    yield env.timeout(action.delay_s)
            rec.retries += 1
            history.retries += 1
        if rec.claim == "success" and rec.summarised is not None and rec.rests_on_summary:
            rec.claim = self.turns.compaction.claim  # the orchestrator knows its answer rests on a summary
        rec.end_s = env.now
        for index, mb in workspace.items():  # the task's workspace is cleaned up when it ends
            self.workers[index].disk_used_mb -= mb
        if tracing:
            emit("end", task.id, worker, rec.claim)
        if self.sink is not None and not rec.orphans:  # else handed on when its orphaned steps end
            del self._open[task.id]
            self.sink(rec)

    def _orphans_done(self, rec: TaskRecord) -> None:
        """The last orphaned step of a task ended: a task that has ended too is handed to the sink now."""
        if self.sink is not None and rec.end_s is not None and rec.id in self._open:
            del self._open[rec.id]
            self.sink(rec)

    def _remediate(
        self, rec: TaskRecord, w: Worker, report: AttemptReport, tpl: Template, task_id: int, n: int
    ) -> Generator:
        """A remediation agent works on ``w`` for minutes; it may repair the last failure's cause."""
        spec = self.remediation
        took = self.assembly.duration(spec.duration, S_REMEDIATION, task_id, n)
        yield self.env.timeout(took)
        rec.remediations += 1
        rec.remediation_s += took
        rec.tokens += spec.tokens
        succeeded = _rng.uniform(_rng.key(self.run_key, S_REMEDIATION_OK, task_id, n)) < spec.success_probability
        if not (succeeded and repair(self.calls, w, report, tpl, self.env.now)):
            rec.remediations_failed += 1

    def _compact(self, rec: TaskRecord, w: Worker, tpl: Template, si: int, task_key: int) -> Generator:
        """The compaction turn (:mod:`fleetchaos.sim.compaction`): it may fail, and takes its time either way."""
        now = self.env.now
        n = cast(dict, rec.model_turns)[COMPACT]  # ModelTurns.plan counted it
        fault, took = self.turns.compaction.compact(rec, w, tpl, si, task_key, n, now)
        if fault is not None:
            self.journal.fault(rec, fault.name, now, COMPACTION_TURN, w.index)
        yield self.env.timeout(took)

    def _limit_reached(self, tpl: Template, rec: TaskRecord, history: TaskHistory, actions: int) -> bool:
        """The orchestrator's own limits: a task's deadline, its call budget and the actions per task."""
        if tpl.deadline_s is not None and history.elapsed_s >= tpl.deadline_s:
            rec.stopped_by = "deadline"
            return True
        if tpl.budget_calls is not None and rec.calls >= tpl.budget_calls:
            rec.stopped_by = "budget"
            return True
        if actions > self.max_actions:
            rec.stopped_by = "action_cap"
            return True
        return False
