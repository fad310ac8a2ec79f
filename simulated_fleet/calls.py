"""One tool call: what it meets and what it does, decided without SimPy.

:meth:`CallModel.decide` is the whole decision for one call: which fault (if any) the
call meets, how long it takes, whether its side effect committed, and when a refused
call may be tried again.  It reads the fault plan, the call's keyed draws
(:mod:`fleetchaos.sim._rng`) and the fleet's state through two small protocols
(:class:`NodeView`, :class:`SharedView`), and nothing else: the world calls it for every
simulated call, and a real-code runtime can call it for every real one, so both modes
decide faults with one function.

A call meets the stages of :mod:`fleetchaos.sim.kinds` in this order: a crashed worker,
expired credentials, persistent faults, a full disk, the API token bucket, the daily
quota, transient faults, a failing batch item, a call slower than the fleet's call
timeout (a latency spike or a timeout), masking faults.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol, cast

from fleetchaos.sim import _rng
from fleetchaos.sim.capacity import Provider, build_providers
from fleetchaos.sim.config import FleetSpec, TemplateSpec, lognormal_params
from fleetchaos.sim.fault_specs import BatchFault, HangingFault, SourceFault
from fleetchaos.sim.faults import CALL_STAGES, CallRule, FaultPlan
from fleetchaos.sim.kinds import KINDS, SOURCE, TASK_STEP, TASK_STEP_ITEM, WORKER_TOOL, FaultKind
from fleetchaos.sim.state import unlimited

S_CALL_TIMES = _rng.stream_id("call:latency+duration")  # one Box-Muller pair per call
S_COMMIT = _rng.stream_id("call:timeout_committed")
S_SLOW_COMMIT = _rng.stream_id("call:slow_committed")
S_BATCH = _rng.stream_id("call:batch_items")

# Module-level names for the per-call functions: a global read instead of two look-ups.
_draw, _normal_pair, _exp = _rng.draw, _rng.normal_pair, math.exp
_sqrt, _log, _cos, _sin, _INF = math.sqrt, math.log, math.cos, math.sin, math.inf
# decide() inlines _rng.normal_pair and _rng.draw (the same arithmetic, so the same numbers):
# a Python call costs about as much as the SplitMix64 arithmetic itself.
_GOLDEN, _MASK, _M1, _M2 = _rng._GOLDEN, _rng._MASK, _rng._M1, _rng._M2
_TWO_POW_MINUS_32, _TWO_POW_MINUS_53, _TWO_PI = _rng._TWO_POW_MINUS_32, _rng._TWO_POW_MINUS_53, _rng._TWO_PI

#: ``waited`` for a call no client waits for any more (its client gave up while it queued):
#: no call timeout applies to it.
NO_CLIENT = -math.inf

#: The kinds the fleet's state produces, met by every call alike.
NODE_CRASH, EXPIRED_KEY, DISK_FULL = KINDS["node_crash"], KINDS["expired_key"], KINDS["disk_full"]
RATE_LIMIT, QUOTA_EXHAUSTED = KINDS["rate_limit"], KINDS["quota_exhausted"]
TIMEOUT, LATENCY_SPIKE = KINDS["timeout"], KINDS["latency_spike"]
OVERLOADED = KINDS["overloaded"]


def _fails_in(kind: FaultKind) -> float:
    """Seconds a call met by ``kind`` takes to fail on top of the round trip, for a kind that fails fast.

    A persistent, batch or fail-fast transient kind's record must give them (:class:`FaultKind`
    checks it), and the state kinds the world meets here give them too: None is a broken record.
    """
    fail_s = kind.fail_fast_s
    if fail_s is None:
        raise ValueError(f"fault kind {kind.name!r} fails fast here, but its record gives no fail_fast_s")
    return fail_s


#: What :meth:`CallModel.decide` returns: (the fault the call met or None, its duration in
#: simulated seconds, whether its side effect committed, the instant a refused call may be
#: retried or None).  A plain tuple: one is built for every call.
CallOutcome = tuple[FaultKind | None, float, bool, float | None]

#: Rules of one step on one worker, by stage: (persistent, transient, batch, masking).
StepRules = tuple[tuple[CallRule, ...], tuple[CallRule, ...], tuple[CallRule, ...], tuple[CallRule, ...]]

#: No item of the step fails in a batch.
NO_ITEMS: Mapping[int, FaultKind] = MappingProxyType({})


class NodeView(Protocol):
    """A worker's state as a call meets it (:class:`fleetchaos.sim.state.NodeState`)."""

    index: int
    credentials_expire_s: float
    """The instant its current credentials stop working (expired at ``now`` iff ``now >=`` it)."""
    crash_spans: list[tuple[float, float]]
    """Its crash spans: empty for a worker that never crashes (then :meth:`down` is not asked)."""

    def down(self, now: float) -> bool:
        """Whether the worker is crashed at ``now``."""
        ...

    def disk_refuses(self, now: float, mb: float) -> bool:
        """Whether a write of ``mb`` fails at ``now``."""
        ...


class SharedView(Protocol):
    """What every API call shares (:class:`fleetchaos.sim.state.SharedCapacity`)."""

    def take_token(self, now: float) -> float:
        """Take an API token: 0.0 when granted, else the seconds until one is available."""
        ...

    def take_quota(self, now: float) -> float | None:
        """Count the call against the daily quota: None when allowed, else the instant it resets."""
        ...


@dataclass(frozen=True, slots=True)
class Step:
    """A template's step compiled for the hot path."""

    index: int
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
    cancels: bool = False
    """The tool stops its work when the client gives up (``after_timeout: cancel``)."""


@dataclass(frozen=True, slots=True)
class Template:
    """A task template compiled for the hot path."""

    index: int
    name: str
    steps: tuple[Step, ...]
    names: tuple[str, ...]
    append_steps: tuple[int, ...]
    deadline_s: float | None
    budget_calls: int | None
    fan_outs: tuple[int, ...] = ()
    """Each step's fan-out (the shape of a task's ledger record)."""


def compile_template(index: int, template: TemplateSpec, plan: FaultPlan) -> Template:
    """A :class:`~fleetchaos.sim.config.TemplateSpec` compiled once per run."""
    steps = []
    names = [s.tool for s in template.steps]
    for si, s in enumerate(template.steps):
        mu, sigma = lognormal_params(s.duration.mean_s, s.duration.cv)
        steps.append(
            Step(
                index=si,
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
                cancels=s.after_timeout == "cancel",
            )
        )
    return Template(
        index=index,
        name=template.name,
        steps=tuple(steps),
        names=tuple(names),
        append_steps=tuple(i for i, s in enumerate(template.steps) if s.side_effect == "append"),
        deadline_s=template.deadline_s,
        budget_calls=template.budget_calls,
        fan_outs=tuple(s.fan_out for s in template.steps),
    )


class CallModel:
    """Decides what every tool call of one run meets and does.

    Holds what is the same for every call of the run (the plan, the latency model, the
    call timeout, the shared capacity) and what the run learns as it goes (tools a
    remediation installed, the one draw per worker and tool of a missing dependency).
    """

    __slots__ = (
        "_dependency_draws",
        "_rules",
        "_spiking",
        "_take_quota",
        "_take_token",
        "_template_rules",
        "api_provider",
        "call_timeout_s",
        "cut_committed_p",
        "installed",
        "latency_mean",
        "latency_mu",
        "latency_sigma",
        "plan",
        "providers",
        "route",
        "seed",
        "shared",
        "spikes",
    )

    def __init__(self, plan: FaultPlan, shared: SharedView, seed: int, fleet: FleetSpec):
        """A run's calls: its fault plan, the capacity its API calls share, its seed and its fleet."""
        self.plan = plan
        self.shared = shared
        self.seed = seed
        self.call_timeout_s = fleet.call_timeout_s
        self.cut_committed_p = fleet.cut_call_committed_probability
        lat = fleet.network_latency
        self.latency_mean = 2.0 * lat.mean_s  # a call is one round trip
        self.latency_mu, self.latency_sigma = lognormal_params(self.latency_mean, lat.cv)
        self.spikes = plan.latency  # per worker: a SpanTable of (factor, add)
        # The same, None for a worker without spikes: decide() tests it without a method call.
        self._spiking = [table if table else None for table in plan.latency]
        # Bound once: every API call takes a token and (with a daily quota) counts against it.
        self._take_token = shared.take_token
        self._take_quota = None if shared.take_quota is unlimited else shared.take_quota
        self.installed: set[tuple[int, str]] = set()  # (worker, tool) a remediation agent installed
        self._dependency_draws: dict[tuple[int, int, str], float] = {}  # (rule stream, worker, tool) -> its draw
        self._rules: dict[tuple[int, int, int], StepRules] = {}
        self._template_rules: dict[tuple[int, int], tuple[StepRules, ...]] = {}
        self.providers: list[Provider] = build_providers(fleet.providers, plan.slowdowns)
        """The run's providers with a declared capacity, in the scenario's order."""
        self.api_provider: Provider | None = None
        # tool -> its provider; None when the scenario declares none (the per-call check is one attribute test)
        self.route: dict[str, Provider] | None = None
        if self.providers:
            self.route = {}
            for provider, spec in zip(self.providers, fleet.providers, strict=True):
                if spec.tools is None:
                    self.api_provider = provider
                for tool in spec.tools or ():
                    self.route[tool] = provider

    def provider_of(self, step: Step) -> Provider | None:
        """The provider with a declared capacity that serves ``step``'s calls (as :meth:`decide` routes them), if any."""
        route = self.route
        if route is None:
            return None
        provider = route.get(step.name)
        return self.api_provider if provider is None and step.uses_api else provider

    def rules_for(self, worker: int, tpl: Template, si: int) -> StepRules:
        """The per-call rules that can hit this worker, template and step, grouped by stage."""
        cache_key = (worker, tpl.index, si)
        rules = self._rules.get(cache_key)
        if rules is None:
            tool = tpl.names[si]
            hits = [r for r in self.plan.rules if r.applies(worker, tool, tpl.name)]
            persistent, transient, batch, masking = (
                tuple(r for r in hits if r.info.stage == stage) for stage in CALL_STAGES
            )
            rules = (persistent, transient, batch, masking)
            self._rules[cache_key] = rules
        return rules

    def step_rules(self, worker: int, tpl: Template) -> tuple[StepRules, ...]:
        """:meth:`rules_for` of every step of ``tpl`` on ``worker``: one lookup per dispatch, not per step."""
        rules = self._template_rules.get((worker, tpl.index))
        if rules is None:
            rules = tuple(self.rules_for(worker, tpl, si) for si in range(len(tpl.steps)))
            self._template_rules[(worker, tpl.index)] = rules
        return rules

    def decide(
        self,
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
        """What item ``item``'s call of ``step`` meets and does, starting at ``now`` on ``node``.

        ``key`` is the call's key (:func:`fleetchaos.sim._rng.call_key`), ``task_key`` its
        task's; ``batch_failed`` the items :meth:`batch_failures` chose for this step
        execution; ``sources`` the source each (step, item) is on (alternatives taken);
        ``waited`` the seconds the call already waited since its dispatch (for a tool
        slot), which count toward the call timeout.
        """
        # The call's two normals, _normal_pair(key, S_CALL_TIMES) inlined: r cos t is its
        # latency's, r sin t its duration's (only a call that gets that far needs it).
        z = ((key ^ S_CALL_TIMES) + _GOLDEN) & _MASK
        z = ((z ^ (z >> 30)) * _M1) & _MASK
        z = ((z ^ (z >> 27)) * _M2) & _MASK
        z ^= z >> 31
        r = _sqrt(-2.0 * _log(((z >> 32) + 1) * _TWO_POW_MINUS_32))
        t = _TWO_PI * (z & 0xFFFFFFFF) * _TWO_POW_MINUS_32
        sigma = self.latency_sigma
        if sigma > 0.0:
            latency = _exp(self.latency_mu + sigma * (r * _cos(t)))
        else:
            latency = self.latency_mean
        spikes = self._spiking[node.index]
        spiked = False
        if spikes is not None:
            spike = spikes.at(now)
            if spike is not None:
                factor, add = spike
                latency = latency * factor + add
                spiked = True
        if node.crash_spans and node.down(now):
            return NODE_CRASH, latency + _fails_in(NODE_CRASH), False, None
        uses_api = step.uses_api
        if uses_api and now >= node.credentials_expire_s:
            return EXPIRED_KEY, latency + _fails_in(EXPIRED_KEY), False, None
        persistent, transient, _, masking = rules
        for rule in persistent:
            if self.persistent_hit(rule, task_key, step, item, node.index, now, sources):
                return rule.info, latency + _fails_in(rule.info), False, None
        if step.writes_disk and node.disk_refuses(now, step.disk_mb):
            return DISK_FULL, latency + _fails_in(DISK_FULL), False, None
        if uses_api:
            wait = self._take_token(now)
            if wait > 0.0:
                return RATE_LIMIT, latency + _fails_in(RATE_LIMIT), False, now + wait
            if self._take_quota is not None:
                reset = self._take_quota(now)
                if reset is not None:
                    return QUOTA_EXHAUSTED, latency + _fails_in(QUOTA_EXHAUSTED), False, reset
        for rule in transient:
            p = rule.constant
            if p is None:
                p = rule.probability_at(now, node.index)
            if p > 0.0:
                z = ((key ^ rule.stream) + _GOLDEN) & _MASK  # _draw(key, rule.stream), inlined
                z = ((z ^ (z >> 30)) * _M1) & _MASK
                z = ((z ^ (z >> 27)) * _M2) & _MASK
                if ((z ^ (z >> 31)) >> 11) * _TWO_POW_MINUS_53 < p:
                    kind = rule.info
                    if not kind.outcome_unknown:
                        return kind, latency + _fails_in(kind), False, None
                    hangs = cast(HangingFault, rule.spec)  # its stage's model has these fields (a test checks it)
                    committed = _draw(key, S_COMMIT ^ rule.stream) < hangs.committed_probability
                    return kind, hangs.timeout_s, committed, None
        if batch_failed and item in batch_failed:
            kind = batch_failed[item]
            return kind, latency + _fails_in(kind), False, None
        if step.sigma > 0.0:
            work = _exp(step.mu + step.sigma * (r * _sin(t)))
        else:
            work = step.mean_s
        limit = self.call_timeout_s
        route = self.route
        if route is not None:
            provider = route.get(step.name)
            if provider is None and uses_api:
                provider = self.api_provider
            if provider is not None:
                patience = _INF if limit is None else limit - waited - latency
                admitted = provider.admit(now, work, patience, step.cancels)
                if admitted is None:
                    if provider.status == 429:
                        return RATE_LIMIT, latency + _fails_in(RATE_LIMIT), False, provider.next_room(now)
                    return OVERLOADED, latency + _fails_in(OVERLOADED), False, None
                took, in_time = admitted
                if not in_time:  # the client gave up; the work goes on (and takes effect) unless the tool cancels it
                    return (LATENCY_SPIKE if spiked else TIMEOUT), limit - waited, not step.cancels, None  # type: ignore[operator]  # late only against a limit (patience is infinite without one)
                work = took
        duration = latency + work
        if limit is not None and duration + waited > limit:
            committed = False if step.cancels else _draw(key, S_SLOW_COMMIT) < self.cut_committed_p
            return (LATENCY_SPIKE if spiked else TIMEOUT), limit - waited, committed, None
        for rule in masking:
            p = rule.probability_at(now, node.index)
            if p > 0.0 and _draw(key, rule.stream) < p:
                return rule.info, duration, False, None
        return None, duration, True, None

    def transient_fault(self, node: NodeView, rules: StepRules, key: int, now: float) -> FaultKind | None:
        """The transient fault a call keyed ``key`` would meet at ``now`` on ``node``, read without side effects.

        The transient stage of :meth:`decide` alone (the first transient rule whose keyed
        draw hits), for the wasted-retry judge: a test keeps the two in step.
        """
        for rule in rules[1]:
            p = rule.constant
            if p is None:
                p = rule.probability_at(now, node.index)
            if p > 0.0 and _draw(key, rule.stream) < p:
                return rule.info
        return None

    def slow_call(self, node: NodeView, step: Step, key: int, now: float) -> FaultKind | None:
        """TIMEOUT or LATENCY_SPIKE when a call keyed ``key`` starting at ``now`` would outlast the call timeout, else None.

        The latency and duration of :meth:`decide` (the same keyed draws and the spike in
        force on ``node``), read without side effects, for the wasted-retry judge.
        """
        limit = self.call_timeout_s
        if limit is None:
            return None
        latency, work, spiked = self.call_times(node, step, key, now)
        if latency + work <= limit:
            return None
        return LATENCY_SPIKE if spiked else TIMEOUT

    def call_times(self, node: NodeView, step: Step, key: int, now: float) -> tuple[float, float, bool]:
        """(round trip, work on an idle provider, whether a latency spike is in force) of a call keyed ``key``
        starting at ``now`` on ``node``: the keyed draws of :meth:`decide`, read without side effects."""
        z_latency, z_duration = _normal_pair(key, S_CALL_TIMES)
        latency = (
            _exp(self.latency_mu + self.latency_sigma * z_latency) if self.latency_sigma > 0.0 else self.latency_mean
        )
        spike = self.spikes[node.index].at(now) if self.spikes[node.index] else None
        if spike is not None:
            latency = latency * spike[0] + spike[1]
        return (
            latency,
            (_exp(step.mu + step.sigma * z_duration) if step.sigma > 0.0 else step.mean_s),
            spike is not None,
        )

    def persistent_hit(
        self,
        rule: CallRule,
        task_key: int,
        step: Step,
        item: int,
        worker: int,
        now: float,
        sources: dict[tuple[int, int], int],
    ) -> bool:
        """Whether a persistent fault (the same cause every time) hits this call.

        The draw ignores the execution number: the same task, step, item (and source, or
        worker and tool, as the kind's ``persistent_scope`` says) fails on every try while
        the rule holds.
        """
        p = rule.probability_at(now, worker)
        if p <= 0.0:
            return False
        scope = rule.info.persistent_scope
        if scope == WORKER_TOOL:
            tool = step.name
            if self.installed and (worker, tool) in self.installed:
                return False  # a remediation agent installed it
            # One draw per rule, worker and tool for the whole run: keyed the same every call.
            cache_key = (rule.stream, worker, tool)
            u = self._dependency_draws.get(cache_key)
            if u is None:
                u = self._dependency_draws[cache_key] = _rng.draw(
                    _rng.dependency_key(self.seed, worker, tool), rule.stream
                )
            return u < p
        si = step.index
        if scope == TASK_STEP:
            return _rng.draw(_rng.persistent_key(task_key, si), rule.stream) < p
        if scope == TASK_STEP_ITEM:
            items = rule.items
            return (items is None or item in items) and _rng.draw(
                _rng.persistent_key(task_key, si, item), rule.stream
            ) < p
        assert scope == SOURCE, scope
        source = sources.get((si, item), 0)  # each source of an item is gone or not, for good
        spec = cast(SourceFault, rule.spec)  # its scope's model has these fields (a test checks it)
        if source > spec.alternatives:
            return True
        q = p if source == 0 else spec.alternative_missing_probability
        return _rng.draw(_rng.persistent_key(task_key, si, item, source), rule.stream) < q

    def batch_failures(
        self, rules: tuple[CallRule, ...], fan_out: int, task_key: int, si: int, step_key: int, worker: int, now: float
    ) -> Mapping[int, FaultKind]:
        """Items of a fan-out step execution chosen to fail together by a batch rule, each with its kind.

        The first rule whose draw hits chooses; a persistent rule draws without the
        execution number, so it chooses the same items every time.
        """
        for rule in rules:
            spec = cast(BatchFault, rule.spec)  # its stage's model has these fields (a test checks it)
            key = _rng.persistent_key(task_key, si) if spec.persistent else step_key
            if _rng.draw(key, rule.stream) < rule.probability_at(now, worker):
                order = sorted(range(fan_out), key=lambda i: _rng.draw(key, S_BATCH + i))
                return dict.fromkeys(order[: min(spec.failures, fan_out)], rule.info)
        return NO_ITEMS
