"""A tool's own tenacity retry, declared as its transport layer: its tries are the simulator's layer's tries.

The agent fetches, then writes four items, each write wrapped in the team's tenacity retry (three tries, a second
apart, on dropped connections); a write that still fails fails the task after the other items were written.  The
retry is declared with ``Bindings(layers=[transport_from_tenacity(retrying, tools=["write"])])``, so each inner try
is a transport retry keyed as the simulator's layer keys it.  The simulator runs the same world with that layer and
no agent-level retry: per task, the same faults, calls, transport retries and claims.
"""

from __future__ import annotations

import tenacity

import fleetchaos
from fleetchaos import Bindings
from fleetchaos.policies import LayeredBackoff, transport_from_tenacity
from fleetchaos.real import InjectedFault, run_real
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.world import World

RETRYING = tenacity.Retrying(
    stop=tenacity.stop_after_attempt(3),
    wait=tenacity.wait_fixed(1),
    retry=tenacity.retry_if_exception_type(ConnectionError),
    reraise=True,
)
BINDINGS = Bindings(layers=[transport_from_tenacity(RETRYING, tools=["write"])])


@fleetchaos.tool("fetch")
def fetch(task_id: int) -> str:
    return "data"


@fleetchaos.tool("write", item=lambda task_id, slot: slot)
def write(task_id: int, slot: int) -> None:
    pass


def agent(task, rt):
    try:
        fetch(task.id)
    except InjectedFault:
        return "failed"
    failed = False
    for slot in range(4):
        try:
            RETRYING(write, task.id, slot)
        except InjectedFault:
            failed = True
    return "failed" if failed else "success"


def test_the_inner_tries_are_the_simulated_layers_tries(small_scenario):
    spec = small_scenario([{"kind": "network_blip", "probability": 0.3}])
    real = run_real(spec, agent, seed=3, bindings=BINDINGS)
    policy = LayeredBackoff(max_retries=0, transport=BINDINGS.layers[0])
    sim = World(spec, policy, get_format("structured", 3), 3).run().records
    assert real.metrics["transport_retries"] > 0
    assert real.metrics["retries"] == 0  # the orchestrator retried nothing: every repeat was the layer's

    def per_task(records):
        return [
            (r.id, r.fault_hits, r.calls, r.transport_retries, r.layer_tries, r.claim)
            for r in sorted(records, key=lambda r: r.id)
        ]

    assert per_task(real.records) == per_task(sim)


def _write_with_retry(call):
    try:
        RETRYING(write, call.task_id, call.item)
    except InjectedFault as exc:
        return {"error": exc.fault.envelope()}
    return "ok"


def test_parity_holds_with_the_tools_own_retry_in_place(small_scenario):
    """Parity pairs the tool's inner tries with the declared layer's: the shipped code, retry and all, reproduces
    the simulated records.  Undeclared, the same tool parts from the simulation at its first inner retry."""
    from fleetchaos.real.parity_check import parity

    spec = small_scenario([{"kind": "network_blip", "probability": 0.3}], writes_only=True)
    report = parity(spec, policy="structured", tools={"write": _write_with_retry}, seed=3, bindings=BINDINGS)
    assert report.identical, report.describe()
    undeclared = parity(spec, policy="structured", tools={"write": _write_with_retry}, seed=3, bindings=Bindings())
    assert not undeclared.identical
    assert "retried the network_blip fault inside" in undeclared.describe()


def test_a_run_counts_the_layers_tries_as_the_simulator_does(small_scenario):
    """Every write's connection drops: each of a task's four writes enters the layer at its first failure and the
    layer tries it twice more (three tries, two of them retries), so a task's layer made 4 x 3 = 12 tries."""
    spec = small_scenario([{"kind": "network_blip", "probability": 1.0, "tools": ["write"]}], writes_only=True)
    real = run_real(spec, agent_writes_only, seed=1, bindings=BINDINGS)
    assert [(r.layer_tries, r.transport_retries, r.claim) for r in real.records] == [([12], 8, "failed")] * 12
    assert real.result.breakdowns["transport_tries_by_layer"] == {"layer 1": 144}


def agent_writes_only(task, rt):
    failed = False
    for slot in range(4):
        try:
            RETRYING(write, task.id, slot)
        except InjectedFault:
            failed = True
    return "failed" if failed else "success"


OUTER = tenacity.Retrying(
    stop=tenacity.stop_after_attempt(2),
    wait=tenacity.wait_fixed(5),
    retry=tenacity.retry_if_exception_type(ConnectionError),
    reraise=True,
)
STACKED = Bindings(layers=[transport_from_tenacity(RETRYING, tools=["write"]), transport_from_tenacity(OUTER)])


def stacked_agent(task, rt):
    """Each write under two retries of the team's: the tool's own (three tries), and around it the job's (two)."""
    failed = False
    for slot in range(4):
        try:
            OUTER(RETRYING, write, task.id, slot)
        except InjectedFault:
            failed = True
    return "failed" if failed else "success"


def test_a_retry_around_a_retrying_tool_is_the_outer_layers_try(small_scenario):
    """Every write's connection drops.  The tool's retry makes three tries; the job's retry then tries once more,
    and that try passes through the tool's retry again: six calls per write, the inner layer's 6 tries and the
    outer's 2, all but the write's first call transport retries; nothing is the orchestrator's retry."""
    spec = small_scenario([{"kind": "network_blip", "probability": 1.0, "tools": ["write"]}], writes_only=True)
    real = run_real(spec, stacked_agent, seed=1, bindings=STACKED)
    assert [(r.calls, r.layer_tries, r.transport_retries, r.claim) for r in real.records] == [
        (24, [24, 8], 20, "failed")
    ] * 12
    assert real.metrics["retries"] == 0


def test_two_stacked_layers_meet_the_simulated_stacks_faults(small_scenario):
    """A drop one call in three: per task, the same faults, calls, tries per layer and claims as the simulator's
    stack of the same two layers."""
    spec = small_scenario([{"kind": "network_blip", "probability": 0.3}], writes_only=True)
    real = run_real(spec, stacked_agent, seed=5, bindings=STACKED)
    sim = World(spec, LayeredBackoff(max_retries=0, transport=list(STACKED.layers)), get_format("structured", 5), 5)
    fields = [(r.id, r.fault_hits, r.calls, r.transport_retries, r.layer_tries, r.claim) for r in real.records]
    assert real.metrics["retries"] == 0 and any(r.layer_tries and r.layer_tries[1] > 1 for r in real.records)
    assert fields == [
        (r.id, r.fault_hits, r.calls, r.transport_retries, r.layer_tries, r.claim)
        for r in sorted(sim.run().records, key=lambda r: r.id)
    ]


def _stacked_write(call):
    try:
        OUTER(RETRYING, write, call.task_id, call.item)
    except InjectedFault as exc:
        return {"error": exc.fault.envelope()}
    return "ok"


def test_parity_holds_with_two_stacked_retries_in_place(small_scenario):
    """Parity pairs the inner and the outer retry's tries with the two declared layers; with only the inner one
    declared, the tool parts from the simulation where the outer retry first tries again."""
    from fleetchaos.real.parity_check import parity

    spec = small_scenario([{"kind": "network_blip", "probability": 0.3}], writes_only=True)
    report = parity(spec, policy="structured", tools={"write": _stacked_write}, seed=3, bindings=STACKED)
    assert report.identical, report.describe()
    inner_only = parity(spec, policy="structured", tools={"write": _stacked_write}, seed=3, bindings=BINDINGS)
    assert not inner_only.identical
    assert "retried the network_blip fault inside" in inner_only.describe()
