"""Declarative description of the simulated world: fleet, workload and faults.

These pydantic models are what a scenario file's ``world`` part is validated against.
They are read once when a run is built; the hot path never touches them.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

DAY_S = 86_400.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Distribution(_Strict):
    """A positive duration: log-normal with the given mean and coefficient of variation.

    ``cv: 0`` makes it a constant, which small hand-checkable tests rely on.
    """

    mean_s: float = Field(gt=0)
    cv: float = Field(default=0.3, ge=0, le=5)


class FleetSpec(_Strict):
    """Nodes and shared capacity of the fleet."""

    orchestrators: int = Field(default=2, ge=1, le=64)
    workers: int = Field(default=10, ge=1, le=1000)
    tool_slots: int = Field(default=2, ge=1, le=64, description="concurrent tool calls per worker")
    disk_mb: float = Field(default=50_000, gt=0, description="disk capacity of each worker")
    credential_lifetime_s: float = Field(
        default=7 * DAY_S, gt=0, description="validity of freshly issued API credentials"
    )
    credential_refresh_s: float = Field(default=20.0, ge=0, description="time a refresh takes")
    network_latency: Distribution = Distribution(mean_s=0.08, cv=0.5)
    api_rate_per_s: float = Field(
        default=0.5, gt=0, description="refill rate of the fleet-wide API token bucket"
    )
    api_burst: float = Field(default=30, ge=1, description="size of the fleet-wide API token bucket")
    dispatch: Literal["round_robin", "least_loaded"] = "round_robin"
    usd_per_1k_tokens: float = Field(default=0.01, ge=0, description="price of model tokens")
    usd_per_tool_call: float = Field(default=0.0005, ge=0, description="price of one tool call")


class StepSpec(_Strict):
    """One tool step of a task template."""

    tool: str = Field(min_length=1)
    duration: Distribution
    fan_out: int = Field(default=1, ge=1, le=64, description="parallel items (sources, writes)")
    uses_api: bool = True
    disk_mb: float = Field(default=0, ge=0, description="disk written; fails on a full disk")
    side_effect: Literal["none", "idempotent", "append"] = "none"
    tokens: int = Field(default=2000, ge=0, le=10_000_000, description="model tokens a call that runs consumes")


class TemplateSpec(_Strict):
    """A kind of task: a weighted sequence of tool steps."""

    name: str = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0)
    steps: list[StepSpec] = Field(min_length=1, max_length=64)


def _d(mean: float, cv: float = 0.3) -> Distribution:
    return Distribution(mean_s=mean, cv=cv)


DEFAULT_TEMPLATES: tuple[TemplateSpec, ...] = (
    TemplateSpec(
        name="coding",
        weight=0.55,
        steps=[
            StepSpec(tool="plan", duration=_d(25), tokens=4000),
            StepSpec(tool="edit", duration=_d(60), disk_mb=40, tokens=8000),
            StepSpec(tool="run_tests", duration=_d(90), uses_api=False, disk_mb=120, tokens=0),
            StepSpec(tool="git_push", duration=_d(6), side_effect="append", tokens=500),
        ],
    ),
    TemplateSpec(
        name="research",
        weight=0.3,
        steps=[
            StepSpec(tool="search", duration=_d(12), fan_out=5, tokens=1500),
            StepSpec(tool="synthesise", duration=_d(40), disk_mb=5, tokens=6000),
        ],
    ),
    TemplateSpec(
        name="crm_sync",
        weight=0.15,
        steps=[
            StepSpec(tool="fetch_contacts", duration=_d(8), tokens=800),
            StepSpec(tool="update_contact", duration=_d(4), fan_out=5, side_effect="idempotent", tokens=600),
            StepSpec(tool="post_note", duration=_d(3), side_effect="append", tokens=600),
        ],
    ),
)


class Arrival(_Strict):
    """One explicitly placed task (for small, hand-checkable worlds)."""

    at_s: float = Field(ge=0)
    template: str = Field(min_length=1)


class WorkloadSpec(_Strict):
    """Tasks arriving over the simulated horizon.

    Either a Poisson process (``tasks_per_day``, busier in the afternoon) or, when
    ``arrivals`` is given, exactly those tasks.
    """

    tasks_per_day: float = Field(default=600, gt=0, le=5_000_000)
    diurnal_amplitude: float = Field(
        default=0.5, ge=0, le=1, description="0 = flat arrivals; 1 = no arrivals at 02:00"
    )
    templates: list[TemplateSpec] = Field(default_factory=lambda: list(DEFAULT_TEMPLATES), min_length=1)
    arrivals: list[Arrival] | None = Field(default=None, description="explicit tasks instead of a process")

    @model_validator(mode="after")
    def _arrival_templates_exist(self) -> "WorkloadSpec":
        known = [t.name for t in self.templates]
        for i, a in enumerate(self.arrivals or ()):
            if a.template not in known:
                raise ValueError(f"workload.arrivals[{i}].template: unknown template {a.template!r} (known: {', '.join(known)})")
        return self


class Window(_Strict):
    """A time window in simulated seconds from the start of the run."""

    start_s: float = Field(ge=0)
    duration_s: float = Field(gt=0)


class NodeEvent(_Strict):
    """A fault that hits one worker at one moment."""

    worker: int = Field(ge=0)
    at_s: float = Field(ge=0)


class _FaultBase(_Strict):
    workers: list[int] | None = Field(
        default=None, description="restrict the fault to these worker indices (default: all)"
    )


class NetworkBlip(_FaultBase):
    """Transient: a call fails fast on a dropped connection; a retry normally succeeds."""

    kind: Literal["network_blip"] = "network_blip"
    probability: float = Field(default=0.02, ge=0, le=1, description="per call")
    windows: list[Window] = Field(default_factory=list, description="only inside these windows")


class Timeout(_FaultBase):
    """Ambiguous: the call hangs until its timeout; its side effect may have committed."""

    kind: Literal["timeout"] = "timeout"
    probability: float = Field(default=0.01, ge=0, le=1, description="per call")
    committed_probability: float = Field(default=0.5, ge=0, le=1)
    timeout_s: float = Field(default=90, gt=0)
    windows: list[Window] = Field(default_factory=list, description="only inside these windows")


class RateLimit(_Strict):
    """The provider cuts the fleet's shared API rate; HTTP-429s emerge from load.

    Fleet-wide by nature (one shared token bucket), so it takes no ``workers``.
    """

    kind: Literal["rate_limit"] = "rate_limit"
    capacity_factor: float = Field(default=0.05, ge=0, le=1, description="rate multiplier in a window")
    windows: list[Window] = Field(default_factory=list)
    per_day: float = Field(default=0, ge=0, le=100, description="extra windows drawn per day")
    window_s: float = Field(default=2700, gt=0, description="length of drawn windows")


class DiskFull(_FaultBase):
    """A worker's disk fills and stays full until cleaned up."""

    kind: Literal["disk_full"] = "disk_full"
    per_worker_per_day: float = Field(default=0, ge=0, le=100)
    events: list[NodeEvent] = Field(default_factory=list)
    cleanup_after_s: float = Field(default=4 * 3600, gt=0)


class ExpiredKey(_FaultBase):
    """A worker's API credentials expire; every API call fails until they are refreshed."""

    kind: Literal["expired_key"] = "expired_key"
    per_worker_per_day: float = Field(default=0, ge=0, le=100)
    events: list[NodeEvent] = Field(default_factory=list)


FaultSpec = Annotated[
    Union[NetworkBlip, Timeout, RateLimit, DiskFull, ExpiredKey], Field(discriminator="kind")
]


class WorldSpec(_Strict):
    """Everything the simulator needs besides the policy, the error format and the seed."""

    duration_s: float = Field(default=DAY_S, gt=0, le=365 * DAY_S)
    fleet: FleetSpec = FleetSpec()
    workload: WorkloadSpec = WorkloadSpec()
    faults: list[FaultSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _targets_exist(self) -> "WorldSpec":
        n = self.fleet.workers
        for i, fault in enumerate(self.faults):
            for w in getattr(fault, "workers", None) or ():
                if not 0 <= w < n:
                    raise ValueError(
                        f"faults[{i}].workers: worker {w} does not exist "
                        f"(fleet has {n} workers: 0..{n - 1})"
                    )
            for e in getattr(fault, "events", ()):
                if e.worker >= n:
                    raise ValueError(
                        f"faults[{i}].events: worker {e.worker} does not exist "
                        f"(fleet has {n} workers: 0..{n - 1})"
                    )
        return self
