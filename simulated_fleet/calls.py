"""One tool call: what it meets and what it does, decided without SimPy.

:meth:`CallModel.decide` is the whole decision for one call: which fault (if any) the
call meets, how long it takes, whether its side effect committed, and when a refused
call may be tried again.  It reads the fault plan, the call's keyed draws
(:mod:`fleetchaos.sim._rng`) and the fleet's state through two small protocols
(:class:`~fleetchaos.sim.state.NodeView`, :class:`~fleetchaos.sim.state.SharedView`),
and nothing else: the world calls it for every simulated call, and a real-code runtime
can call it for every real one, so both modes decide faults with one function.

A call meets the stages of :mod:`fleetchaos.sim.kinds` in this order: the state kinds'
gates on the worker itself and the call's access (a crashed worker, expired
credentials), persistent faults, the state kinds' gates on what the call consumes (a
full disk, the API token bucket, the daily quota), transient faults, a failing batch
item, the call's provider (a refusal, or a wait past the client's patience), a call
slower than the fleet's call timeout (a latency spike or a timeout) or a reply later than
``fleet.late_reply_s`` (a late reply), masking faults.  Each state kind's gate comes from its handler
(:mod:`fleetchaos.sim.state_kinds`), asked once per worker and step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import cast

from fleetchaos.sim import _rng
from fleetchaos.sim.capacity import Provider, build_providers
from fleetchaos.sim.config import FleetSpec, lognormal_params
from fleetchaos.sim.conversation import ResultSizes
from fleetchaos.sim.fault_specs import BatchFault, HangingFault, SourceFault
from fleetchaos.sim.kind_record import RENEWED
from fleetchaos.sim.kinds import KINDS, SOURCE, TASK_STEP, TASK_STEP_ITEM, WORKER_TOOL, FaultKind, fault_kind
from fleetchaos.sim.kinds_mcp import RENEWAL_SLOTS
from fleetchaos.sim.plan import CALL_STAGES, RESOURCE, CallRule, FaultPlan, Gate, StateKind
from fleetchaos.sim.state import NodeView, SharedView
from fleetchaos.sim.template import Step, Template

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

#: The kinds a call's provider and its duration produce.
RATE_LIMIT, OVERLOADED = KINDS["rate_limit"], KINDS["overloaded"]
TIMEOUT, LATENCY_SPIKE = KINDS["timeout"], KINDS["latency_spike"]
CONTEXT_OVERFLOW = KINDS["context_overflow"]


def _fails_in(kind: FaultKind) -> float:
    """Seconds a call met by ``kind`` takes to fail on top of the round trip, for a kind that fails fast.

    A persistent, batch or fail-fast transient kind's record must give them (:class:`FaultKind`
    checks it), and the state kinds whose gates refuse a call give them too: None is a broken record.
    """
    fail_s = kind.fail_fast_s
    if fail_s is None:
        raise ValueError(f"fault kind {kind.name!r} fails fast here, but its record gives no fail_fast_s")
    return fail_s


_RATE_LIMIT_S, _OVERLOADED_S = _fails_in(RATE_LIMIT), _fails_in(OVERLOADED)

#: What :meth:`CallModel.decide` returns: (the fault the call met or None, its duration in
#: simulated seconds, whether its side effect committed, the instant a refused call may be
#: retried or None).  A plain tuple: one is built for every call.
CallOutcome = tuple[FaultKind | None, float, bool, float | None]

#: A state kind's gate as a call meets it: (the kind's record, its fail-fast seconds, the gate).
KindGate = tuple[FaultKind, float, Gate]

#: Rules of one step on one worker, by stage: (persistent, transient, batch, masking), then the
#: state kinds' gates met before the per-call rules and those met after the persistent ones.
StepRules = tuple[
    tuple[CallRule, ...],
    tuple[CallRule, ...],
    tuple[CallRule, ...],
    tuple[CallRule, ...],
    tuple[KindGate, ...],
    tuple[KindGate, ...],
]

#: A model turn refused for its context (past the window): every call it would have emitted fails with it at once.
OVERFLOWED: tuple[FaultKind, float, bool, None] = (CONTEXT_OVERFLOW, _fails_in(CONTEXT_OVERFLOW), False, None)

#: No item of the step fails in a batch.
NO_ITEMS: Mapping[int, FaultKind] = MappingProxyType({})


class CallModel:
    """Decides what every tool call of one run meets and does.

    Holds what is the same for every call of the run (the plan, the latency model, the
    call timeout, the shared capacity) and what the run learns as it goes (tools a
    remediation installed, the one draw per worker and tool of a missing dependency).
    """

    __slots__ = (
        "_dependency_draws",
        "_gating",
        "_rules",
        "_spiking",
        "_template_rules",
        "api_provider",
        "call_timeout_s",
        "context_window",
        "cut_committed_p",
        "installed",
        "late_reply_s",
        "latency_mean",
        "latency_mu",
        "latency_sigma",
        "plan",
        "providers",
        "result_sizes",
        "route",
        "seed",
        "shared",
        "slow_s",
        "spikes",
    )

    def __init__(self, plan: FaultPlan, shared: SharedView, seed: int, fleet: FleetSpec):
        """A run's calls: its fault plan, the capacity its API calls share, its seed and its fleet."""
        self.plan = plan
        self.shared = shared
        self.seed = seed
        self.call_timeout_s = fleet.call_timeout_s
        self.cut_committed_p = fleet.cut_call_committed_probability
        self.context_window = fleet.model.context_window_tokens
        """A model turn whose context is past this many tokens is refused (``context_overflow``)."""
        self.result_sizes = ResultSizes(fleet.model.result_tokens_sigma, fleet.model.result_tokens_repeat == "redrawn")
        """How many tokens each tool result adds to the context, drawn per call."""
        self.late_reply_s = fleet.late_reply_s
        # The client's patience for a reply that counts: the call timeout, or the late-reply limit below it.
        self.slow_s = fleet.call_timeout_s if fleet.late_reply_s is None else fleet.late_reply_s
        lat = fleet.network_latency
        self.latency_mean = 2.0 * lat.mean_s  # a call is one round trip
        self.latency_mu, self.latency_sigma = lognormal_params(self.latency_mean, lat.cv)
        self.spikes = plan.latency  # per worker: a SpanTable of (factor, add)
        # The same, None for a worker without spikes: decide() tests it without a method call.
        self._spiking = [table if table else None for table in plan.latency]
        self.installed: set[tuple[int, str]] = set()  # (worker, tool) a remediation agent installed
        self._dependency_draws: dict[tuple[int, int, str], float] = {}  # (rule stream, worker, tool) -> its draw
        self._rules: dict[tuple[int, int, int], StepRules] = {}
        self._template_rules: dict[tuple[int, int], tuple[StepRules, ...]] = {}
        # The state kinds that gate calls, in the order a call meets them (the registry's order within a
        # point), each with its record and fail-fast seconds.
        self._gating: list[tuple[StateKind, FaultKind, float]] = []
        for kind in sorted(plan.kinds, key=lambda k: k.met):
            if type(kind).gate is not StateKind.gate:
                record = fault_kind(kind.name)
                self._gating.append((kind, record, _fails_in(record)))
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

    def rules_for(self, node: NodeView, tpl: Template, si: int) -> StepRules:
        """The per-call rules that can hit this worker, template and step, grouped by stage, and the
        state kinds' gates its calls meet, bound to ``node`` (each kind's handler asked once, in the
        order a call meets them).  A run's calls on one worker always meet the same node."""
        worker = node.index
        cache_key = (worker, tpl.index, si)
        rules = self._rules.get(cache_key)
        if rules is None:
            tool = tpl.names[si]
            hits = [r for r in self.plan.rules if r.applies(worker, tool, tpl.name)]
            persistent, transient, batch, masking = (
                tuple(r for r in hits if r.info.stage == stage) for stage in CALL_STAGES
            )
            rules = (persistent, transient, batch, masking, *self.gates_for(node, tpl.steps[si]))
            self._rules[cache_key] = rules
        return rules

    def gates_for(self, node: NodeView, step: Step) -> tuple[tuple[KindGate, ...], tuple[KindGate, ...]]:
        """The state kinds' gates a call of ``step`` on ``node`` meets: those before the per-call rules (the worker
        itself, the call's access), then those after the persistent ones (what the call consumes)."""
        gates = [
            (kind.met, (record, fail_s, gate))
            for kind, record, fail_s in self._gating
            if (gate := kind.gate(self.plan, self.shared, node, step)) is not None
        ]
        return tuple(gate for met, gate in gates if met < RESOURCE), tuple(
            gate for met, gate in gates if met >= RESOURCE
        )

    def step_rules(self, node: NodeView, tpl: Template) -> tuple[StepRules, ...]:
        """:meth:`rules_for` of every step of ``tpl`` on ``node``: one lookup per dispatch, not per step."""
        rules = self._template_rules.get((node.index, tpl.index))
        if rules is None:
            rules = tuple(self.rules_for(node, tpl, si) for si in range(len(tpl.steps)))
            self._template_rules[(node.index, tpl.index)] = rules
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
        via: Provider | None = None,
    ) -> CallOutcome:
        """What item ``item``'s call of ``step`` meets and does, starting at ``now`` on ``node``.

        ``key`` is the call's key (:func:`fleetchaos.sim._rng.call_key`), ``task_key`` its
        task's; ``batch_failed`` the items :meth:`batch_failures` chose for this step
        execution; ``sources`` the source each (step, item) is on (alternatives taken);
        ``waited`` the seconds the call already waited since its dispatch (for a tool
        slot), which count toward the call timeout; ``via`` a provider that serves this
        call instead of the step's own (the fallback model's, :mod:`fleetchaos.sim.model_turns`).
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
        persistent, transient, _, masking, before, after = rules
        for gate in before:  # the state kinds' gates on the worker itself, the call's access: (kind, fail_s, gate)
            lifts = gate[2](now)
            if lifts:
                return gate[0], latency + gate[1], False, None if lifts is True else lifts
        for rule in persistent:
            if self.persistent_hit(rule, task_key, step, item, node.index, now, sources):
                return rule.info, latency + rule.fail_s, False, None
        for gate in after:  # the state kinds' gates on what the call consumes
            lifts = gate[2](now)
            if lifts:
                return gate[0], latency + gate[1], False, None if lifts is True else lifts
        uses_api = step.uses_api
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
                        return kind, latency + rule.fail_s, False, None
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
        route = self.route
        if route is not None or via is not None:
            provider = via if via is not None else route.get(step.name)  # type: ignore[union-attr]  # one is set
            if provider is None and uses_api:
                provider = self.api_provider
            if provider is not None:
                if provider.mixture is not None:
                    work = provider.service_s(work, key)
                limit = self.call_timeout_s
                patience = _INF if limit is None else limit - waited - latency
                admitted = provider.admit(now, work, patience, step.cancels)
                if admitted is None:
                    if provider.status == 429:
                        return RATE_LIMIT, latency + _RATE_LIMIT_S, False, provider.next_room(now)
                    return OVERLOADED, latency + _OVERLOADED_S, False, None
                took, in_time = admitted
                if not in_time:  # the client gave up; the work goes on (and takes effect) unless the tool cancels it
                    return (LATENCY_SPIKE if spiked else TIMEOUT), limit - waited, not step.cancels, None  # type: ignore[operator]  # late only against a limit (patience is infinite without one)
                work = took
        duration = latency + work
        slow = self.slow_s  # the call timeout, or the late-reply limit below it
        if slow is not None and duration + waited > slow:
            limit = self.call_timeout_s
            if limit is not None and duration + waited > limit:
                committed = False if step.cancels else _draw(key, S_SLOW_COMMIT) < self.cut_committed_p
                return (LATENCY_SPIKE if spiked else TIMEOUT), limit - waited, committed, None
            return self._late_reply(node, step, masking, key, now, duration, spiked)
        for rule in masking:
            p = rule.probability_at(now, node.index)
            if p > 0.0 and _draw(key, rule.stream) < p:
                return rule.info, duration, False, None
        return None, duration, True, None

    def _late_reply(
        self, node: NodeView, step: Step, masking: tuple[CallRule, ...], key: int, now: float, took: float, spiked: bool
    ) -> CallOutcome:
        """A reply that came after ``late_reply_s``: the client waited for it, then counts it as a timeout.

        The work behind it ran to its end and took effect (unless a masking fault made it
        hollow), so a client that sends the call again repeats a side effect that happened.
        """
        provider = self.provider_of(step)
        if provider is not None:
            provider.late += 1
        committed = True
        for rule in masking:
            p = rule.probability_at(now, node.index)
            if p > 0.0 and _draw(key, rule.stream) < p:
                committed = False  # it looked done and did nothing; the client discards it anyway
                break
        return (LATENCY_SPIKE if spiked else TIMEOUT), took, committed, None

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
        """TIMEOUT or LATENCY_SPIKE when a call keyed ``key`` starting at ``now`` would outlast the client's
        patience (the call timeout, or ``late_reply_s`` below it), else None.

        :meth:`call_times`, for the wasted-retry judge.  A client that discards late replies
        gets one late again while the call's provider would still answer it after
        ``late_reply_s`` (its queue, curve and slow windows: :meth:`Provider.saturated`).
        """
        limit = self.slow_s
        if limit is None:
            return None
        latency, work, spiked = self.call_times(node, step, key, now)
        if self.late_reply_s is not None:
            provider = self.provider_of(step)
            if provider is not None:
                late = provider.saturated(now, work, limit - latency)
                return (LATENCY_SPIKE if spiked else TIMEOUT) if late else None
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
        work = _exp(step.mu + step.sigma * z_duration) if step.sigma > 0.0 else step.mean_s
        provider = self.provider_of(step)
        if provider is not None and provider.mixture is not None:  # the provider's service mixture
            work = provider.service_s(work, key)
        return latency, work, spike is not None

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
        if scope == RENEWED:  # the task's renewals of the step (a new MCP session, a fresh tool list) draw afresh
            renewals = sources.get((si, RENEWAL_SLOTS[rule.kind]), 0)
            return _rng.draw(_rng.persistent_key(task_key, si, 0, renewals), rule.stream) < p
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
        execution number, so it chooses the same items every time.  A step of one item
        has no batch (:data:`NO_ITEMS`).
        """
        if fan_out < 2:
            return NO_ITEMS
        for rule in rules:
            spec = cast(BatchFault, rule.spec)  # its stage's model has these fields (a test checks it)
            key = _rng.persistent_key(task_key, si) if spec.persistent else step_key
            if _rng.draw(key, rule.stream) < rule.probability_at(now, worker):
                order = sorted(range(fan_out), key=lambda i: _rng.draw(key, S_BATCH + i))
                return dict.fromkeys(order[: min(spec.failures, fan_out)], rule.info)
        return NO_ITEMS
