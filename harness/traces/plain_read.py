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

Both forms are validated alike (:mod:`fleetchaos.traces.fields`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator

from fleetchaos.traces.bounded import problem
from fleetchaos.traces.fields import KNOWN, tool_call
from fleetchaos.traces.otlp_read import ReadStats
from fleetchaos.traces.records import ToolCall


def _record(data, source: str, line: int) -> ToolCall:
    if not isinstance(data, dict):
        raise problem(source, line, None, "a record must be a JSON object", data, "one call per line as {...}")
    return tool_call(data, source, line)


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
