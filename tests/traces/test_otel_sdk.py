"""A trace file written by the OpenTelemetry Python SDK's own OTLP JSON file exporter is read and calibrated."""

from __future__ import annotations

import random

import pytest

from fleetchaos.calibrate.fit import calibrate
from fleetchaos.calibrate.yaml_out import to_yaml
from fleetchaos.scenario.load import parse_scenario
from fleetchaos.traces.read import read_file
from fleetchaos.traces.records import TaskSpan, ToolCall

sdk_trace = pytest.importorskip(
    "opentelemetry.sdk.trace", reason="needs the otel extra: pip install 'fleetchaos[otel]'"
)
file_exporter = pytest.importorskip("opentelemetry.exporter.otlp.json.file.trace_exporter")


def _write_with_sdk(path, tasks: int = 120) -> None:
    """An instrumented agent fleet, the SDK way: invoke_agent spans with execute_tool children, one process per worker."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    rng = random.Random(7)
    exporter = file_exporter.FileSpanExporter(path)
    providers = []
    for w in range(3):
        provider = sdk_trace.TracerProvider(resource=Resource.create({"service.name": "agents", "host.name": f"w{w}"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        providers.append(provider)
    t0 = 1_735_722_000 * 10**9
    for i in range(tasks):
        tracer = providers[i % 3].get_tracer("team.agents")
        start = t0 + i * 30 * 10**9
        root = tracer.start_span(
            "invoke_agent research", start_time=start, attributes={"gen_ai.agent.name": "research"}
        )
        from opentelemetry.trace import set_span_in_context

        context = set_span_in_context(root)
        t = start
        for tool, mean in (("search", 4.0), ("summarise", 9.0)):
            duration = int(rng.lognormvariate(0, 0.3) * mean * 10**9)
            span = tracer.start_span(
                f"execute_tool {tool}", context=context, start_time=t,
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
            )  # fmt: skip
            if tool == "search" and rng.random() < 0.2:
                span.set_attribute("error.type", "429")
                span.set_attribute("http.response.status_code", 429)
                span.set_status(Status(StatusCode.ERROR, "Too Many Requests"))
            span.end(end_time=t + duration)
            t += duration
        root.end(end_time=t)
    for provider in providers:
        provider.shutdown()


def test_sdk_file_is_read(tmp_path):
    """Every span the SDK wrote is read: tool calls with their tool, 429s as failures, hosts as workers."""
    path = tmp_path / "sdk.jsonl"
    _write_with_sdk(path)
    records = list(read_file(path, worker_keys=("host.name",)))
    calls = [r for r in records if isinstance(r, ToolCall)]
    tasks = [r for r in records if isinstance(r, TaskSpan)]
    assert len(calls) == 240 and len(tasks) == 120
    assert {c.tool for c in calls} == {"search", "summarise"}
    assert {c.worker for c in calls} == {"w0", "w1", "w2"}
    assert all(c.http_status == 429 and c.code == "429" for c in calls if not c.ok)
    assert {t.template for t in tasks} == {"research"}


def test_sdk_file_is_calibrated(tmp_path):
    """The SDK's file calibrates into a scenario that validates: its template, durations and 429 windows or rates."""
    path = tmp_path / "sdk.jsonl"
    _write_with_sdk(path)
    result = calibrate([path], name="sdk_fleet", worker_keys=("host.name",))
    scenario = parse_scenario(to_yaml(result), "sdk_fleet.yaml")
    assert scenario.fleet.workers == 3
    [template] = scenario.workload.templates
    assert [s.tool for s in template.steps] == ["search", "summarise"]
    search = next(f for f in result.latency if f.tool == "search")
    assert 3.0 < search.mean_s < 5.5
    assert any(f.kind == "rate_limit" for f in scenario.faults) or scenario.fleet.api_rate_per_s < 0.5
