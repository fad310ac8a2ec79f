"""Properties of our policy over many small generated worlds (fleetchaos's hypothesis strategies).

When hypothesis finds a world that breaks a property it shrinks it to a minimal one and
prints it; paste it into a scenario file to keep it as a gate.
"""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from fleetchaos import Scenario, run_one
from fleetchaos.testing.strategies import ALL_KINDS, DEFAULT_TOOLS, REPORTED_KINDS, fault_mixes, scenarios


# The strategies draw every fault kind; a tool that swallows its failure, or an envelope that
# misreports it, fools any policy by design, so this claim is about the kinds reported as they are.
@given(scenario=scenarios(max_workers=3, max_tasks=8, kinds=REPORTED_KINDS), seed=st.integers(0, 10_000))
def test_never_claims_unfinished_work_as_done(team_policy, scenario, seed):
    """On structured errors, in any small world whose failures are reported, no task is claimed done whose work
    did not all take effect."""
    result = run_one(scenario, team_policy, "structured", seed, keep_tasks=True)
    silent = [t["id"] for t in result.tasks if t["claim"] == "success" and t["truth"] != "full"]
    assert silent == [], f"tasks {silent} claimed done but not done"


def busy_hour(faults: list) -> Scenario:
    """An hour of Poisson arrivals (about 40 tasks) on three workers, with the given faults."""
    return Scenario.model_validate(
        {
            "name": "busy-hour",
            "duration_s": 3600,
            "fleet": {"orchestrators": 1, "workers": 3, "api_rate_per_s": 5, "api_burst": 50},
            "workload": {"tasks_per_day": 1000, "diurnal_amplitude": 0},
            "faults": [f.model_dump() for f in faults],
        }
    )


# A daily quota spent in the first minutes keeps a task waiting for the next day's reset, and the next,
# past the drain limit (a day after the horizon): still in flight by design, so this claim leaves it out.
@given(
    faults=fault_mixes(
        workers=3, horizon_s=3600.0, tools=DEFAULT_TOOLS, kinds=[k for k in ALL_KINDS if k != "quota_exhausted"]
    ),
    seed=st.integers(0, 10_000),
)
def test_every_task_ends_with_a_verdict(team_policy, faults, seed):
    """Under any background fault mix, every task ends with a claim (done, failed, escalated); none is left in flight."""
    # A call that hangs for hours before it times out holds its slot that long whatever the policy does: 46 tasks
    # whose calls hang 20,000 s on three workers are still queued at the drain limit (seed 1, three in four calls
    # timing out).  The claim is about the policy, so it leaves out hangs longer than the hour the world runs.
    assume(all(getattr(fault, "timeout_s", 0) <= 3600 for fault in faults))
    result = run_one(busy_hour(faults), team_policy, "structured", seed)
    assert result.breakdowns["claims"].get("in_flight", 0) == 0
