"""The simulated fleet: a SimPy world of orchestrators, workers, tools and faults.

This package knows nothing of the harness or the reports.  It defines the sockets a
harness plugs into: :class:`RecoveryPolicy`, the action types, :class:`Observation`,
and :class:`ErrorFormat`.

Names are loaded on first use, so importing the package (or the policy interface,
:mod:`fleetchaos.sim.observation`) does not load SimPy: only the world needs it.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "DAY_S",
            "Arrival",
            "DiskFull",
            "Distribution",
            "ExpiredKey",
            "FaultSpec",
            "FleetSpec",
            "NetworkBlip",
            "NodeEvent",
            "RateLimit",
            "StepSpec",
            "TemplateSpec",
            "Timeout",
            "Window",
            "WorkloadSpec",
            "WorldSpec",
        ),
        "config",
    ),
    **dict.fromkeys(("SCHEMA_VERSION", "AgentToolError", "PartialSuccess"), "envelope"),
    **dict.fromkeys(("FaultPlan", "build_plan"), "faults"),
    **dict.fromkeys(("ErrorFormat", "format_names", "get_format"), "formats"),
    **dict.fromkeys(("KINDS", "FaultKind", "fault_kind"), "kinds"),
    **dict.fromkeys(("TRUTH_FULL", "TRUTH_NONE", "TRUTH_PARTIAL", "TaskRecord"), "ledger"),
    **dict.fromkeys(
        (
            "ACTION_TYPES",
            "Action",
            "CompactContext",
            "DeadLetter",
            "Escalate",
            "FallbackModel",
            "GiveUp",
            "MODEL_TURN_ACTIONS",
            "Observation",
            "RecoveryPolicy",
            "RefreshCredentials",
            "RefreshTools",
            "ReinitSession",
            "Remediate",
            "RepairTurn",
            "RepromptWithSchema",
            "Reroute",
            "ResumeStream",
            "Retry",
            "Rollback",
            "TaskHistory",
            "UseAlternative",
        ),
        "observation",
    ),
    **dict.fromkeys(("FAILURES", "AttemptReport", "FailureContract"), "truth"),
    **dict.fromkeys(("RunOutput", "World"), "world"),
}

__all__ = [
    "ACTION_TYPES",
    "DAY_S",
    "FAILURES",
    "KINDS",
    "MODEL_TURN_ACTIONS",
    "SCHEMA_VERSION",
    "TRUTH_FULL",
    "TRUTH_NONE",
    "TRUTH_PARTIAL",
    "Action",
    "AgentToolError",
    "Arrival",
    "AttemptReport",
    "CompactContext",
    "DeadLetter",
    "DiskFull",
    "Distribution",
    "ErrorFormat",
    "Escalate",
    "ExpiredKey",
    "FailureContract",
    "FallbackModel",
    "FaultKind",
    "FaultPlan",
    "FaultSpec",
    "FleetSpec",
    "GiveUp",
    "NetworkBlip",
    "NodeEvent",
    "Observation",
    "PartialSuccess",
    "RateLimit",
    "RecoveryPolicy",
    "RefreshCredentials",
    "RefreshTools",
    "ReinitSession",
    "Remediate",
    "RepairTurn",
    "RepromptWithSchema",
    "Reroute",
    "ResumeStream",
    "Retry",
    "Rollback",
    "RunOutput",
    "StepSpec",
    "TaskHistory",
    "TaskRecord",
    "TemplateSpec",
    "Timeout",
    "UseAlternative",
    "Window",
    "WorkloadSpec",
    "World",
    "WorldSpec",
    "build_plan",
    "fault_kind",
    "format_names",
    "get_format",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
