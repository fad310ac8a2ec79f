"""The headline's shared denominators on real runs: the common set in an open loop, goodput in a closed loop."""

from __future__ import annotations

from fleetchaos.reports.conclusion import finding
from fleetchaos.results.common_set import decode
from fleetchaos.runs.runner import compare, run_one
from fleetchaos.scenario.load import load_scenario


def test_a_closed_loop_has_no_common_set_and_leads_with_goodput():
    """Clients submit as their tasks end, so arms run different tasks: no task sets, no common recovery, and the
    comparison (and its finding) leads with successful tasks per day, which is successes / days exactly."""
    scenario = load_scenario("closed_loop_quota")
    result = compare(scenario, [1, 2], policies=("blind-retry", "structured"), errors=("structured",))
    assert result.closed_loop
    tasks = [a.per_seed["tasks"] for a in result.arms]
    assert tasks[0] != tasks[1]  # each arm its own tasks
    for arm in result.arms:
        assert arm.metrics["common_recovery_rate"] is None and "common_recovery_rate" not in arm.pooled
        days = scenario.duration_s / 86_400
        successes = [round(n * rate) for n, rate in zip(arm.per_seed["tasks"], arm.per_seed["success_rate"])]
        assert arm.per_seed["goodput_per_day"] == [round(s / days, 6) for s in successes]
    run = run_one(scenario, "structured", "structured", 1)
    assert run.task_sets == {} and run.metrics["common_recovery_rate"] is None
    assert "leads on goodput" in finding(result) and "common set" not in finding(result)


def test_an_open_loop_comparison_shares_one_common_set_per_seed():
    """Every arm's common set on a seed is the union of the arms' faulted tasks: one size for all arms."""
    scenario = load_scenario("rate_limit_storm")  # the arms' own faulted tasks differ there
    result = compare(scenario, [1, 2], policies=("blind-retry", "structured"), errors=("generic", "structured"))
    assert not result.closed_loop
    runs = {(a.policy, a.errors): a for a in result.arms}
    sizes = {a.pooled["common_recovery_rate"].trials for a in runs.values()}
    assert len(sizes) == 1
    own = [a.pooled["recovery_rate"].trials for a in runs.values()]
    assert sizes.pop() >= max(own) and len(set(own)) > 1
    single = run_one(scenario, "blind-retry", "generic", 1)
    faulted = decode(single.task_sets["faulted"])
    assert faulted.bit_count() == single.metrics["faulted_tasks"]


def test_with_two_seeds_no_rate_shows_a_bound_outside_0_and_1():
    """Two seeds (t quantile 12.7): every rate's interval still lies inside [0, 1] and around its mean."""
    result = compare(load_scenario("rate_limit_storm"), [1, 2], policies=("blind-retry", "structured"))
    for arm in result.arms:
        checked = set()
        for name, (low, high) in arm.ci.items():
            if name.endswith("_rate") and arm.metrics[name] is not None:
                assert 0.0 <= low <= arm.metrics[name] <= high <= 1.0, (arm.policy, arm.errors, name)
                checked.add(name)
        assert {"success_rate", "common_recovery_rate", "silent_failure_rate"} <= checked
