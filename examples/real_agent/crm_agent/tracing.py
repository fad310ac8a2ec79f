"""The agent's tracing: OpenTelemetry SDK spans, as the team exports them in production.

Each HTTP request is a span, made by ``TracingTransport`` around the client's transport (what an
httpx instrumentation package does; the agent's clients are httpx2, which such packages do not
instrument, so the team wraps the transport itself): a model request is ``chat <model>``
(``gen_ai.operation.name`` ``chat``, its ``gen_ai.usage.*`` tokens), a CRM request ``execute_tool
<tool>``.  The Python tools open their span per try.  Spans follow the OpenTelemetry GenAI
conventions (``gen_ai.tool.name``, ``error.type``, ``http.response.status_code``), so any
GenAI-aware backend, and ``fleetchaos calibrate``, reads them.  ``export_to(path)`` writes the
spans to an OTLP JSON file (the SDK's own file exporter) while it is open.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from contextvars import ContextVar

import httpx2
from opentelemetry import trace
from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode


class _Exporter(SpanExporter):
    """Forwards finished spans to the file being written, if any."""

    target: FileSpanExporter | None = None

    def export(self, spans):
        return self.target.export(spans) if self.target is not None else SpanExportResult.SUCCESS


_EXPORTER = _Exporter()
_PROVIDER = TracerProvider(resource=Resource.create({"service.name": "crm-agent"}))
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))
TRACER = _PROVIDER.get_tracer("crm_agent")

#: The worker a task runs on (production: the host; here each task says which it is).
WORKER: ContextVar[str] = ContextVar("crm_agent_worker", default="worker-0")


@contextlib.contextmanager
def export_to(path) -> Iterator[None]:
    """Write the spans finished in this block to ``path`` as OTLP JSON lines."""
    _EXPORTER.target = FileSpanExporter(str(path))
    try:
        yield
    finally:
        _EXPORTER.target.shutdown()
        _EXPORTER.target = None


def span(name: str, **attributes) -> contextlib.AbstractContextManager[trace.Span]:
    """A span of the current task, on its worker."""
    return TRACER.start_as_current_span(
        name, attributes={"service.instance.id": WORKER.get(), **attributes}, record_exception=False
    )


def failed(current: trace.Span, code: str, status: int | None = None, retry_after_s: float | None = None) -> None:
    """Mark ``current`` failed with the error code the call reported (and its HTTP status and Retry-After)."""
    current.set_attribute("error.type", code)
    if status is not None:
        current.set_attribute("http.response.status_code", status)
    if retry_after_s is not None:
        current.set_attribute("http.response.header.retry-after", retry_after_s)
    current.set_status(Status(StatusCode.ERROR, code))


def tool_span(tool: str) -> contextlib.AbstractContextManager[trace.Span]:
    """The span of one try of a tool call (GenAI ``execute_tool``)."""
    return span(f"execute_tool {tool}", **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool})


class TracingTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that records each request as a span: ``chat`` for the model, ``execute_tool`` for tools."""

    def __init__(self, inner, tool_of: Callable[[object], str | None]):
        self.inner = inner
        self.tool_of = tool_of

    async def handle_async_request(self, request):
        tool = self.tool_of(request)
        if tool is None:  # not a tool call (the auth refresh): untraced
            return await self.inner.handle_async_request(request)
        if tool == "llm":
            model = json.loads(request.content or b"{}").get("model", "")
            cm = span(f"chat {model}", **{"gen_ai.operation.name": "chat", "gen_ai.request.model": model})
        else:
            cm = tool_span(tool)
        with cm as current:
            try:
                response = await self.inner.handle_async_request(request)
            except Exception as exc:
                failed(current, type(exc).__name__)
                raise
            if response.status_code >= 400:
                retry_after = response.headers.get("retry-after")
                failed(current, str(response.status_code), response.status_code, retry_after and float(retry_after))
            elif tool == "llm":
                await response.aread()
                usage = json.loads(response.content).get("usage") or {}
                current.set_attribute("gen_ai.usage.input_tokens", usage.get("prompt_tokens", 0))
                current.set_attribute("gen_ai.usage.output_tokens", usage.get("completion_tokens", 0))
            return response

    async def aclose(self):
        await self.inner.aclose()
