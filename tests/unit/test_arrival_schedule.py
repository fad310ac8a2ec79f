"""workload.arrival_schedule: a piecewise arrival rate, validated, followed by the arrivals, absent from old dumps."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from fleetchaos.scenario.load import Scenario, estimated_size, load_scenario
from fleetchaos.sim.config import ArrivalSchedule, WorkloadSpec
from fleetchaos.sim.workload import arrivals


def _schedule(points, **kw) -> ArrivalSchedule:
    return ArrivalSchedule.model_validate({"points": [{"at_s": a, "tasks_per_hour": r} for a, r in points], **kw})


def test_step_and_linear_rates():
    """Step holds each point's rate; linear draws straight lines and, repeating, runs back to the first point."""
    step = _schedule([(0, 36), (3600, 72)])
    assert step.rate_per_s(1800) == pytest.approx(0.01)
    assert step.rate_per_s(5000) == pytest.approx(0.02)
    linear = _schedule([(0, 36), (3600, 72)], interpolation="linear", every_s=7200)
    assert linear.rate_per_s(1800) == pytest.approx(54 / 3600)
    assert linear.rate_per_s(5400) == pytest.approx(54 / 3600)  # halfway back to 36 at the period's end
    assert linear.rate_per_s(7200 + 1800) == pytest.approx(54 / 3600)
    assert linear.mean_per_s(7200) == pytest.approx(54 / 3600)


@pytest.mark.parametrize(
    ("points", "kw", "message"),
    [
        ([(10, 5)], {}, "the first point must be at 0"),
        ([(0, 5), (0, 6)], {}, "is not after points[0].at_s"),
        ([(0, 5), (90000, 6)], {"every_s": 86400}, "is not inside the period"),
        ([(0, 0)], {}, "no task would ever arrive"),
    ],
)
def test_bad_schedules_are_refused(points, kw, message):
    """A schedule not starting at 0, out of order, past its period or all zero is refused with the fix."""
    with pytest.raises(ValidationError) as info:
        _schedule(points, **kw)
    assert message in str(info.value)


def test_arrivals_follow_the_schedule():
    """Arrivals per hour follow a spike: 10/h, then 100/h for an hour, then 10/h (Poisson error allowed)."""
    spec = WorkloadSpec.model_validate(
        {
            "arrival_schedule": {
                "points": [
                    {"at_s": 0, "tasks_per_hour": 10},
                    {"at_s": 7200, "tasks_per_hour": 100},
                    {"at_s": 10800, "tasks_per_hour": 10},
                ],
                "every_s": 86400,
            }
        }
    )
    per_hour = Counter(int(t.arrival_s // 3600) % 24 for seed in range(20) for t in arrivals(spec, seed, 86400, 2))
    assert 2000 - 4 * 2000**0.5 < per_hour[2] < 2000 + 4 * 2000**0.5
    quiet = sum(per_hour[h] for h in range(24) if h != 2) / 23
    assert 200 - 4 * 200**0.5 < quiet < 200 + 4 * 200**0.5


def test_size_estimate_uses_the_schedule():
    """The size refusal reads the schedule's mean rate, not tasks_per_day."""
    doc = {
        "name": "s",
        "duration_s": 86400,
        "workload": {"arrival_schedule": {"points": [{"at_s": 0, "tasks_per_hour": 50}]}},
    }
    tasks, _calls = estimated_size(Scenario.model_validate(doc))
    assert tasks == pytest.approx(1200)
    doc["workload"]["arrival_schedule"]["points"][0]["tasks_per_hour"] = 1_000_000
    doc["duration_s"] = 30 * 86400
    with pytest.raises(ValidationError, match="workload.arrival_schedule over 30 days"):
        Scenario.model_validate(doc)


def test_a_scenario_without_a_schedule_dumps_as_before():
    """The field is left out of a dump when absent, so results and hashes of existing scenarios do not change."""
    assert "arrival_schedule" not in load_scenario("default").model_dump(mode="json")["workload"]
    doc = {"name": "s", "workload": {"arrival_schedule": {"points": [{"at_s": 0, "tasks_per_hour": 5}]}}}
    assert Scenario.model_validate(doc).model_dump(mode="json")["workload"]["arrival_schedule"]["points"]
