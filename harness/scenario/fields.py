"""Pydantic field inspection: what a model's fields are, and where a validation error points.

Both the validation messages (:mod:`fleetchaos.scenario.messages`) and the fault catalogue
(:mod:`fleetchaos.scenario.fault_catalogue`) read the models through this module: following
an error's location to the field it names, a field's type, default and allowed range in
words, and every field of a model described for people (:func:`parameters`).
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

__all__ = [
    "FIELD_NOTES",
    "FieldAt",
    "Parameter",
    "allowed_range",
    "model_at",
    "parameters",
    "plain_number",
    "resolve",
    "tag_of",
    "type_name",
    "union_members",
    "unwrap",
    "yaml_value",
]

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


# -- following a location through the models ------------------------------------------


def unwrap(annotation: Any) -> Any:
    """Strip Annotated and Optional wrappers."""
    while True:
        origin = get_origin(annotation)
        if origin is typing.Annotated:
            annotation = get_args(annotation)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
                continue
        return annotation


def union_members(annotation: Any) -> list[type[BaseModel]]:
    """The model classes of a (discriminated) union, else []."""
    annotation = unwrap(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return [a for a in get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
    return []


def tag_of(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("kind")
    if field is None or get_origin(field.annotation) is not Literal:
        return None
    return get_args(field.annotation)[0]


class FieldAt:
    """What a location points at: the model holding the last field, and that field."""

    __slots__ = ("annotation", "field_name", "model")

    def __init__(self, model: type[BaseModel] | None, field_name: str | None, annotation: Any):
        self.model = model
        self.field_name = field_name
        self.annotation = annotation

    @property
    def field(self) -> FieldInfo | None:
        """The field's pydantic definition, None when the location names no field of a model."""
        if self.model is None or self.field_name is None:
            return None
        return self.model.model_fields.get(self.field_name)


def resolve(root: type[BaseModel] | None, loc: tuple) -> FieldAt | None:
    """Follow ``loc`` (pydantic's location, tags included) from ``root``; None if lost."""
    if root is None:
        return None
    annotation: Any = root
    model: type[BaseModel] | None = None
    name: str | None = None
    for part in loc:
        ann = unwrap(annotation)
        members = union_members(ann)
        if members:
            chosen = [m for m in members if tag_of(m) == part]
            if not chosen:
                return None
            annotation = chosen[0]
            continue
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            if not isinstance(part, str) or part not in ann.model_fields:
                return None
            model, name = ann, part
            annotation = ann.model_fields[part].annotation
            continue
        origin = get_origin(ann)
        if origin in (list, tuple, set, frozenset) and isinstance(part, int):
            args = [a for a in get_args(ann) if a is not Ellipsis]
            if not args:
                return None
            annotation = args[min(part, len(args) - 1)] if origin is tuple else args[0]
            continue
        if origin is dict and isinstance(part, str):
            annotation = get_args(ann)[1]
            continue
        return None
    return FieldAt(model, name, unwrap(annotation))


def model_at(root: type[BaseModel] | None, loc: tuple) -> type[BaseModel] | None:
    """The model a location points into (for unknown-field suggestions)."""
    where = resolve(root, loc)
    if where is None:
        return None
    ann = where.annotation
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    return None


def plain_number(x: float) -> str:
    """A bound as a person writes it: 31536000 rather than 3.1536e+07."""
    if isinstance(x, (int, float)) and math.isfinite(x) and float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:g}"


def allowed_range(field: FieldInfo | None) -> str:
    """A field's numeric and length constraints in words: ``0 <= value <= 1``, ``> 0``, ``length >= 1``."""
    if field is None:
        return ""
    # annotated_types types a bound as any comparable; a scenario field's bounds are numbers
    low: tuple[str, Any] | None = None
    high: tuple[str, Any] | None = None
    lengths = []
    for meta in field.metadata:
        if isinstance(meta, annotated_types.Ge):
            low = (">=", meta.ge)
        elif isinstance(meta, annotated_types.Gt):
            low = (">", meta.gt)
        elif isinstance(meta, annotated_types.Le):
            high = ("<=", meta.le)
        elif isinstance(meta, annotated_types.Lt):
            high = ("<", meta.lt)
        elif isinstance(meta, annotated_types.MinLen) and meta.min_length:
            lengths.append(f"length >= {meta.min_length}")
        elif isinstance(meta, annotated_types.MaxLen):
            lengths.append(f"length <= {meta.max_length}")
    if low and high:
        flipped = "<=" if low[0] == ">=" else "<"
        return f"{plain_number(low[1])} {flipped} value {high[0]} {plain_number(high[1])}"
    one_side = low or high
    if one_side is not None:
        op, bound = one_side
        return f"{op} {plain_number(bound)}"
    return ", ".join(lengths)


# -- fields described for people ----------------------------------------------------


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
            return "built-in: " + ", ".join(v.name for v in value)
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    return str(value)


def _default(field) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
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
