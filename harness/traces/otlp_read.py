"""OTLP JSON traces in: the OpenTelemetry Collector file exporter's lines, or one JSON document.

Each line (or the whole document) is an ``ExportTraceServiceRequest``: ``resourceSpans``
-> ``scopeSpans`` -> ``spans``.  Both key spellings are read (``startTimeUnixNano``, as
the OTLP JSON encoding writes, and ``start_time_unix_nano``, as protobuf's own JSON
printer writes with field names kept), ids as hex (the OTLP encoding) or base64
(protobuf's JSON mapping), integers as strings or numbers, enums as numbers or names.

A span is a **tool call** when ``gen_ai.operation.name`` is ``execute_tool``, or it has a
``gen_ai.tool.name``, or its name starts with ``execute_tool `` (the GenAI semantic
conventions), or ``mcp.method.name`` is ``tools/call`` (its tool named by
``gen_ai.tool.name`` or the span name ``tools/call NAME``: the MCP conventions, whose
``error.type`` ``tool_error`` marks a tool result with ``isError``, read as a failure of
that code, and whose ``mcp.session.id`` names the worker when the span names none of
its own).  A **model call** (``gen_ai.operation.name`` ``chat``, ``text_completion``,
``generate_content`` or ``embeddings``) is read as a call of the tool :data:`MODEL_TOOL`,
so a model's own 429s and latencies are fitted as a step's.  A span without a parent is
its trace's **task**.  Other spans are counted
and skipped, and so is a span read before (the same trace and span id, in this file or
an earlier one of the same read).  A tool call's fields are validated as the plain form's
are (:mod:`fleetchaos.traces.fields`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fleetchaos.traces.bounded import problem
from fleetchaos.traces.fields import tool_call
from fleetchaos.traces.records import TaskSpan, ToolCall

#: Where the worker of a call is looked for, in order: span attributes, then the resource's.
DEFAULT_WORKER_KEYS = ("fleetchaos.worker", "mcp.session.id", "service.instance.id", "host.name")

#: The tool name a model call is read as (the step real-code mode's LLM route names).
MODEL_TOOL = "llm"

#: GenAI operations that are a call of the model.
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "embeddings"})

_STATUS_ERROR = (2, "2", "STATUS_CODE_ERROR")
_NO_PARENT = ("", "0" * 16)


@dataclass(slots=True)
class ReadStats:
    """Counts a reader keeps while it streams a file."""

    lines: int = 0
    spans: int = 0
    tool_calls: int = 0
    tasks: int = 0
    skipped: int = 0
    """Spans that are neither a tool or model call nor a task's root (HTTP client spans, agent steps...)."""
    notes: dict[str, int] = field(default_factory=dict)
    """Things read with a caveat (an HTTP-date Retry-After, an ignored field), with counts."""
    duplicates: int = 0
    """Spans read again (the same trace and span id): dropped, as at-least-once exporters and
    overlapping rotated files repeat them."""
    seen: set[int] = field(default_factory=set, repr=False)
    """The spans read so far, as 64-bit hashes of trace and span id (about 60 bytes each)."""

    def note(self, text: str) -> None:
        """Count one occurrence of a caveat."""
        self.notes[text] = self.notes.get(text, 0) + 1

    def first_time(self, trace: str, span: str) -> bool:
        """Whether the span ``(trace, span)`` is read for the first time (else it is counted as a duplicate)."""
        key = int.from_bytes(hashlib.blake2b(f"{trace}/{span}".encode(), digest_size=8).digest(), "big")
        if key in self.seen:
            self.duplicates += 1
            return False
        self.seen.add(key)
        return True


def _get(obj: dict, camel: str, snake: str, default: Any = None) -> Any:
    value = obj.get(camel)
    if value is None:
        value = obj.get(snake, default)
    return value


class _Spans:
    """Decodes one request's spans; ``where(...)`` builds the messages of its errors."""

    def __init__(self, source: str, line: int | None, worker_keys: tuple[str, ...], stats: ReadStats):
        self.source = source
        self.line = line
        self.worker_keys = worker_keys
        self.stats = stats

    def fail(self, path: str | None, rule: str, value: Any = None, fix: str = "") -> Exception:
        return problem(self.source, self.line, path, rule, value, fix)

    def listed(self, obj: dict, camel: str, snake: str, path: str) -> list:
        value = _get(obj, camel, snake, [])
        if not isinstance(value, list):
            raise self.fail(f"{path}.{camel}", "must be a list", value, "see the OTLP JSON encoding")
        return value

    def mapping(self, value: Any, path: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(path, "must be an object", value, "see the OTLP JSON encoding")
        return value

    def any_value(self, value: Any, path: str) -> Any:
        """An OTLP AnyValue as a Python value."""
        if not isinstance(value, dict):
            raise self.fail(path, "an attribute value must be an AnyValue object", value, 'e.g. {"stringValue": "x"}')
        for camel, snake in (("stringValue", "string_value"), ("boolValue", "bool_value")):
            if camel in value or snake in value:
                return _get(value, camel, snake)
        for camel, snake in (("intValue", "int_value"), ("doubleValue", "double_value")):
            if camel in value or snake in value:
                raw = _get(value, camel, snake)
                try:
                    return int(raw) if camel == "intValue" else float(raw)
                except (TypeError, ValueError):
                    raise self.fail(f"{path}.{camel}", "not a number", raw) from None
        if "arrayValue" in value or "array_value" in value:
            inner = self.mapping(_get(value, "arrayValue", "array_value"), f"{path}.arrayValue")
            items = self.listed(inner, "values", "values", f"{path}.arrayValue")
            return [self.any_value(v, f"{path}.arrayValue.values[{i}]") for i, v in enumerate(items)]
        if "kvlistValue" in value or "kvlist_value" in value:
            inner = self.mapping(_get(value, "kvlistValue", "kvlist_value"), f"{path}.kvlistValue")
            return self.attributes(inner, "values", f"{path}.kvlistValue")
        if "bytesValue" in value or "bytes_value" in value:
            return _get(value, "bytesValue", "bytes_value")
        return None  # an empty AnyValue

    def attributes(self, obj: dict, key: str, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, attribute in enumerate(self.listed(obj, key, key, path)):
            where = f"{path}.{key}[{i}]"
            attribute = self.mapping(attribute, where)
            name = attribute.get("key")
            if not isinstance(name, str):
                raise self.fail(f"{where}.key", "an attribute needs a string key", name)
            out[name] = self.any_value(attribute.get("value", {}), f"{where}.value")
        return out

    def ident(self, value: Any, size: int, path: str, required: bool = True) -> str:
        """A trace or span id as lowercase hex (given as hex, or base64 as protobuf's JSON writes bytes)."""
        if value in (None, "") and not required:
            return ""
        if not isinstance(value, str):
            raise self.fail(path, f"must be a string of {size * 2} hex digits", value)
        if len(value) == size * 2:
            try:
                bytes.fromhex(value)
                return value.lower()
            except ValueError:
                pass
        try:
            raw = base64.b64decode(value, validate=True)
            if len(raw) == size:
                return raw.hex()
        except (binascii.Error, ValueError):
            pass
        raise self.fail(path, f"must be {size * 2} hex digits (or {size} bytes in base64)", value)

    def nanos(self, value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise self.fail(path, "must be Unix nanoseconds as a decimal string or integer", value)
        try:
            number = int(value)
        except ValueError:
            raise self.fail(path, "must be Unix nanoseconds as a decimal string", value) from None
        if not 0 < number < 2**63:
            raise self.fail(path, "must be a positive Unix time in nanoseconds", value)
        return number

    def request(self, doc: Any) -> Iterator[ToolCall | TaskSpan]:
        """Every tool call and task span of one export request."""
        if not isinstance(doc, dict) or not ("resourceSpans" in doc or "resource_spans" in doc):
            keys = sorted(doc)[:5] if isinstance(doc, dict) else type(doc).__name__
            raise self.fail(None, "not an OTLP traces export (no resourceSpans)", keys, "give an OTLP JSON traces file")
        for r, resource_spans in enumerate(self.listed(doc, "resourceSpans", "resource_spans", "")):
            rpath = f"resourceSpans[{r}]"
            resource_spans = self.mapping(resource_spans, rpath)
            resource = self.mapping(resource_spans.get("resource", {}), f"{rpath}.resource")
            resource_attrs = self.attributes(resource, "attributes", f"{rpath}.resource")
            scopes = _get(resource_spans, "scopeSpans", "scope_spans")
            if scopes is None:  # the name before OTLP 0.19
                scopes = _get(resource_spans, "instrumentationLibrarySpans", "instrumentation_library_spans", [])
            if not isinstance(scopes, list):
                raise self.fail(f"{rpath}.scopeSpans", "must be a list", scopes)
            for s, scope in enumerate(scopes):
                spath = f"{rpath}.scopeSpans[{s}]"
                scope = self.mapping(scope, spath)
                for i, span in enumerate(self.listed(scope, "spans", "spans", spath)):
                    record = self.span(self.mapping(span, f"{spath}.spans[{i}]"), f"{spath}.spans[{i}]", resource_attrs)
                    if record is not None:
                        yield record

    def span(self, span: dict, path: str, resource_attrs: dict[str, Any]) -> ToolCall | TaskSpan | None:
        self.stats.spans += 1
        trace = self.ident(_get(span, "traceId", "trace_id"), 16, f"{path}.traceId")
        span_id = self.ident(_get(span, "spanId", "span_id"), 8, f"{path}.spanId", required=False)
        if span_id and not self.stats.first_time(trace, span_id):
            return None
        parent = self.ident(_get(span, "parentSpanId", "parent_span_id"), 8, f"{path}.parentSpanId", required=False)
        start = self.nanos(_get(span, "startTimeUnixNano", "start_time_unix_nano"), f"{path}.startTimeUnixNano")
        end = self.nanos(_get(span, "endTimeUnixNano", "end_time_unix_nano"), f"{path}.endTimeUnixNano")
        if end < start:
            raise self.fail(f"{path}.endTimeUnixNano", "ends before the span starts", str(end), "check the clock")
        name = span.get("name", "")
        if not isinstance(name, str):
            raise self.fail(f"{path}.name", "must be a string", name)
        attrs = self.attributes(span, "attributes", path)
        operation = attrs.get("gen_ai.operation.name")
        tool = attrs.get("gen_ai.tool.name")
        mcp = attrs.get("mcp.method.name") == "tools/call"
        if operation == "execute_tool" or tool is not None or name.startswith("execute_tool ") or mcp:
            if tool is None:
                prefix = next((p for p in ("execute_tool ", "tools/call ") if name.startswith(p)), None)
                tool = "" if prefix is None else name[len(prefix) :].strip()
            if not isinstance(tool, str) or not tool:
                raise self.fail(
                    f"{path}.attributes.gen_ai.tool.name", "a tool call needs the tool's name", tool,
                    'set gen_ai.tool.name or name the span "execute_tool NAME" (or "tools/call NAME")',
                )  # fmt: skip
            self.stats.tool_calls += 1
            return self.tool_call(span, path, trace, tool, start, end, attrs, resource_attrs)
        if operation in MODEL_OPERATIONS:
            self.stats.tool_calls += 1
            self.stats.note(f"model calls (gen_ai.operation.name {operation}) read as calls of the tool {MODEL_TOOL!r}")
            return self.tool_call(span, path, trace, MODEL_TOOL, start, end, attrs, resource_attrs)
        if parent in _NO_PARENT:
            self.stats.tasks += 1
            template = attrs.get("gen_ai.agent.name")
            if not isinstance(template, str) or not template:
                template = name.removeprefix("invoke_agent").strip() or None
            return TaskSpan(trace, start / 1e9, end / 1e9, template)
        self.stats.skipped += 1
        return None

    def tool_call(self, span, path, trace, tool, start, end, attrs, resource_attrs) -> ToolCall:
        status = span.get("status") or {}
        if not isinstance(status, dict):
            raise self.fail(f"{path}.status", "must be an object", status)
        status_code = status.get("code")
        if status_code is not None and (isinstance(status_code, bool) or not isinstance(status_code, (int, str))):
            raise self.fail(
                f"{path}.status.code", "must be 0, 1 or 2 (or STATUS_CODE_OK, STATUS_CODE_ERROR)", status_code
            )
        code = attrs.get("error.type")
        failed = status_code in _STATUS_ERROR or code is not None
        http_key = "http.response.status_code" if "http.response.status_code" in attrs else "http.status_code"
        worker_key = self.worker_keys[0] if self.worker_keys else "worker"
        worker: Any = None
        for key in self.worker_keys:
            worker = attrs.get(key, resource_attrs.get(key))
            if worker is not None:
                worker_key = key
                break
        retry_key, retry_after = self.retry_after(attrs)
        fields = {
            "time": start / 1e9,
            "task": trace,
            "tool": tool,
            "duration_s": (end - start) / 1e9,
            "outcome": "error" if failed else "ok",
            "worker": "" if worker is None else worker,
            "error": code,
            "http_status": attrs.get(http_key),
            "retry_after_s": retry_after,
            "attempt": attrs.get("fleetchaos.attempt"),
            "item": attrs.get("fleetchaos.item"),
        }
        names = {
            "time": f"{path}.startTimeUnixNano",
            "task": f"{path}.traceId",
            "tool": f"{path}.attributes.gen_ai.tool.name",
            "duration_s": f"{path}.endTimeUnixNano",
            "worker": f"{path}.attributes.{worker_key}",
            "error": f"{path}.attributes.error.type",
            "http_status": f"{path}.attributes.{http_key}",
            "retry_after_s": f"{path}.attributes.{retry_key}",
            "attempt": f"{path}.attributes.fleetchaos.attempt",
            "item": f"{path}.attributes.fleetchaos.item",
        }
        return tool_call(fields, self.source, self.line, names)

    def retry_after(self, attrs: dict[str, Any]) -> tuple[str, Any]:
        """(the attribute it came from, its value in seconds or as given); an HTTP date is noted and left out."""
        key = "http.response.header.retry-after"
        if key not in attrs:
            key = "fleetchaos.retry_after_s"
        value = attrs.get(key)
        if isinstance(value, list):  # a header's values
            value = value[0] if value else None
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                self.stats.note("Retry-After given as an HTTP date: not read (seconds only)")
                return key, None
        return key, value


def parse_request(
    text: str, source: str, line: int | None, stats: ReadStats, worker_keys: tuple[str, ...] = DEFAULT_WORKER_KEYS
) -> Iterator[ToolCall | TaskSpan]:
    """The records of one export request given as JSON text."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        text = text.rstrip()
        truncated = exc.pos >= len(text)
        rule = "truncated JSON: the text ends inside a value" if truncated else f"not valid JSON: {exc.msg}"
        if line is None:  # a whole document: the error's own line (the last one when the text just stops)
            line = text.count("\n") + 1 if truncated else exc.lineno
        raise problem(
            source,
            line,
            None,
            f"{rule} (column {exc.colno})",
            fix="an OTLP JSON file has one complete export request per line",
        ) from None
    except RecursionError:
        raise problem(source, line, None, "JSON nested too deeply to be an OTLP export") from None
    return _Spans(source, line, worker_keys, stats).request(doc)
