"""Traces out: the OTLP JSON a simulated run writes is complete, deterministic, valid and secret-free."""

from __future__ import annotations

import json
from collections import Counter

from fleetchaos.scenario.load import load_scenario
from fleetchaos.sim.sanitise import PlantedSecrets
from fleetchaos.traces.otlp_read import ReadStats
from fleetchaos.traces.otlp_write import EPOCH_UNIX_S, trace_file_name
from fleetchaos.traces.read import read_file
from fleetchaos.traces.records import TaskSpan, ToolCall


def _spans(path):
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                yield from ss["spans"]


def _attrs(span) -> dict:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def test_same_seed_same_bytes(tmp_path, export_run):
    """Two runs of one seed write byte-identical files; another seed writes different ones."""
    scenario = load_scenario("crm_sync_403")
    _, _, a = export_run(tmp_path, scenario, "backoff", "generic", 5, "a.jsonl")
    _, _, b = export_run(tmp_path, scenario, "backoff", "generic", 5, "b.jsonl")
    _, _, c = export_run(tmp_path, scenario, "backoff", "generic", 6, "c.jsonl")
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_one_trace_per_task_one_span_per_call(default_export):
    """Every task is one trace with a root span, and every tool call the run counted is one execute_tool span."""
    result, _output, path = default_export
    spans = list(_spans(path))
    roots = [s for s in spans if "parentSpanId" not in s]
    calls = [s for s in spans if _attrs(s).get("gen_ai.operation.name") == "execute_tool"]
    assert len(roots) == result.metrics["tasks"]
    assert len(calls) == result.metrics["tool_calls"]
    root_ids = {(s["traceId"], s["spanId"]) for s in roots}
    assert all((s["traceId"], s["parentSpanId"]) in root_ids for s in calls)
    assert len({s["traceId"] for s in roots}) == len(roots)
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    assert min(int(s["startTimeUnixNano"]) for s in spans) >= EPOCH_UNIX_S * 10**9


def test_faults_on_spans_match_the_fault_log(default_export):
    """The fault kinds on call spans are the faults the run met, kind for kind."""
    _result, output, path = default_export
    on_spans = Counter(_attrs(s)["fleetchaos.fault.kind"] for s in _spans(path) if "fleetchaos.fault.kind" in _attrs(s))
    logged = Counter(kind for _t, kind, _tool, _worker, _task in output.fault_log)
    assert on_spans == logged
    assert sum(logged.values()) > 50


def test_failed_calls_carry_error_rendering_and_action(default_export):
    """A failed call has an error status, error.type, the dispatch's rendering and (unless the task ended) the action."""
    _result, _output, path = default_export
    failed = [s for s in _spans(path) if s["status"].get("code") == 2 and "gen_ai.tool.name" in _attrs(s)]
    assert failed
    for span in failed:
        attrs = _attrs(span)
        assert attrs["error.type"]
        assert attrs["fleetchaos.observation.status"] in ("failed", "ok")
    assert Counter("fleetchaos.policy.action" in _attrs(s) for s in failed)[True] > len(failed) / 2


def test_reader_reads_back_what_the_writer_wrote(default_export):
    """The OTLP reader finds every task and call of an exported run, with its worker and attempt."""
    result, _output, path = default_export
    stats = ReadStats()
    records = list(read_file(path, stats=stats))
    calls = [r for r in records if isinstance(r, ToolCall)]
    tasks = [r for r in records if isinstance(r, TaskSpan)]
    assert len(calls) == result.metrics["tool_calls"]
    assert len(tasks) == result.metrics["tasks"]
    assert {c.worker for c in calls} == {str(w) for w in range(10)}
    assert all(c.attempt >= 1 for c in calls)
    assert {t.template for t in tasks} == {"coding", "research", "crm_sync"}
    assert stats.skipped == 0


def test_no_planted_secret_reaches_the_traces(tmp_path, export_run):
    """A raw vendor format plants secrets in its error text; none of them is written to the traces."""
    scenario = load_scenario("default")
    _, _, path = export_run(tmp_path, scenario, "blind-retry", "raw", 2)
    text = path.read_text()
    secrets = PlantedSecrets.for_run(2).all()
    assert secrets
    assert not [s for s in secrets if s in text]


def test_trace_file_name_is_safe():
    """A policy named by import path gives a file name without separators or colons."""
    name = trace_file_name("default", "pkg.mod:Policy", "structured", 4)
    assert name == "default-pkg.mod_Policy-structured-seed4.otlp.jsonl"
    assert "/" not in trace_file_name("a/b", "../x", "y", 1)
