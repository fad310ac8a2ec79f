"""The modelling assumptions that decide outcomes, stated with the values a result's runs used.

The fixed assumptions every report states are :data:`fleetchaos.reports.writer.ASSUMPTIONS`;
these are the ones a scenario sets (how often the orchestrator misreads a reported
failure, per format, and how often workers' envelopes are wrong), so each report says
what its own runs assumed.  Reads only the result models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleetchaos.results.models import CompareResult, RunResult

#: What the misread factors default to (fleet.misread_factor), for results that do not carry the scenario.
_DEFAULT_FACTORS = "generic 1, raw 3, structured 0.2, failure_type 0.2, subagent_result 0.2, tool_envelope 0.05"


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def _misread(config: Mapping[str, Any], arms: dict[str, float | None]) -> str:
    fleet = config.get("fleet") or {}
    base = fleet.get("misread_probability")
    factors = fleet.get("misread_factor")
    if isinstance(factors, Mapping) and factors:
        factor_text = ", ".join(f"{name} {_num(v)}" for name, v in factors.items())
    else:
        factor_text = f"the defaults: {_DEFAULT_FACTORS}"
    base_text = (
        f"the fleet's misread_probability ({_num(base)})" if base is not None else "the fleet's misread_probability"
    )
    known = {errors: p for errors, p in arms.items() if p is not None}
    per_arm = (
        "; in these runs the chance was " + ", ".join(f"{_num(p)} on {errors}" for errors, p in known.items())
        if known
        else ""
    )
    return (
        f"An LLM orchestrator misreads a reported failure as a success with {base_text} times the error format's "
        f"misread factor (fleet.misread_factor: {factor_text}; empty-success and fabricated-defaults report no "
        f"failure to misread){per_arm}. The factors are judgements, not measurements: sweep them "
        "(--param fleet.misread_factor.NAME) before trusting a difference they could decide. A guardrail policy "
        "blocks the misread when the format carries a machine-readable failure flag (docs/formats.md)."
    )


def stated_assumptions(result: CompareResult | RunResult) -> tuple[str, ...]:
    """The scenario-set assumptions of ``result``, with its runs' values."""
    if isinstance(result, CompareResult):
        config: Mapping[str, Any] = result.scenario_config
        arms = {a.errors: a.misread_probability for a in result.arms}
    else:
        config = {}
        arms = {result.errors: result.misread_probability}
    return (_misread(config, arms),)


__all__ = ["stated_assumptions"]
