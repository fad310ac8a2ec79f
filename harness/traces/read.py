"""Read trace files of any supported format into tool calls and task spans, streaming.

Formats: ``otlp`` (OTLP JSON: one export request per line, or one pretty-printed
document), ``jsonl`` and ``csv`` (the plain form, :mod:`fleetchaos.traces.plain_read`).
``auto`` decides by the file: ``.csv`` is CSV; otherwise the first non-blank line is
read, and an object with ``resourceSpans`` (or the start of a multi-line document) is
OTLP, any other object the plain JSONL form.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from fleetchaos.traces.bounded import MAX_LINE_BYTES, lines, open_binary, problem, read_document
from fleetchaos.traces.otlp_read import DEFAULT_WORKER_KEYS, ReadStats, parse_request
from fleetchaos.traces.plain_read import read_csv, read_jsonl
from fleetchaos.traces.records import TaskSpan, ToolCall

FORMATS = ("auto", "otlp", "jsonl", "csv")


def _first_line(numbered: Iterator[tuple[int, str]]) -> tuple[int, str] | None:
    for number, text in numbered:
        if text.strip():
            return number, text
    return None


def _sniff(text: str) -> str:
    """``otlp``, ``jsonl``, ``document`` (the first line of a multi-line JSON document), ``deep`` or ``unknown``."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if text.lstrip().startswith("{") and exc.pos >= len(text.rstrip()):
            return "document"
        return "unknown"
    except RecursionError:
        return "deep"
    if isinstance(doc, dict) and ("resourceSpans" in doc or "resource_spans" in doc):
        return "otlp"
    return "jsonl" if isinstance(doc, dict) else "unknown"


def read_file(
    path: Path,
    fmt: str = "auto",
    *,
    stats: ReadStats | None = None,
    worker_keys: tuple[str, ...] = DEFAULT_WORKER_KEYS,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[ToolCall | TaskSpan]:
    """Every tool call and task span in one trace file, in file order."""
    stats = stats if stats is not None else ReadStats()
    source = str(path)
    if fmt not in FORMATS:
        raise problem(source, None, "--format", f"unknown format {fmt!r}", fix=f"use one of {', '.join(FORMATS)}")
    if fmt == "auto" and path.suffix.lower() == ".csv":
        fmt = "csv"
    with open_binary(path, source) as stream:
        numbered = lines(stream, source, max_line_bytes)
        if fmt == "csv":
            for call, template in read_csv(numbered, source, stats):
                yield call
                if template:
                    yield TaskSpan(call.task, call.start_s, call.start_s + call.duration_s, template)
            return
        first = _first_line(numbered)
        if first is None:
            raise problem(source, None, None, "empty file: no trace records", fix="give a file with tool-call traces")
        number, text = first
        kind = _sniff(text)
        if kind == "deep":
            raise problem(
                source, number, None, "JSON nested too deeply to be a trace record", fix="is this a trace file?"
            )
        if fmt == "auto":
            if kind == "unknown":
                raise problem(
                    source, number, None, "cannot tell the format: the first line is not a JSON object", text[:40],
                    "give OTLP JSON, the plain JSONL form or a .csv file (or name it with --format)",
                )  # fmt: skip
            fmt = "otlp" if kind in ("otlp", "document") else "jsonl"
        if fmt == "jsonl":
            for call, template in read_jsonl(_chain(first, numbered), source, stats):
                yield call
                if template:
                    yield TaskSpan(call.task, call.start_s, call.start_s + call.duration_s, template)
            return
        if kind == "document":
            stats.lines += 1
            yield from parse_request(read_document(stream, source, text), source, None, stats, worker_keys)
            return
        for number, text in _chain(first, numbered):
            stats.lines += 1
            if text.strip():
                yield from parse_request(text, source, number, stats, worker_keys)


def _chain(first: tuple[int, str], rest: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    yield first
    yield from rest


def read_traces(
    paths: Iterable[Path],
    fmt: str = "auto",
    *,
    stats: ReadStats | None = None,
    worker_keys: tuple[str, ...] = DEFAULT_WORKER_KEYS,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[ToolCall | TaskSpan]:
    """Every record of every file, file after file; a folder is its trace files (what ``run --traces`` writes)."""
    for path in paths:
        for file in trace_files(path):
            yield from read_file(file, fmt, stats=stats, worker_keys=worker_keys, max_line_bytes=max_line_bytes)


#: The names of the files a folder given to the readers is read for.
TRACE_SUFFIXES = (".jsonl", ".json", ".csv")


def trace_files(path: Path) -> list[Path]:
    """``path`` itself, or for a folder the trace files directly in it (by name); a folder without one is refused."""
    if not path.is_dir():
        return [path]
    found = sorted(p for p in path.iterdir() if p.name.lower().endswith(TRACE_SUFFIXES) and p.is_file())
    if not found:
        raise problem(
            str(path), None, None, "a folder with no trace files in it",
            fix=f"give a folder of {', '.join('*' + s for s in TRACE_SUFFIXES)} files (run --traces DIR writes one), "
            "or the files themselves",
        )  # fmt: skip
    return found
