"""The SimPy world: a fleet, a workload, a fault plan, an error format and a policy.

One SimPy process per task.  A task is dispatched to a worker, which runs its steps in
order (one tool call per item; a fan-out step's items run in parallel in one tool
slot) until a step is seen as failed.  The error format renders that dispatch into an
observation; the recovery policy decides; this driver turns the decision into SimPy
events.  Every fact about what really happened is written to the task's ledger record.

Per tool call the driver does one slot request, one timeout and one release (the same
event pattern as a bare SimPy model) plus a handful of keyed draws.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace

import simpy

from fleetchaos.sim import _rng
from fleetchaos.sim.config import DAY_S, WorldSpec, lognormal_params
from fleetchaos.sim.envelope import SCHEMA_VERSION
from fleetchaos.sim.faults import BATCH_KINDS, PERSISTENT_KINDS, TRANSIENT_KINDS, FaultPlan, build_plan
from fleetchaos.sim.fleet import TokenBucket, Worker
from fleetchaos.sim.formats import ErrorFormat
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.observation import (
    ACTION_TYPES,
    Action,
    DeadLetter,
    Escalate,
    GiveUp,
    Observation,
    RecoveryPolicy,
    RefreshCredentials,
    Remediate,
    Reroute,
    Retry,
    Rollback,
    TaskHistory,
    UseAlternative,
)
from fleetchaos.sim.transport import TransportRetry
from fleetchaos.sim.truth import MASKING_KINDS, AttemptReport
from fleetchaos.sim.workload import Task, TitleSource, arrivals, closed_loop_task

S_CALL_TIMES = _rng.stream_id("call:latency+duration")  # one Box-Muller pair per call
S_COMMIT = _rng.stream_id("call:timeout_committed")
S_SLOW_COMMIT = _rng.stream_id("call:slow_committed")
S_POLICY = _rng.stream_id("policy")
S_TASK = _rng.stream_id("task")
S_BRANCH = _rng.stream_id("task:branch")
S_BATCH = _rng.stream_id("call:batch_items")
S_MISREAD = _rng.stream_id("orchestrator:misread")
S_TRANSPORT = _rng.stream_id("call:transport_retry")
S_HUMAN = _rng.stream_id("escalation:human")
S_REMEDIATION = _rng.stream_id("remediation:duration")
S_REMEDIATION_OK = _rng.stream_id("remediation:success")

#: How long a call takes to fail fast, on top of the network round trip (simulated s).
FAIL_FAST_S = {
    "network_blip": 1.0,
    "rate_limit": 0.1,
    "disk_full": 0.5,
    "expired_key": 0.3,
    "missing_dependency": 0.2,
    "validation_error": 0.5,
    "not_found": 0.4,
    "permission_denied": 0.3,
    "partial_batch": 0.5,
    "node_crash": 0.2,
    "quota_exhausted": 0.1,
}

_NO_ITEMS: frozenset[int] = frozenset()

#: What ``_attempt`` returns for a dispatch that saw every step through when the format
#: shows success as a bare "ok" (see ``formats.plain_success``): no report to build or render.
_PLAIN_OK = AttemptReport(task_id=-1, worker=-1, start_step=0, failed_step=-1, step_names=())

#: A slow call that hits the fleet's call timeout committed its side effect with this probability.
SLOW_CALL_COMMITTED_P = 0.5

#: Why a retry was wasted: the reason string per kind of the failure that preceded it.
WASTE_REASONS = {
    "expired_key": "credentials still expired",
    "disk_full": "same full disk",
    "rate_limit": "before retry-after",
    "quota_exhausted": "same exhausted quota",
    "node_crash": "worker still down",
    "network_partition": "still partitioned",
    "missing_dependency": "tool still missing",
    "validation_error": "input still invalid",
    "permission_denied": "access still denied",
    "not_found": "same missing source",
    "partial_batch": "same failing batch items",
}


@dataclass(frozen=True, slots=True)
class _Step:
    """A step compiled for the hot path."""

    name: str
    fan_out: int
    uses_api: bool
    writes_disk: bool
    disk_mb: float
    tokens: int
    mean_s: float
    mu: float
    sigma: float
    needs: tuple[int, ...]
    pushes: bool


@dataclass(frozen=True, slots=True)
class _Template:
    index: int
    name: str
    steps: tuple[_Step, ...]
    names: tuple[str, ...]
    append_steps: tuple[int, ...]
    deadline_s: float | None
    budget_calls: int | None


def _number(value, what: str) -> float:
    """A finite, non-negative float from any real number (numpy scalars included)."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a number, got a bool")
    number = float(value)
    if not (0.0 <= number < math.inf):
        raise ValueError(f"{what} must be finite and >= 0, got {value!r}")
    return number


def _index(value, what: str) -> int:
    number = _number(value, what)
    if number != int(number):
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    return int(number)


def _canonical(action) -> Action:
    """Rebuild a policy's action as a checked instance of one of the action classes."""
    for cls in (Escalate, Rollback, DeadLetter):
        if isinstance(action, cls):
            return cls(str(action.reason))
    if isinstance(action, GiveUp):
        if action.claim not in ("failed", "partial"):
            raise ValueError(f"GiveUp claim must be 'failed' or 'partial', got {action.claim!r}")
        return GiveUp(action.claim)
    if isinstance(action, (Retry, Reroute, RefreshCredentials, UseAlternative, Remediate)):
        start = _index(action.resume_from, "resume_from")
        done = tuple(sorted({_index(i, "done_items entry") for i in action.done_items}))
        for cls in (RefreshCredentials, Remediate):  # the base class, as for every action: the driver dispatches on it
            if isinstance(action, cls):
                return cls(start, done)
        delay = _number(action.delay_s, "delay_s")
        for cls in (Reroute, UseAlternative, Retry):
            if isinstance(action, cls):
                return cls(delay, start, done)
    raise TypeError(f"expected an action ({', '.join(t.__name__ for t in ACTION_TYPES)}), got {type(action).__name__}")


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
        error_format: ErrorFormat,
        seed: int,
        *,
        max_actions: int = 100,
        drain_s: float = DAY_S,
        trace: bool = False,
        sink: Callable[[TaskRecord], None] | None = None,
    ):
        """Build a run.

        With ``sink``, each task's record is handed to ``sink(record)`` when the task ends
        and the world keeps no reference to it; the records of tasks still in flight when
        the run stops are handed over at the end of :meth:`run`, in creation order.  The
        run's output then has no records, and no fault log unless ``trace`` is on, so
        memory stays bounded by the tasks in flight.  Without a sink every record is kept
        and returned in :attr:`RunOutput.records`.
        """
        self.spec = spec
        self.policy = policy
        bind = getattr(error_format, "for_run", None)  # formats that plant per-run secrets
        self.fmt = error_format = bind(seed) if bind is not None else error_format
        self.seed = seed
        self.max_actions = max_actions
        self.drain_s = drain_s
        self.env = simpy.Environment()
        self.plan = plan = build_plan(spec, seed)
        fleet = spec.fleet
        slots = {o.worker: o.tool_slots for o in fleet.overrides if o.tool_slots is not None}
        disks = {o.worker: o.disk_mb for o in fleet.overrides if o.disk_mb is not None}
        self.workers = [
            Worker(
                self.env,
                i,
                slots.get(i, fleet.tool_slots),
                list(plan.disk_full[i]),  # a copy: a remediation may end a span early
                plan.key_expiries[i],
                fleet.credential_lifetime_s,
                plan.crashes[i],
                disks.get(i, fleet.disk_mb),
            )
            for i in range(fleet.workers)
        ]
        self.bucket = TokenBucket(fleet.api_rate_per_s, fleet.api_burst, plan.rate_windows)
        self.reject_cost = fleet.api_reject_cost
        self.refresh_s = fleet.credential_refresh_s
        self.heartbeat_timeout_s = fleet.heartbeat_timeout_s
        self.misread_p = fleet.misread_probability * getattr(error_format, "misread_factor", 1.0)
        self.guarded = bool(getattr(policy, "guardrail", False)) and bool(getattr(error_format, "failure_flag", False))
        self.idempotent = bool(getattr(policy, "idempotency_keys", False))
        transport = getattr(policy, "transport", None)
        self._hooks_error: str | None = None
        if transport is not None and not isinstance(transport, TransportRetry):
            self._hooks_error = f"policy.transport must be a TransportRetry, got {type(transport).__name__}"
            transport = None
        self.transport = transport if transport is not None and transport.attempts > 1 else None
        self.human = fleet.human_response
        self.remediation = fleet.remediation
        self._dependency_draws: dict[tuple[int, int, str], float] = {}  # (rule stream, worker, tool) -> its draw
        self._installed: set[tuple[int, str]] = set()  # (worker, tool) a remediation agent installed
        self._observe = getattr(policy, "observe", None)
        self._choose = getattr(policy, "choose_worker", None)
        self.shared: list[object] = [None] * fleet.orchestrators
        self.load = [[0, 0] for _ in range(fleet.orchestrators)]  # per orchestrator: dispatches, retries in flight
        new_shared = getattr(policy, "new_shared_state", None)
        if new_shared is not None:
            try:
                self.shared = [new_shared() for _ in range(fleet.orchestrators)]
            except Exception as exc:  # a broken user policy is contained: every task records why
                self._hooks_error = f"policy raised {type(exc).__name__} in new_shared_state(): {exc}"[:500]
        # A plain successful dispatch needs no report or rendering, unless the policy
        # observes every outcome (shared controls count successes too).
        self.plain_success = (
            bool(getattr(getattr(error_format, "render", None), "plain_success", False)) and self._observe is None
        )
        self.call_timeout_s = fleet.call_timeout_s
        lat = fleet.network_latency
        self.latency_mean = 2.0 * lat.mean_s  # a call is one round trip
        self.latency_mu, self.latency_sigma = lognormal_params(self.latency_mean, lat.cv)
        self.templates = tuple(self._compile(i, t, plan) for i, t in enumerate(spec.workload.templates))
        self.least_loaded = fleet.dispatch == "least_loaded"
        self.sink = sink
        self.records: list[TaskRecord] | None = [] if sink is None else None
        self._open: dict[int, TaskRecord] = {}  # with a sink: records of started, unended tasks by id
        # The full fault log is kept when records are (shrinking and the determinism check
        # read both) or when tracing (the timeline draws it); a streamed run keeps the tally.
        self.fault_log: list[tuple[float, str, str, int, int]] | None = [] if sink is None or trace else None
        self.fault_tally: dict[tuple[str, str, int], int] = {}
        self.trace: list[tuple] | None = [] if trace else None
        self._seed_key = _rng.key(seed, S_TASK)
        self._rules: dict[tuple[int, int, int], tuple] = {}
        self._template_rules: dict[tuple[int, int], tuple[tuple, ...]] = {}
        self._branch_heads = [0] * plan.git_branches
        self._quota_used: dict[int, int] = {}  # day -> calls counted against the quota (any order of days)
        self._next_task_id = 0

    @staticmethod
    def _compile(index: int, template, plan: FaultPlan) -> _Template:
        steps = []
        names = [s.tool for s in template.steps]
        for s in template.steps:
            mu, sigma = lognormal_params(s.duration.mean_s, s.duration.cv)
            steps.append(
                _Step(
                    name=s.tool,
                    fan_out=s.fan_out,
                    uses_api=s.uses_api,
                    writes_disk=s.disk_mb > 0,
                    disk_mb=s.disk_mb,
                    tokens=s.tokens if s.uses_api else 0,
                    mean_s=s.duration.mean_s,
                    mu=mu,
                    sigma=sigma,
                    needs=tuple(names.index(n) for n in s.needs),
                    pushes=bool(plan.git_branches) and s.tool in plan.git_tools,
                )
            )
        return _Template(
            index=index,
            name=template.name,
            steps=tuple(steps),
            names=tuple(names),
            append_steps=tuple(i for i, s in enumerate(template.steps) if s.side_effect == "append"),
            deadline_s=template.deadline_s,
            budget_calls=template.budget_calls,
        )

    def _rules_for(self, worker: int, tpl: _Template, si: int) -> tuple:
        """The per-call rules that can hit this worker, template and step, grouped by stage."""
        cache_key = (worker, tpl.index, si)
        rules = self._rules.get(cache_key)
        if rules is None:
            tool = tpl.names[si]
            hits = [r for r in self.plan.rules if r.applies(worker, tool, tpl.name)]
            rules = tuple(
                tuple(r for r in hits if r.kind in kinds)
                for kinds in (PERSISTENT_KINDS, TRANSIENT_KINDS, BATCH_KINDS, MASKING_KINDS)
            )
            self._rules[cache_key] = rules
        return rules

    def _step_rules(self, worker: int, tpl: _Template) -> tuple[tuple, ...]:
        """``_rules_for`` of every step of ``tpl`` on ``worker``: one lookup per dispatch, not per step."""
        rules = self._template_rules.get((worker, tpl.index))
        if rules is None:
            rules = tuple(self._rules_for(worker, tpl, si) for si in range(len(tpl.steps)))
            self._template_rules[(worker, tpl.index)] = rules
        return rules

    # -- running -----------------------------------------------------------------------

    def run(self) -> RunOutput:
        """Simulate the horizon, then let in-flight tasks drain for up to ``drain_s``."""
        workload = self.spec.workload
        if workload.clients is not None and workload.arrivals is None:
            titles = TitleSource(self.seed)
            for client in range(workload.clients):
                self.env.process(self._client(client, titles))
        else:
            self.env.process(self._source())
        self.env.run(until=self.spec.duration_s + self.drain_s)
        if self.sink is not None:
            # Tasks still in flight (unfinished at the drain limit, lost with a crashed
            # worker) are handed over now, in creation order, so nothing is left behind.
            unfinished, self._open = self._open, {}
            for rec in unfinished.values():
                self.sink(rec)
        return RunOutput(
            self.records, self.plan, self.spec.duration_s, self.env.now, self.fault_log, self.trace, self.fault_tally
        )

    def _source(self) -> Generator:
        env = self.env
        spec = self.spec
        for task in arrivals(spec.workload, self.seed, spec.duration_s, spec.fleet.orchestrators, spec.fleet.workers):
            if task.arrival_s > env.now:
                yield env.timeout(task.arrival_s - env.now)
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

    def _emit(self, *event) -> None:
        if self.trace is not None:
            self.trace.append((round(self.env.now, 6), *event))

    def _emit_calls(self, task_id: int, worker: int, si: int, tool: str, start: float, calls: list[list]) -> None:
        """Trace one step's tool calls: when they started and, per item, (item, duration, fault kind or None)."""
        self._emit("calls", task_id, worker, si, tool, round(start, 6), tuple((i, round(d, 6), k) for i, d, k in calls))

    def _emit_observation(self, task_id: int, worker: int, obs: Observation, report: AttemptReport) -> None:
        """Trace what the orchestrator was shown: ok, status word, error code, and the truth's retry-after."""
        code = getattr(obs.envelope, "error_code", None) if obs.envelope is not None else None
        retry_after = None if report.retry_after_s is None else round(report.retry_after_s, 6)
        self._emit("observe", task_id, worker, obs.ok, obs.status, code, retry_after)

    # -- one task --------------------------------------------------------------------

    def _task(self, task: Task) -> Generator:
        env = self.env
        tpl = self.templates[task.template]
        rec = TaskRecord(
            id=task.id,
            template=tpl.name,
            title=task.title,
            orchestrator=task.orchestrator,
            arrival_s=task.arrival_s,
            commits=[[0] * s.fan_out for s in tpl.steps],
            append_steps=tpl.append_steps,
            executions=[0] * len(tpl.steps),
        )
        if self.records is not None:
            self.records.append(rec)
        else:
            self._open[task.id] = rec  # handed to the sink when the task ends
        if self.trace is not None:
            self._emit("task", task.id, tpl.name)
        # The policy's view of the task is built at its first failure: most tasks never fail.
        history: TaskHistory | None = None
        attempts = 0
        worker = self._first_worker(task)
        start, done = 0, ()
        sources: dict[tuple[int, int], int] = {}
        workspace: dict[int, float] = {}  # worker -> MB this task's files occupy there
        previous: tuple | None = None  # (failure kind, retry-after instant, tool) of the last dispatch
        actions = 0
        load = self.load[task.orchestrator]
        shared = self.shared[task.orchestrator]
        while True:
            attempts += 1
            if self._choose is not None:
                worker = self._chosen_worker(worker, shared, rec)
            if history is not None:
                history.attempts = attempts
                history.worker = worker
            w = self.workers[worker]
            rec.worker = worker
            if previous is not None:
                self._judge_retry(rec, previous, w, task, tpl, sources)
            if self.trace is not None:
                self._emit("dispatch", task.id, worker, start)
            w.in_flight += 1
            retrying = attempts > 1
            load[0] += 1
            load[1] += retrying
            report = yield from self._attempt(task, tpl, rec, w, start, done, sources, workspace)
            load[0] -= 1
            load[1] -= retrying
            w.in_flight -= 1
            if report is None:  # lost with a crashed worker, and nobody is waiting for it
                return
            if report is _PLAIN_OK:  # rendering it would give the bare "ok" observation
                rec.claim = "success"
                break
            obs = self.fmt.render(report)
            rec.secrets_leaked += obs.secrets
            if self.trace is not None:
                self._emit_observation(task.id, worker, obs, report)
            if obs.envelope is not None and obs.envelope.schema_version != SCHEMA_VERSION:
                rec.schema_skews += 1
            if self._observe is not None:
                self._observed(obs, shared, rec)
            if obs.ok:
                rec.claim = "success"
                break
            if history is None:
                history = TaskHistory(
                    task_id=task.id,
                    attempts=attempts,
                    worker=worker,
                    rng=random.Random(_rng.key(self.seed, S_POLICY, task.id)),
                    orchestrator=task.orchestrator,
                    shared=shared,
                )
            if (
                self.misread_p > 0.0
                and _rng.uniform(_rng.key(self._seed_key, S_MISREAD, task.id, attempts)) < self.misread_p
            ):
                if self.guarded:
                    rec.misreads_caught += 1  # the guardrail saw the failure flag and blocked the success claim
                else:
                    rec.misreads += 1
                    rec.claim = "success"  # the orchestrator read the failure as a success
                    break
            history.now_s = env.now
            history.elapsed_s = env.now - task.arrival_s
            history.dispatches_in_flight, history.retries_in_flight = load
            code = obs.envelope.error_code if obs.envelope is not None else obs.status
            history.same_failure_streak = history.same_failure_streak + 1 if code == history.last_code else 1
            history.last_code = code
            actions += 1
            stop = self._limit_reached(tpl, rec, history)
            action = GiveUp() if stop else self._decide(obs, history, rec, actions)
            retry_at = env.now + report.retry_after_s if report.retry_after_s is not None else None
            failed_items = tuple(i for i, k in report.item_failures if k == report.failure) or (0,)
            previous = (report.failure, retry_at, report.failed_step, failed_items)
            kind = type(action)  # canonical: exactly one of the action classes
            if self.trace is not None:
                self._emit("action", task.id, worker, kind.__name__)
            if kind is Escalate:
                rec.claim = "escalated"
                # The claim is reported at once; the paged human's hours are charged to the
                # run (cost, human hours), their own work is outside the simulation.
                rec.pages += 1
                rec.human_s = self._duration(self.human, S_HUMAN, task.id, actions)
                break
            if kind is GiveUp:
                rec.claim = action.claim
                break
            if kind is DeadLetter:
                rec.claim = "dead_lettered"
                break
            if kind is Rollback:
                yield from self._rollback(rec, tpl)
                rec.claim = "failed"
                break
            start = min(action.resume_from, len(tpl.steps) - 1)
            fan_out = tpl.steps[start].fan_out
            done = tuple(i for i in action.done_items if i < fan_out)
            if kind is RefreshCredentials:
                if self.refresh_s > 0:
                    yield env.timeout(self.refresh_s)
                w.refresh_credentials(env.now)
                rec.refreshes += 1
                history.refreshes += 1
            elif kind is Remediate:
                yield from self._remediate(rec, w, report, tpl, task.id, actions)
                history.remediations += 1
            else:
                if kind is Reroute:
                    worker = self._reroute(worker)
                    rec.reroutes += 1
                    history.reroutes += 1
                elif kind is UseAlternative:
                    for item in range(fan_out):
                        if item not in done:
                            sources[(start, item)] = sources.get((start, item), 0) + 1
                    rec.alternatives_used += 1
                history.last_delay_s = action.delay_s
                if action.delay_s > 0:
                    yield env.timeout(action.delay_s)
            rec.retries += 1
            history.retries += 1
        rec.end_s = env.now
        for index, mb in workspace.items():  # the task's workspace is cleaned up when it ends
            self.workers[index].disk_used_mb -= mb
        if self.trace is not None:
            self._emit("end", task.id, worker, rec.claim)
        if self.sink is not None:
            del self._open[task.id]
            self.sink(rec)

    def _duration(self, spec, stream: int, task_id: int, n: int) -> float:
        """A keyed log-normal draw from a :class:`~fleetchaos.sim.config.Distribution`."""
        if spec.cv <= 0.0:
            return spec.mean_s
        mu, sigma = lognormal_params(spec.mean_s, spec.cv)
        return math.exp(mu + sigma * _rng.normal(_rng.key(self._seed_key, stream, task_id, n), stream))

    def _chosen_worker(self, proposed: int, shared, rec: TaskRecord) -> int:
        """Let the policy move a dispatch (a breaker skipping open workers); a bad answer keeps ``proposed``."""
        try:
            chosen = self._choose(proposed, len(self.workers), shared, self.env.now)  # type: ignore[misc]
            chosen = _index(chosen, "choose_worker()")
            if chosen >= len(self.workers):
                raise ValueError(f"choose_worker() returned worker {chosen}; the fleet has {len(self.workers)}")
            return chosen
        except Exception as exc:
            rec.policy_error = rec.policy_error or f"policy choose_worker() failed: {type(exc).__name__}: {exc}"[:500]
            return proposed

    def _observed(self, obs: Observation, shared, rec: TaskRecord) -> None:
        """Tell the policy's shared controls about a dispatch's outcome; a raising hook is recorded, not fatal."""
        try:
            self._observe(obs, shared, self.env.now, rec.id)  # type: ignore[misc]
        except Exception as exc:
            rec.policy_error = rec.policy_error or f"policy observe() raised {type(exc).__name__}: {exc}"[:500]

    def _remediate(
        self, rec: TaskRecord, w: Worker, report: AttemptReport, tpl: _Template, task_id: int, n: int
    ) -> Generator:
        """A remediation agent works on ``w`` for minutes; it may repair the last failure's cause."""
        spec = self.remediation
        took = self._duration(spec.duration, S_REMEDIATION, task_id, n)
        yield self.env.timeout(took)
        rec.remediations += 1
        rec.remediation_s += took
        rec.tokens += spec.tokens
        succeeded = _rng.uniform(_rng.key(self._seed_key, S_REMEDIATION_OK, task_id, n)) < spec.success_probability
        if not (succeeded and self._repair(w, report, tpl)):
            rec.remediations_failed += 1

    def _repair(self, w: Worker, report: AttemptReport, tpl: _Template) -> bool:
        """Repair what a machine can repair on a worker: credentials, a fault-filled disk, a missing tool."""
        now = self.env.now
        kind = report.failure
        if kind == "expired_key":
            w.refresh_credentials(now)
            return True
        if kind == "disk_full":
            return w.clear_disk_fault(now)
        if kind == "missing_dependency" and report.failed_step >= 0:
            self._installed.add((w.index, tpl.names[report.failed_step]))
            return True
        return False

    def _rollback(self, rec: TaskRecord, tpl: _Template) -> Generator:
        """Compensate every committed item (one compensating call each, a round trip apiece, per step in reverse)."""
        calls = 0
        for commits in reversed(rec.commits):
            undone = sum(1 for c in commits if c > 0)
            if undone:
                calls += undone
                for item in range(len(commits)):
                    commits[item] = 0
                yield self.env.timeout(self.latency_mean)
        rec.rolled_back = True
        rec.compensations += calls
        rec.calls += calls

    def _limit_reached(self, tpl: _Template, rec: TaskRecord, history: TaskHistory) -> bool:
        """The orchestrator's own limits: a task's deadline and its call budget."""
        if tpl.deadline_s is not None and history.elapsed_s >= tpl.deadline_s:
            rec.stopped_by = "deadline"
            return True
        if tpl.budget_calls is not None and rec.calls >= tpl.budget_calls:
            rec.stopped_by = "budget"
            return True
        return False

    def _decide(self, obs: Observation, history: TaskHistory, rec: TaskRecord, actions: int) -> Action:
        """Ask the policy, containing anything it does wrong to this task.

        Whatever the policy returns is checked field by field and rebuilt as one of the
        canonical action types, so the driver never acts on a malformed action.
        """
        if self._hooks_error is not None:
            rec.policy_error = self._hooks_error
            return GiveUp()
        if actions > self.max_actions:
            rec.policy_error = f"action cap reached: more than {self.max_actions} actions for one task"
            return GiveUp()
        try:
            action = self.policy.decide(obs, replace(history))  # a copy: a policy cannot corrupt the driver's state
        except Exception as exc:  # a broken user policy must not stop the run
            rec.policy_error = f"policy raised {type(exc).__name__}: {exc}"[:500]
            return GiveUp()
        try:
            return _canonical(action)
        except (TypeError, ValueError, OverflowError) as exc:
            rec.policy_error = f"policy returned an invalid action: {exc}"[:500]
            return GiveUp()

    def _judge_retry(self, rec: TaskRecord, previous: tuple, w: Worker, task: Task, tpl, sources) -> None:
        """Truth check at dispatch time: does the last failure's cause still hold for this retry?"""
        kind, retry_at, si, items = previous
        now = self.env.now
        if kind == "expired_key":
            held = w.credentials_expired(now)
        elif kind == "disk_full":
            held = w.disk_refuses(now, tpl.steps[si].disk_mb)
        elif kind in ("rate_limit", "quota_exhausted"):
            held = retry_at is not None and now < retry_at
        elif kind == "node_crash":
            held = w.down(now)
        elif kind == "network_partition":
            held = self._partitioned(task.orchestrator, w.index, now) is not None
        elif kind in ("missing_dependency", "validation_error", "permission_denied", "not_found"):
            task_key = _rng.mix(self._seed_key ^ task.id)
            rules = self._rules_for(w.index, tpl, si)[0]
            held = any(
                r.kind == kind and self._persistent_hit(r, task_key, si, item, w.index, tpl.names[si], now, sources)
                for r in rules
                for item in items
            )
        elif kind == "partial_batch":
            task_key = _rng.mix(self._seed_key ^ task.id)
            rules = [r for r in self._rules_for(w.index, tpl, si)[2] if r.spec.persistent]
            chosen = self._batch_failures(rules, tpl.steps[si], task_key, si, 0, w.index, now)
            held = any(item in chosen for item in items)
        else:
            return
        if held:
            rec.note_wasted(WASTE_REASONS[kind])

    def _first_worker(self, task: Task) -> int:
        n = len(self.workers)
        if not self.least_loaded:
            return task.id % n
        return min(range(n), key=lambda i: (self.workers[i].in_flight, (i - task.id) % n))

    def _reroute(self, current: int) -> int:
        n = len(self.workers)
        if n == 1:
            return current
        if not self.least_loaded:
            return (current + 1) % n
        others = [i for i in range(n) if i != current]
        return min(others, key=lambda i: (self.workers[i].in_flight, (i - current) % n))

    def _partitioned(self, orchestrator: int, worker: int, now: float):
        for p in self.plan.partitions:
            if orchestrator in p.orchestrators and (p.workers is None or worker in p.workers) and p.spans.active(now):
                return p
        return None

    def _fault(self, rec: TaskRecord, kind: str, now: float, tool: str, worker: int) -> None:
        rec.note_fault(kind, now)
        if self.fault_log is not None:
            self.fault_log.append((now, kind, tool, worker, rec.id))
        key = (kind, tool, worker)
        self.fault_tally[key] = self.fault_tally.get(key, 0) + 1
        self._emit("fault", rec.id, worker, kind, tool)

    def _drift(self, worker: int, now: float) -> tuple[str | None, tuple[str, ...]]:
        drift = self.plan.drift[worker].at(now)
        return drift if drift is not None else (None, ())

    # -- one dispatch ------------------------------------------------------------------

    def _attempt(
        self,
        task: Task,
        tpl: _Template,
        rec: TaskRecord,
        w: Worker,
        start: int,
        done: tuple[int, ...],
        sources: dict[tuple[int, int], int],
        workspace: dict[int, float],
    ) -> Generator:
        """Run the task's steps from ``start`` on ``w`` until one is seen as failed.

        Returns the dispatch's AttemptReport (``_PLAIN_OK`` for a success the format shows
        as a bare "ok"), or None when the dispatch was lost with a crashed worker and the
        orchestrator has no dispatch timeout to notice.
        """
        env = self.env
        dispatched = env.now
        partial_ok = self.fmt.partial_step_ok
        task_key = _rng.mix(self._seed_key ^ task.id)
        steps = tpl.steps
        step_rules = self._step_rules(w.index, tpl)
        masked: list[tuple[int, int, str]] = []
        cut = self._partitioned(task.orchestrator, w.index, dispatched)
        if cut is not None:
            yield env.timeout(cut.connect_timeout_s)
            self._fault(rec, "network_partition", dispatched, tpl.names[start], w.index)
            return self._report(task, tpl, w, start, start, "network_partition", done, masked=masked)
        for si in range(start, len(steps)):
            step = steps[si]
            skip = done if si == start else ()
            executions = rec.executions
            executions[si] += 1
            exec_no = executions[si]
            commits = rec.commits[si]
            if 0 not in commits:  # every item already took effect: the step is done again
                rec.redone_steps += 1
            rec.step_executions += 1
            wait = w.slots.acquire()
            if wait is not None:
                yield wait
            now = env.now
            persistent, transient, batch_rules, masking = step_rules[si]
            step_key = _rng.mix(task_key ^ (si << 40) ^ exec_no)
            batch_failed = (
                self._batch_failures(batch_rules, step, task_key, si, step_key, w.index, now)
                if batch_rules and step.fan_out > 1
                else _NO_ITEMS
            )
            garbage = False  # an earlier step this one reads is incomplete: its output is wrong
            if step.needs:
                garbage = any(0 in rec.commits[n] for n in step.needs)
            longest = 0.0
            failed: list[tuple[int, str]] = []
            # item -> call duration, for a crash mid-step (only a worker that can crash needs it)
            finish: dict[int, float] | None = {} if w.crash_spans else None
            succeeded: list[int] = []
            hollow: list[int] = []  # looked successful, took no effect (masked failures)
            committed_anyway: list[int] = []
            pushes: list[tuple[int, int, int]] = []
            token_at = None
            traced: list[list] | None = [] if self.trace is not None else None  # [item, duration, kind] per call
            for item in range(step.fan_out):
                if item in skip:
                    continue
                rec.calls += 1
                kind, duration, committed, wait = self._call(
                    task_key,
                    step_key ^ (item << 32),
                    step,
                    tpl,
                    si,
                    item,
                    w,
                    now,
                    persistent,
                    transient,
                    masking,
                    batch_failed,
                    sources,
                )
                if kind is not None and self.transport is not None and kind in self.transport.on:
                    kind, duration, committed, wait = self._transport_retry(
                        rec,
                        (kind, duration, committed, wait),
                        task_key,
                        step_key ^ (item << 32),
                        step,
                        tpl,
                        si,
                        item,
                        w,
                        now,
                        (persistent, transient, masking, batch_failed, sources),
                        garbage,
                    )
                if duration > longest:
                    longest = duration
                if traced is not None:
                    traced.append([item, duration, kind])
                if finish is not None:
                    finish[item] = duration
                if kind is None or kind == "timeout" or kind == "latency_spike" or kind in MASKING_KINDS:
                    rec.tokens += step.tokens
                if kind is None:
                    if step.pushes:
                        branch = _rng.mix(task_key ^ S_BRANCH) % len(self._branch_heads)
                        pushes.append((item, branch, self._branch_heads[branch]))
                    else:
                        succeeded.append(item)
                elif kind in MASKING_KINDS:
                    masked.append((si, item, kind))
                    self._fault(rec, kind, now, step.name, w.index)
                    hollow.append(item)
                else:
                    failed.append((item, kind))
                    if committed:
                        committed_anyway.append(item)
                    if wait is not None and (token_at is None or wait < token_at):
                        token_at = wait
            crash_at = w.next_crash_after(now) if finish is not None else math.inf
            if crash_at < now + longest:
                # Calls that finished before the crash took effect; the rest, and the report, are lost.
                if not garbage:
                    for item in succeeded + committed_anyway:
                        if finish[item] <= crash_at - now:
                            commits[item] += 1
                if traced is not None:  # calls still running when the worker went down were lost with it
                    for call in traced:
                        if call[1] > crash_at - now:
                            call[1], call[2] = crash_at - now, "node_crash"
                    self._emit_calls(task.id, w.index, si, step.name, now, traced)
                yield from self._lose_dispatch(rec, w, now, crash_at, step, si)
                if self.heartbeat_timeout_s is None:
                    yield env.event()  # nobody will ever notice: the task is lost
                    return None
                yield env.timeout(self.heartbeat_timeout_s)
                return self._report(task, tpl, w, start, start, "node_crash", done, masked=masked)
            yield env.timeout(longest)
            w.slots.release()
            for item, branch, head in pushes:
                if self._branch_heads[branch] == head:
                    self._branch_heads[branch] = head + 1
                    succeeded.append(item)
                else:
                    failed.append((item, "git_push_conflict"))
                    if traced is not None:
                        for call in traced:
                            if call[0] == item:
                                call[2] = "git_push_conflict"
            if traced is not None:
                self._emit_calls(task.id, w.index, si, step.name, now, traced)
            if step.writes_disk and (succeeded or committed_anyway):
                written = step.disk_mb * (len(succeeded) + len(committed_anyway))
                w.disk_used_mb += written
                workspace[w.index] = workspace.get(w.index, 0.0) + written
            if garbage:
                # Ran on incomplete inputs: what it did is wrong, so nothing took effect (as in
                # the transport layer's tries, and for calls that failed yet committed).
                if succeeded:
                    rec.wrong_input_steps += 1
            else:
                for item in succeeded + committed_anyway:
                    commits[item] += 1
            if self.idempotent and si in tpl.append_steps:
                self._deduplicate(rec, commits)
            if not failed:
                continue
            failed.sort()
            for _item, kind in failed:
                self._fault(rec, kind, now, step.name, w.index)
            looks_done = succeeded + hollow
            if partial_ok and looks_done:
                continue  # the tool said "ok" with what it gathered: silent partial work
            retry_after = None if token_at is None else max(0.0, token_at - env.now)
            alternatives = 0
            if failed[0][1] == "not_found":
                alternatives = self._alternatives_left(tpl, si, failed, sources, w.index)
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
                alternatives=alternatives,
            )
        if self.plain_success:
            return _PLAIN_OK
        return self._report(task, tpl, w, start, -1, None, (), masked=masked)

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
        )

    def _transport_retry(self, rec, first, task_key, k, step, tpl, si, item, w, now, rules, garbage):
        """The transport layer retries a failed call on its own: (kind, total duration, committed, token instant).

        Each try is a real tool call (counted, priced, and able to commit a side effect
        that then happens twice); the tries and the waits between them run inside the
        step's slot, so they lengthen the call.  A try later than ``now`` meets the
        fleet as it stands at that instant (the token bucket only refills forward).
        """
        transport = self.transport
        kind, duration, committed, wait = first
        elapsed = 0.0
        for n in range(1, transport.attempts):
            if kind is None or kind not in transport.on:
                break
            self._fault(rec, kind, now, step.name, w.index)
            if committed and not garbage:
                rec.commits[si][item] += 1  # the failed try took effect anyway; the next try repeats it
            if kind == "timeout" or kind == "latency_spike":
                rec.tokens += step.tokens
            pause = transport.wait_s(n - 1, _rng.draw(k, S_TRANSPORT + n))
            if wait is not None:
                pause = max(pause, wait - (now + elapsed + duration))
            elapsed += duration + pause
            rec.calls += 1
            rec.transport_retries += 1
            kind, duration, committed, wait = self._call(
                task_key, _rng.mix(k ^ (S_TRANSPORT + n)), step, tpl, si, item, w, now + elapsed, *rules
            )
        return kind, elapsed + duration, committed, wait

    @staticmethod
    def _deduplicate(rec: TaskRecord, commits: list[int]) -> None:
        """Idempotency keys: a side effect already taken is not taken again."""
        for item, count in enumerate(commits):
            if count > 1:
                rec.deduplicated += count - 1
                commits[item] = 1

    def _lose_dispatch(self, rec, w, now, crash_at, step, si) -> Generator:
        """The worker crashes mid-step: calls that finished before the crash took effect,
        the rest did not, and no report leaves the worker."""
        yield self.env.timeout(crash_at - now)
        w.slots.release()
        self._fault(rec, "node_crash", crash_at, step.name, w.index)

    def _batch_failures(self, rules, step, task_key, si, step_key, worker, now) -> frozenset[int]:
        """Items of a fan-out step chosen to fail together by a partial-batch rule (the caller
        asks only for fan-out steps with such rules)."""
        for rule in rules:
            key = _rng.mix(task_key ^ (si << 40)) if rule.spec.persistent else step_key
            if _rng.draw(key, rule.stream) < rule.probability_at(now, worker):
                order = sorted(range(step.fan_out), key=lambda i: _rng.draw(key, S_BATCH + i))
                return frozenset(order[: min(rule.spec.failures, step.fan_out)])
        return _NO_ITEMS

    def _alternatives_left(self, tpl, si, failed, sources, worker) -> int:
        best = 0
        for rule in self._rules_for(worker, tpl, si)[0]:  # the persistent rules that apply here
            if rule.kind == "not_found":
                for item, kind in failed:
                    if kind == "not_found":
                        best = max(best, rule.spec.alternatives - sources.get((si, item), 0))
        return best

    def _persistent_hit(
        self,
        rule,
        task_key: int,
        si: int,
        item: int,
        worker: int,
        tool: str,
        now: float,
        sources: dict[tuple[int, int], int],
    ) -> bool:
        """Whether a persistent fault (the same cause every time) hits this call.

        The draw ignores the execution number: the same task, step, item (and source, or
        worker and tool for a missing dependency) fails on every try while the rule holds.
        """
        p = rule.probability_at(now, worker)
        if p <= 0.0:
            return False
        kind = rule.kind
        if kind == "missing_dependency":
            if self._installed and (worker, tool) in self._installed:
                return False  # a remediation agent installed it
            # One draw per rule, worker and tool for the whole run: keyed the same every call.
            cache_key = (rule.stream, worker, tool)
            u = self._dependency_draws.get(cache_key)
            if u is None:
                u = self._dependency_draws[cache_key] = _rng.draw(
                    _rng.key(self.seed, worker, _rng.stream_id(tool)), rule.stream
                )
            return u < p
        if kind == "validation_error":
            return _rng.draw(_rng.mix(task_key ^ (si << 40)), rule.stream) < p
        if kind == "permission_denied":
            items = rule.spec.items
            return (items is None or item in items) and _rng.draw(
                _rng.mix(task_key ^ (si << 40) ^ (item << 32)), rule.stream
            ) < p
        source = sources.get((si, item), 0)  # not_found: each source of an item is gone or not, for good
        if source > rule.spec.alternatives:
            return True
        q = p if source == 0 else rule.spec.alternative_missing_probability
        return _rng.draw(_rng.mix(task_key ^ (si << 40) ^ (item << 32) ^ (source << 16)), rule.stream) < q

    def _call(self, task_key, k, step, tpl, si, item, w, now, persistent, transient, masking, batch_failed, sources):
        """One tool call: (failure kind or None, duration, committed, token instant)."""
        z_latency, z_duration = _rng.normal_pair(k, S_CALL_TIMES)
        if self.latency_sigma > 0.0:
            latency = math.exp(self.latency_mu + self.latency_sigma * z_latency)
        else:
            latency = self.latency_mean
        spikes = self.plan.latency[w.index]
        spiked = False
        if spikes:
            spike = spikes.at(now)
            if spike is not None:
                factor, add = spike
                latency = latency * factor + add
                spiked = True
        if w.crash_spans and w.down(now):
            return "node_crash", latency + FAIL_FAST_S["node_crash"], False, None
        if step.uses_api and now >= w.credentials_expire_s:  # w.credentials_expired(now), inlined
            return "expired_key", latency + FAIL_FAST_S["expired_key"], False, None
        for rule in persistent:
            if self._persistent_hit(rule, task_key, si, item, w.index, step.name, now, sources):
                return rule.kind, latency + FAIL_FAST_S[rule.kind], False, None
        if step.writes_disk and w.disk_refuses(now, step.disk_mb):
            return "disk_full", latency + FAIL_FAST_S["disk_full"], False, None
        if step.uses_api:
            wait = self.bucket.take(now)
            if wait > 0.0:
                if self.reject_cost:
                    wait = self.bucket.charge_refusal(now, self.reject_cost)
                return "rate_limit", latency + FAIL_FAST_S["rate_limit"], False, now + wait
            quota = self.plan.quota_per_day
            if quota:
                day = int(now // DAY_S)
                used = self._quota_used.get(day, 0)
                if used >= quota:
                    return "quota_exhausted", latency + FAIL_FAST_S["quota_exhausted"], False, (day + 1) * DAY_S
                self._quota_used[day] = used + 1
        for rule in transient:
            p = rule.constant
            if p is None:
                p = rule.probability_at(now, w.index)
            if p > 0.0 and _rng.draw(k, rule.stream) < p:
                if rule.kind == "network_blip":
                    return "network_blip", latency + FAIL_FAST_S["network_blip"], False, None
                committed = _rng.draw(k, S_COMMIT ^ rule.stream) < rule.spec.committed_probability
                return "timeout", rule.spec.timeout_s, committed, None
        if item in batch_failed:
            return "partial_batch", latency + FAIL_FAST_S["partial_batch"], False, None
        if step.sigma > 0.0:
            duration = latency + math.exp(step.mu + step.sigma * z_duration)
        else:
            duration = latency + step.mean_s
        limit = self.call_timeout_s
        if limit is not None and duration > limit:
            committed = _rng.draw(k, S_SLOW_COMMIT) < SLOW_CALL_COMMITTED_P
            return ("latency_spike" if spiked else "timeout"), limit, committed, None
        for rule in masking:
            p = rule.probability_at(now, w.index)
            if p > 0.0 and _rng.draw(k, rule.stream) < p:
                return rule.kind, duration, False, None
        return None, duration, True, None
