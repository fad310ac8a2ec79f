"""Adversarial policies run as arms of a compare: each is contained per task and never changes another arm's result."""

from __future__ import annotations

import json

import adversarial_policies
import pytest

from fleetchaos.runs.runner import compare
from fleetchaos.scenario.load import load_scenario

BUILTIN = ("backoff", "structured")
FORMATS = ("generic", "structured")
SEEDS = [3]

#: Adversarial arm -> (what every policy error of the arm says, whether tasks are left unfinished).
ADVERSARIES = {
    "adversarial_policies:Raises": ("policy raised RuntimeError: adversary raised on purpose", False),
    "adversarial_policies:Garbage": ("policy returned an invalid action: expected an action", False),
    "adversarial_policies:SleepsForever": (None, True),
    "adversarial_policies:SleepsAtTheFloatLimit": (None, True),
    "adversarial_policies:NeverGivesUp": (None, False),  # stopped at the action cap: a limit, not a policy error
    "adversarial_policies:MutatesSharedState": (None, False),
    "adversarial_policies:MutatesObservation": (
        "policy raised FrozenInstanceError: cannot assign to field 'ok'",
        False,
    ),
}


@pytest.fixture(scope="module")
def scenario():
    """The field_ablation world (240 tasks a day, transient and permanent faults): fast, and every arm meets faults."""
    return load_scenario("field_ablation")


def _arms(result, policies) -> dict[tuple[str, str], str]:
    return {(a.policy, a.errors): a.model_dump_json() for a in result.arms if a.policy in policies}


@pytest.fixture(scope="module")
def reference(scenario):
    """The built-in arms compared on their own."""
    return _arms(compare(scenario, SEEDS, policies=BUILTIN, errors=FORMATS, scenario_ref="field_ablation"), BUILTIN)


def test_every_adversary_next_to_builtin_arms_leaves_them_byte_identical(scenario, reference):
    """All adversarial arms interleaved with built-in arms in one compare: the built-in arms' JSON is unchanged, byte for byte."""
    adversaries = tuple(ADVERSARIES)
    policies = (adversaries[0], BUILTIN[0], *adversaries[1:4], BUILTIN[1], *adversaries[4:])
    runs = []
    mixed = compare(scenario, SEEDS, policies=policies, errors=FORMATS, scenario_ref="field_ablation",
                    keep_tasks=True, on_result=lambda r: runs.append((r.policy, [t["policy_error"] for t in r.tasks],
                                                                       r.metrics)))  # fmt: skip
    assert _arms(mixed, BUILTIN) == reference
    assert len(mixed.arms) == len(policies) * len(FORMATS)
    assert adversarial_policies.SHARED, "the mutating policy ran"
    for policy, (message, unfinished) in ADVERSARIES.items():
        errors = [e for p, errs, _ in runs if p == policy for e in errs if e is not None]
        metrics = [m for p, _, m in runs if p == policy]
        if message is not None:
            assert errors, f"{policy}: no policy error recorded"
            assert all(e.startswith(message) for e in errors), (policy, sorted(set(errors))[:3])
            assert sum(m["policy_errors"] for m in metrics) == len(errors)
        if unfinished:
            assert sum(m["unfinished_tasks"] for m in metrics) > 0, f"{policy}: no task left in flight"


def test_a_policy_sleeping_forever_stops_at_the_drain_limit(scenario):
    """Retry(delay_s=1e15) or the largest float: the run still ends (at horizon + drain), its waiting tasks counted unfinished."""
    for policy in ("adversarial_policies:SleepsForever", "adversarial_policies:SleepsAtTheFloatLimit"):
        result = compare(scenario, [1], policies=(policy,), errors=("generic",), scenario_ref="field_ablation")
        metrics = json.loads(result.arms[0].model_dump_json())["metrics"]
        assert metrics["unfinished_tasks"] > 0 and metrics["policy_errors"] == 0, metrics
        assert metrics["tasks"] > metrics["unfinished_tasks"]


def test_corrupting_the_history_is_contained_to_a_copy(sim):
    """A policy that writes wrong types into its TaskHistory cannot crash the run: the driver keeps its own copy."""
    world = sim.scenario(
        {"job": [sim.step("plan", 10)]},
        arrivals=[(0, "job"), (0, "job"), (5, "job")],
        faults=[{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}],
        workers=2,
    )
    r = sim.run(world, adversarial_policies.MutatesSharedState(), "structured", max_actions=3)
    t0, t1, t2 = r.records
    assert t1.claim == "success" and t1.policy_error is None
    for rec in (t0, t2):
        assert rec.claim == "failed" and rec.retries == 3 and rec.calls == 4
        assert rec.stopped_by == "action_cap" and rec.policy_error is None
