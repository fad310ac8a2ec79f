"""The scenario models of a provider with a declared capacity (``fleet.providers``).

Read once when a run is built (:mod:`fleetchaos.sim.capacity` realises them); re-exported
by :mod:`fleetchaos.sim.config`, where users look.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_serializer, model_validator

from fleetchaos.sim.fault_specs import _Strict


class SlowdownPoint(_Strict):
    """One point of a provider's latency curve: with this many calls in it, service takes ``factor`` times as long."""

    in_flight: int = Field(
        ge=1, le=1_000_000, description="calls in the provider (served or waiting), this one included"
    )
    factor: float = Field(gt=0, le=10_000, description="service-time multiplier at that many calls")


class ServiceShare(_Strict):
    """A share of a provider's calls whose service takes ``factor`` times as long as the step's duration says."""

    probability: float = Field(gt=0, le=1, description="the share of its calls (each call drawn from its own key)")
    factor: float = Field(gt=0, le=10_000, description="service-time multiplier of those calls")


class ProviderSpec(_Strict):
    """A provider with a declared capacity: the API, or the backend of the tools it names.

    Every call of its tools (every API-using call, when ``tools`` is omitted) is served
    by it.  With ``servers``, calls are served first come, first served by that many
    servers, and a call waits for a free one; with a ``slowdown`` curve, a call's service
    takes longer the more calls are in the provider when it arrives.  Its ``admission``
    says what it does with a call past ``max_in_flight``: ``refuse`` it at once (503 or
    429: the ``overloaded`` fault kind; each refusal still costs it ``reject_cost_s`` of
    work), or ``queue`` it like any other (no limit: ``max_in_flight`` is then unused).  A
    ``service_mixture`` makes some calls longer than the rest (most calls short, a few
    long: a cache miss, a long prompt), each call drawn from its own key.  A client's
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
    service_mixture: list[ServiceShare] = Field(
        default_factory=list,
        max_length=100,
        description="shares of its calls whose service takes factor times the step's duration, the rest as the step "
        "says (bimodal service with one share: most calls short, a few long); probabilities add up to at most 1; "
        "none by default: service is the step's duration alone",
    )

    @model_serializer(mode="wrap")
    def _omit_unmixed(self, handler):
        # Without a mixture a provider dumps as before the field existed: results stay byte-identical.
        data = handler(self)
        if not self.service_mixture and isinstance(data, dict):
            data.pop("service_mixture", None)
        return data

    @model_validator(mode="after")
    def _ordered_curve(self) -> ProviderSpec:
        for i in range(1, len(self.slowdown)):
            if self.slowdown[i].in_flight <= self.slowdown[i - 1].in_flight:
                raise ValueError(
                    f"slowdown[{i}].in_flight {self.slowdown[i].in_flight} is not above slowdown[{i - 1}].in_flight "
                    f"{self.slowdown[i - 1].in_flight}; list the curve's points by increasing in_flight"
                )
        total = math.fsum(share.probability for share in self.service_mixture)
        if total > 1.0 + 1e-9:
            raise ValueError(
                f"service_mixture: the shares' probabilities add up to {total:g}, above 1; make them add up to at "
                "most 1 (the calls left over take the step's duration as it is)"
            )
        if self.servers is None and not self.slowdown and self.max_in_flight is None:
            raise ValueError(
                f"provider {self.name!r} declares no capacity; give it servers, a slowdown curve or max_in_flight"
            )
        return self
