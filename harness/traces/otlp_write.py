"""A traced simulated run written as OTLP JSON: one trace per task, one span per tool call.

The shape is the OpenTelemetry Collector file exporter's: one JSON
``ExportTraceServiceRequest`` per line (``resourceSpans`` / ``scopeSpans`` / ``spans``),
ids as lowercase hex, times as decimal strings of Unix nanoseconds, attributes as
``{"key", "value": AnyValue}``.  Tool calls follow the OpenTelemetry GenAI conventions
(``execute_tool`` spans with ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``error.type``
and an error status) and the MCP ones (``mcp.method.name`` ``tools/call``, and an
``mcp.session.id`` per task and worker: the session a task's agent holds with that
worker's tool server;
the wire codes and HTTP statuses are the simulated vendors' own, each kind's
:attr:`fleetchaos.sim.kinds.FaultKind.wire`);
what only a simulator knows is under ``fleetchaos.*``: the fault the call met (masked
ones included), the error format's rendering of the dispatch and the policy's action.

Deterministic: trace and span ids are hashes of the run's key (scenario, policy, error
format, seed) and the task and call, and simulated second ``t`` is written as
:data:`EPOCH_UNIX_S` + ``t``, so the same seed writes the same bytes.

The input is the world's trace events (``World(..., trace=True)``), read by their tuple
shape only: ``task``, ``dispatch``, ``calls``, ``fault``, ``observe``, ``action`` and
``end``; other events are ignored.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from fleetchaos.sim.kinds import KINDS, Wire

if TYPE_CHECKING:
    from fleetchaos.sim.world import RunOutput  # SimPy: for the type checker only

#: Fault kind -> how the simulated vendors report it on the wire (HTTP status, reason, code);
#: kinds a call never shows (masked or reporting ones) have none.
WIRE: dict[str, Wire] = {name: kind.wire for name, kind in KINDS.items() if kind.wire is not None}

#: Simulated second 0 is written as this Unix time: 2025-01-01T00:00:00Z (a midnight, so
#: the hours of the simulated day are the hours of the written timestamps, in UTC).
EPOCH_UNIX_S = 1_735_689_600

#: Tasks per written line (one export request per line, as a collector batches spans).
TASKS_PER_LINE = 64

#: Kinds that make a call look successful: written with an OK status (as a real trace
#: would show them) and only ``fleetchaos.fault.kind`` telling the truth.
MASKED_KINDS = frozenset({"silent_suppression", "fabricated_defaults"})


def _value(value: Any) -> dict:
    """An OTLP AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(pairs: dict[str, Any]) -> list[dict]:
    return [{"key": k, "value": _value(v)} for k, v in pairs.items() if v is not None]


def _nanos(t: float) -> str:
    return str(EPOCH_UNIX_S * 1_000_000_000 + round(t * 1e9))


def _hex_id(text: str, size: int) -> str:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=size).digest()
    if not any(digest):  # an all-zero id is invalid in OTLP
        digest = b"\x01" + digest[1:]
    return digest.hex()


@dataclass(slots=True)
class _Task:
    """One task's spans while it runs."""

    task_id: int
    start: float
    template: str = ""
    attempt: int = 0
    calls: list[dict] = field(default_factory=list)
    dispatch_calls: list[dict] = field(default_factory=list)
    """The faulted call spans of the current dispatch: the observation and action go on them."""
    observed: bool = False
    """Whether the current dispatch's outcome was rendered (a plain success is not)."""


@dataclass(slots=True)
class ExportSummary:
    """What one export wrote."""

    path: Path
    traces: int = 0
    spans: int = 0
    lines: int = 0


class OtlpWriter:
    """Writes one run's traces to ``path``; feed it the world's trace events in order."""

    def __init__(self, stream: IO[str], *, key: str, resource: dict[str, Any]):
        self._out = stream
        self._key = key
        self._resource = {"attributes": _attributes(resource)}
        self._open: dict[int, _Task] = {}
        self._done: list[dict] = []
        self.traces = 0
        self.spans = 0
        self.lines = 0

    # -- events --------------------------------------------------------------------------

    def feed(self, events: Iterable[tuple]) -> None:
        """Turn trace events into spans; a task's trace is written when the task ends."""
        for event in events:
            t, kind = event[0], event[1]
            if kind == "task":
                self._open[event[2]] = _Task(task_id=event[2], start=t, template=str(event[3]))
            elif kind == "dispatch":
                task = self._task(event[2], t)
                self._close_dispatch(task)
                task.attempt += 1
                task.dispatch_calls = []
                task.observed = False
            elif kind == "calls":
                self._calls(self._task(event[2], t), event)
            elif kind == "fault" and event[4] == "network_partition":
                self._partition(self._task(event[2], t), t, event)
            elif kind == "observe":
                self._observe(self._task(event[2], t), event)
            elif kind == "action":
                for span in self._task(event[2], t).dispatch_calls:
                    span["attributes"].extend(_attributes({"fleetchaos.policy.action": str(event[4])}))
            elif kind == "end":
                ended = self._open.pop(event[2], None)
                if ended is not None:
                    self._close_dispatch(ended)
                    self._finish(ended, t, str(event[4]))

    def close(self, end_s: float) -> None:
        """Write the tasks still in flight (ended at ``end_s``, claim ``in_flight``) and the last line."""
        for task_id in sorted(self._open):
            self._finish(self._open[task_id], end_s, "in_flight")
        self._open.clear()
        self._flush()

    def _task(self, task_id: int, t: float) -> _Task:
        task = self._open.get(task_id)
        if task is None:  # a trace that started without a task event: begin it here
            task = self._open[task_id] = _Task(task_id=task_id, start=t)
        return task

    def _span(self, task: _Task, name: str, start: float, duration: float, attributes: dict[str, Any]) -> dict:
        n = len(task.calls) + 1
        span = {
            "traceId": _hex_id(f"{self._key}/{task.task_id}", 16),
            "spanId": _hex_id(f"{self._key}/{task.task_id}/{n}", 8),
            "parentSpanId": _hex_id(f"{self._key}/{task.task_id}/0", 8),
            "name": name,
            "kind": 1,
            "startTimeUnixNano": _nanos(start),
            "endTimeUnixNano": _nanos(start + duration),
            "attributes": _attributes(attributes),
            "status": {},
        }
        task.calls.append(span)
        return span

    def _calls(self, task: _Task, event: tuple) -> None:
        _t, _kind, _task_id, worker, step, tool, start, calls = event[:8]
        for item, duration, fault in calls:
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": _hex_id(f"{self._key}/{task.task_id}/{len(task.calls) + 1}", 8),
                "gen_ai.tool.type": "function",
                "mcp.method.name": "tools/call",
                "mcp.session.id": _hex_id(f"{self._key}/{task.task_id}/worker {int(worker)}", 16),
                "fleetchaos.worker": int(worker),
                "fleetchaos.attempt": task.attempt,
                "fleetchaos.step": int(step),
                "fleetchaos.item": int(item),
                "fleetchaos.fault.kind": fault,
            }
            wire = WIRE.get(fault) if fault is not None else None  # (HTTP status, reason, wire code)
            if wire is not None:
                attributes["error.type"] = wire[2]
                attributes["http.response.status_code"] = wire[0]
            span = self._span(task, f"execute_tool {tool}", start, duration, attributes)
            if wire is not None:
                span["status"] = {"code": 2, "message": wire[1]}
            if fault is not None:
                task.dispatch_calls.append(span)

    def _partition(self, task: _Task, t: float, event: tuple) -> None:
        """A dispatch that never reached its worker: one span for the refused connection."""
        code = WIRE["network_partition"][2]
        span = self._span(
            task,
            "dispatch",
            t,
            0.0,
            {
                "fleetchaos.worker": int(event[3]),
                "fleetchaos.attempt": task.attempt,
                "fleetchaos.fault.kind": "network_partition",
                "error.type": code,
            },
        )
        span["status"] = {"code": 2, "message": WIRE["network_partition"][1]}
        task.dispatch_calls.append(span)

    def _close_dispatch(self, task: _Task) -> None:
        """A dispatch that ends unrendered was shown as a bare success: say so on its faulted calls."""
        if task.dispatch_calls and not task.observed:
            for span in task.dispatch_calls:
                span["attributes"].extend(
                    _attributes({"fleetchaos.observation.ok": True, "fleetchaos.observation.status": "ok"})
                )
        task.dispatch_calls = []

    def _observe(self, task: _Task, event: tuple) -> None:
        task.observed = True
        _t, _kind, _task_id, _worker, ok, status, code, retry_after = event[:8]
        pairs: dict[str, Any] = {
            "fleetchaos.observation.ok": bool(ok),
            "fleetchaos.observation.status": str(status),
            "fleetchaos.observation.error_code": None if code is None else str(code),
        }
        for span in task.dispatch_calls:
            span["attributes"].extend(_attributes(pairs))
            if retry_after is not None and span["attributes"] and _fault_of(span) in ("rate_limit", "quota_exhausted"):
                header = [str(max(0, math.ceil(retry_after)))]
                span["attributes"].extend(_attributes({"http.response.header.retry-after": header}))

    def _finish(self, task: _Task, end: float, claim: str) -> None:
        root = {
            "traceId": _hex_id(f"{self._key}/{task.task_id}", 16),
            "spanId": _hex_id(f"{self._key}/{task.task_id}/0", 8),
            "name": f"invoke_agent {task.template}".rstrip(),
            "kind": 1,
            "startTimeUnixNano": _nanos(task.start),
            "endTimeUnixNano": _nanos(max(end, task.start)),
            "attributes": _attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": task.template or None,
                    "fleetchaos.task.id": task.task_id,
                    "fleetchaos.claim": claim,
                }
            ),
            "status": {} if claim == "success" else {"code": 2, "message": claim},
        }
        self._done.append(root)
        self._done.extend(task.calls)
        self.traces += 1
        self.spans += 1 + len(task.calls)
        if self.traces % TASKS_PER_LINE == 0:
            self._flush()

    def _flush(self) -> None:
        if not self._done:
            return
        request = {
            "resourceSpans": [
                {"resource": self._resource, "scopeSpans": [{"scope": {"name": "fleetchaos.sim"}, "spans": self._done}]}
            ]
        }
        self._out.write(json.dumps(request, separators=(",", ":"), allow_nan=False))
        self._out.write("\n")
        self.lines += 1
        self._done = []


def _fault_of(span: dict) -> str | None:
    for attribute in span["attributes"]:
        if attribute["key"] == "fleetchaos.fault.kind":
            return attribute["value"].get("stringValue")
    return None


def trace_file_name(scenario: str, policy: str, errors: str, seed: int) -> str:
    """The file name a run's traces are written under (characters a file system dislikes become ``_``)."""
    raw = f"{scenario}-{policy}-{errors}-seed{seed}"
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in raw)[:200] + ".otlp.jsonl"


def write_run_traces(
    output: RunOutput, path: Path, *, scenario: str, policy: str, errors: str, seed: int, root: Path | None = None
) -> ExportSummary:
    """Write a traced run's :class:`~fleetchaos.sim.world.RunOutput` to ``path`` as OTLP JSON lines.

    Atomically (a temporary file renamed over ``path``), so a link planted at ``path`` is
    replaced, never written through; with ``root`` the file must lie inside that folder.
    """
    from fleetchaos.files import atomic_write

    if output.trace is None:
        raise ValueError("write_run_traces needs a traced run: build the World with trace=True")
    key = f"{scenario}/{policy}/{errors}/{seed}"
    resource = {
        "service.name": "fleetchaos-sim",
        "fleetchaos.scenario": scenario,
        "fleetchaos.policy": policy,
        "fleetchaos.errors": errors,
        "fleetchaos.seed": int(seed),
    }
    with atomic_write(path, "w", root=root, newline="\n") as stream:
        writer = OtlpWriter(stream, key=key, resource=resource)
        writer.feed(output.trace)
        writer.close(float(output.end_s))
    return ExportSummary(path=path, traces=writer.traces, spans=writer.spans, lines=writer.lines)


class TraceFolder:
    """Where ``--traces DIR`` writes: one OTLP JSON file per traced run, named by :func:`trace_file_name`."""

    def __init__(self, folder: Path, scenario: str):
        self.folder = folder
        self.scenario = scenario
        self.written: list[ExportSummary] = []

    def write(self, policy: str, errors: str, seed: int, output: RunOutput) -> ExportSummary:
        """Write one traced run's output; remembers what was written."""
        path = self.folder / trace_file_name(self.scenario, policy, errors, seed)
        summary = write_run_traces(
            output, path, scenario=self.scenario, policy=policy, errors=errors, seed=seed, root=self.folder
        )
        self.written.append(summary)
        return summary
