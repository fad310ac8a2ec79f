"""Inputs hypothesis found, kept as hand-checkable regression tests.

Each test states the minimal input.  A known, still-open bug is marked ``xfail(strict=True)``:
the day it is fixed the test passes, strict xfail turns that into a failure, and the marker
must be removed so the test guards the fix.
"""

from __future__ import annotations

import pytest

from fleetchaos.policies import StructuredDecisionTree
from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.world import World


def _tiny_world(fault: dict) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "found-by-hypothesis",
            "duration_s": 60,
            "fleet": {"orchestrators": 1, "workers": 1},
            "workload": {"arrivals": [{"at_s": 0, "template": "coding"}]},
            "faults": [fault],
        }
    )


@pytest.mark.parametrize("kind", ["disk_full", "expired_key"])
def test_a_subnormal_event_rate_does_not_crash_the_run(kind):
    """A positive per_worker_per_day too small to give an event yields no event, not a crash."""
    result = run_one(_tiny_world({"kind": kind, "per_worker_per_day": 5e-324}), "structured", "structured", 0)
    assert result.metrics["tasks"] == 1.0


def test_overlapping_slow_windows_whose_factors_underflow_do_not_crash_the_run():
    """Two overloads of one provider at once multiply their capacity factors: 1e-300 x 1e-300 is 0.0 in floats.

    Hypothesis found it once the strategies drew every kind: the run divided by that zero.  No
    speed is left, so the provider never finishes the call, and the task is still in flight at the
    drain limit.
    """
    world = Scenario.model_validate(
        {
            "name": "found-by-hypothesis",
            "duration_s": 60,
            "fleet": {"orchestrators": 1, "workers": 1, "providers": [{"name": "api", "max_in_flight": 1}]},
            "workload": {"arrivals": [{"at_s": 0, "template": "coding"}]},
            "faults": [
                {
                    "kind": "overloaded",
                    "provider": "api",
                    "windows": [{"start_s": 0, "duration_s": 1}],
                    "capacity_factor": 1e-300,
                },
                {
                    "kind": "overloaded",
                    "provider": "api",
                    "windows": [{"start_s": 0, "duration_s": 1}],
                    "capacity_factor": 1e-300,
                },
            ],
        }
    )
    result = run_one(world, "structured", "structured", 0)
    assert result.metrics["tasks"] == 1.0
    assert result.breakdowns["claims"] == {"in_flight": 1}


class Unguarded(StructuredDecisionTree):
    """The structured decision tree with no final-answer guardrail."""

    guardrail = False


class Guarded(StructuredDecisionTree):
    """The structured decision tree behind a final-answer guardrail."""

    guardrail = True


#: Hypothesis's minimal world for "structured errors and policy claim success for failed
#: work": three coding tasks at t=0 on one worker whose disk is full for the first minute.
#: Hypothesis found it with the disk full for 87 s and seed 2495514; when a tool call's
#: latency and duration came to share one Box-Muller pair, every duration changed, so the
#: cleanup time and the seed were searched again for the same three outcomes below.
MISREAD_WORLD = {
    "name": "found-by-hypothesis",
    "duration_s": 87.0,
    "fleet": {
        "orchestrators": 1,
        "workers": 1,
        "tool_slots": 1,
        "credential_refresh_s": 0.0,
        "network_latency": {"mean_s": 0.5, "cv": 0.0},
        "api_rate_per_s": 1.0,
        "api_burst": 1.0,
    },
    "workload": {"arrivals": [{"at_s": 0.0, "template": "coding"}] * 3},
    "faults": [{"kind": "disk_full", "events": [{"worker": 0, "at_s": 0.0}], "cleanup_after_s": 60.0}],
}
MISREAD_SEED = 344


def _records(policy, misread_probability: float):
    doc = {**MISREAD_WORLD, "fleet": {**MISREAD_WORLD["fleet"], "misread_probability": misread_probability}}
    output = World(Scenario.model_validate(doc), policy, get_format("structured"), MISREAD_SEED).run()
    return sorted(output.records, key=lambda r: r.id)


def test_without_a_guardrail_a_misread_failure_is_claimed_as_success():
    """The minimal counterexample: task 1's failed dispatch is misread (p = 0.05 x 0.2) and claimed done with partial truth."""
    records = _records(Unguarded(), 0.05)
    assert [(r.claim, r.truth, r.misreads) for r in records] == [
        ("success", "full", 0),
        ("success", "partial", 1),
        ("success", "full", 0),
    ]


def test_the_guardrail_catches_that_misread_and_the_task_completes():
    """Behind the guardrail the same misread is caught, the policy recovers, and every task is truly done."""
    records = _records(Guarded(), 0.05)
    assert [(r.claim, r.truth) for r in records] == [("success", "full")] * 3
    assert [r.misreads_caught for r in records] == [0, 1, 0]


def test_without_misreading_the_unguarded_policy_completes_every_task():
    """With misread_probability 0 the structured decisions alone complete all three tasks."""
    assert [(r.claim, r.truth) for r in _records(Unguarded(), 0.0)] == [("success", "full")] * 3
