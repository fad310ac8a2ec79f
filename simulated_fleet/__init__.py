"""The simulated fleet: a SimPy world of orchestrators, workers, tools and faults.

This package knows nothing of the harness or the reports.  It defines the sockets a
harness plugs into: :class:`RecoveryPolicy`, the action types, :class:`Observation`,
and :class:`ErrorFormat`.
"""

from .config import (
    Arrival,
    DAY_S,
    DiskFull,
    Distribution,
    ExpiredKey,
    FaultSpec,
    FleetSpec,
    NetworkBlip,
    NodeEvent,
    RateLimit,
    StepSpec,
    TemplateSpec,
    Timeout,
    Window,
    WorkloadSpec,
    WorldSpec,
)
from .envelope import SCHEMA_VERSION, AgentToolError, PartialSuccess
from .faults import FaultPlan, build_plan
from .formats import FORMATS, ErrorFormat, GenericFormat, StructuredFormat, get_format
from .ledger import TRUTH_FULL, TRUTH_NONE, TRUTH_PARTIAL, TaskRecord
from .observation import (
    ACTION_TYPES,
    Action,
    Escalate,
    GiveUp,
    Observation,
    RecoveryPolicy,
    RefreshCredentials,
    Reroute,
    Retry,
    TaskHistory,
)
from .truth import FAILURES, AttemptReport, FailureContract
from .world import RunOutput, World

__all__ = [
    "Arrival",
    "ACTION_TYPES",
    "Action",
    "AgentToolError",
    "AttemptReport",
    "DAY_S",
    "DiskFull",
    "Distribution",
    "ErrorFormat",
    "Escalate",
    "ExpiredKey",
    "FAILURES",
    "FORMATS",
    "FailureContract",
    "FaultPlan",
    "FaultSpec",
    "FleetSpec",
    "GenericFormat",
    "GiveUp",
    "NetworkBlip",
    "NodeEvent",
    "Observation",
    "PartialSuccess",
    "RateLimit",
    "RecoveryPolicy",
    "RefreshCredentials",
    "Reroute",
    "Retry",
    "RunOutput",
    "SCHEMA_VERSION",
    "StepSpec",
    "StructuredFormat",
    "TRUTH_FULL",
    "TRUTH_NONE",
    "TRUTH_PARTIAL",
    "TaskHistory",
    "TaskRecord",
    "TemplateSpec",
    "Timeout",
    "Window",
    "WorkloadSpec",
    "World",
    "WorldSpec",
    "build_plan",
    "get_format",
]
