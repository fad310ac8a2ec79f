"""Fault specifications: what a scenario file may say about what breaks, where and when.

Two families:

* **per-call faults** decide, for each tool call, whether it fails; they share one
  schedule model (:class:`CallSchedule`): a probability, optionally only inside
  (recurring) windows or the bad phases of a two-state burst process, optionally ramping
  over time, optionally restricted to workers, tools and task templates;
* **state faults** change the fleet's state (a disk fills, a key is revoked, a node
  crashes, a partition opens, a quota runs out, branches are shared) and every call that
  meets that state fails for as long as it holds, so their effects emerge from timing.

Any numeric parameter of a fault can be drawn per seed from a range with ``swarm``, so
one suite explores many worlds.

A kind's model is any class here with a ``kind`` literal: :data:`FAULT_MODELS` and the
:data:`FaultSpec` union collect them, in the order of the kinds' records
(:data:`fleetchaos.sim.kinds.KINDS`); a model without a record, or a record without a
model, fails at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, Protocol, TypeAlias, Union

import pydantic
from pydantic import Field, model_validator

from fleetchaos.sim import (
    fault_specs_mcp,  # noqa: F401  (defines the MCP kinds' models: see FAULT_MODELS)
    fault_specs_model,  # noqa: F401  (defines the model-side kinds' models: see FAULT_MODELS)
)
from fleetchaos.sim.fault_base import (  # noqa: F401  (re-exported: the kinds' models are read from here)
    Burst,
    NodeEvent,
    Ramp,
    Window,
    _CallFault,
    _Fault,
    _Pair,
    _Strict,
    _Targeted,
)
from fleetchaos.sim.kinds import KINDS

# The fields the world reads from a per-call kind's model beyond the shared schedule, by the kind's
# stage (tests/unit/test_fault_kinds.py checks that each kind's model has those of its stage).


class HangingFault(Protocol):
    """A transient kind whose outcome is unknown: the call hangs until ``timeout_s`` and may have committed."""

    committed_probability: float
    timeout_s: float


class SourceFault(Protocol):
    """A persistent kind keyed per source: a source that is gone may have untried alternatives."""

    alternatives: int
    alternative_missing_probability: float


class BatchFault(Protocol):
    """A batch kind: ``failures`` items of a fan-out step fail together (the same ones each time if ``persistent``)."""

    failures: int
    persistent: bool


# -- the core five --------------------------------------------------------------------


class NetworkBlip(_CallFault):
    """Transient: a call fails fast on a dropped connection; a retry normally succeeds."""

    kind: Literal["network_blip"] = "network_blip"


class Timeout(_CallFault):
    """Ambiguous: the call hangs until ``timeout_s``; its side effect may have committed."""

    kind: Literal["timeout"] = "timeout"
    probability: float = Field(default=0.01, ge=0, le=1)
    committed_probability: float = Field(default=0.5, ge=0, le=1)
    timeout_s: float = Field(default=90, gt=0)


class _OnApi(_Fault):
    api: str | None = Field(
        default=None, min_length=1, description="the API it hits: a fleet.apis name (default: the model provider)"
    )

    @pydantic.model_serializer(mode="wrap")
    def _omit_default_api(self, handler):  # on the model provider: dumped as before the field existed
        data = handler(self)
        if self.api is None and isinstance(data, dict):
            data.pop("api", None)
        return data


class RateLimit(_OnApi):
    """The provider cuts the fleet's shared API rate; HTTP-429s emerge from load.

    Fleet-wide by nature (one shared token bucket per API), so it takes no ``workers``.
    """

    kind: Literal["rate_limit"] = "rate_limit"
    capacity_factor: float = Field(default=0.05, ge=0, le=1, description="rate multiplier in a window")
    windows: list[Window] = Field(default_factory=list)
    per_day: float = Field(default=0, ge=0, le=100, description="extra windows drawn per day")
    window_s: float = Field(default=2700, gt=0, description="length of drawn windows")


class DiskFull(_Targeted):
    """A worker's disk fills and stays full until cleaned up."""

    kind: Literal["disk_full"] = "disk_full"
    per_worker_per_day: float = Field(default=0, ge=0, le=100)
    events: list[NodeEvent] = Field(default_factory=list)
    cleanup_after_s: float = Field(default=4 * 3600, gt=0)


class ExpiredKey(_Targeted, _OnApi):
    """A worker's API credentials are revoked; every API call fails until they are refreshed."""

    kind: Literal["expired_key"] = "expired_key"
    per_worker_per_day: float = Field(default=0, ge=0, le=100)
    events: list[NodeEvent] = Field(default_factory=list)


# -- the catalogue beyond the core ----------------------------------------------------


class GitPushConflict(_Fault):
    """Pushes are a read then a conditional write on a shared branch.

    A push reads the branch head when it starts and writes only if nobody pushed in the
    meantime; otherwise it is rejected.  Contention emerges from the number of workers
    pushing to the same branches and from their retry timing.
    """

    kind: Literal["git_push_conflict"] = "git_push_conflict"
    branches: int = Field(default=3, ge=1, le=100_000, description="shared branches tasks push to")
    tools: list[str] = Field(default_factory=lambda: ["git_push"], min_length=1)


class MissingDependency(_CallFault):
    """A tool or binary is absent on some workers: every call of it there fails until provisioned."""

    kind: Literal["missing_dependency"] = "missing_dependency"
    probability: float = Field(default=1.0, ge=0, le=1)


class ValidationError(_CallFault):
    """A task's input is bad for a step: that step fails on every execution; retrying never helps."""

    kind: Literal["validation_error"] = "validation_error"
    probability: float = Field(default=0.01, ge=0, le=1, description="per task and step")


class NotFound(_CallFault):
    """A source is gone: the same source fails on every retry, but alternative sources exist."""

    kind: Literal["not_found"] = "not_found"
    probability: float = Field(default=0.02, ge=0, le=1, description="per task, step and item")
    alternatives: int = Field(default=2, ge=0, le=10, description="alternative sources available")
    alternative_missing_probability: float = Field(default=0.1, ge=0, le=1)


class PermissionDenied(_CallFault):
    """HTTP 403: the call is refused on every retry until a human grants access."""

    kind: Literal["permission_denied"] = "permission_denied"
    probability: float = Field(default=0.02, ge=0, le=1, description="per task, step and item")
    items: list[int] | None = Field(default=None, description="only these items of a fan-out step")


class PartialBatch(_CallFault):
    """k of the n parallel items of a fan-out step fail together in one execution."""

    kind: Literal["partial_batch"] = "partial_batch"
    probability: float = Field(default=0.05, ge=0, le=1, description="per fan-out step execution")
    failures: int = Field(default=2, ge=1, le=64, description="items that fail (k)")
    persistent: bool = Field(default=False, description="the same items fail on every execution")


class SilentSuppression(_CallFault):
    """The tool swallows its failure and returns an empty success: nothing took effect."""

    kind: Literal["silent_suppression"] = "silent_suppression"
    probability: float = Field(default=0.01, ge=0, le=1)


class FabricatedDefaults(_CallFault):
    """The tool swallows its failure and returns plausible default values as if real."""

    kind: Literal["fabricated_defaults"] = "fabricated_defaults"
    probability: float = Field(default=0.01, ge=0, le=1)


#: An envelope field an older schema version lacks.
_DriftField = Literal["partial_success", "retry_after_ms", "suggested_action", "context"]


class SchemaDrift(_Targeted):
    """During a rollout some workers emit an older envelope version, missing newer fields."""

    kind: Literal["schema_drift"] = "schema_drift"
    version: str = Field(default="0.9", min_length=1)
    missing_fields: list[_DriftField] = Field(
        default_factory=lambda: list[_DriftField](["partial_success", "retry_after_ms"])
    )
    windows: list[Window] = Field(default_factory=list, description="rollout windows (default: all run)")


class WrongEnvelope(_Targeted):
    """Imperfect contracts: the targeted workers' structured envelopes get some failures wrong.

    Each failed dispatch a rule covers draws, per way, whether its envelope is wrong that
    way (keyed by task, step, item and execution, so every arm meets the same wrong
    envelopes).  What happens is unchanged; the oracle counts each envelope that differs
    from what the truth renders (``misreported_failures``).  With several
    ``wrong_envelope`` faults, the first that covers a failure decides.
    """

    kind: Literal["wrong_envelope"] = "wrong_envelope"
    failures: list[str] | None = Field(
        default=None, description="only failures of these fault kinds (default: every failure the workers report)"
    )
    tools: list[str] | None = Field(default=None, description="only failures of these tools")
    windows: list[Window] = Field(default_factory=list, description="only inside these windows (default: all run)")
    misclassify: float = Field(
        default=0, ge=0, le=1, description="chance the envelope names another kind's code, category and action"
    )
    reported_as: list[str] | None = Field(
        default=None,
        description="the kinds a misclassified failure is reported as, one drawn uniformly "
        "(default: every tool-side kind reported with another error code; a provider's overload only where "
        "fleet.providers declares one; a model-side or MCP kind only when named here)",
    )
    mark_recoverable: float = Field(
        default=0,
        ge=0,
        le=1,
        description="chance a permanent failure (recoverable: false) is reported as recoverable and transient",
    )
    wrong_retry_after: float = Field(
        default=0, ge=0, le=1, description="chance a retry-after hint is off by a factor drawn from retry_after_factor"
    )
    retry_after_factor: _Pair = Field(
        default=(0.1, 10.0),
        description="[low, high]: a wrong hint is the true wait times a factor drawn log-uniformly from this range "
        "(below 1 a stale, too-short hint; above 1 a too-long one)",
    )
    omit_partial_success: float = Field(
        default=0, ge=0, le=1, description="chance the envelope leaves out what completed before the failure"
    )

    @model_validator(mode="after")
    def _kinds_and_range(self) -> WrongEnvelope:
        reported = [name for name, record in KINDS.items() if record.wire is not None]
        for field in ("failures", "reported_as"):
            for name in getattr(self, field) or ():
                if name not in reported:
                    raise ValueError(
                        f"{field}: {name!r} is not a fault kind reported as a failure (kinds: {', '.join(reported)})"
                    )
        low, high = self.retry_after_factor
        if not 0 < low <= high <= 1000:
            raise ValueError(
                f"retry_after_factor: [{low:g}, {high:g}] must satisfy 0 < low <= high <= 1000, e.g. [0.1, 10]"
            )
        return self


class NodeCrash(_Targeted):
    """A worker crashes and restarts: in-flight work on it is lost unless re-queued."""

    kind: Literal["node_crash"] = "node_crash"
    per_worker_per_day: float = Field(default=0, ge=0, le=100)
    events: list[NodeEvent] = Field(default_factory=list)
    down_s: float = Field(default=600, gt=0, description="time until the worker is back")


class NetworkPartition(_Targeted):
    """An orchestrator cannot reach a group of workers during windows."""

    kind: Literal["network_partition"] = "network_partition"
    orchestrators: list[int] = Field(default_factory=lambda: [0], min_length=1)
    windows: list[Window] = Field(min_length=1)
    connect_timeout_s: float = Field(default=10, gt=0)


class LatencySpike(_Targeted):
    """Network latency is multiplied (and extended) during windows; slow calls can time out."""

    kind: Literal["latency_spike"] = "latency_spike"
    windows: list[Window] = Field(min_length=1)
    factor: float = Field(default=10, ge=1, le=10_000)
    add_s: float = Field(default=0, ge=0)


class QuotaExhausted(_Fault):
    """A fleet-wide daily quota of API calls; once spent, API calls fail until the day resets."""

    kind: Literal["quota_exhausted"] = "quota_exhausted"
    calls_per_day: int = Field(gt=0, le=100_000_000)


class Overloaded(_Fault):
    """A provider loses part of its speed during windows, so it refuses calls (503) at a lower load."""

    kind: Literal["overloaded"] = "overloaded"
    provider: str = Field(min_length=1, description="the provider (a fleet.providers name) that slows down")
    windows: list[Window] = Field(min_length=1, description="when it serves slower")
    capacity_factor: float = Field(
        default=0.5, gt=0, le=1, description="share of its speed left in a window (service takes 1/factor as long)"
    )


# The model-side kinds' models live in their own module, imported at the top so that FAULT_MODELS below finds them.


def _models(base: type[_Fault]) -> dict[str, type[_Fault]]:
    """Every model under ``base`` that names a kind (a ``kind`` literal), by kind."""
    found: dict[str, type[_Fault]] = {}
    for model in base.__subclasses__():
        if "kind" in model.model_fields:
            found[model.model_fields["kind"].default] = model
        found.update(_models(model))
    return found


def _by_catalogue_order(models: dict[str, type[_Fault]]) -> dict[str, type[_Fault]]:
    """The models in the order of :data:`fleetchaos.sim.kinds.KINDS`; a kind without both a record and a model fails here."""
    missing_model = [k for k in KINDS if k not in models]
    missing_record = [k for k in models if k not in KINDS]
    if missing_model or missing_record:
        raise RuntimeError(
            "every fault kind needs a FaultKind record (fleetchaos.sim.kinds) and a model (fleetchaos.sim.fault_specs): "
            f"no model for {missing_model}, no record for {missing_record}"
        )
    return {kind: models[kind] for kind in KINDS}


#: Every fault model by kind, in catalogue order: each class above that names a ``kind``.
FAULT_MODELS: dict[str, type[_Fault]] = _by_catalogue_order(_models(_Fault))

#: One fault of a scenario's ``faults`` list: the model its ``kind`` names.
if TYPE_CHECKING:
    # The union is built from FAULT_MODELS at import, which a type checker cannot evaluate; each member is a _Fault.
    FaultSpec: TypeAlias = _Fault
else:
    FaultSpec = Annotated[Union[tuple(FAULT_MODELS.values())], Field(discriminator="kind")]  # noqa: UP007
