"""The other structured error contracts a worker may return, besides :class:`AgentToolError`.

Each is a small frozen pydantic model stamped with ``schema_version`` so an orchestrator
can detect contract skew between nodes, and each exposes ``error_code`` (a field or a
property) so the driver can count identical failures in a row whatever the contract.

* :class:`FailureTypeError`: a failure-type enum that selects a recovery handler, the
  partial results gathered before the failure, alternatives the worker suggests and
  whether a retry is recommended.  The field-ablation formats fill these one at a time.
* :class:`SubagentResult`: one envelope for success and failure alike, with a
  success/partial/failed status, an error category, a retryable flag and partial data.
* :class:`ToolEnvelope`: an ok/partial/error/timeout/cancelled status, a stable error
  code, a retriable flag, a one-line message, data with a per-item manifest for batches,
  call metadata, and a run-health block (failure count, blocking flag).

:data:`ENVELOPES` maps each contract's name to its model; ``fleetchaos schema envelope
NAME`` prints the JSON Schema of any of them.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from fleetchaos.sim.envelope import SCHEMA_VERSION, AgentToolError
from fleetchaos.sim.kind_record import SubagentCategory

FailureType = Literal["timeout", "auth_error", "not_found", "rate_limited", "permanent", "unavailable"]


class StampedEnvelope(Protocol):
    """What every structured contract exposes, whatever its model: the ``schema_version`` it is stamped
    with and the ``error_code`` of its failure (a field or a property; a failure's envelope names one)."""

    schema_version: str

    @property
    def error_code(self) -> str:
        """The identity of the failure, the same for identical failures."""
        ...


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FailureTypeError(_Envelope):
    """A failure typed for a recovery router; every field but the type is optional.

    A field a format does not carry (an ablation step, or an older contract version)
    is None, never an empty value: "no partial results" and "not told" differ.
    """

    failure_type: FailureType
    partial_results: tuple[str, ...] | None = Field(
        default=None, description="step and item references that completed before the failure"
    )
    alternatives_suggested: tuple[str, ...] | None = Field(
        default=None, description="recovery paths the worker knows of, e.g. 'alternative_source'"
    )
    retry_recommended: bool | None = Field(default=None, description="would the same call, retried, succeed?")
    schema_version: str = SCHEMA_VERSION

    @property
    def error_code(self) -> str:
        """The failure type upper-cased, as the identity of a failure."""
        return self.failure_type.upper()


class SubagentResult(_Envelope):
    """A sub-agent's return value: the same envelope whether it succeeded or failed."""

    status: Literal["success", "partial", "failed"]
    task_id: str
    task_description: str = ""
    result: str | None = None
    error_category: SubagentCategory | None = None
    error_message: str | None = Field(default=None, description="one sanitised human-readable line")
    is_retryable: bool | None = None
    retry_after_s: float | None = Field(default=None, ge=0)
    partial_data: tuple[str, ...] | None = Field(default=None, description="references of the usable partial result")
    schema_version: str = SCHEMA_VERSION

    @property
    def error_code(self) -> str:
        """The error category upper-cased (or the status), as the identity of a failure."""
        return (self.error_category or self.status).upper()


class ItemStatus(_Envelope):
    """One item of a batch in a tool envelope's manifest."""

    item: int = Field(ge=0)
    status: Literal["ok", "error", "timeout", "skipped"]
    error_code: str | None = None


class RunHealth(_Envelope):
    """A run-health block appended after a tool round: hard for a reader to misread."""

    tools_ok: int = Field(ge=0)
    tools_failed: int = Field(ge=0)
    blocking_failure: bool


class ToolEnvelope(_Envelope):
    """A tool result envelope with batch semantics: status, code, retriable, data, metadata."""

    status: Literal["ok", "partial", "error", "timeout", "cancelled"]
    error_code: str | None = None
    retriable: bool | None = None
    message: str = Field(default="", description="one sanitised line for the model")
    data: dict[str, tuple[str, ...]] | None = Field(
        default=None, description="'completed_steps' and 'completed_items' references on partial success"
    )
    manifest: tuple[ItemStatus, ...] | None = Field(default=None, description="per-item status of the failed batch")
    metadata: dict[str, str] | None = Field(default=None, description="tool, call id, worker, hints (sanitised)")
    run_health: RunHealth | None = None
    schema_version: str = SCHEMA_VERSION


#: Every structured contract by name (``fleetchaos schema envelope NAME``).
ENVELOPES: dict[str, type[BaseModel]] = {
    "agent-tool-error": AgentToolError,
    "failure-type": FailureTypeError,
    "subagent-result": SubagentResult,
    "tool-envelope": ToolEnvelope,
}
