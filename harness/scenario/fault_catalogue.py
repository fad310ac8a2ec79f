"""The fault kinds described for people: what each does to the truth, and its parameters.

Everything here is read from the models (:data:`fleetchaos.sim.fault_specs.FAULT_MODELS`)
and the structured contract (:data:`fleetchaos.sim.truth.FAILURES`), except the one
sentence per kind in :data:`EFFECTS` that says what the kind does to the truth (how
``simulated_fleet/world.py`` acts on it).  ``fleetchaos faults list|show`` and the
generated docs/scenarios.md both use this module.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from fleetchaos.errors import UserError
from fleetchaos.scenario.fields import Parameter, parameters
from fleetchaos.sim.fault_specs import FAULT_MODELS
from fleetchaos.sim.truth import FAILURES, REPORTING_KINDS

#: What each fault kind does to the truth of a call or a task, in one sentence.
EFFECTS: dict[str, str] = {
    "network_blip": "The call fails fast on a dropped connection and takes no effect; a retry normally succeeds.",
    "timeout": (
        "The call hangs until timeout_s; with committed_probability its side effect took effect anyway, "
        "so the outcome is unknown and running it again may duplicate it."
    ),
    "rate_limit": (
        "Inside its windows the fleet-wide API token bucket refills at capacity_factor of its rate; an API call "
        "that finds no token is refused (429, with a retry-after hint) and takes no effect."
    ),
    "disk_full": (
        "From each fill until cleanup_after_s later, every disk-writing step on that worker fails and takes "
        "no effect; steps that do not write still run."
    ),
    "expired_key": (
        "From the revocation on, every API call on that worker fails and takes no effect until the "
        "orchestrator refreshes the worker's credentials."
    ),
    "git_push_conflict": (
        "A push takes effect only if no other push landed on its branch while it ran; otherwise it is "
        "rejected and takes no effect, so contention grows with pushers and retry timing."
    ),
    "missing_dependency": (
        "Calls of the targeted tools on the targeted workers fail and take no effect (with probability 1, "
        "always); the same call on another worker succeeds."
    ),
    "validation_error": (
        "A chosen task's step fails on every execution, on every worker, and never takes effect: retrying cannot help."
    ),
    "not_found": (
        "A chosen item's source is gone for good: it fails on every retry until the orchestrator switches "
        "to an alternative source (each of which may be missing too)."
    ),
    "permission_denied": (
        "The chosen items are refused (403) on every retry, on every worker, and never take effect: "
        "only a human granting access would help."
    ),
    "partial_batch": (
        "In one execution of a fan-out step, `failures` of its items fail together and take no effect while "
        "the others do (the same items every time when persistent)."
    ),
    "silent_suppression": (
        "The call returns an empty success but took no effect: the truth stays incomplete while every "
        "error format shows ok, and steps that need it run on missing input."
    ),
    "fabricated_defaults": (
        "The call returns plausible default values as a success but took no effect: the truth stays "
        "incomplete while every error format shows ok, and steps that need it run on made-up input."
    ),
    "schema_drift": (
        "Changes nothing that happens: during its windows the targeted workers' structured envelopes carry "
        "the older schema_version and lack missing_fields."
    ),
    "node_crash": (
        "The worker is down for down_s: calls in flight at the crash are lost (those that finished before it "
        "took effect), nothing reports back until the orchestrator misses its heartbeats "
        "(fleet.heartbeat_timeout_s after the crash), and calls dispatched while it is down fail fast."
    ),
    "network_partition": (
        "During its windows a dispatch from one of the orchestrators to a targeted worker fails after "
        "connect_timeout_s without running anything."
    ),
    "latency_spike": (
        "During its windows network latency on the targeted workers is multiplied by factor (plus add_s); "
        "a call slower than fleet.call_timeout_s times out with an unknown outcome (committed half the time)."
    ),
    "quota_exhausted": (
        "Once calls_per_day API calls have gone through in a simulated day, every further API call fails "
        "and takes no effect until the next day starts."
    ),
}


@dataclass(frozen=True, slots=True)
class FaultKind:
    """A fault kind with its contract and what it does."""

    kind: str
    model: type[BaseModel]
    summary: str
    error_code: str
    category: str
    recoverable: bool | None
    suggested_action: str
    effect: str
    parameters: tuple[Parameter, ...]


def _summary(model: type[BaseModel]) -> str:
    doc = (model.__doc__ or "").strip().replace("``", "`")
    return " ".join(doc.split("\n\n")[0].split())


def fault_kinds() -> list[FaultKind]:
    """Every fault kind, in catalogue order."""
    return [_describe(kind, model) for kind, model in FAULT_MODELS.items()]


def _describe(kind: str, model: type[BaseModel]) -> FaultKind:
    contract = FAILURES.get(kind)
    if contract is not None:
        code, category, recoverable, action = (
            contract.error_code,
            contract.category,
            contract.recoverable,
            contract.suggested_action,
        )
    else:  # a reporting kind: it changes what is shown, not what happens
        code, category, recoverable, action = REPORTING_KINDS.get(kind, kind.upper()), "reporting", None, "none"
    return FaultKind(
        kind=kind,
        model=model,
        summary=_summary(model),
        error_code=code,
        category=category,
        recoverable=recoverable,
        suggested_action=action,
        effect=EFFECTS.get(kind, _summary(model)),
        parameters=parameters(model, skip=("kind",)),
    )


def fault_kind(kind: str) -> FaultKind:
    """One fault kind; an unknown name raises a UserError with a did-you-mean."""
    model = FAULT_MODELS.get(kind)
    if model is None:
        import difflib

        guess = difflib.get_close_matches(kind, list(FAULT_MODELS), n=1)
        hint = f"; did you mean {guess[0]!r}?" if guess else "; see `fleetchaos faults list`"
        raise UserError(f"unknown fault kind {kind!r} (known: {', '.join(FAULT_MODELS)}){hint}")
    return _describe(kind, model)


__all__ = ["EFFECTS", "FaultKind", "fault_kind", "fault_kinds"]
