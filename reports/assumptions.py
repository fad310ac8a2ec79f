"""The modelling assumptions that decide outcomes, stated with the values a result's runs used.

The fixed assumptions every report states are :data:`fleetchaos.reports.writer.ASSUMPTIONS`;
these are the ones a scenario sets (how often the orchestrator misreads a reported
failure, per format, how often workers' envelopes are wrong, how partial batches are
reported and resumed, how providers admit calls, and what each outcome costs), so each
report says what its own runs assumed (docs/assumptions.md gives each one's reason and
range).  Reads only the result models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleetchaos.reports.blocks import literal
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


#: How a format without an envelope reports a partly failed fan-out step, per fleet.partial_batch.
_PARTIAL = {
    "failed": "reported as the step's failure (the batch raises its first failure)",
    "ok": "hidden: the tool says ok with what it gathered, so partial work passes as a success",
    "count": "reported as a partial failure that says how many items failed",
}


def _conditions(config: Mapping[str, Any]) -> str:
    """Partial batches, checkpoints, providers and prices, as the scenario set them."""
    fleet = config.get("fleet") or {}
    partial = fleet.get("partial_batch")
    parts = [
        "A fan-out step with failed items on a format without an envelope (generic, status, raw) is "
        + (f"{_PARTIAL.get(partial, partial)} (fleet.partial_batch: {partial})" if partial else "not recorded")
    ]
    checkpoints = fleet.get("checkpoints")
    if checkpoints is not None:
        parts.append(
            "workers checkpoint, so every retry resumes where the last dispatch stopped"
            if checkpoints
            else "workers do not checkpoint: a retry resumes only from progress an envelope reveals, else restarts"
        )
    timeout = fleet.get("call_timeout_s")
    for provider in fleet.get("providers") or ():
        limit = provider.get("max_in_flight")
        queue = provider.get("admission") == "queue" or limit is None
        parts.append(
            f"provider {literal(str(provider.get('name')))} serves {_num(provider.get('servers') or 'any number of')} calls at once "
            + (
                "and queues every other call"
                if queue
                else f"and refuses calls past {_num(limit)} in it with a {_num(provider.get('overload_status', 503))}"
            )
        )
    parts.append(f"a client waits {_num(timeout)} s for a call" if timeout is not None else "calls have no timeout")
    page = fleet.get("page_handling") or {}
    if "usd_per_silent_failure" in fleet:
        parts.append(
            f"costs: a page is its handling time (mean {_num(page.get('mean_s', 0) / 60)} min at "
            f"${_num(fleet.get('usd_per_human_hour'))}/h, not the wait for the human), a silent failure "
            f"${_num(fleet['usd_per_silent_failure'])}, a task left undone ${_num(fleet.get('usd_per_undone_task'))}, "
            f"a refused request ${_num(fleet.get('usd_per_refused_call'))}"
        )
    return "; ".join(parts) + " (docs/assumptions.md: each one's reason and range)."


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
    if config:
        stated.append(_conditions(config))
    return tuple(stated)


__all__ = ["stated_assumptions"]
