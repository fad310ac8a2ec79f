"""The simulated fleet: a SimPy world of orchestrators, workers, tools and faults.

This package knows nothing of the harness or the reports.  It defines the sockets a
harness plugs into: :class:`RecoveryPolicy`, the action types, :class:`Observation`,
and :class:`ErrorFormat`.
"""

from fleetchaos.sim.config import (
    DAY_S,
    Arrival,
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
from fleetchaos.sim.envelope import SCHEMA_VERSION, AgentToolError, PartialSuccess
from fleetchaos.sim.faults import FaultPlan, build_plan
from fleetchaos.sim.formats import FORMATS, ErrorFormat, GenericFormat, StructuredFormat, get_format
from fleetchaos.sim.ledger import TRUTH_FULL, TRUTH_NONE, TRUTH_PARTIAL, TaskRecord
from fleetchaos.sim.observation import (
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
from fleetchaos.sim.truth import FAILURES, AttemptReport, FailureContract
from fleetchaos.sim.world import RunOutput, World

__all__ = [
    "ACTION_TYPES",
    "DAY_S",
    "FAILURES",
    "FORMATS",
    "SCHEMA_VERSION",
    "TRUTH_FULL",
    "TRUTH_NONE",
    "TRUTH_PARTIAL",
    "Action",
    "AgentToolError",
    "Arrival",
    "AttemptReport",
    "DiskFull",
    "Distribution",
    "ErrorFormat",
    "Escalate",
    "ExpiredKey",
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
    "StepSpec",
    "StructuredFormat",
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
