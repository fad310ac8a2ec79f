"""Error formats: how the truth of a dispatch is rendered into what the orchestrator sees.

Two questions decide a format's behaviour, and both are about reporting, not about
what happened:

* ``partial_batch``: when some items of a fan-out step fail, is the step reported as
  failed, hidden as "ok" (the tool returns what it gathered), or reported with a count
  of its failed items?  Envelopes and suppressing formats fix it; for a format without
  an envelope (generic, status, raw) it is the scenario's ``fleet.partial_batch``.
* ``render``: what the orchestrator is told when a dispatch stops on a failure.

Two more describe how the orchestrator reads it: ``misread_setting`` (which
``fleet.misread_factor`` setting of the scenario says how easily a failure in this
format is read as a success; ``misread_factor`` is its default, from
:data:`fleetchaos.sim.misread.DEFAULT_MISREAD_FACTORS`) and ``failure_flag`` (whether a
final-answer guardrail has a machine-readable failure to check).  docs/formats.md
lists every format and why each sets these as it does.

Formats whose text carries vendor error messages have ``for_run(seed)``: the world
binds them to the run's planted secrets (see :mod:`fleetchaos.sim.sanitise`).
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import (
    AgentToolErrorFormat,
    ErrorFormat,
    GenericFormat,
    StructuredFormat,
    counted,
    partial_batch_of,
)
from fleetchaos.sim.formats._envelopes import (
    ABLATION_STEPS,
    AblationAlternatives,
    AblationFailureType,
    AblationPartialResults,
    AblationRetryFlag,
    FailureTypeFormat,
    SubagentResultFormat,
    ToolEnvelopeFormat,
)
from fleetchaos.sim.formats._status import StatusFormat
from fleetchaos.sim.formats._text import EmptySuccessFormat, FabricatedDefaultsFormat, RawFormat

#: Built-in formats by name.
FORMATS: dict[str, type] = {
    "generic": GenericFormat,
    "structured": StructuredFormat,
    "status": StatusFormat,
    "raw": RawFormat,
    "empty-success": EmptySuccessFormat,
    "fabricated-defaults": FabricatedDefaultsFormat,
    "agent-tool-error": AgentToolErrorFormat,
    "failure-type": FailureTypeFormat,
    "subagent-result": SubagentResultFormat,
    "tool-envelope": ToolEnvelopeFormat,
    **{step.name: step for step in ABLATION_STEPS},
}

#: The field-ablation steps' format names, in ablation order.
ABLATION_FORMATS: tuple[str, ...] = tuple(step.name for step in ABLATION_STEPS)


def get_format(name: str) -> ErrorFormat:
    """A fresh instance of a built-in format, by name."""
    try:
        return FORMATS[name]()
    except KeyError:
        known = ", ".join(sorted(FORMATS))
        raise KeyError(f"unknown error format {name!r} (known: {known})") from None


__all__ = [
    "ABLATION_FORMATS",
    "ABLATION_STEPS",
    "FORMATS",
    "AblationAlternatives",
    "AblationFailureType",
    "AblationPartialResults",
    "AblationRetryFlag",
    "AgentToolErrorFormat",
    "EmptySuccessFormat",
    "ErrorFormat",
    "FabricatedDefaultsFormat",
    "FailureTypeFormat",
    "GenericFormat",
    "RawFormat",
    "StatusFormat",
    "StructuredFormat",
    "SubagentResultFormat",
    "ToolEnvelopeFormat",
    "counted",
    "get_format",
    "partial_batch_of",
]
