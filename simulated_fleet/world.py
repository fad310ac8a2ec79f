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
from dataclasses import dataclass, field
from typing import Generator

import simpy

from . import _rng
from .config import DAY_S, WorldSpec
from .faults import FaultPlan, build_plan
from .fleet import TokenBucket, Worker
from .formats import ErrorFormat
from .ledger import TaskRecord
from .observation import (
    ACTION_TYPES,
    Action,
    Escalate,
    GiveUp,
    Observation,
    RecoveryPolicy,
    RefreshCredentials,
    Reroute,
    Retry,
    TaskHistory,
)
from .truth import FAILURE_KINDS, AttemptReport
from .workload import Task, arrivals

S_BLIP = _rng.stream_id("call:network_blip")
S_TIMEOUT = _rng.stream_id("call:timeout")
S_COMMIT = _rng.stream_id("call:timeout_committed")
S_DURATION = _rng.stream_id("call:duration")
S_LATENCY = _rng.stream_id("call:latency")
S_POLICY = _rng.stream_id("policy")
S_TASK = _rng.stream_id("task")

K_BLIP = FAILURE_KINDS.index("network_blip") + 1
K_TIMEOUT = FAILURE_KINDS.index("timeout") + 1
K_RATE = FAILURE_KINDS.index("rate_limit") + 1
K_DISK = FAILURE_KINDS.index("disk_full") + 1
K_KEY = FAILURE_KINDS.index("expired_key") + 1

#: How long a call takes to fail fast, on top of the network round trip (simulated s).
FAIL_FAST_S = {K_BLIP: 1.0, K_RATE: 0.1, K_DISK: 0.5, K_KEY: 0.3}

#: Why a retry was wasted, by the kind of the failure that preceded it.
WASTE_REASONS = {
    "expired_key": "credentials still expired",
    "disk_full": "same full disk",
    "rate_limit": "before retry-after",
}


@dataclass(frozen=True, slots=True)
class _Step:
    """A step compiled for the hot path."""

    name: str
    fan_out: int
    uses_api: bool
    writes_disk: bool
    tokens: int
    mean_s: float
    mu: float
    sigma: float


@dataclass(frozen=True, slots=True)
class _Template:
    name: str
    steps: tuple[_Step, ...]
    names: tuple[str, ...]
    append_steps: tuple[int, ...]


def _lognormal(mean: float, cv: float) -> tuple[float, float]:
    sigma2 = math.log1p(cv * cv)
    return math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2)


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
    """Rebuild a policy's action as a checked instance of one of the five action classes."""
    if isinstance(action, Escalate):
        return Escalate(str(action.reason))
    if isinstance(action, GiveUp):
        if action.claim not in ("failed", "partial"):
            raise ValueError(f"GiveUp claim must be 'failed' or 'partial', got {action.claim!r}")
        return GiveUp(action.claim)
    if isinstance(action, (Retry, Reroute, RefreshCredentials)):
        start = _index(action.resume_from, "resume_from")
        done = tuple(sorted({_index(i, "done_items entry") for i in action.done_items}))
        if isinstance(action, RefreshCredentials):
            return RefreshCredentials(start, done)
        delay = _number(action.delay_s, "delay_s")
        return (Reroute if isinstance(action, Reroute) else Retry)(delay, start, done)
    raise TypeError(f"expected an action ({', '.join(t.__name__ for t in ACTION_TYPES)}), got {type(action).__name__}")


@dataclass(slots=True)
class RunOutput:
    """Everything one simulated run produced."""

    records: list[TaskRecord]
    plan: FaultPlan
    duration_s: float
    end_s: float
    fault_log: list[tuple[float, str, str, int, int]] = field(default_factory=list)
    """Every fault a call met: (time_s, kind, tool, worker, task_id), in time order."""
    trace: list[tuple] | None = field(default=None)


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
    ):
        self.spec = spec
        self.policy = policy
        self.fmt = error_format
        self.seed = seed
        self.max_actions = max_actions
        self.drain_s = drain_s
        self.env = simpy.Environment()
        self.plan = build_plan(spec, seed)
        fleet = spec.fleet
        self.workers = [
            Worker(
                self.env,
                i,
                fleet.tool_slots,
                self.plan.disk_full[i],
                self.plan.key_expiries[i],
                fleet.credential_lifetime_s,
            )
            for i in range(fleet.workers)
        ]
        self.bucket = TokenBucket(fleet.api_rate_per_s, fleet.api_burst, self.plan.rate_windows)
        self.refresh_s = fleet.credential_refresh_s
        lat = fleet.network_latency
        self.latency_mean = 2.0 * lat.mean_s  # a call is one round trip
        self.latency_mu, self.latency_sigma = _lognormal(self.latency_mean, lat.cv)
        self.templates = tuple(self._compile(t) for t in spec.workload.templates)
        self.least_loaded = fleet.dispatch == "least_loaded"
        self.records: list[TaskRecord] = []
        self.fault_log: list[tuple[float, str, str, int, int]] = []
        self.trace: list[tuple] | None = [] if trace else None
        self._seed_key = _rng.key(seed, S_TASK)

    @staticmethod
    def _compile(template) -> _Template:
        steps = []
        for s in template.steps:
            mu, sigma = _lognormal(s.duration.mean_s, s.duration.cv)
            steps.append(
                _Step(s.tool, s.fan_out, s.uses_api, s.disk_mb > 0, s.tokens if s.uses_api else 0, s.duration.mean_s, mu, sigma)
            )
        return _Template(
            name=template.name,
            steps=tuple(steps),
            names=tuple(s.tool for s in template.steps),
            append_steps=tuple(i for i, s in enumerate(template.steps) if s.side_effect == "append"),
        )

    # -- running -----------------------------------------------------------------------

    def run(self) -> RunOutput:
        """Simulate the horizon, then let in-flight tasks drain for up to ``drain_s``."""
        self.env.process(self._source())
        end = self.spec.duration_s + self.drain_s
        self.env.run(until=end)
        return RunOutput(self.records, self.plan, self.spec.duration_s, self.env.now, self.fault_log, self.trace)

    def _source(self) -> Generator:
        env = self.env
        spec = self.spec
        for task in arrivals(spec.workload, self.seed, spec.duration_s, spec.fleet.orchestrators):
            if task.arrival_s > env.now:
                yield env.timeout(task.arrival_s - env.now)
            env.process(self._task(task))

    def _emit(self, *event) -> None:
        if self.trace is not None:
            self.trace.append((round(self.env.now, 6), *event))

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
        self.records.append(rec)
        history = TaskHistory(task_id=task.id, rng=random.Random(_rng.key(self.seed, S_POLICY, task.id)))
        worker = self._first_worker(task)
        start, done = 0, ()
        previous: tuple | None = None  # (failure kind, retry-after instant) of the last dispatch
        actions = 0
        while True:
            history.attempts += 1
            history.worker = worker
            w = self.workers[worker]
            if previous is not None:
                self._judge_retry(rec, previous, w)
            self._emit("dispatch", task.id, worker, start)
            w.in_flight += 1
            report = yield from self._attempt(task, tpl, rec, w, start, done)
            w.in_flight -= 1
            obs = self.fmt.render(report)
            if obs.ok:
                rec.claim = "success"
                break
            history.elapsed_s = env.now - task.arrival_s
            code = obs.envelope.error_code if obs.envelope is not None else obs.status
            history.same_failure_streak = history.same_failure_streak + 1 if code == history.last_code else 1
            history.last_code = code
            actions += 1
            action = self._decide(obs, history, rec, actions)
            retry_at = env.now + report.retry_after_s if report.retry_after_s is not None else None
            previous = (report.failure, retry_at)
            kind = type(action)  # canonical: exactly one of the five action classes
            self._emit("action", task.id, worker, kind.__name__)
            if kind is Escalate:
                rec.claim = "escalated"
                break
            if kind is GiveUp:
                rec.claim = action.claim
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
            else:
                if kind is Reroute:
                    worker = self._reroute(worker)
                    rec.reroutes += 1
                    history.reroutes += 1
                if action.delay_s > 0:
                    yield env.timeout(action.delay_s)
            rec.retries += 1
            history.retries += 1
        rec.worker = worker
        rec.end_s = env.now
        self._emit("end", task.id, worker, rec.claim)

    def _decide(self, obs: Observation, history: TaskHistory, rec: TaskRecord, actions: int) -> Action:
        """Ask the policy, containing anything it does wrong to this task.

        Whatever the policy returns is checked field by field and rebuilt as one of the
        canonical action types, so the driver never acts on a malformed action.
        """
        if actions > self.max_actions:
            rec.policy_error = f"action cap reached: more than {self.max_actions} actions for one task"
            return GiveUp()
        try:
            action = self.policy.decide(obs, history)
        except Exception as exc:  # a broken user policy must not stop the run
            rec.policy_error = f"policy raised {type(exc).__name__}: {exc}"[:500]
            return GiveUp()
        try:
            return _canonical(action)
        except (TypeError, ValueError, OverflowError) as exc:
            rec.policy_error = f"policy returned an invalid action: {exc}"[:500]
            return GiveUp()

    def _judge_retry(self, rec: TaskRecord, previous: tuple, w: Worker) -> None:
        """Truth check at dispatch time: does the last failure's cause still hold?"""
        kind, retry_at = previous
        now = self.env.now
        if kind == "expired_key":
            held = w.credentials_expired(now)
        elif kind == "disk_full":
            held = w.disk_full(now)
        elif kind == "rate_limit":
            held = retry_at is not None and now < retry_at
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

    # -- one dispatch ------------------------------------------------------------------

    def _attempt(
        self, task: Task, tpl: _Template, rec: TaskRecord, w: Worker, start: int, done: tuple[int, ...]
    ) -> Generator:
        env = self.env
        partial_ok = self.fmt.partial_step_ok
        task_key = _rng.mix(self._seed_key ^ task.id)
        steps = tpl.steps
        for si in range(start, len(steps)):
            step = steps[si]
            skip = done if si == start else ()
            executions = rec.executions
            executions[si] += 1
            exec_no = executions[si]
            commits = rec.commits[si]
            if min(commits) > 0:
                rec.redone_steps += 1
            rec.step_executions += 1
            req = w.slots.request()
            yield req
            now = env.now
            longest = 0.0
            failed: list[tuple[int, int]] = []  # (item, kind index)
            succeeded: list[int] = []
            committed_anyway: list[int] = []
            token_at = None
            for item in range(step.fan_out):
                if item in skip:
                    continue
                rec.calls += 1
                kind, duration, committed, wait = self._call(
                    _rng.mix(task_key ^ (si << 40) ^ (item << 32) ^ exec_no), step, w, now
                )
                if duration > longest:
                    longest = duration
                if kind == 0 or kind == K_TIMEOUT:
                    rec.tokens += step.tokens
                if kind:
                    failed.append((item, kind))
                    if committed:
                        committed_anyway.append(item)
                    if wait is not None and (token_at is None or wait < token_at):
                        token_at = wait
                else:
                    succeeded.append(item)
            yield env.timeout(longest)
            w.slots.release(req)
            for item in succeeded:
                commits[item] += 1
            for item in committed_anyway:
                commits[item] += 1
            if not failed:
                continue
            for item, kind in failed:
                name = FAILURE_KINDS[kind - 1]
                rec.note_fault(name, now)
                self.fault_log.append((now, name, step.name, w.index, task.id))
                self._emit("fault", task.id, w.index, name, step.name)
            if partial_ok and succeeded:
                continue  # the tool said "ok" with what it gathered: silent partial work
            first_kind = FAILURE_KINDS[failed[0][1] - 1]
            retry_after = None
            if token_at is not None:
                retry_after = max(0.0, token_at - env.now)
            return AttemptReport(
                task_id=task.id,
                worker=w.index,
                start_step=start,
                failed_step=si,
                step_names=tpl.names,
                failure=first_kind,
                fan_out=step.fan_out,
                done_items=tuple(sorted(set(skip) | set(succeeded))),
                retry_after_s=retry_after,
            )
        return AttemptReport(
            task_id=task.id, worker=w.index, start_step=start, failed_step=-1, step_names=tpl.names
        )

    def _call(self, k: int, step: _Step, w: Worker, now: float) -> tuple[int, float, bool, float | None]:
        """One tool call: (failure kind index or 0, duration, committed, token instant)."""
        if self.latency_sigma > 0.0:
            latency = math.exp(self.latency_mu + self.latency_sigma * _rng.normal(k, S_LATENCY))
        else:
            latency = self.latency_mean
        if step.uses_api and w.credentials_expired(now):
            return K_KEY, latency + FAIL_FAST_S[K_KEY], False, None
        if step.writes_disk and w.disk_full(now):
            return K_DISK, latency + FAIL_FAST_S[K_DISK], False, None
        if step.uses_api:
            wait = self.bucket.take(now)
            if wait > 0.0:
                return K_RATE, latency + FAIL_FAST_S[K_RATE], False, now + wait
        i = w.index
        for n, rule in enumerate(self.plan.blips[i]):
            if _rng.draw(k, S_BLIP + n) < rule.probability_at(now):
                return K_BLIP, latency + FAIL_FAST_S[K_BLIP], False, None
        for n, rule in enumerate(self.plan.timeouts[i]):
            if _rng.draw(k, S_TIMEOUT + n) < rule.probability_at(now):
                committed = _rng.draw(k, S_COMMIT + n) < rule.committed_probability
                return K_TIMEOUT, rule.timeout_s, committed, None
        if step.sigma > 0.0:
            return 0, latency + math.exp(step.mu + step.sigma * _rng.normal(k, S_DURATION)), True, None
        return 0, latency + step.mean_s, True, None
