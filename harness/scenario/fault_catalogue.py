"""The fault kinds described for people: what each does to the truth, and its parameters.

Everything here is read from the models (:data:`fleetchaos.sim.fault_specs.FAULT_MODELS`)
and each kind's record (:data:`fleetchaos.sim.kinds.KINDS`: its structured contract and
the one sentence that says what it does to the truth).  ``fleetchaos faults list|show``
and the generated docs/scenarios.md both use this module.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from fleetchaos.errors import UserError
from fleetchaos.scenario.fields import Parameter, parameters
from fleetchaos.sim import kinds
from fleetchaos.sim.fault_specs import FAULT_MODELS


@dataclass(frozen=True, slots=True)
class KindDescription:
    """A fault kind described for people: its contract, what it does, its parameters."""

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


def describe_kinds() -> list[KindDescription]:
    """Every fault kind, in catalogue order."""
    return [_describe(kind, model) for kind, model in FAULT_MODELS.items()]


def _describe(kind: str, model: type[BaseModel]) -> KindDescription:
    record = kinds.fault_kind(kind)
    contract = record.contract  # a reporting kind's: category "reporting", recoverable None
    return KindDescription(
        kind=kind,
        model=model,
        summary=_summary(model),
        error_code=contract.error_code,
        category=contract.category,
        recoverable=contract.recoverable,
        suggested_action=contract.suggested_action,
        effect=record.effect,
        parameters=parameters(model, skip=("kind",)),
    )


def describe_kind(kind: str) -> KindDescription:
    """One fault kind described; an unknown name raises a UserError with a did-you-mean."""
    model = FAULT_MODELS.get(kind)
    if model is None:
        import difflib

        guess = difflib.get_close_matches(kind, list(FAULT_MODELS), n=1)
        hint = f"; did you mean {guess[0]!r}?" if guess else "; see `fleetchaos faults list`"
        raise UserError(f"unknown fault kind {kind!r} (known: {', '.join(FAULT_MODELS)}){hint}")
    return _describe(kind, model)


__all__ = ["KindDescription", "describe_kind", "describe_kinds"]
