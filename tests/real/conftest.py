"""Shared helpers for the real-code tests: small scenarios built in code."""

from __future__ import annotations

import pytest


def _scenario(faults: list[dict], *, writes_only: bool = False, **fleet) -> object:
    from fleetchaos.scenario.load import Scenario

    return Scenario.model_validate(
        {
            "name": "real-small",
            "duration_s": 7200,
            "fleet": {"orchestrators": 1, "workers": 2, "api_burst": 1000, **fleet},
            "workload": {
                "templates": [
                    {
                        "name": "notes",
                        "steps": [
                            {"tool": "fetch", "duration": {"mean_s": 2, "cv": 0}},
                            {
                                "tool": "write",
                                "duration": {"mean_s": 1, "cv": 0},
                                "fan_out": 4,
                                "side_effect": "append",
                            },
                        ][1 if writes_only else 0 :],
                    }
                ],
                "arrivals": [{"at_s": 10.0 * i, "template": "notes"} for i in range(12)],
            },
            "faults": faults,
        }
    )


@pytest.fixture
def small_scenario():
    """A two-step template (fetch, then four writes) with the given faults and fleet overrides."""
    return _scenario
