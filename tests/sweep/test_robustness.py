"""fleetchaos robustness: declared ranges, where the leader changes, the rate_limit_storm flip, the report folder."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.errors import UserError
from fleetchaos.results.models import ArmResult
from fleetchaos.results.studies import RobustnessPoint
from fleetchaos.runs.executors import SerialExecutor
from fleetchaos.runs.robustness import default_ranges, find_flips, robustness
from fleetchaos.scenario.load import load_scenario

ARMS = [("blind-retry", "generic"), ("structured", "structured")]


def _point(parameter: str, value: float, leader: str) -> RobustnessPoint:
    arm = ArmResult(policy="p", errors="e", metrics={}, ci={}, per_seed={}, breakdowns={})
    return RobustnessPoint(parameter=parameter, value=value, arms=[arm, arm], difference=None, ci=[None, None],
                           leader=leader)  # fmt: skip


def test_flips_are_where_the_leader_changes_between_neighbouring_values():
    """A change of leader is a flip with the values on each side; ties are skipped over; each parameter on its own."""
    points = [
        _point("a", 0, "X"), _point("a", 1, "X"), _point("a", 2, "tie"), _point("a", 3, "Y"), _point("a", 4, "X"),
        _point("b", 0, "Y"), _point("b", 1, "Y"),
    ]  # fmt: skip
    flips = find_flips(points, "success_rate")
    assert [(f.parameter, f.ahead, f.behind, f.holds_at, f.flips_at) for f in flips] == [
        ("a", "X", "Y", 1, 3),
        ("a", "Y", "X", 3, 4),
    ]


def test_default_ranges_cover_fault_mix_misreads_load_and_reject_cost():
    """default: each fault's rate at 0..4x (probabilities at most 1), misread 0..4x, load 0.5..2x, reject cost 0..1."""
    scenario = load_scenario("default")
    ranges = default_ranges(scenario)
    assert ranges["faults[0].probability"] == [0.0, 0.01, 0.02, 0.04, 0.08]
    assert ranges["faults[2].per_day"] == [0.0, 1.0, 2.0, 4.0, 8.0]
    assert ranges["fleet.misread_probability"] == [0.0, 0.025, 0.05, 0.1, 0.2]
    per_day = float(scenario.workload.tasks_per_day)
    assert per_day == 1200.0  # the loaded default; the range is half, once and twice it
    assert ranges["workload.tasks_per_day"] == [per_day / 2, per_day, per_day * 2]
    assert ranges["fleet.api_reject_cost"] == [0.0, 0.5, 1.0]
    assert len([p for p in ranges if p.startswith("faults[")]) == 5


def test_rate_limit_storm_flips_when_refusals_cost_a_token():
    """With api_reject_cost 0 the structured tree on structured errors leads; at 1 blind retry on generic does."""
    scenario = load_scenario("rate_limit_storm")
    result = robustness(scenario, ARMS, [1, 2, 3], {"fleet.api_reject_cost": [0, 1]}, executor=SerialExecutor(),
                        scenario_ref="rate_limit_storm")  # fmt: skip
    assert result.varied == {"fleet.api_reject_cost": [0.0, 1.0]}
    assert [p.leader for p in result.points] == ["structured on structured", "blind-retry on generic"]
    (flip,) = result.flips
    assert (flip.ahead, flip.behind, flip.holds_at, flip.flips_at) == (
        "structured on structured", "blind-retry on generic", 0.0, 1.0,
    )  # fmt: skip
    assert result.points[1].ci[1] < 0  # at cost 1 blind retry is ahead beyond the noise of the seeds
    assert result.baseline_leader == "blind-retry on generic"  # the scenario's own cost is 1


def test_mistakes_are_refused(small):
    """One arm, a directionless metric or nothing to vary: a user error each."""
    scenario = load_scenario(small)
    with pytest.raises(UserError, match="at least two arms"):
        robustness(scenario, ARMS[:1], [1], {"fleet.workers": [5]}, executor=SerialExecutor())
    with pytest.raises(UserError, match="neither higher nor lower"):
        robustness(scenario, ARMS, [1], {"fleet.workers": [5]}, executor=SerialExecutor(), metric="tasks")
    with pytest.raises(UserError, match="nothing to vary"):
        robustness(scenario, ARMS, [1], {}, executor=SerialExecutor())


def test_robustness_command_writes_a_report_folder(small, tmp_path):
    """robustness --report writes results.json (with its flips), the chart and the pages; the terminal names the outcome."""
    out = tmp_path / "rob"
    result = CliRunner().invoke(
        main,
        ["robustness", "--scenario", small, "--param", "fleet.workers=5,10", "--seeds", "2", "--jobs", "1",
         "--arm", "blind-retry", "generic", "--arm", "ladder", "generic", "--report", str(out)],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "The ordering held" in result.output or "leads on success_rate at" in result.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["arms"] == ["blind-retry on generic", "ladder on generic"] and "flips" in doc
    assert [p["value"] for p in doc["points"]] == [5, 10]
    assert (out / "robustness.png").stat().st_size > 0
    assert "Where the ordering flips" in (out / "summary.md").read_text()
    assert "<img" in (out / "report.html").read_text()
    refused = CliRunner().invoke(main, ["robustness", "--scenario", small, "--param", "policy.base_s=1,2"])
    assert refused.exit_code == 2 and "set policy parameters in --arm" in refused.output


def test_compare_with_robustness_puts_the_flip_into_the_finding():
    """compare --robustness on rate_limit_storm: the two leading arms are varied and the finding names the flip."""
    result = CliRunner().invoke(
        main,
        ["compare", "--scenario", "rate_limit_storm", "--seeds", "2", "--jobs", "1", "--no-history",
         "--policies", "blind-retry,structured", "--errors", "generic,structured",
         "--robustness", "2", "--json"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output[result.output.index("{") :])
    robustness_doc = doc["robustness"]
    assert robustness_doc["varied"]["fleet.api_reject_cost"] == [0.0, 0.5, 1.0]
    assert any(f["parameter"] == "fleet.api_reject_cost" for f in robustness_doc["flips"])
    from fleetchaos.reports.conclusion import finding
    from fleetchaos.results.models import CompareResult

    assert "The ordering flips: on success_rate" in finding(CompareResult.model_validate(doc)).replace("\\", "")
    refused = CliRunner().invoke(main, ["compare", "--robustness", "2", "--check-determinism"])
    assert refused.exit_code == 2 and "--robustness with --check-determinism" in refused.output
