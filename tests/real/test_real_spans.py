"""Spans and timestamps of a virtual-time run, and traces that follow the GenAI and MCP conventions."""

from __future__ import annotations

import time

import pytest

import fleetchaos
from fleetchaos.real import run_real


@fleetchaos.tool("fetch")
def fetch(task_id: int) -> str:
    return f"data-{task_id}"


def test_spans_of_a_virtual_time_run_carry_virtual_timestamps(small_scenario):
    """The team traces each tool call with the OpenTelemetry SDK (its span times bound from time.time_ns at import):
    a call's span lasts the call's virtual seconds and tasks' spans start their arrivals apart, so a run's traces
    show virtual time (before, 2 virtual hours of waits showed as milliseconds of spans); time.time agrees."""
    trace_sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = trace_sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("team")
    walls = []

    def traced(task, rt):
        with tracer.start_as_current_span(f"task {task.id}"):
            with tracer.start_as_current_span("execute_tool fetch"):
                fetch(task.id)  # 2 virtual seconds
            walls.append(time.time())
            time.sleep(3600)  # the agent's own wait: one virtual hour
        return "success"

    run = run_real(small_scenario([]), traced, seed=1, tasks=2)
    decided = [round(c.duration_s * 1e9) for c in run.calls]  # each fetch's virtual duration (2 s plus latency)
    tools = [s for s in exporter.get_finished_spans() if s.name == "execute_tool fetch"]
    tasks = [s for s in exporter.get_finished_spans() if s.name.startswith("task ")]
    assert [s.end_time - s.start_time for s in tools] == pytest.approx(decided, abs=1000)
    assert [s.end_time - s.start_time for s in tasks] == pytest.approx([d + 3600 * 10**9 for d in decided], abs=1000)
    # The second task starts when the first ends (a sync entry runs tasks in order), its fetch 3600 s after the first's.
    assert tasks[1].start_time - tasks[0].start_time == pytest.approx(decided[0] + 3600 * 10**9, abs=1000)
    assert walls[1] - walls[0] == pytest.approx(3600.0 + decided[1] / 1e9)


def test_an_mcp_tool_call_span_is_read_with_its_tool_error_and_session(tmp_path):
    """A client-side MCP span (OpenTelemetry's MCP conventions): `tools/call crm_update`, mcp.method.name tools/call,
    error.type tool_error (the result's isError) and an mcp.session.id, no gen_ai.tool.name: a failed call of
    crm_update with the code tool_error on the session's worker; a tools/list span is not a call."""
    import json

    from fleetchaos.traces.read import read_file
    from fleetchaos.traces.records import ToolCall

    def span(span_id, name, attrs, status):
        return {
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": span_id,
            "parentSpanId": "eee19b7ec3c1b174",
            "name": name,
            "kind": 3,
            "startTimeUnixNano": "1735722000000000000",
            "endTimeUnixNano": "1735722000250000000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
            "status": status,
        }

    call = span(
        "eee19b7ec3c1b173",
        "tools/call crm_update",
        {"mcp.method.name": "tools/call", "mcp.session.id": "sess-7", "error.type": "tool_error"},
        {"code": 2},
    )
    listing = span("eee19b7ec3c1b172", "tools/list", {"mcp.method.name": "tools/list"}, {})
    request = {
        "resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": [call, listing]}]}]
    }
    path = tmp_path / "mcp.otlp.jsonl"
    path.write_text(json.dumps(request) + "\n")
    assert list(read_file(path)) == [
        ToolCall("5b8efff798038103d269b633813fc60c", 1735722000.0, 0.25, "crm_update", "sess-7", False, "tool_error")
    ]


def test_written_tool_spans_follow_the_genai_and_mcp_conventions(default_export_small):
    """Each written tool-call span has gen_ai.tool.call.id (its own span id), mcp.method.name tools/call and one
    mcp.session.id per task and worker."""
    import json

    _, _, path = default_export_small
    spans = [
        s
        for line in path.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
        if s["name"].startswith("execute_tool ")
    ]
    assert spans
    sessions = {}
    for s in spans:
        attrs = {a["key"]: next(iter(a["value"].values())) for a in s["attributes"]}
        assert attrs["gen_ai.tool.call.id"] == s["spanId"] and attrs["mcp.method.name"] == "tools/call"
        sessions.setdefault((s["traceId"], attrs["fleetchaos.worker"]), set()).add(attrs["mcp.session.id"])
    assert all(len(ids) == 1 for ids in sessions.values())
    assert len({next(iter(ids)) for ids in sessions.values()}) == len(sessions)


@pytest.fixture(scope="module")
def default_export_small(tmp_path_factory):
    """A short traced run of the default scenario, exported as OTLP JSON: (result, output, path)."""
    from fleetchaos.runs.runner import run_one
    from fleetchaos.scenario.load import load_scenario
    from fleetchaos.traces.otlp_write import write_run_traces

    spec = load_scenario("default").model_copy(update={"duration_s": 3600.0})
    path = tmp_path_factory.mktemp("export") / "run.otlp.jsonl"
    kept = {}

    def hand(output):
        kept["output"] = output
        write_run_traces(output, path, scenario=spec.name, policy="backoff", errors="generic", seed=3)

    result = run_one(spec, "backoff", "generic", 3, trace=True, on_trace=hand)
    return result, kept["output"], path


def test_a_model_call_span_is_read_as_a_call_of_the_llm_step(tmp_path):
    """A GenAI chat span (the OpenAI SDK's instrumentation) that met a 429 is a failed call of the tool llm with its
    code, so calibration counts the model's own rate limits (it used to skip every model span)."""
    import json

    from fleetchaos.traces.otlp_read import ReadStats
    from fleetchaos.traces.read import read_file
    from fleetchaos.traces.records import ToolCall

    chat = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b171",
        "parentSpanId": "eee19b7ec3c1b174",
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1735722000000000000",
        "endTimeUnixNano": "1735722000500000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
            {"key": "error.type", "value": {"stringValue": "RateLimitError"}},
            {"key": "http.response.status_code", "value": {"intValue": "429"}},
            {"key": "fleetchaos.worker", "value": {"stringValue": "w1"}},
        ],
        "status": {"code": 2},
    }
    path = tmp_path / "chat.otlp.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [chat]}]}]}) + "\n")
    stats = ReadStats()
    assert list(read_file(path, stats=stats)) == [
        ToolCall("5b8efff798038103d269b633813fc60c", 1735722000.0, 0.5, "llm", "w1", False, "RateLimitError", 429)
    ]
    assert stats.skipped == 0 and stats.tool_calls == 1


def test_virtual_second_zero_is_midnight_utc_of_the_runs_day(small_scenario):
    """A scenario's second 0 is midnight, so a virtual run's wall clock reads its seconds after midnight (UTC) of the
    day it ran: a task arriving at second 10 reads 00:00:10, and traces calibrate into the scenario's hours."""
    seen = []

    def agent(task, rt):
        seen.append((task.arrival_s, time.time()))
        return "success"

    real_start = time.time()
    run_real(small_scenario([]), agent, seed=1, tasks=2)
    (a0, w0), (a1, w1) = seen
    assert (a0, a1) == (0.0, 10.0)
    assert (w0 % 86_400, w1 % 86_400) == (0.0, 10.0)
    real_end = time.time()
    assert w0 in (real_start - real_start % 86_400, real_end - real_end % 86_400)  # the run may straddle midnight
