"""The scenario models of a provider with a declared capacity (``fleet.providers``).

Read once when a run is built (:mod:`fleetchaos.sim.capacity` realises them); re-exported
by :mod:`fleetchaos.sim.config`, where users look.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fleetchaos.sim.fault_specs import _Strict


class SlowdownPoint(_Strict):
    """One point of a provider's latency curve: with this many calls in it, service takes ``factor`` times as long."""

    in_flight: int = Field(
        ge=1, le=1_000_000, description="calls in the provider (served or waiting), this one included"
    )
    factor: float = Field(gt=0, le=10_000, description="service-time multiplier at that many calls")


class ProviderSpec(_Strict):
    """A provider with a declared capacity: the API, or the backend of the tools it names.

    Every call of its tools (every API-using call, when ``tools`` is omitted) is served
    by it.  With ``servers``, calls are served first come, first served by that many
    servers, and a call waits for a free one; with a ``slowdown`` curve, a call's service
    takes longer the more calls are in the provider when it arrives.  Its ``admission``
    says what it does with a call past ``max_in_flight``: ``refuse`` it at once (503 or
    429: the ``overloaded`` fault kind; each refusal still costs it ``reject_cost_s`` of
    work), or ``queue`` it like any other (no limit: ``max_in_flight`` is then unused).  A client's
    call timeout (``fleet.call_timeout_s``) counts from the call's dispatch, waiting
    included; what the provider does with a call whose client gave up is the step's
    ``after_timeout``.
    """

    name: str = Field(min_length=1, description="names the provider in faults and reports")
    tools: list[str] | None = Field(
        default=None, min_length=1, description="the tools it serves (default: every step that uses the API)"
    )
    servers: int | None = Field(
        default=None, ge=1, le=100_000, description="calls served at once, first come first served (default: no queue)"
    )
    slowdown: list[SlowdownPoint] = Field(
        default_factory=list,
        description="service-time multiplier by calls in the provider, linear between points and flat past the ends",
    )
    max_in_flight: int | None = Field(
        default=None, ge=1, le=1_000_000, description="calls in it (served or waiting) past which it refuses new ones"
    )
    admission: Literal["refuse", "queue"] = Field(
        default="refuse",
        description="what it does with a call past max_in_flight: refuse it at once (load shedding: an API's 429 or "
        "503 when it is full) or queue it without limit (a backend that takes every call and serves it late); "
        "refuse is what the public model APIs do (docs/assumptions.md)",
    )
    overload_status: Literal[429, 503] = Field(default=503, description="the HTTP status of a refusal")
    reject_cost_s: float = Field(
        default=0.0, ge=0, le=3600, description="work a refusal still costs it (one server's time, or a slot in flight)"
    )

    @model_validator(mode="after")
    def _ordered_curve(self) -> ProviderSpec:
        for i in range(1, len(self.slowdown)):
            if self.slowdown[i].in_flight <= self.slowdown[i - 1].in_flight:
                raise ValueError(
                    f"slowdown[{i}].in_flight {self.slowdown[i].in_flight} is not above slowdown[{i - 1}].in_flight "
                    f"{self.slowdown[i - 1].in_flight}; list the curve's points by increasing in_flight"
                )
        if self.servers is None and not self.slowdown and self.max_in_flight is None:
            raise ValueError(
                f"provider {self.name!r} declares no capacity; give it servers, a slowdown curve or max_in_flight"
            )
        return self
