"""Reports state the scenario-set assumptions with the values their runs used."""

from __future__ import annotations

from fleetchaos.reports import write_compare_report, write_run_report
from fleetchaos.reports.assumptions import stated_assumptions
from fleetchaos.runs.runner import compare, run_one
from fleetchaos.scenario.load import load_scenario


def _scenario(small: str, **fleet):
    base = load_scenario(small)
    doc = base.model_dump(mode="json")
    doc["fleet"].update(fleet)
    doc["workload"]["tasks_per_day"] = 20
    return type(base).model_validate(doc)


def test_compare_report_states_the_runs_misread_factors_and_chances(small, tmp_path):
    """A comparison's assumptions name the scenario's misread_probability, every factor and each arm's chance."""
    scenario = _scenario(small, misread_probability=0.1, misread_factor={"structured": 0.5, "raw": 4})
    result = compare(scenario, [1], policies=("blind-retry",), errors=("generic", "structured"))
    line = stated_assumptions(result)[0]
    assert "misread_probability (0.1)" in line
    assert "structured 0.5" in line and "raw 4" in line and "tool_envelope 0.05" in line
    assert "0.1 on generic" in line and "0.05 on structured" in line
    write_compare_report(result, tmp_path / "r")
    assert line in (tmp_path / "r" / "summary.md").read_text()


def test_run_report_states_its_own_misread_chance(small, tmp_path):
    """A single run's report states the chance its format was misread with."""
    scenario = _scenario(small, misread_probability=0.1)
    result = run_one(scenario, "blind-retry", "raw", 1)
    assert result.misread_probability == 0.3  # 0.1 x raw's default factor 3
    write_run_report(result, tmp_path / "r")
    assert "0.3 on raw" in (tmp_path / "r" / "summary.md").read_text()


def test_reports_state_whether_envelopes_are_wrong_and_how_often(tmp_path):
    """A comparison and a run each state the wrong_envelope rules they ran with, or that envelopes were truthful."""
    from fleetchaos.reports.assumptions import WRONG_ENVELOPES
    from fleetchaos.sim.envelope_errors import PREFIX

    assert WRONG_ENVELOPES == PREFIX  # the run report finds the rule's line by it
    scenario = load_scenario("imperfect_contracts")
    compared = compare(scenario, [1], policies=("structured",), errors=("structured",))
    line = stated_assumptions(compared)[1]
    expected = (
        "wrong envelopes (faults[6]) on every worker, every failure: misclassify 0.1, mark_recoverable 0.5, "
        "wrong_retry_after 0.3 (x0.1 to x10), omit_partial_success 0.2"
    )
    assert expected in line
    run = run_one(scenario, "structured", "structured", 1)
    assert expected in stated_assumptions(run)[1]  # the run's line comes from its scheduled faults
    write_run_report(run, tmp_path / "run")
    assert expected in (tmp_path / "run" / "summary.md").read_text()
    truthful = compare(load_scenario("flaky_network"), [1], policies=("structured",), errors=("structured",))
    assert "report every failure as the truth has it" in stated_assumptions(truthful)[1]


def test_a_comparison_states_partial_batches_checkpoints_providers_and_prices(tmp_path):
    """The headline's conditions: how partial batches are reported, checkpoints, the provider's admission, the
    call timeout and each outcome's price, with the values the scenario set."""
    scenario = load_scenario("default")
    doc = scenario.model_dump(mode="json")
    doc["workload"]["tasks_per_day"] = 20
    doc["fleet"].update(partial_batch="count", checkpoints=True, usd_per_silent_failure=900)
    doc["fleet"]["providers"][0].update(name="api_*x*", admission="queue")
    compared = compare(type(scenario).model_validate(doc), [1], policies=("blind-retry",), errors=("generic",))
    line = stated_assumptions(compared)[-1]
    assert "says how many items failed (fleet.partial_batch: count)" in line
    assert "every retry resumes where the last dispatch stopped" in line
    assert "provider api\\_\\*x\\* serves 2 calls at once and queues every other call" in line  # escaped for Markdown
    assert "a client waits 180 s" in line and "a silent failure $900" in line and "mean 30 min at $120/h" in line
    write_compare_report(compared, tmp_path / "r")
    assert "fleet.partial_batch: count" in (tmp_path / "r" / "summary.md").read_text()
