"""The fault kinds described for people: what each does to the truth, and its parameters.

Everything here is read from the models (:data:`fleetchaos.sim.fault_specs.FAULT_MODELS`)
and the structured contract (:data:`fleetchaos.sim.truth.FAILURES`), except the one
sentence per kind in :data:`EFFECTS` that says what the kind does to the truth (how
``simulated_fleet/world.py`` acts on it).  ``fleetchaos faults list|show`` and the
generated docs/scenarios.md both use this module.
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from fleetchaos.errors import UserError
from fleetchaos.scenario.messages import allowed_range
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

#: Descriptions for model fields that carry none of their own (a model's ``description``
#: wins when it has one).  Keys: ``Model.field`` or ``*.field`` for any model.
FIELD_NOTES: dict[str, str] = {
    "*.kind": "the fault kind (selects the model)",
    "*.per_worker_per_day": "events per worker per simulated day, at Poisson-random times",
    "*.events": "events at fixed times on given workers",
    "*.start_s": "start, in simulated seconds from midnight of day 0",
    "*.duration_s": "length in simulated seconds",
    "*.at_s": "when, in simulated seconds from midnight of day 0",
    "*.worker": "worker index (0-based)",
    "Scenario.name": "the scenario's name (what --scenario and reports call it)",
    "Scenario.duration_s": "simulated horizon in seconds (arrivals stop then; in-flight tasks drain afterwards)",
    "Scenario.fleet": "nodes and shared capacity",
    "Scenario.workload": "tasks and their arrival",
    "Scenario.faults": "what breaks, where and when (a list; each item has a kind)",
    "FleetSpec.orchestrators": "orchestrator nodes; tasks are assigned to them in turn",
    "FleetSpec.workers": "worker nodes that run tool calls",
    "FleetSpec.network_latency": "one-way network latency (a call pays a round trip)",
    "FleetSpec.dispatch": "how an orchestrator picks a worker for a task and for a reroute",
    "WorkerOverride.tool_slots": "this worker's concurrent tool calls",
    "Distribution.mean_s": "mean, in seconds",
    "Distribution.cv": "coefficient of variation (0 = constant)",
    "WorkloadSpec.tasks_per_day": "mean arrival rate of the open-loop Poisson process",
    "WorkloadSpec.templates": "the kinds of task and their weights",
    "WorkloadSpec.think": "closed loop: a client's pause between the end of a task and its next one",
    "TemplateSpec.name": "template name (faults target it with templates:)",
    "TemplateSpec.weight": "relative share of arriving tasks",
    "TemplateSpec.steps": "tool steps, run in order",
    "StepSpec.tool": "tool name (faults target it with tools:)",
    "StepSpec.duration": "how long a successful call runs",
    "StepSpec.uses_api": "the call goes through the fleet-wide API bucket and needs valid credentials",
    "StepSpec.side_effect": "none, idempotent (repeating is harmless) or append (repeating duplicates it)",
    "Arrival.template": "name of the task's template",
    "Window.start_s": "start, in simulated seconds from midnight of day 0",
    "Window.duration_s": "length of each occurrence, in seconds",
    "Burst.mean_good_s": "mean length of a good phase (fault inactive)",
    "Burst.mean_bad_s": "mean length of a bad phase (fault active)",
    "Burst.scope": "fleet: every targeted worker shares the phases; worker: phases drawn per worker",
    "Ramp.start_s": "when the ramp starts (from_probability before it)",
    "Ramp.end_s": "when the ramp ends (to_probability after it)",
    "Ramp.from_probability": "probability at and before start_s",
    "Ramp.to_probability": "probability at and after end_s",
    "Timeout.probability": "per call, while active",
    "Timeout.committed_probability": "chance that a timed-out call's side effect took effect anyway",
    "Timeout.timeout_s": "how long a hung call blocks before it is reported as timed out",
    "RateLimit.windows": "windows in which the rate is cut",
    "DiskFull.cleanup_after_s": "how long a disk stays full",
    "GitPushConflict.tools": "the steps that push",
    "MissingDependency.probability": "per worker and tool: 1 means the tool is missing on every targeted worker",
    "NotFound.alternative_missing_probability": "chance that each alternative source is gone too",
    "SilentSuppression.probability": "per call, while active",
    "FabricatedDefaults.probability": "per call, while active",
    "SchemaDrift.version": "the older schema_version the workers emit",
    "SchemaDrift.missing_fields": "envelope fields the older version lacks",
    "NodeCrash.down_s": "time until the worker is back",
    "NetworkPartition.orchestrators": "the orchestrators cut off from the targeted workers",
    "NetworkPartition.windows": "when the partition holds",
    "NetworkPartition.connect_timeout_s": "how long a dispatch waits before failing",
    "LatencySpike.windows": "when latency spikes",
    "LatencySpike.factor": "latency multiplier",
    "LatencySpike.add_s": "seconds added to each call's latency",
    "QuotaExhausted.calls_per_day": "API calls allowed per simulated day, fleet-wide",
}


@dataclass(frozen=True, slots=True)
class Parameter:
    """One field of a model, described for people."""

    name: str
    type: str
    default: str
    """The default in YAML syntax, or ``required``."""
    allowed: str
    """Numeric range or length rule, e.g. ``0 <= value <= 1`` (empty when none)."""
    description: str


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


def type_name(annotation: Any) -> str:
    """A field type in words: ``number``, ``list of integer``, ``'fleet' | 'worker'``, ``Window or null``."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if all(isinstance(m, type) and issubclass(m, BaseModel) for m in members) and len(members) > 2:
            return "one of the fault kinds"
        text = " | ".join(type_name(m) for m in members)
        return f"{text} or null" if len(members) < len(args) else text
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is tuple:
        return "[" + ", ".join(type_name(a) for a in args if a is not Ellipsis) + "]"
    if origin is dict:
        return f"mapping of {type_name(args[0])} to {type_name(args[1])}"
    names = {float: "number", int: "integer", str: "string", bool: "boolean"}
    if annotation in names:
        return names[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.__name__
    return str(annotation)


def yaml_value(value: Any) -> str:
    """A value in YAML flow syntax, as a user would write it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isinf(value):
            return ".inf"
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:g}"
    if isinstance(value, BaseModel):
        return yaml_value(value.model_dump())
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {yaml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, BaseModel) and "name" in type(v).model_fields for v in value):
            return "built-in: " + ", ".join(v.name for v in value)  # type: ignore[attr-defined]
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    return str(value)


def _default(field) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
    return yaml_value(value)


def _note(model: type[BaseModel], name: str) -> str:
    for klass in model.__mro__:
        note = FIELD_NOTES.get(f"{klass.__name__}.{name}")
        if note:
            return note
    return FIELD_NOTES.get(f"*.{name}", "")


def parameters(model: type[BaseModel], *, skip: tuple[str, ...] = ()) -> tuple[Parameter, ...]:
    """Every field of ``model`` (in declaration order, inherited fields first)."""
    out = []
    names = [n for n in model.model_fields if n != "swarm"] + (["swarm"] if "swarm" in model.model_fields else [])
    for name in names:
        field = model.model_fields[name]
        if name in skip:
            continue
        out.append(
            Parameter(
                name=name,
                type=type_name(field.annotation),
                default=_default(field),
                allowed=allowed_range(field),
                description=field.description or _note(model, name),
            )
        )
    return tuple(out)


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


__all__ = [
    "EFFECTS",
    "FIELD_NOTES",
    "FaultKind",
    "Parameter",
    "fault_kind",
    "fault_kinds",
    "parameters",
    "type_name",
    "yaml_value",
]
