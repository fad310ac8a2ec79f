"""Misread factors per error format as scenario settings: defaults, overrides, sweeps and what reports state."""

from __future__ import annotations

import pytest

from fleetchaos.sim.config import FleetSpec, MisreadFactors
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats.registry import builtin_formats
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS, misread_factor


def test_every_format_names_a_setting_whose_default_is_its_documented_factor():
    """Each built-in format reads one fleet.misread_factor setting (or none when it reports no failure), defaulting to today's value."""
    settings = set(MisreadFactors.model_fields)
    assert settings == set(DEFAULT_MISREAD_FACTORS)
    expected = {
        "generic": 1.0,
        "status": 1.0,
        "raw": 3.0,
        "structured": 0.2,
        "agent-tool-error": 0.2,
        "failure-type": 0.2,
    }
    expected |= {"subagent-result": 0.2, "tool-envelope": 0.05, "empty-success": 0.0, "fabricated-defaults": 0.0}
    expected |= {"agent-sdk-default": 1.0, "langgraph-toolnode": 1.0, "mcp": 0.5}  # real stacks' texts
    for name in builtin_formats():
        fmt = get_format(name)
        setting = fmt.misread_setting
        assert setting is None or setting in settings, name
        assert misread_factor(fmt, MisreadFactors()) == fmt.misread_factor == expected.get(name, 0.2), name
    assert get_format("ablation:+alternatives").misread_setting == "failure_type"  # held equal across the ablation


def test_a_scenario_value_replaces_the_formats_factor_and_only_its_own():
    """Setting fleet.misread_factor.structured changes the structured envelopes' factor, not the others'."""
    factors = FleetSpec.model_validate({"misread_factor": {"structured": 0.7}}).misread_factor
    assert misread_factor(get_format("structured"), factors) == 0.7
    assert misread_factor(get_format("agent-tool-error"), factors) == 0.7  # the same envelope
    assert misread_factor(get_format("failure-type"), factors) == 0.2
    assert misread_factor(get_format("empty-success"), factors) == 0.0  # nothing reported as failed
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        FleetSpec.model_validate({"misread_factor": {"raw": -1}})


def test_the_run_misreads_with_the_scenarios_factor(sim):
    """misread_probability 1: factor 0 on generic never misreads; factor 1 misreads every task's first failure."""
    template = {"job": [sim.step("plan", 10)]}
    arrivals = [(float(i), "job") for i in range(10)]
    faults = [{"kind": "network_blip", "probability": 1.0}]
    never = sim.scenario(template, arrivals, faults, misread_probability=1.0, misread_factor={"generic": 0})
    r = sim.run(never, "blind-retry", "generic")
    assert sum(rec.misreads for rec in r.records) == 0 and all(rec.claim == "failed" for rec in r.records)
    always = sim.run(sim.scenario(template, arrivals, faults, misread_probability=1.0), "blind-retry", "generic")
    assert all(rec.misreads == 1 and rec.claim == "success" for rec in always.records)
    # the structured factor does not touch the generic arm
    other = sim.scenario(template, arrivals, faults, misread_probability=1.0, misread_factor={"structured": 0})
    assert all(rec.misreads == 1 for rec in sim.run(other, "blind-retry", "generic").records)
