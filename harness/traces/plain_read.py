"""The plain trace form: one tool call per JSON line, or per CSV row.

Fields (CSV: a header row naming them; JSON: keys; unknown fields are ignored and
listed once):

========================  ========  ==================================================
field                     needed    meaning
========================  ========  ==================================================
``time``                  yes       when the call started: Unix seconds, or ISO 8601
                                    with a time zone (``2025-01-01T09:30:00Z``)
``task``                  yes       the task's (or trace's) id: calls of one task share it
``tool``                  yes       the tool's name
``duration_s``            yes       how long the call took, seconds (>= 0)
``outcome``               yes       ``ok`` or ``error``
``worker``                no        the worker (host, process) that ran it
``error``                 no        the error code the call reported (``ENOSPC``, ``rate_limited``)
``http_status``           no        the HTTP status, 100..599
``retry_after_s``         no        the Retry-After the call was given, seconds
``attempt``               no        which dispatch of its task the call belongs to (1 = first)
``item``                  no        which parallel item of a fan-out step it served (0 = first)
``template``              no        the kind of task (its name)
========================  ========  ==================================================
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterable, Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from fleetchaos.traces.bounded import problem
from fleetchaos.traces.otlp_read import ReadStats
from fleetchaos.traces.records import ToolCall

FIXES = {
    "time": "give Unix seconds (1735722000.5) or ISO 8601 with a zone (2025-01-01T09:00:00Z)",
    "task": "give the task's or trace's id",
    "tool": "give the tool's name",
    "duration_s": "give the call's duration in seconds, >= 0",
    "outcome": "write ok or error",
    "http_status": "give a whole number 100..599, or leave it out",
    "retry_after_s": "give seconds >= 0, or leave it out",
    "attempt": "give a whole number >= 1 (1 = the task's first dispatch), or leave it out",
    "item": "give a whole number >= 0, or leave it out",
}


class PlainCall(BaseModel):
    """One record of the plain form (validated; unknown fields ignored)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False, str_strip_whitespace=True)

    time: float | str
    task: str = Field(min_length=1, max_length=500)
    tool: str = Field(min_length=1, max_length=500)
    duration_s: float = Field(ge=0)
    outcome: Literal["ok", "error"]
    worker: str = Field(default="", max_length=500)
    error: str | None = Field(default=None, max_length=500)
    http_status: int | None = Field(default=None, ge=100, le=599)
    retry_after_s: float | None = Field(default=None, ge=0)
    attempt: int | None = Field(default=None, ge=1)
    item: int | None = Field(default=None, ge=0)
    template: str | None = Field(default=None, max_length=500)

    @field_validator("task", "worker", "tool", "template", "error", mode="before")
    @classmethod
    def _text(cls, value):
        if isinstance(value, bool):
            raise ValueError("must be text")
        return str(value) if isinstance(value, int) else value

    @field_validator("outcome", mode="before")
    @classmethod
    def _lower(cls, value):
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("time")
    @classmethod
    def _instant(cls, value):
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                try:
                    stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
                except ValueError:
                    raise ValueError("not a Unix time or an ISO 8601 time") from None
                if stamp.tzinfo is None:
                    raise ValueError("an ISO 8601 time needs a time zone (Z or +HH:MM)") from None
                return stamp.timestamp()
            value = number
        if not 0 < value < 1e11:
            raise ValueError("not a plausible Unix time in seconds")
        return float(value)


def _field_of(error: ErrorDetails) -> str:
    return ".".join(str(p) for p in error["loc"]) or "(record)"


def _record(data, source: str, line: int) -> ToolCall:
    if not isinstance(data, dict):
        raise problem(source, line, None, "a record must be a JSON object", data, "one call per line as {...}")
    try:
        call = PlainCall.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = _field_of(error)
        rule = error["msg"].removeprefix("Value error, ")
        value = error.get("input") if error["type"] != "missing" else None
        fix = FIXES.get(name, "see docs/calibration.md for the plain form")
        if error["type"] == "missing":
            rule = "is missing"
        raise problem(source, line, name, rule, value, fix) from None
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


KNOWN = frozenset(PlainCall.model_fields)


def read_jsonl(
    numbered_lines: Iterable[tuple[int, str]], source: str, stats: ReadStats
) -> Iterator[tuple[ToolCall, str | None]]:
    """(call, template) per JSON line; blank lines are skipped."""
    for number, text in numbered_lines:
        stats.lines += 1
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            truncated = exc.pos >= len(text.rstrip())
            rule = "truncated JSON: the line ends inside a value" if truncated else f"not valid JSON: {exc.msg}"
            raise problem(
                source, number, None, f"{rule} (column {exc.colno})", fix="one JSON object per line"
            ) from None
        except RecursionError:
            raise problem(source, number, None, "JSON nested too deeply to be a record") from None
        if isinstance(data, dict):
            for key in data.keys() - KNOWN:
                stats.note(f"field {key!r} is not part of the plain form: ignored")
        call = _record(data, source, number)
        stats.spans += 1
        stats.tool_calls += 1
        yield call, data.get("template") if isinstance(data.get("template"), str) else None


def read_csv(
    numbered_lines: Iterable[tuple[int, str]], source: str, stats: ReadStats
) -> Iterator[tuple[ToolCall, str | None]]:
    """(call, template) per CSV row after a header row naming the fields."""
    numbers: list[int] = [0]

    def texts():
        for number, text in numbered_lines:
            numbers[0] = number
            stats.lines += 1
            yield text

    csv.field_size_limit(10 * 1024 * 1024)
    reader = csv.reader(texts())
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise problem(source, numbers[0], None, f"not valid CSV: {exc}") from None
    if header is None:
        raise problem(source, None, None, "empty file: no header row", fix="the first row names the fields")
    header = [h.strip() for h in header]
    missing = [f for f in ("time", "task", "tool", "duration_s", "outcome") if f not in header]
    if missing:
        raise problem(
            source, 1, None, f"the header has no column {', '.join(repr(m) for m in missing)}", header,
            "name the columns time, task, tool, duration_s, outcome (and optionally worker, error, http_status, "
            "retry_after_s, attempt, item, template)",
        )  # fmt: skip
    for name in header:
        if name not in KNOWN:
            stats.note(f"column {name!r} is not part of the plain form: ignored")
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise problem(source, numbers[0], None, f"not valid CSV: {exc}") from None
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise problem(
                source, numbers[0], None, f"has {len(row)} cells, the header has {len(header)}", None,
                "give every row one cell per header column (empty cells for absent values)",
            )  # fmt: skip
        data = {k: v for k, v in zip(header, row) if v.strip() != ""}
        call = _record(data, source, numbers[0])
        stats.spans += 1
        stats.tool_calls += 1
        yield call, data.get("template")
