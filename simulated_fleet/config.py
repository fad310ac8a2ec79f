"""Declarative description of the simulated world: fleet, workload and faults.

These pydantic models are what a scenario file's ``world`` part is validated against.
They are read once when a run is built; the hot path never touches them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_serializer, model_validator

from fleetchaos.sim.arrival_spec import ArrivalSchedule, RatePoint  # noqa: F401  (re-exported: config is where users look)
from fleetchaos.sim.distribution import Distribution, lognormal_params  # noqa: F401  (re-exported, as above)
from fleetchaos.sim.fault_specs import (  # noqa: F401  (re-exported: config is where users look)
    FAULT_MODELS,
    DiskFull,
    ExpiredKey,
    FaultSpec,
    NetworkBlip,
    NodeEvent,
    RateLimit,
    Timeout,
    Window,
    _Strict,
)
from fleetchaos.sim.fleet_parts import (
    ApiSpec,
    RemediationSpec,
    StepSpec,
    WorkerOverride,
    _without_defaults,
)
from fleetchaos.sim.model_spec import (  # MisreadFactors re-exported: config is where users look
    MisreadFactors,
    ModelSpec,
)
from fleetchaos.sim.provider_spec import ProviderSpec, ServiceShare, SlowdownPoint  # noqa: F401  (re-exported, as above)

DAY_S = 86_400.0


class FleetSpec(_Strict):
    """Nodes and shared capacity of the fleet."""

    orchestrators: int = Field(default=2, ge=1, le=64)
    workers: int = Field(default=10, ge=1, le=1000)
    tool_slots: int = Field(default=2, ge=1, le=64, description="concurrent tool calls per worker")
    disk_mb: float = Field(
        default=50_000,
        gt=0,
        description="disk capacity of each worker: a task's written files occupy it until the task ends, "
        "and a write that does not fit fails as a full disk",
    )
    credential_lifetime_s: float = Field(
        default=7 * DAY_S, gt=0, description="validity of freshly issued API credentials"
    )
    credential_refresh_s: float = Field(default=20.0, ge=0, description="time a refresh takes")
    network_latency: Distribution = Distribution(mean_s=0.08, cv=0.5)
    api_rate_per_s: float = Field(default=0.5, gt=0, description="refill rate of the fleet-wide API token bucket")
    api_burst: float = Field(default=30, ge=1, description="size of the fleet-wide API token bucket")
    dispatch: Literal["round_robin", "least_loaded"] = "round_robin"
    heartbeat_timeout_s: float | None = Field(
        default=300,
        gt=0,
        description="an orchestrator notices a dispatch lost with a crashed worker this long after the crash "
        "(missed heartbeats); null = it never notices, and the task is lost",
    )
    call_timeout_s: float | None = Field(
        default=None, gt=0, description="a tool call slower than this times out (its outcome is then ambiguous)"
    )
    cut_call_committed_probability: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="chance that a call the call timeout cut while it ran on a worker (no provider) had already "
        "taken effect: the client cannot tell which side of the commit the cut fell, and 0.5 says so "
        "(docs/assumptions.md)",
    )
    late_reply_s: float | None = Field(
        default=None,
        gt=0,
        description="the client waits for every reply but counts one that arrives more than this long after the "
        "call's dispatch as failed (a timeout, reported when the reply arrives), though the work behind it took "
        "effect; below call_timeout_s when both are set. null (the default): a reply counts whenever it comes, "
        "since discarding a reply the client waited for is a choice of the client's code, not something every "
        "fleet does (docs/policies.md, omission collapse)",
    )
    api_reject_cost: float = Field(
        default=0.0,
        ge=0,
        le=10,
        description="tokens a refused (429) request still takes from the bucket; > 0 lets retry storms persist",
    )
    overrides: list[WorkerOverride] = Field(default_factory=list, description="per-worker capacities")
    misread_probability: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="chance that an LLM orchestrator reads a failed dispatch as a success; scaled by the "
        "error format's misread_factor (a raw blob is easy to misread, a status word or envelope is not) "
        "and caught by a final-answer guardrail when the format carries a machine-readable failure flag",
    )
    misread_factor: MisreadFactors = Field(
        default_factory=lambda: MisreadFactors(),
        description="per error format: how easily it is misread, multiplying misread_probability (an assumption "
        "that decides outcomes, stated in every report)",
    )
    partial_batch: Literal["failed", "ok", "count"] = Field(
        default="failed",
        description="how a tool without an envelope (the generic, status and raw formats) reports a fan-out step some "
        "of whose items failed: failed (the step fails with its first failure, as asyncio.gather and Promise.all "
        "raise), ok (it returns what it gathered and says ok: partial work passed on as a success) or count (a "
        "partial failure saying how many items failed); envelopes report it by their own contract "
        "(docs/assumptions.md)",
    )
    checkpoints: bool = Field(
        default=False,
        description="workers checkpoint (resume tokens, steps that skip work already done): a dispatch after a failure "
        "resumes where the last one stopped, whatever the format; off (the default: a team without an envelope has "
        "not built this either): only a policy that reads progress from an envelope resumes (docs/assumptions.md)",
    )
    usd_per_1k_tokens: float = Field(
        default=0.01, ge=0, description="price of model tokens (a mid-range model's blended price, docs/assumptions.md)"
    )
    usd_per_tool_call: float = Field(
        default=0.0005, ge=0, description="price of one tool call (a metered API call, docs/assumptions.md)"
    )
    page_handling: Distribution = Field(
        default=Distribution(mean_s=1800, cv=0.5),
        description="a paged human's hands-on time per escalation (triage, fix or rerun, hand-back, getting back to "
        "the interrupted work), billed at usd_per_human_hour; the wait before the human looks is not billed "
        "(docs/assumptions.md)",
    )
    usd_per_human_hour: float = Field(
        default=120.0, ge=0, description="price of an hour of a paged human's time (an engineer's loaded cost)"
    )
    usd_per_silent_failure: float = Field(
        default=480.0,
        ge=0,
        description="cost of a task claimed a success whose work did not fully take effect: finding it with no error "
        "to start from, repairing what it touched and doing the work (4 human hours; docs/assumptions.md)",
    )
    usd_per_undone_task: float = Field(
        default=60.0,
        ge=0,
        description="cost of a task the fleet reported as not done (failed, partial, dead-lettered) or never reported: "
        "someone must take it up and finish it, the same half hour as a page (docs/assumptions.md)",
    )
    usd_per_refused_call: float = Field(
        default=0.0,
        ge=0,
        description="price of a request a provider refused (429, 503) on top of its tool call: model APIs bill no "
        "tokens for a refused request (docs/assumptions.md)",
    )
    remediation: RemediationSpec = Field(
        default_factory=lambda: RemediationSpec(), description="the remediation agent a policy may send to a worker"
    )
    apis: list[ApiSpec] = Field(
        default_factory=list,
        description="tool APIs with credentials and a token bucket of their own (an expired key or a rate limit "
        "there leaves the model provider's alone); API-using steps of other tools call the model provider, whose "
        "bucket is api_rate_per_s/api_burst and whose credentials last credential_lifetime_s",
    )
    providers: list[ProviderSpec] = Field(
        default_factory=list,
        description="providers with a declared capacity (servers, a latency curve, a refusal threshold); "
        "none: calls never wait for one another outside the workers' tool slots",
    )
    model: ModelSpec = Field(
        default_factory=lambda: ModelSpec(),
        description="the orchestrator's model: its conversation's context (the tokeniser rule, the system prompt, "
        "tool results) and the price of the context each turn reads",
    )
    max_actions_per_task: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description="the orchestrator stops a task after this many recovery actions (reported as the action cap, "
        "not as a policy error)",
    )

    @model_serializer(mode="wrap")
    def _omit_new_defaults(self, handler):
        return _without_defaults(
            self, handler(self), ("apis", "providers", "max_actions_per_task", "late_reply_s", "model")
        )

    @model_validator(mode="after")
    def _late_before_timeout(self) -> FleetSpec:
        late, limit = self.late_reply_s, self.call_timeout_s
        if late is not None and limit is not None and late >= limit:
            raise ValueError(
                f"fleet.late_reply_s {late:g} is not below fleet.call_timeout_s {limit:g}: the client gives up at the "
                "call timeout, so no reply arrives later than it; set late_reply_s below call_timeout_s, or drop one"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _no_response_wait(cls, data: object) -> object:
        if isinstance(data, dict) and "human_response" in data:
            raise ValueError(
                "human_response: a page is no longer billed at the wait for the human; remove it and set "
                "page_handling (the human's hands-on time per page, e.g. {mean_s: 1800, cv: 0.5})"
            )
        return data

    @model_validator(mode="after")
    def _apis_apart(self) -> FleetSpec:
        names: dict[str, int] = {}
        called: dict[str, str] = {}
        for i, api in enumerate(self.apis):
            where = f"fleet.apis[{i}]"
            if api.name in names:
                raise ValueError(f"{where}.name: API {api.name!r} is declared twice; give each its own name")
            names[api.name] = i
            for tool in api.tools:
                if tool in called:
                    raise ValueError(
                        f"{where}.tools: {tool} is already a tool of API {called[tool]!r}; a step calls one API"
                    )
                called[tool] = api.name
        return self

    @model_validator(mode="after")
    def _providers_apart(self) -> FleetSpec:
        names: set[str] = set()
        served: dict[str, str] = {}
        for i, provider in enumerate(self.providers):
            where = f"fleet.providers[{i}]"
            if provider.name in names:
                raise ValueError(f"{where}.name: provider {provider.name!r} is declared twice; give each its own name")
            names.add(provider.name)
            for tool in provider.tools or ("(every API call)",):
                if tool in served:
                    raise ValueError(
                        f"{where}.tools: {tool} is already served by provider {served[tool]!r}; a call has one provider"
                    )
                served[tool] = provider.name
        return self


class TemplateSpec(_Strict):
    """A kind of task: a weighted sequence of tool steps."""

    name: str = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0)
    steps: list[StepSpec] = Field(min_length=1, max_length=64)
    deadline_s: float | None = Field(default=None, gt=0, description="the orchestrator stops recovering after this")
    budget_calls: int | None = Field(default=None, gt=0, description="the orchestrator stops after this many calls")

    @model_validator(mode="after")
    def _needs_are_earlier_steps(self) -> TemplateSpec:
        for i, step in enumerate(self.steps):
            earlier = [s.tool for s in self.steps[:i]]
            for need in step.needs:
                if need not in earlier:
                    raise ValueError(
                        f"template {self.name!r}: step {i} ({step.tool}) needs {need!r}, which is not an "
                        f"earlier step (earlier: {', '.join(earlier) or 'none'})"
                    )
        return self


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
            StepSpec(tool="synthesise", duration=_d(40), disk_mb=5, tokens=6000, needs=["search"]),
        ],
    ),
    TemplateSpec(
        name="crm_sync",
        weight=0.15,
        steps=[
            StepSpec(tool="fetch_contacts", duration=_d(8), tokens=800),
            StepSpec(
                tool="update_contact",
                duration=_d(4),
                fan_out=5,
                side_effect="idempotent",
                tokens=600,
                needs=["fetch_contacts"],
            ),
            StepSpec(tool="post_note", duration=_d(3), side_effect="append", tokens=600),
        ],
    ),
)


class Arrival(_Strict):
    """One explicitly placed task (for small, hand-checkable worlds)."""

    at_s: float = Field(ge=0)
    template: str = Field(min_length=1)
    count: int = Field(default=1, ge=1, le=100_000, description="this many tasks at the same instant")
    per_worker: bool = Field(
        default=False,
        description="count tasks for each worker of the fleet (a burst that grows with the fleet, as in a "
        "contention study); with round-robin dispatch each worker gets its own",
    )


class WorkloadSpec(_Strict):
    """Tasks arriving over the simulated horizon.

    Either a Poisson process (``tasks_per_day``, busier in the afternoon, or the rate of an
    ``arrival_schedule``) or, when ``arrivals`` is given, exactly those tasks.
    """

    tasks_per_day: float = Field(default=600, gt=0, le=5_000_000)
    diurnal_amplitude: float = Field(default=0.5, ge=0, le=1, description="0 = flat arrivals; 1 = no arrivals at 02:00")
    templates: list[TemplateSpec] = Field(default_factory=lambda: list(DEFAULT_TEMPLATES), min_length=1)
    arrivals: list[Arrival] | None = Field(default=None, description="explicit tasks instead of a process")
    clients: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="closed loop: this many clients each submit a task, wait for its end, think, repeat "
        "(tasks_per_day is then ignored; an arrival_schedule adds open-loop tasks on top, such as a spike)",
    )
    think: Distribution = Distribution(mean_s=300, cv=1.0)
    arrival_schedule: ArrivalSchedule | None = Field(
        default=None,
        description="the open-loop arrival rate over time, point by point (tasks_per_day and diurnal_amplitude "
        "are then ignored)",
    )

    @model_serializer(mode="wrap")
    def _omit_absent_schedule(self, handler):
        # A scenario without a schedule dumps exactly as before the field existed, so the
        # results, hashes and history of every existing scenario stay byte-identical.
        data = handler(self)
        if self.arrival_schedule is None and isinstance(data, dict):
            data.pop("arrival_schedule", None)
        return data

    @model_validator(mode="after")
    def _arrival_templates_exist(self) -> WorkloadSpec:
        seen: dict[str, int] = {}
        for i, template in enumerate(self.templates):
            if template.name in seen:
                raise ValueError(
                    f"workload.templates[{i}].name: template name {template.name!r} is already used by "
                    f"workload.templates[{seen[template.name]}]; give each template its own name "
                    "(faults and arrivals name templates)"
                )
            seen[template.name] = i
        known = [t.name for t in self.templates]
        for i, a in enumerate(self.arrivals or ()):
            if a.template not in known:
                raise ValueError(
                    f"workload.arrivals[{i}].template: unknown template {a.template!r} (known: {', '.join(known)})"
                )
        return self


class WorldSpec(_Strict):
    """Everything the simulator needs besides the policy, the error format and the seed."""

    duration_s: float = Field(default=DAY_S, gt=0, le=365 * DAY_S)
    fleet: FleetSpec = FleetSpec()
    workload: WorkloadSpec = WorkloadSpec()
    faults: list[FaultSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _targets_exist(self) -> WorldSpec:
        n = self.fleet.workers
        span = f"fleet has {n} workers: 0..{n - 1}"
        for o in self.fleet.overrides:
            if o.worker >= n:
                raise ValueError(f"fleet.overrides: worker {o.worker} does not exist ({span})")
        tools = sorted({s.tool for t in self.workload.templates for s in t.steps})
        templates = [t.name for t in self.workload.templates]
        providers = [p.name for p in self.fleet.providers]
        apis = [a.name for a in self.fleet.apis]
        api_tools = {s.tool for t in self.workload.templates for s in t.steps if s.uses_api}
        for i, api in enumerate(self.fleet.apis):
            for tool in api.tools:
                if tool not in api_tools:
                    raise ValueError(
                        f"fleet.apis[{i}].tools: no step that uses the API calls tool {tool!r} "
                        f"(API-using tools: {', '.join(sorted(api_tools)) or 'none'})"
                    )
        for i, p in enumerate(self.fleet.providers):
            for tool in p.tools or ():
                if tool not in tools:
                    raise ValueError(
                        f"fleet.providers[{i}].tools: no step uses tool {tool!r} (tools: {', '.join(tools)})"
                    )
        for i, fault in enumerate(self.faults):
            where = f"faults[{i}]"
            for w in getattr(fault, "workers", None) or ():
                if not 0 <= w < n:
                    raise ValueError(f"{where}.workers: worker {w} does not exist ({span})")
            for e in getattr(fault, "events", ()):
                if e.worker >= n:
                    raise ValueError(f"{where}.events: worker {e.worker} does not exist ({span})")
                if e.at_s >= self.duration_s:
                    raise ValueError(
                        f"{where}.events: at_s {e.at_s:g} is outside the horizon (duration_s {self.duration_s:g})"
                    )
            for o in getattr(fault, "orchestrators", ()):
                if o >= self.fleet.orchestrators:
                    raise ValueError(
                        f"{where}.orchestrators: orchestrator {o} does not exist "
                        f"(fleet has {self.fleet.orchestrators}: 0..{self.fleet.orchestrators - 1})"
                    )
            for w in getattr(fault, "windows", ()):
                if w.start_s >= self.duration_s:
                    raise ValueError(
                        f"{where}.windows: start_s {w.start_s:g} is outside the horizon "
                        f"(duration_s {self.duration_s:g})"
                    )
            for tool in getattr(fault, "tools", None) or ():
                if tool not in tools:
                    raise ValueError(f"{where}.tools: no step uses tool {tool!r} (tools: {', '.join(tools)})")
            provider = getattr(fault, "provider", None)
            if provider is not None and provider not in providers:
                raise ValueError(
                    f"{where}.provider: no provider is named {provider!r} "
                    f"(fleet.providers: {', '.join(providers) or 'none declared'})"
                )
            api_name = getattr(fault, "api", None)
            if api_name is not None and api_name not in apis:
                raise ValueError(
                    f"{where}.api: no API is named {api_name!r} (fleet.apis: {', '.join(apis) or 'none declared'}); "
                    "leave api out for the model provider's"
                )
            for name in getattr(fault, "templates", None) or ():
                if name not in templates:
                    raise ValueError(f"{where}.templates: unknown template {name!r} (known: {', '.join(templates)})")
        return self


FleetSpec.model_rebuild()
