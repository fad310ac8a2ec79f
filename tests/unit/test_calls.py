"""The per-call decision without SimPy, the named keys it draws from, and the light policy interface."""

from __future__ import annotations

import json
import sys

import patience
import pytest

from fleetchaos.sim import _rng
from fleetchaos.sim.assembly import assemble
from fleetchaos.sim.calls import NO_ITEMS
from fleetchaos.sim.config import DAY_S, WorldSpec
from fleetchaos.sim.kinds import KINDS
from fleetchaos.sim.state import NodeState

MASK = 0xFFFFFFFFFFFFFFFF


# -- the named key derivations -------------------------------------------------------------


@pytest.mark.parametrize(
    "seed, task, si, exec_no, item, source, n", [(0, 0, 0, 1, 0, 0, 1), (7, 12345, 3, 4, 63, 2, 2)]
)
def test_named_keys_are_the_formulas_the_world_always_used(seed, task, si, exec_no, item, source, n):
    """Each named derivation gives the integer the hand-built XOR/shift expression gave (byte-identical runs)."""
    run = _rng.key(seed, _rng.stream_id("task"))
    assert _rng.run_key(seed) == run
    task_key = _rng.mix(run ^ task)
    assert _rng.task_key(run, task) == task_key
    step_key = _rng.mix(task_key ^ (si << 40) ^ exec_no)
    assert _rng.step_key(task_key, si, exec_no) == step_key
    call = step_key ^ (item << 32)
    assert _rng.call_key(step_key, item) == call
    assert _rng.transport_key(call, n) == _rng.mix(call ^ (_rng.stream_id("call:transport_retry") + n))
    assert _rng.persistent_key(task_key, si) == _rng.mix(task_key ^ (si << 40))
    assert _rng.persistent_key(task_key, si, item) == _rng.mix(task_key ^ (si << 40) ^ (item << 32))
    assert _rng.persistent_key(task_key, si, item, source) == _rng.mix(
        task_key ^ (si << 40) ^ (item << 32) ^ (source << 16)
    )
    assert _rng.dependency_key(seed, 2, "search") == _rng.key(seed, 2, _rng.stream_id("search"))
    assert _rng.branch_of(task_key, 3) == _rng.mix(task_key ^ _rng.stream_id("task:branch")) % 3
    assert all(0 <= k <= MASK for k in (run, task_key, step_key, call))


def test_persistent_keys_leave_out_the_execution_number():
    """A persistent key is the same for every execution of a step; step keys differ per execution."""
    task_key = _rng.task_key(_rng.run_key(5), 9)
    assert _rng.step_key(task_key, 1, 1) != _rng.step_key(task_key, 1, 2)
    assert len({_rng.persistent_key(task_key, 1, item) for item in range(5)}) == 5


# -- the per-call decision over a state twin --------------------------------------------


def _spec(faults=(), **fleet) -> WorldSpec:
    return WorldSpec.model_validate(
        {
            "duration_s": DAY_S,
            "fleet": {"workers": 1, "network_latency": {"mean_s": 0.05, "cv": 0}, **fleet},
            "workload": {
                "templates": [{"name": "t", "steps": [{"tool": "fetch", "duration": {"mean_s": 5, "cv": 0}}]}]
            },
            "faults": list(faults),
        }
    )


def _twin(spec: WorldSpec):
    """What a real-code runtime builds: the plan, a node and the shared capacity, through the world's own assembly."""
    run = assemble(spec, 1, NodeState, clock=lambda: 0.0)
    return run.calls, run.nodes[0], run.templates[0]


def _decide(calls, node, tpl, now: float, item: int = 0):
    task_key = _rng.task_key(_rng.run_key(1), 0)
    key = _rng.call_key(_rng.step_key(task_key, 0, 1), item)
    rules = calls.rules_for(node, tpl, 0)
    return calls.decide(node, tpl.steps[0], rules, task_key, item, key, now, NO_ITEMS, {})


def test_a_call_on_a_healthy_fleet_succeeds_after_a_round_trip_and_the_step():
    """No fault: the call commits and lasts one round trip (0.1 s) plus the step's 5 s."""
    calls, node, tpl = _twin(_spec())
    assert _decide(calls, node, tpl, 10.0) == (None, pytest.approx(5.1), True, None)


def test_each_state_of_the_fleet_gives_its_kind_and_fail_fast_time():
    """A crashed node, expired credentials, an empty bucket and a spent quota each fail the call fast, with their record."""
    crash = {"kind": "node_crash", "down_s": 100, "events": [{"worker": 0, "at_s": 0}]}
    calls, node, tpl = _twin(_spec([crash]))
    assert _decide(calls, node, tpl, 50.0) == (KINDS["node_crash"], pytest.approx(0.1 + 0.2), False, None)
    calls, node, tpl = _twin(_spec([{"kind": "expired_key", "events": [{"worker": 0, "at_s": 20}]}]))
    assert _decide(calls, node, tpl, 50.0)[0] is KINDS["expired_key"]
    calls, node, tpl = _twin(_spec(api_burst=1.0))
    assert _decide(calls, node, tpl, 0.0)[0] is None
    kind, duration, committed, retry_at = _decide(calls, node, tpl, 0.0)
    assert (kind, committed) == (KINDS["rate_limit"], False)
    assert duration == pytest.approx(0.1 + 0.1) and retry_at == pytest.approx(2.0)  # one token per 2 s
    calls, node, tpl = _twin(_spec([{"kind": "quota_exhausted", "calls_per_day": 1}]))
    assert _decide(calls, node, tpl, 10.0)[0] is None
    assert _decide(calls, node, tpl, 11.0) == (KINDS["quota_exhausted"], pytest.approx(0.2), False, DAY_S)


def test_per_call_faults_are_keyed_by_the_call_not_by_what_came_before():
    """The same call identity meets the same transient fault however many calls were decided before it."""
    calls, node, tpl = _twin(_spec([{"kind": "network_blip", "probability": 0.5}], api_burst=1e6))
    first = [_decide(calls, node, tpl, 100.0, item)[0] for item in range(40)]
    again = [_decide(calls, node, tpl, 100.0, item)[0] for item in reversed(range(40))][::-1]
    assert first == again
    assert {None, KINDS["network_blip"]} == set(first)


def test_a_persistent_fault_hits_every_execution_alike():
    """validation_error is keyed per task and step: the same call fails on every execution number."""
    calls, node, tpl = _twin(_spec([{"kind": "validation_error", "probability": 1.0}]))
    task_key = _rng.task_key(_rng.run_key(1), 0)
    rules = calls.rules_for(node, tpl, 0)
    for exec_no in (1, 2, 3):
        key = _rng.call_key(_rng.step_key(task_key, 0, exec_no), 0)
        kind, duration, _, _ = calls.decide(node, tpl.steps[0], rules, task_key, 0, key, 1.0, NO_ITEMS, {})
        assert (kind, duration) == (KINDS["validation_error"], pytest.approx(0.1 + 0.5))


# -- the light policy interface ------------------------------------------------------------

PROBE = """
import json, sys
import {module}
print(json.dumps("simpy" in sys.modules))
"""


@pytest.mark.parametrize(
    "module",
    [
        "fleetchaos.sim",
        "fleetchaos.sim.observation",
        "fleetchaos.sim.kinds",
        "fleetchaos.sim.calls",
        "fleetchaos.sim.state",
        "fleetchaos.sim.waste",
        "fleetchaos.sim.formats",
        "fleetchaos.sim.state_kinds",
        "fleetchaos.sim.assembly",
        "fleetchaos.real.runtime",
    ],
)
def test_the_policy_interface_and_the_call_decision_load_no_simpy(module):
    """A fresh interpreter importing the package, the policy interface, the per-call decision, the state kinds
    or the run's assembly (what a real-code runtime builds on) has not loaded SimPy."""
    out = patience.run(
        [sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True, check=True, cpu_s=60
    )
    assert json.loads(out.stdout) is False


def test_the_package_lists_every_action_type():
    """fleetchaos.sim and fleetchaos.sim.observation export every action type (their order: test_structure)."""
    import fleetchaos.sim as sim
    import fleetchaos.sim.observation as observation

    names = [t.__name__ for t in observation.ACTION_TYPES]
    assert len(names) == len(set(names)) == 16
    for module in (sim, observation):
        assert set(names) <= set(module.__all__)
    assert all(getattr(sim, name) is getattr(observation, name) for name in names)
    assert sim.World.__module__ == "fleetchaos.sim.world"
