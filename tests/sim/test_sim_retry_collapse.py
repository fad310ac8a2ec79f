"""retry_collapse on a small scale: immediate retries stay stuck after a spike; jittered backoff and a retry budget recover."""

from __future__ import annotations

import pytest

from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import load_scenario

#: The catalogue scenario at a fifth of the scale (clients, servers, spike, workers), an hour and a half long.
SPIKE_AT, SPIKE_S, HORIZON = 1200, 120, 5400


@pytest.fixture(scope="module")
def small():
    doc = load_scenario("retry_collapse").model_dump(mode="json")
    doc["duration_s"] = HORIZON
    doc["fleet"]["workers"] = 4
    doc["fleet"]["providers"][0]["servers"] = 2
    doc["workload"]["clients"] = 60
    doc["workload"]["arrival_schedule"]["points"] = [
        {"at_s": 0, "tasks_per_hour": 0},
        {"at_s": SPIKE_AT, "tasks_per_hour": 7200},
        {"at_s": SPIKE_AT + SPIKE_S, "tasks_per_hour": 0},
    ]
    return type(load_scenario("retry_collapse")).model_validate(doc)


def _goodput(scenario, policy: str) -> tuple[float, float]:
    """(goodput per minute before the spike, goodput per minute over the last half hour)."""
    run = run_one(scenario, policy, "structured", seed=1)
    bins = {int(float(k)): v for k, v in run.breakdowns["goodput_by_time"].items()}
    width = scenario.goodput_bin_s
    before = sum(v for b, v in bins.items() if width <= b < SPIKE_AT) / ((SPIKE_AT - width) / 60)
    late = sum(v for b, v in bins.items() if HORIZON - 1800 <= b < HORIZON) / 30
    return before, late


def test_immediate_retries_stay_stuck_while_backoff_and_a_budget_recover(small):
    """After the spike: retry-immediate below half its offered load, backoff-full-jitter and the budget back above 90%."""
    offered, stuck = _goodput(small, "retry-immediate")
    assert offered > 50  # about 60 clients / 61 s
    assert stuck < 0.5 * offered
    for policy in ("backoff-full-jitter", "retry-immediate-budget"):
        before, late = _goodput(small, policy)
        assert before == pytest.approx(offered, rel=0.02)  # the same world until the spike
        assert late > 0.9 * offered, policy
