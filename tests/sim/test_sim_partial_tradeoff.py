"""The partial-results trade-off: resuming keeps items a tool faked as done, a restart redoes them."""

from __future__ import annotations

from fleetchaos.runs.runner import compare
from fleetchaos.scenario.load import load_scenario
from fleetchaos.scenario.params import apply_params

FORMATS = ("ablation:failure_type", "ablation:+partial_results")


def _arms(fabricated: float) -> dict[str, dict]:
    scenario, _ = apply_params(
        load_scenario("partial_results_tradeoff"), [("faults[0].probability", fabricated)], source="test"
    )
    result = compare(scenario, [1, 2, 3], policies=("failure-type-router",), errors=FORMATS)
    return {arm.errors: arm.metrics for arm in result.arms}


def test_resuming_pays_off_without_fabricated_work_and_costs_recovery_with_it():
    """Without fabricated defaults partial results raise recovery; with 10% of calls faked they lower it."""
    clean = _arms(0.0)
    assert clean["ablation:+partial_results"]["recovery_rate"] > clean["ablation:failure_type"]["recovery_rate"]
    assert clean["ablation:+partial_results"]["redone_steps"] < clean["ablation:failure_type"]["redone_steps"]
    faked = _arms(0.1)
    assert faked["ablation:+partial_results"]["recovery_rate"] < faked["ablation:failure_type"]["recovery_rate"]
    assert (
        faked["ablation:+partial_results"]["silent_failure_rate"]
        > faked["ablation:failure_type"]["silent_failure_rate"]
    )
