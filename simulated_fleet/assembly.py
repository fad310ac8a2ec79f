"""One run's world, assembled once for the simulator and a real-code runtime alike.

:func:`assemble` builds what a run of a scenario on a seed is made of: the fault plan,
the twin of the fleet's state (each worker's :class:`~fleetchaos.sim.state.NodeState`,
the shared API capacity), the compiled templates, the call model that decides every
tool call, the wasted-retry judge and the journal.  The simulator's
:class:`~fleetchaos.sim.world.World` makes its workers SimPy ones (tool slots on top of a
node's state); a real-code runtime (:class:`fleetchaos.real.Runtime`) keeps plain node
states.  Both then run a step's bookkeeping through :mod:`fleetchaos.sim.bookkeeping`.
No SimPy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from fleetchaos.sim import _rng
from fleetchaos.sim.calls import CallModel
from fleetchaos.sim.config import Distribution, WorldSpec, lognormal_params
from fleetchaos.sim.conversation import Tokeniser
from fleetchaos.sim.faults import build_plan
from fleetchaos.sim.journal import Journal
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.plan import FaultPlan
from fleetchaos.sim.state import DailyQuota, NodeState, SharedCapacity, TokenBucket
from fleetchaos.sim.template import Template, compile_template
from fleetchaos.sim.waste import RetryJudge

S_HUMAN = _rng.stream_id("escalation:human")

NodeT = TypeVar("NodeT", bound=NodeState)

#: Builds worker ``index``'s node from its state: ``make(index, disk_full_spans, key_expiries,
#: credential_lifetime_s, crash_spans, disk_capacity_mb, api_keys)`` (the arguments of :class:`NodeState`).
MakeNode = Callable[
    [
        int,
        list[tuple[float, float]],
        list[float],
        float,
        list[tuple[float, float]],
        float,
        list[tuple[list[float], float]],
    ],
    NodeT,
]


@dataclass(slots=True)
class Assembly(Generic[NodeT]):
    """Everything a run of one scenario on one seed is made of, before anything has happened."""

    spec: WorldSpec
    seed: int
    run_key: int
    """:func:`fleetchaos.sim._rng.run_key` of the seed: the root of every task's keys."""
    plan: FaultPlan
    nodes: list[NodeT]
    """Each worker's state, by index."""
    shared: SharedCapacity
    """The fleet's API token bucket and daily quota."""
    templates: tuple[Template, ...]
    """The workload's templates compiled for the run, by index."""
    calls: CallModel
    judge: RetryJudge
    journal: Journal
    tokeniser: Tokeniser
    """The conversation's tokeniser rule (``fleet.model.chars_per_token``): what an error text costs in context."""

    def duration(self, spec: Distribution, stream: int, task_id: int, n: int) -> float:
        """A keyed log-normal draw from ``spec`` for the ``n``-th such event of a task."""
        if spec.cv <= 0.0:
            return spec.mean_s
        mu, sigma = lognormal_params(spec.mean_s, spec.cv)
        return math.exp(mu + sigma * _rng.normal(_rng.key(self.run_key, stream, task_id, n), stream))

    def page(self, rec: TaskRecord, n: int) -> None:
        """The orchestrator escalates the task (its ``n``-th action): a human is paged, their hands-on time drawn (fleet.page_handling)."""
        rec.claim = "escalated"
        rec.pages += 1
        rec.human_s = self.duration(self.spec.fleet.page_handling, S_HUMAN, rec.id, n)


def assemble(
    spec: WorldSpec,
    seed: int,
    make_node: MakeNode[NodeT],
    *,
    clock: Callable[[], float],
    ends_s: float = math.inf,
    call_model: type[CallModel] = CallModel,
    keep_log: bool = True,
    trace: bool = False,
) -> Assembly[NodeT]:
    """The run of ``spec`` on ``seed``: its plan realised, its state built, its calls and retries ready to judge.

    ``make_node`` builds each worker from its state (:class:`NodeState` itself, or the
    simulator's SimPy worker); ``clock()`` reads the run's time for the journal;
    ``ends_s`` is when the run stops starting calls, if known (a gate that cannot refuse
    before then is left out); ``call_model`` decides every tool call (a subclass may also run each one on real
    code); ``keep_log`` and ``trace`` say what the journal keeps.
    """
    fleet = spec.fleet
    plan = build_plan(spec, seed, ends_s)
    disks = {o.worker: o.disk_mb for o in fleet.overrides if o.disk_mb is not None}
    nodes = [
        make_node(
            i,
            list(plan.disk_full[i]),  # a copy: a remediation may end a span early
            plan.key_expiries[i],
            fleet.credential_lifetime_s,
            plan.crashes[i],
            disks.get(i, fleet.disk_mb),
            [
                (expiries[i], api.credential_lifetime_s or fleet.credential_lifetime_s)
                for api, expiries in zip(fleet.apis, plan.api_key_expiries, strict=True)
            ],
        )
        for i in range(fleet.workers)
    ]
    bucket = TokenBucket(fleet.api_rate_per_s, fleet.api_burst, plan.rate_windows)
    apis = [
        TokenBucket(api.rate_per_s, api.burst, windows)
        for api, windows in zip(fleet.apis, plan.api_rate_windows, strict=True)
    ]
    shared = SharedCapacity(bucket, DailyQuota(plan.quota_per_day), fleet.api_reject_cost, apis)
    calls = call_model(plan, shared, seed, fleet)
    run_key = _rng.run_key(seed)
    return Assembly(
        spec=spec,
        seed=seed,
        run_key=run_key,
        plan=plan,
        nodes=nodes,
        shared=shared,
        templates=tuple(compile_template(i, t, plan, fleet.model) for i, t in enumerate(spec.workload.templates)),
        calls=calls,
        judge=RetryJudge(calls, run_key, shared),
        journal=Journal(clock, keep_log=keep_log, trace=trace),
        tokeniser=Tokeniser(fleet.model.chars_per_token),
    )


__all__ = ["S_HUMAN", "Assembly", "MakeNode", "assemble"]
