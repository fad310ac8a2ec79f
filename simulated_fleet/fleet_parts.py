"""The parts of a fleet and a template a scenario describes one by one: a tool API, a worker's
differences, the remediation agent, a template's step (re-exported by :mod:`fleetchaos.sim.config`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_serializer

from fleetchaos.sim.distribution import Distribution
from fleetchaos.sim.fault_specs import _Strict


def _without_defaults(model: BaseModel, data: object, names: tuple[str, ...]) -> object:
    """``data`` (a model's dump) without the fields ``names`` that hold their defaults.

    Fields added after results were first recorded are left out of a dump while they
    hold their defaults, so the results, hashes and history of every scenario that does
    not use them stay byte-identical.
    """
    if isinstance(data, dict):
        fields = type(model).model_fields
        for name in names:
            if getattr(model, name) == fields[name].get_default(call_default_factory=True):
                data.pop(name, None)
    return data


class RemediationSpec(_Strict):
    """A remediation agent: repairs what a machine can repair on a worker, in minutes, not always."""

    duration: Distribution = Field(
        default=Distribution(mean_s=300, cv=0.5), description="time one remediation takes, success or not"
    )
    success_probability: float = Field(
        default=0.7, ge=0, le=1, description="chance that one remediation repairs a repairable cause"
    )
    tokens: int = Field(default=20_000, ge=0, le=10_000_000, description="model tokens one remediation consumes")


class ApiSpec(_Strict):
    """A tool API with its own credentials and token bucket (the model provider's are the fleet's defaults)."""

    name: str = Field(min_length=1, max_length=100, description="how faults name it (their api field)")
    tools: list[str] = Field(min_length=1, description="the tools whose calls go to it")
    rate_per_s: float = Field(default=0.5, gt=0, description="refill rate of its token bucket")
    burst: float = Field(default=30, ge=1, description="size of its token bucket")
    credential_lifetime_s: float | None = Field(
        default=None, gt=0, description="validity of its freshly issued credentials (default: the fleet's)"
    )


class WorkerOverride(_Strict):
    """Per-worker differences from the fleet defaults."""

    worker: int = Field(ge=0)
    tool_slots: int | None = Field(default=None, ge=1, le=64)
    disk_mb: float | None = Field(default=None, gt=0, description="this worker's disk capacity")


class StepSpec(_Strict):
    """One tool step of a task template."""

    tool: str = Field(min_length=1)
    duration: Distribution
    fan_out: int = Field(default=1, ge=1, le=64, description="parallel items (sources, writes)")
    uses_api: bool = True
    disk_mb: float = Field(default=0, ge=0, description="disk written; fails on a full disk")
    side_effect: Literal["none", "idempotent", "append"] = "none"
    tokens: int = Field(
        default=2000,
        ge=0,
        le=10_000_000,
        description="model tokens a call that runs consumes (its turn's output; the context the turn reads is "
        "counted apart, fleet.model)",
    )
    result_tokens: int | None = Field(
        default=None,
        ge=0,
        le=10_000_000,
        description="tokens one successful call's result adds to the conversation's context "
        "(default: fleet.model.result_tokens)",
    )
    needs: list[str] = Field(
        default_factory=list,
        description="earlier steps whose output this step consumes: with incomplete inputs its output is wrong",
    )
    after_timeout: Literal["continue", "cancel"] = Field(
        default="continue",
        description="what the tool's work does when its client gives up (a call timeout): continue (work still "
        "queued for a slot or a provider runs to its end and takes effect; a call cut while running on a worker "
        "without a provider took effect with fleet.cut_call_committed_probability) or cancel (it stops and takes no "
        "effect)",
    )

    @model_serializer(mode="wrap")
    def _omit_new_defaults(self, handler):
        return _without_defaults(self, handler(self), ("after_timeout", "result_tokens"))
