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


#: How a run's scheduled-fault line for a wrong_envelope rule starts (fleetchaos.sim.envelope_errors.PREFIX).
WRONG_ENVELOPES = "wrong envelopes"

_TRUTHFUL = (
    "Workers' structured envelopes report every failure as the truth has it (no wrong_envelope fault): code, "
    "category, recoverability, retry-after and partial_success come from the failure itself."
)


def _where(fault: Mapping[str, Any]) -> str:
    workers = fault.get("workers")
    parts = ["every worker" if workers is None else f"workers {workers}"]
    failures = fault.get("failures")
    parts.append("every failure" if failures is None else f"failures of {', '.join(failures)}")
    if fault.get("tools") is not None:
        parts.append(f"tools {', '.join(fault['tools'])}")
    if fault.get("windows"):
        parts.append(f"{len(fault['windows'])} window(s)")
    return ", ".join(parts)


def _wrong_envelopes(lines: list[str]) -> str:
    if not lines:
        return _TRUTHFUL
    return (
        "Workers' structured envelopes are sometimes wrong, per failed dispatch (keyed, so every arm meets the same "
        "wrong envelopes): " + "; ".join(lines) + ". misreported_failures counts each envelope that differed from "
        "what the truth renders; the truth itself (what committed, when a cause lifts) is never changed."
    )


def _config_envelopes(config: Mapping[str, Any]) -> list[str]:
    lines = []
    for index, fault in enumerate(config.get("faults") or ()):
        if fault.get("kind") != "wrong_envelope":
            continue
        low, high = fault.get("retry_after_factor") or (0.1, 10.0)
        swarm = f" (swarm: {', '.join(sorted(fault['swarm']))} drawn per seed)" if fault.get("swarm") else ""
        lines.append(
            f"{WRONG_ENVELOPES} (faults[{index}]) on {_where(fault)}: misclassify {_num(fault.get('misclassify', 0))}, "
            f"mark_recoverable {_num(fault.get('mark_recoverable', 0))}, wrong_retry_after "
            f"{_num(fault.get('wrong_retry_after', 0))} (x{_num(low)} to x{_num(high)}), omit_partial_success "
            f"{_num(fault.get('omit_partial_success', 0))}{swarm}"
        )
    return lines


def stated_assumptions(result: CompareResult | RunResult) -> tuple[str, ...]:
    """The scenario-set assumptions of ``result``, with its runs' values."""
    if isinstance(result, CompareResult):
        config: Mapping[str, Any] = result.scenario_config
        arms = {a.errors: a.misread_probability for a in result.arms}
        envelopes = _config_envelopes(config) if config else None
    else:
        config = {}
        arms = {result.errors: result.misread_probability}
        envelopes = [line for line in result.fault_schedule if line.startswith(WRONG_ENVELOPES)]
    stated = [_misread(config, arms)]
    if envelopes is not None:  # a comparison stored without its scenario cannot say
        stated.append(_wrong_envelopes(envelopes))
    return tuple(stated)


__all__ = ["stated_assumptions"]
