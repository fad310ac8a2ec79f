"""What a team's real tool surfaced, read as the orchestrator would read it.

A tool answers a faulted call by raising or by returning; :func:`surface_of` reads
either into a :class:`Surface`: whether it looks like a success, the envelope fields it
carries (from an ``envelope`` attribute, an exception's own attributes, a pydantic model
or a dict with ``error``/``error_code``/``status`` keys), and its text (what a model would
read, where leaked secrets show).  :func:`observation_of` turns it into an
:class:`~fleetchaos.sim.observation.Observation` for a policy, with the dispatch's
progress (which steps and items completed) filled in from the driver, which knows it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, ValidationError

from fleetchaos.sim.interrupts import policy_text
from fleetchaos.sim.observation import Observation

__all__ = ["ENVELOPE_FIELDS", "Surface", "observation_of", "surface_of"]

#: The fields a tool's error may carry that readers and contracts look at.
ENVELOPE_FIELDS = (
    "error_code",
    "category",
    "error_category",
    "failure_type",
    "recoverable",
    "retriable",
    "is_retryable",
    "retry_recommended",
    "suggested_action",
    "retry_after_ms",
    "retry_after_s",
    "context",
    "status",
    "message",
    "error_message",
)

#: Envelope fields the driver fills (a dispatch's progress), never the tool.
PROGRESS_FIELDS = frozenset(
    {"partial_success", "partial_results", "partial_data", "data", "manifest", "run_health", "schema_version"}
)

_FAILED_WORDS = ("failed", "failure", "error", "timeout", "partial", "cancelled")


@dataclass(frozen=True)
class Surface:
    """What one tool call surfaced to its caller."""

    ok: bool
    fields: dict = field(default_factory=dict)
    text: str = ""
    raised: str | None = None
    """The exception type's name, when the tool raised."""

    def describe(self, secrets: Iterable[str] = ()) -> str:
        """One line for reports, the tool's own words sanitised (``secrets`` by value, known key shapes by pattern)."""
        if self.ok:
            return "a success"
        if self.fields:
            shown = ", ".join(
                f"{k}={policy_text(repr(v), 200, secrets)}" for k, v in sorted(self.fields.items()) if k != "context"
            )
            return f"{'raised ' + self.raised + ' with ' if self.raised else 'an error with '}{shown}"
        what = f"raised {self.raised}" if self.raised else "returned"
        return f"{what} a bare failure {policy_text(self.text, 60, secrets)!r}"


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def _fields_of(obj: Any) -> dict:
    """Envelope fields from a mapping, a model or any object's attributes."""
    obj = _plain(obj)
    if isinstance(obj, dict):
        inner = obj.get("error")
        if isinstance(inner, dict):
            obj = {**obj, **inner}
        return {k: obj[k] for k in ENVELOPE_FIELDS if k in obj and obj[k] is not None} | {
            k: obj[k] for k in PROGRESS_FIELDS if k in obj and obj[k] is not None
        }
    return {k: _plain(getattr(obj, k)) for k in ENVELOPE_FIELDS if getattr(obj, k, None) is not None}


def _text(obj: Any) -> str:
    try:
        return json.dumps(_plain(obj), default=str, sort_keys=True)
    except (TypeError, ValueError):
        return str(obj)


def surface_of(
    value: Any = None, error: BaseException | None = None, contract: Callable[[Any], Any] | None = None
) -> Surface:
    """Read what a call returned (``value``) or raised (``error``).

    ``contract`` is the team's own error contract (:data:`fleetchaos.real.bindings.ContractMapping`):
    the fields it gives for the surfaced exception or value are the contract's (a failure);
    None from it reads the surface as fleetchaos does.
    """
    if contract is not None:
        surfaced = error if error is not None else value
        raised = None if error is None else type(error).__name__
        try:
            mapped = contract(surfaced)
        except Exception as exc:  # the team's mapping: its failure is reported, never raised
            return Surface(False, {}, f"the contract mapping raised {type(exc).__name__}: {exc}", raised)
        if mapped is not None:
            if not isinstance(mapped, Mapping):
                return Surface(
                    False, {}, f"the contract mapping returned {type(mapped).__name__}, not a mapping", raised
                )
            default = surface_of(value, error)
            return Surface(False, _fields_of(dict(mapped)), default.text, raised)
    if error is not None:
        envelope = getattr(error, "envelope", None)
        fields = _fields_of(envelope) if envelope is not None else _fields_of(error)
        fields.pop("status", None) if fields.get("status") in (None, "") else None
        text = f"{type(error).__name__}: {error}" + (f" {_text(envelope)}" if envelope is not None else "")
        return Surface(False, fields, text, type(error).__name__)
    plain = _plain(value)
    if isinstance(plain, dict):
        fields = _fields_of(plain)
        status = str(plain.get("status", "")).lower()
        failed = (
            "error_code" in fields
            or plain.get("ok") is False
            or status in _FAILED_WORDS
            or isinstance(plain.get("error"), (dict, str))
        )
        return Surface(not failed, fields if failed else {}, _text(plain))
    if isinstance(plain, str):
        failed = plain.strip().lower().split(":")[0] in _FAILED_WORDS
        return Surface(not failed, {}, plain)
    return Surface(True, {}, _text(plain) if plain is not None else "")


def observation_of(surface: Surface, expected: Observation) -> Observation:
    """The observation a policy gets from a real tool's surface.

    The tool's own fields replace those of the envelope the chosen format would render
    (``expected``); the dispatch's progress, which only the driver knows, stays as the
    format renders it.  A surface without usable fields is a bare failure.
    """
    if surface.ok:
        return Observation(ok=True, status="ok", worker=expected.worker)
    envelope = expected.envelope
    if envelope is None or not surface.fields:
        return Observation(ok=False, status="failed", worker=expected.worker, text=surface.text or None)
    model = type(envelope)
    base = envelope.model_dump()
    tool_fields = {k: v for k, v in surface.fields.items() if k in model.model_fields and k not in PROGRESS_FIELDS}
    if "context" in tool_fields and isinstance(base.get("context"), dict) and isinstance(tool_fields["context"], dict):
        tool_fields["context"] = {**base["context"], **tool_fields["context"]}
    for name in model.model_fields:
        if name not in PROGRESS_FIELDS and name not in ("context", "schema_version", "task_id", "task_description"):
            base[name] = tool_fields.get(name, model.model_fields[name].default)
    base.update({k: v for k, v in tool_fields.items() if k == "context"})
    try:
        parsed = model.model_validate(base)
    except ValidationError:
        return Observation(ok=False, status="failed", worker=expected.worker, text=surface.text or None)
    return Observation(ok=False, status=expected.status, worker=expected.worker, envelope=parsed)


def fields_view(surface: Surface) -> SimpleNamespace:
    """The surface's fields as attributes, for the policy readers."""
    return SimpleNamespace(**surface.fields)
