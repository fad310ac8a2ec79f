"""The catalogue scenario of the MCP boundary, mcp_flap: each expect: gate fails on the same seeds once the behaviour
it names is broken (that each holds, decisively, on its own arms: tests/sim/test_sim_model_scenarios.py).

Each gate is a worst-seed gate (an exact figure).  A gate on the world's behaviour is broken by changing the world
(a server back in half a second, or down for a quarter of an hour; isError results made protocol errors); a gate on
a policy's behaviour by putting, in that arm's place, the same policy without the behaviour (the renewing tree that
renews nothing, the naive loop that does not re-initialise, the recovery matrix without idempotency keys).
"""

from __future__ import annotations

import pytest

from fleetchaos.scenario.expect import split_arm
from fleetchaos.scenario.load import load_scenario
from fleetchaos.testing.suite import run_scenario

SEEDS = (1, 2)
NAME = "mcp_flap"


def _gate(scenario, arm: str, metric: str) -> int:
    (index,) = [i for i, g in enumerate(scenario.expect) if g.arm == arm and g.metric == metric]
    return index


def _verdict(world, arm: str, gate: int):
    policy, errors = split_arm(arm)
    result = run_scenario(world, policy=policy, errors=errors, seeds=SEEDS)
    (verdict,) = [v for v in result.expectations if v.gate == gate]
    return verdict


def _changed(scenario, change) -> object:
    doc = scenario.model_dump(mode="json", exclude_none=True)
    change(doc)
    return type(scenario).model_validate(doc)


def _fault(doc: dict, kind: str) -> dict:
    (fault,) = [f for f in doc["faults"] if f["kind"] == kind]
    return fault


@pytest.mark.parametrize(
    "arm, metric, respawn_s",
    [
        ("blind-retry/generic", "recovery_rate", 0.5),  # back before the retry: retrying at once recovers
        ("backoff/generic", "recovery_rate", 900.0),  # down for 15 minutes: a minute's wait does not outlast it
    ],
)
def test_the_respawn_gates_fail_once_the_respawn_is_not_what_they_name(arm, metric, respawn_s):
    scenario = load_scenario(NAME)
    gate = _gate(scenario, arm, metric)
    broken = _changed(scenario, lambda doc: _fault(doc, "mcp_server_restart").update(respawn_s=respawn_s))
    assert _verdict(scenario, arm, gate).passed
    assert not _verdict(broken, arm, gate).passed


def test_the_duplicate_gate_fails_once_the_tool_errors_are_protocol_errors():
    """An isError retried runs the tool again; the same failures as protocol errors (the tool never ran) duplicate
    nothing, and the gate that counts the duplicates fails."""
    scenario = load_scenario(NAME)
    arm = "blind-retry/generic"
    gate = _gate(scenario, arm, "duplicate_side_effects")

    def as_protocol_errors(doc: dict) -> None:
        fault = _fault(doc, "mcp_tool_error")
        for field in ("committed_probability", "ran_s"):
            del fault[field]
        fault["kind"] = "mcp_protocol_error"

    broken = _changed(scenario, as_protocol_errors)
    assert _verdict(scenario, arm, gate).passed
    verdict = _verdict(broken, arm, gate)
    assert not verdict.passed and verdict.value == 0


def _worst(world, policy: str, errors: str, metric: str, high: bool) -> float:
    values = [run.metrics[metric] for run in run_scenario(world, policy=policy, errors=errors, seeds=SEEDS).runs]
    return max(values) if high else min(values)


@pytest.mark.parametrize(
    "arm, metric, instead",
    [
        # the plain tree's place taken by the tree that renews: its recovery passes the plain tree's ceiling
        ("structured/structured", "recovery_rate", "structured-mcp"),
        # the renewing tree's place taken by the same tree renewing nothing: below its floor
        ("structured-mcp/structured", "recovery_rate", "structured-mcp(renew=False)"),
        # the naive re-initialising loop's place taken by the same loop without the re-initialisation
        ("reinit-session/generic", "recovery_rate", "blind-retry"),
        # the recovery matrix without its idempotency keys: the retried tickets are created twice
        ("recovery-matrix/structured", "duplicate_side_effects", "recovery-matrix(policy.idempotency_keys=False)"),
    ],
)
def test_the_policy_gates_fail_once_the_arm_loses_the_behaviour_they_name(arm, metric, instead):
    scenario = load_scenario(NAME)
    bound = scenario.expect[_gate(scenario, arm, metric)]
    _, errors = split_arm(arm)
    if bound.at_most is not None:
        assert _worst(scenario, instead, errors, metric, high=True) > bound.at_most
    else:
        assert bound.at_least is not None
        assert _worst(scenario, instead, errors, metric, high=False) < bound.at_least
