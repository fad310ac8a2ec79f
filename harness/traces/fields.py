"""One tool call's fields, validated alike whichever reader found them.

The plain form names them directly; the OTLP reader gathers them from a span (its times,
its ``gen_ai.tool.name``, ``error.type``, ``http.response.status_code``,
``fleetchaos.attempt`` ...) and validates them here too, so both forms accept and refuse
the same values: an HTTP status outside 100..599, an attempt below 1, a negative or
non-finite duration or Retry-After, a time that is not a plausible Unix time, text where
a number belongs (a boolean included) are refused with one message naming the field as
the file spells it.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fleetchaos.traces.bounded import problem
from fleetchaos.traces.records import ToolCall

__all__ = ["FIXES", "CallFields", "tool_call"]

FIXES = {
    "time": "give Unix seconds (1735722000.5) or ISO 8601 with a zone (2025-01-01T09:00:00Z)",
    "task": "give the task's or trace's id",
    "tool": "give the tool's name",
    "worker": "give the worker's name",
    "duration_s": "give the call's duration in seconds, 0 to a year",
    "outcome": "write ok or error",
    "error": "give the error code as text",
    "http_status": "give a whole number 100..599, or leave it out",
    "retry_after_s": "give seconds, 0 to a year, or leave it out",
    "attempt": "give a whole number >= 1 (1 = the task's first dispatch), or leave it out",
    "item": "give a whole number >= 0, or leave it out",
}

#: The latest plausible Unix time in seconds (the year 5138): a larger number is a unit mistake.
MAX_UNIX_S = 1e11

#: The longest call duration or Retry-After taken (a year, a scenario's longest horizon).
MAX_SECONDS = 365 * 86_400.0


class CallFields(BaseModel):
    """One tool call's fields (unknown fields ignored)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False, str_strip_whitespace=True)

    time: float | str
    task: str = Field(min_length=1, max_length=500)
    tool: str = Field(min_length=1, max_length=500)
    duration_s: float = Field(ge=0, le=MAX_SECONDS)
    outcome: Literal["ok", "error"]
    worker: str = Field(default="", max_length=500)
    error: str | None = Field(default=None, max_length=500)
    http_status: int | None = Field(default=None, ge=100, le=599)
    retry_after_s: float | None = Field(default=None, ge=0, le=MAX_SECONDS)
    attempt: int | None = Field(default=None, ge=1, lt=2**31)
    item: int | None = Field(default=None, ge=0, lt=2**31)
    template: str | None = Field(default=None, max_length=500)

    @field_validator("task", "worker", "tool", "template", "error", mode="before")
    @classmethod
    def _text(cls, value):
        if isinstance(value, bool):
            raise ValueError("must be text")
        return str(value) if isinstance(value, int) else value

    @field_validator("duration_s", "retry_after_s", "http_status", "attempt", "item", mode="before")
    @classmethod
    def _number(cls, value):
        if isinstance(value, bool):
            raise ValueError("must be a number, not true or false")
        return value

    @field_validator("outcome", mode="before")
    @classmethod
    def _lower(cls, value):
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("time", mode="before")
    @classmethod
    def _instant(cls, value):
        if isinstance(value, bool):
            raise ValueError("must be a time, not true or false")
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                try:
                    stamp = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
                except ValueError:
                    raise ValueError("not a Unix time or an ISO 8601 time") from None
                if stamp.tzinfo is None:
                    raise ValueError("an ISO 8601 time needs a time zone (Z or +HH:MM)") from None
                value = stamp.timestamp()
            else:
                value = number
        if not isinstance(value, (int, float)):
            raise ValueError("must be Unix seconds or an ISO 8601 time")
        if not (math.isfinite(value) and 0 < value < MAX_UNIX_S):
            raise ValueError("not a plausible Unix time in seconds")
        return float(value)


#: The fields a call may have (the plain form's names).
KNOWN = frozenset(CallFields.model_fields)


def tool_call(data: dict, source: str, line: int | None, names: dict[str, str] | None = None) -> ToolCall:
    """The validated call of ``data``, or a :class:`~fleetchaos.traces.bounded.TraceFileError`.

    ``names`` maps a field to the name the file gives it (an OTLP span's attribute path),
    so the message names what the user wrote.
    """
    try:
        call = CallFields.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(str(p) for p in error["loc"]) or "(record)"
        rule = error["msg"].removeprefix("Value error, ")
        value = error.get("input") if error["type"] != "missing" else None
        if error["type"] == "missing":
            rule = "is missing"
        fix = FIXES.get(name, "see docs/calibration.md")
        raise problem(source, line, (names or {}).get(name, name), rule, value, fix) from None
    return ToolCall(
        task=call.task,
        start_s=float(call.time),
        duration_s=call.duration_s,
        tool=call.tool,
        worker=call.worker,
        ok=call.outcome == "ok",
        code=call.error or None,
        http_status=call.http_status,
        retry_after_s=call.retry_after_s,
        attempt=call.attempt,
        item=call.item,
    )
