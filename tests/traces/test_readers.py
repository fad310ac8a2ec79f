"""Traces in: the OTLP and plain readers accept the shapes teams have and refuse bad input with one clear message."""

from __future__ import annotations

import base64
import json

import pytest

from fleetchaos.traces.bounded import TraceFileError
from fleetchaos.traces.otlp_read import ReadStats
from fleetchaos.traces.read import read_file
from fleetchaos.traces.records import TaskSpan, ToolCall

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT = "eee19b7ec3c1b174"
CALL = "eee19b7ec3c1b173"


def _span(**over) -> dict:
    span = {
        "traceId": TRACE,
        "spanId": CALL,
        "parentSpanId": ROOT,
        "name": "execute_tool search",
        "kind": 1,
        "startTimeUnixNano": "1735722000000000000",
        "endTimeUnixNano": "1735722001500000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
            {"key": "error.type", "value": {"stringValue": "ECONNRESET"}},
            {"key": "http.response.status_code", "value": {"intValue": "503"}},
        ],
        "status": {"code": 2},
    }
    span.update(over)
    return span


def _request(*spans, resource=None) -> dict:
    attrs = [{"key": "host.name", "value": {"stringValue": "worker-7"}}] if resource is None else resource
    return {"resourceSpans": [{"resource": {"attributes": attrs}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]}


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(path, **kwargs) -> str:
    with pytest.raises(TraceFileError) as info:
        list(read_file(path, **kwargs))
    return str(info.value)


def test_otlp_line_gives_a_tool_call_with_worker_from_the_resource(tmp_path):
    """A collector-style line: the call's tool, times, failure, code, status and the resource's host as worker."""
    root = _span(spanId=ROOT, parentSpanId="", name="invoke_agent research", attributes=[], status={})
    path = _write(tmp_path, "t.jsonl", json.dumps(_request(_span(), root)) + "\n")
    call, task = list(read_file(path))
    assert call == ToolCall(TRACE, 1735722000.0, 1.5, "search", "worker-7", False, "ECONNRESET", 503)
    assert task == TaskSpan(TRACE, 1735722000.0, 1735722001.5, "research")


def test_protobuf_json_shapes_are_read(tmp_path):
    """Base64 ids, snake_case keys, enum names and integer times (protobuf's own JSON printer) read the same."""
    span = {
        "trace_id": base64.b64encode(bytes.fromhex(TRACE)).decode(),
        "span_id": base64.b64encode(bytes.fromhex(CALL)).decode(),
        "parent_span_id": base64.b64encode(bytes.fromhex(ROOT)).decode(),
        "name": "execute_tool search",
        "start_time_unix_nano": 1735722000000000000,
        "end_time_unix_nano": 1735722001500000000,
        "attributes": [{"key": "gen_ai.tool.name", "value": {"string_value": "search"}}],
        "status": {"code": "STATUS_CODE_ERROR"},
    }
    path = _write(tmp_path, "t.json", json.dumps({"resource_spans": [{"scope_spans": [{"spans": [span]}]}]}))
    [call] = list(read_file(path))
    assert (call.task, call.tool, call.ok, call.worker) == (TRACE, "search", False, "")


def test_a_pretty_printed_document_is_read_whole(tmp_path):
    """A single multi-line OTLP JSON document (not one request per line) is read."""
    path = _write(tmp_path, "t.json", json.dumps(_request(_span()), indent=2))
    assert len(list(read_file(path))) == 1


def test_plain_jsonl_and_csv_give_the_same_call(tmp_path):
    """The plain form as JSON lines and as CSV, with an ISO time, gives the same records."""
    row = {"time": "2025-01-01T09:00:00Z", "task": "t1", "tool": "search", "worker": "w1", "duration_s": 1.5,
           "outcome": "error", "error": "ENOSPC", "http_status": 507, "retry_after_s": 2, "attempt": 2, "item": 1,
           "template": "research"}  # fmt: skip
    jsonl = _write(tmp_path, "t.jsonl", json.dumps(row) + "\n\n")
    header = ",".join(row)
    csv = _write(tmp_path, "t.csv", header + "\n" + ",".join(str(v) for v in row.values()) + "\n")
    a, b = list(read_file(jsonl)), list(read_file(csv))
    assert a == b
    assert a[0] == ToolCall("t1", 1735722000.0, 1.5, "search", "w1", False, "ENOSPC", 507, 2.0, 2, 1)
    assert a[1] == TaskSpan("t1", 1735722000.0, 1735722001.5, "research")


def test_unknown_plain_fields_are_ignored_and_noted(tmp_path):
    """A field the plain form does not have is ignored, and counted in the reader's notes."""
    row = {"time": 1735722000, "task": "t", "tool": "x", "duration_s": 1, "outcome": "ok", "http_staus": 500}
    stats = ReadStats()
    list(read_file(_write(tmp_path, "t.jsonl", json.dumps(row) + "\n"), stats=stats))
    assert stats.notes == {"field 'http_staus' is not part of the plain form: ignored": 1}


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("cut.jsonl", json.dumps(_request(_span()))[:-30], "line 1: truncated JSON"),
        ("type.jsonl", json.dumps(_request(_span(startTimeUnixNano=1.5))), "startTimeUnixNano: must be Unix nanoseconds"),
        ("id.jsonl", json.dumps(_request(_span(traceId="xyz"))), "traceId: must be 32 hex digits"),
        ("end.jsonl", json.dumps(_request(_span(endTimeUnixNano="1"))), "endTimeUnixNano: ends before the span starts"),
        ("attr.jsonl", json.dumps(_request(_span(attributes=[{"key": 3}]))), "attributes[0].key: an attribute needs"),
        ("plain.jsonl", '{"time": 1735722000, "task": "t", "tool": "x", "duration_s": -1, "outcome": "ok"}',
         "line 1: duration_s: Input should be greater than or equal to 0 (got -1); give the call's duration"),
        ("missing.jsonl", '{"time": 1735722000, "task": "t", "tool": "x", "duration_s": 1}',
         "line 1: outcome: is missing; write ok or error"),
        ("word.jsonl", '{"time": 1735722000, "task": "t", "tool": "x", "duration_s": 1, "outcome": "meh"}',
         "outcome: Input should be 'ok' or 'error' (got 'meh')"),
        ("zone.jsonl", '{"time": "2025-01-01T09:00:00", "task": "t", "tool": "x", "duration_s": 1, "outcome": "ok"}',
         "time: an ISO 8601 time needs a time zone"),
        ("rows.csv", "time,task,tool,duration_s,outcome\n1735722000,t,x,1\n", "line 2: has 4 cells, the header has 5"),
        ("head.csv", "time,task\n1,2\n", "line 1: the header has no column 'tool', 'duration_s', 'outcome'"),
        ("empty.jsonl", "\n\n", "empty file"),
        ("text.txt", "hello\n", "cannot tell the format"),
        ("nul.jsonl", "\x00\x00\n", "contains NUL bytes"),
    ],
)  # fmt: skip
def test_bad_files_get_one_message_naming_line_field_and_value(tmp_path, name, text, expected):
    """Each broken file gives one TraceFileError naming the file, the line, the field, the value and the rule."""
    message = _error(_write(tmp_path, name, text + "\n"))
    assert message.startswith(str(tmp_path / name) + ": ")
    assert expected in message
    assert "\n" not in message


def test_a_line_over_the_cap_is_refused_without_reading_on(tmp_path):
    """A line longer than the cap is refused with its number; the rest is never read."""
    path = _write(tmp_path, "long.jsonl", json.dumps(_request(_span())) + "\n" + "x" * 5000 + "\n")
    message = _error(path, max_line_bytes=4096)
    assert "line 2: line is longer than 4,096 bytes" in message


def test_not_utf8_and_missing_and_folder(tmp_path):
    """Binary content, a missing path and a folder each get one message."""
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe{}\n")
    assert "not UTF-8 text" in _error(tmp_path / "bin.jsonl")
    assert "no such file" in _error(tmp_path / "nope.jsonl")
    assert "is a folder" in _error(tmp_path)


def test_reading_imports_neither_simpy_nor_numpy():
    """The readers and the code mapping are plain data work: importing them loads no SimPy, NumPy or SciPy."""
    import subprocess
    import sys

    code = (
        "import sys, fleetchaos.traces.read, fleetchaos.traces.codes; "
        "print([m for m in ('simpy', 'numpy', 'scipy') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
