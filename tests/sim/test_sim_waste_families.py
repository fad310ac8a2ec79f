"""Wasted retries grouped into the families users reason about."""

from __future__ import annotations

from harness.metrics import WASTE_FAMILIES
from harness.runner import run_one
from harness.scenario import load_scenario
from simulated_fleet.world import WASTE_REASONS


def test_every_recorded_reason_has_a_family():
    """Each reason the driver can record maps to one of the three families."""
    assert set(WASTE_REASONS.values()) == set(WASTE_FAMILIES)
    assert set(WASTE_FAMILIES.values()) == {
        "retried a permanent error",
        "before retry-after",
        "on the same exhausted resource",
    }


def test_families_add_up_to_the_wasted_retries_of_a_run():
    """On a scenario with many kinds of waste, the family counts sum to wasted_retries and match the reasons."""
    result = run_one(load_scenario("mixed_production_day"), "blind-retry", "generic", 1)
    families = result.breakdowns["wasted_retries_by_family"]
    reasons = result.breakdowns["wasted_retries_by_reason"]
    assert len(families) >= 2  # the scenario wastes retries in more than one way
    assert sum(families.values()) == sum(reasons.values()) == result.metrics["wasted_retries"]
    for family, count in families.items():
        assert count == sum(n for reason, n in reasons.items() if WASTE_FAMILIES[reason] == family)
