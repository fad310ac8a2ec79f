"""The shared parts of the fault models: the strict base, time windows, bursts, ramps and the per-call schedule.

The kinds' models (:mod:`fleetchaos.sim.fault_specs`, :mod:`fleetchaos.sim.fault_specs_model`)
build on these; :mod:`fleetchaos.sim.fault_specs` re-exports them, where users look.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Annotated, Literal

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationInfo, field_validator, model_validator
from pydantic import ValidationError as _PydanticValidationError

from fleetchaos.sim.terminal import UNSAFE_FOR_TERMINALS, terminal_text


@functools.cache
def _positive_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of ``model`` that must be greater than zero (``gt=0``): rates, durations, scales, divisors."""
    return frozenset(
        name
        for name, field in model.model_fields.items()
        if any(isinstance(m, annotated_types.Gt) and m.gt == 0 for m in field.metadata)
    )


def _subnormal(value: object) -> float | None:
    """A float (or a float in a list or pair) closer to zero than the smallest normal float, else None."""
    for item in value if isinstance(value, (list, tuple)) else (value,):
        if type(item) is float and item != 0.0 and abs(item) < sys.float_info.min:
            return item
    return None


class _Strict(BaseModel):
    # strict: a number must be written as a number (``probability: "0.1"`` is refused, not coerced, as
    # any other string in a number's place is); a whole number is accepted where a float is expected.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)

    @field_validator("*", mode="after")
    @classmethod
    def _plain_values(cls, value: object, info: ValidationInfo) -> object:
        # 5e-324 passes "> 0" and then divides as zero (a rate per second of 0): a field that must be positive
        # refuses a number too close to zero to compute with, as every field refuses inf and nan.
        tiny = _subnormal(value) if info.field_name in _positive_fields(cls) else None
        if tiny is not None:
            raise ValueError(
                f"{tiny!r} is too close to zero to compute with (a subnormal float, below {sys.float_info.min:.3g}); "
                "write a number of at least 1e-300 (is the exponent right?)"
            )
        # A name, tool or description is shown in terminals, reports and files: no escape sequence may ride in it.
        for item in value if isinstance(value, (list, tuple)) else (value,):
            bad = UNSAFE_FOR_TERMINALS.search(item) if isinstance(item, str) else None
            if bad is not None:
                raise ValueError(
                    f"'{terminal_text(item)[:60]}' holds the control character {terminal_text(bad.group())}, which a "
                    "terminal would act on (an escape sequence can clear the screen or hide text); remove it"
                )
        return value


#: A ``[low, high]`` pair as YAML and JSON write it (a list), each end still a strict number.
_Pair = Annotated[tuple[float, float], Strict(False)]


class Window(_Strict):
    """A time window in simulated seconds; with ``every_s`` it recurs."""

    start_s: float = Field(ge=0)
    duration_s: float = Field(gt=0)
    every_s: float | None = Field(default=None, gt=0, description="repeat period (default: once)")

    @model_validator(mode="after")
    def _fits_period(self) -> Window:
        if self.every_s is not None and self.duration_s > self.every_s:
            raise ValueError(
                f"duration_s {self.duration_s:g} is longer than every_s {self.every_s:g}; "
                "a recurring window must fit in its period"
            )
        return self


class Burst(_Strict):
    """A two-state (good/bad) process: the fault is active only in bad phases.

    Phase lengths are exponential with the given means (a Gilbert-Elliott style model).
    ``scope: fleet`` gives every targeted worker the same phases (a shared dependency
    failing takes them down together); ``scope: worker`` draws phases per worker.
    """

    mean_good_s: float = Field(gt=0)
    mean_bad_s: float = Field(gt=0)
    scope: Literal["fleet", "worker"] = "fleet"


class Ramp(_Strict):
    """The probability moves linearly from ``from_probability`` to ``to_probability``."""

    start_s: float = Field(ge=0)
    end_s: float = Field(gt=0)
    from_probability: float = Field(ge=0, le=1)
    to_probability: float = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> Ramp:
        if self.end_s <= self.start_s:
            raise ValueError(f"ramp end_s {self.end_s:g} must be after start_s {self.start_s:g}")
        return self


class NodeEvent(_Strict):
    """A fault that hits one worker at one moment."""

    worker: int = Field(ge=0)
    at_s: float = Field(ge=0)


class _Fault(_Strict):
    if TYPE_CHECKING:
        # Each model declares its own ``kind`` literal (a pydantic field); here only for the type checker.
        kind: str

    swarm: dict[str, _Pair] | None = Field(
        default=None,
        description="numeric parameters drawn per seed, uniformly from [low, high]",
    )

    @model_validator(mode="after")
    def _swarm_fields(self) -> _Fault:
        for name, (low, high) in (self.swarm or {}).items():
            field = type(self).model_fields.get(name)
            if field is None or name in ("kind", "swarm") or field.annotation not in (float, int):
                numeric = sorted(n for n, f in type(self).model_fields.items() if f.annotation in (float, int))
                raise ValueError(
                    f"swarm.{name}: not a numeric parameter of {self.kind} (numeric: {', '.join(numeric)})"
                )
            if low > high:
                raise ValueError(f"swarm.{name}: low {low:g} is above high {high:g}")
            if field.annotation is int and not (float(low).is_integer() and float(high).is_integer()):
                raise ValueError(
                    f"swarm.{name}: {name} is a whole number, so the range needs whole-number ends (got [{low:g}, {high:g}])"
                )
            # Each end must be a value the parameter itself accepts (a probability range up to 1.5 is not).
            base = self.model_dump(exclude={"swarm"})
            for end in (low, high):
                try:
                    type(self).model_validate({**base, name: int(end) if field.annotation is int else end})
                except _PydanticValidationError as exc:
                    rule = exc.errors()[0]["msg"].removeprefix("Value error, ")
                    raise ValueError(
                        f"swarm.{name}: end {end:g} of the range [{low:g}, {high:g}] is not a valid {name} ({rule})"
                    ) from None
        return self


class _Targeted(_Fault):
    workers: list[int] | None = Field(default=None, description="only these worker indices (default: all)")


class _CallFault(_Targeted):
    """Shared schedule of per-call faults."""

    probability: float = Field(default=0.02, ge=0, le=1, description="per call, while active")
    windows: list[Window] = Field(default_factory=list, description="active only inside these windows")
    burst: Burst | None = Field(default=None, description="active only in the bad phases")
    ramp: Ramp | None = Field(default=None, description="probability ramps over time (overrides probability)")
    tools: list[str] | None = Field(default=None, description="only calls of these tools")
    templates: list[str] | None = Field(default=None, description="only tasks of these templates")
