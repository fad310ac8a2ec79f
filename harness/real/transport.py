"""A chaos transport for httpx and httpx2, under any LLM SDK or HTTP tool.

Duck-typed: the class is built on the first use for whichever module the inner
transport (or the caller) names, subclassing that module's ``BaseTransport`` and
``AsyncBaseTransport``, so neither module is a dependency.  Each request that matches a
:class:`~fleetchaos.real.bindings.Route` is decided by the run's injector and realised as
an API would answer it:

* no fault: forwarded to the inner transport (it commits when answered 2xx; a repeated
  ``Idempotency-Key`` commits once); a model route's answer is read for its ``usage``
  (the call's tokens, observed; a streamed answer's events as the caller reads them:
  :mod:`fleetchaos.real.usage`);
* ``network_blip``: ``ConnectError``, not forwarded;
* a timeout: forwarded first when the draw says it committed, then a hang of the
  timeout, cut at the client's own read timeout (``request.extensions["timeout"]``),
  then ``ReadTimeout``;
* ``rate_limit`` and ``quota_exhausted``: 429 with ``Retry-After`` (whole seconds) and
  ``retry-after-ms`` from the bucket twin; other kinds their wire status (401, 403,
  404, 422, 5xx); ``x-should-retry: false`` on kinds a retry cannot fix;
* masking kinds: 200 with the route's empty or fabricated body, not forwarded;
* the model's own kinds on a model route: 200 with the broken turn in the chat completion
  (a refusal, a filter or length stop, bad arguments, an unknown tool, a repeated call id,
  an empty turn), or a body cut mid-call (:mod:`fleetchaos.real.model_turns`); a model request whose
  messages are past the window: the provider's 400 ``context_length_exceeded``;
* the MCP boundary's kinds on an MCP route: a JSON-RPC error, a 404 to the session, an
  ``isError`` result (forwarded first when the draw says the tool's work took effect), or a
  refused connection (:mod:`fleetchaos.real.mcp_wire`); an ``initialize`` or ``tools/list``
  after a failure renews the task's session or tool list.

An SDK's own retries are recognised by ``x-stainless-retry-count``: try n of the same
call, keyed as the simulator keys its transport layer's tries.  A request no route
matches is refused unless the bindings let it pass.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from typing import Any

from fleetchaos.real.context import ACTIVE, orphaned
from fleetchaos.real.decision import Decision
from fleetchaos.real.faults import UnboundCall
from fleetchaos.real.mcp_wire import INITIALIZE, LIST_TOOLS, TOOLS_CALL, mcp_answer, rpc_call
from fleetchaos.real.model_turns import CUT_MESSAGE, MODEL_TURNS, context_exceeded, model_turn, prompt_text
from fleetchaos.real.scope import SCOPE
from fleetchaos.real.usage import acount_usage, count_usage
from fleetchaos.sim.kinds_mcp import MCP_SIDE_KINDS

__all__ = ["chaos_transport", "http_module"]

_CLASSES: dict[str, type] = {}


def http_module(inner: Any = None, module: Any = None) -> Any:
    """The httpx-like module a transport serves: ``module``, else ``inner``'s, else httpx2, else httpx."""
    if module is not None:
        return module
    if inner is not None:
        return sys.modules[type(inner).__module__.split(".")[0]]
    for name in ("httpx2", "httpx"):
        try:
            return __import__(name)
        except ImportError:
            continue
    raise ImportError("the chaos transport needs httpx or httpx2 installed")


def chaos_transport(bindings: Any, inner: Any = None, module: Any = None) -> Any:
    """A transport for ``module`` (httpx or httpx2) that injects the run's faults into bound requests."""
    mod = http_module(inner, module)
    cls = _CLASSES.get(mod.__name__)
    if cls is None:
        cls = _CLASSES[mod.__name__] = type(
            "ChaosTransport", (_ChaosTransport, mod.BaseTransport, mod.AsyncBaseTransport), {"_module": mod}
        )
    return cls(bindings, inner)


class _ChaosTransport:
    _module: Any

    def __init__(self, bindings: Any, inner: Any = None):
        self.bindings = bindings
        self.inner = inner

    # -- sync ----------------------------------------------------------------------------

    def handle_request(self, request: Any) -> Any:
        d, route = self._begin(request)
        if d is None:
            return self._forward(request)
        kind = d.kind
        injector = d.injector
        if kind is None:
            if d.sleeps:
                injector.sleep_sync(d.duration_s)
            response = self._forwarded(d, request, self._forward(request))
            count_usage(d, response)
            return response
        if d.masking:
            if d.sleeps:
                injector.sleep_sync(d.duration_s)
            return self._masked(d, route, request)
        if route.model and kind.name in MODEL_TURNS:
            if kind.outcome_unknown and d.commits:
                self._forwarded(d, request, self._forward(request))
            if d.sleeps:
                injector.sleep_sync(self._hang_s(d, request) if kind.outcome_unknown else d.duration_s)
            return self._model_turn(d, request)
        if route.mcp and kind.name in MCP_SIDE_KINDS:
            if kind.outcome_unknown and d.commits:  # an isError: the tool ran, and what it did took effect
                self._forwarded(d, request, self._forward(request))
            if d.sleeps:
                injector.sleep_sync(d.duration_s)
            return self._mcp_failed(d, request)
        if kind.outcome_unknown:
            if d.commits:
                self._forwarded(d, request, self._forward(request))
            d.fire()
            if d.sleeps:
                injector.sleep_sync(self._hang_s(d, request))
            d.meet()
            raise self._module.ReadTimeout(_line(d), request=request)
        if d.sleeps:
            injector.sleep_sync(d.duration_s)
        return self._refused(d, request)

    def _forward(self, request: Any) -> Any:
        if self.inner is None:
            raise UnboundCall(
                f"{request.method} {request.url}: the chaos transport has no inner transport to answer it"
            )
        return self.inner.handle_request(request)

    # -- async ---------------------------------------------------------------------------

    async def handle_async_request(self, request: Any) -> Any:
        d, route = self._begin(request)
        if d is None:
            return await self._aforward(request)
        kind = d.kind
        if kind is None:
            if d.sleeps:
                await asyncio.sleep(d.duration_s)
            response = self._forwarded(d, request, await self._aforward(request))
            await acount_usage(d, response)
            return response
        if d.masking:
            if d.sleeps:
                await asyncio.sleep(d.duration_s)
            return self._masked(d, route, request)
        if route.model and kind.name in MODEL_TURNS:
            if kind.outcome_unknown and d.commits:
                self._forwarded(d, request, await self._aforward(request))
            if d.sleeps:
                await asyncio.sleep(self._hang_s(d, request) if kind.outcome_unknown else d.duration_s)
            return self._model_turn(d, request)
        if route.mcp and kind.name in MCP_SIDE_KINDS:
            if kind.outcome_unknown and d.commits:  # an isError: the tool ran, and what it did took effect
                self._forwarded(d, request, await self._aforward(request))
            if d.sleeps:
                await asyncio.sleep(d.duration_s)
            return self._mcp_failed(d, request)
        if kind.outcome_unknown:
            if d.commits:
                self._forwarded(d, request, await self._aforward(request))
            d.fire()
            if d.sleeps:
                try:
                    await asyncio.sleep(self._hang_s(d, request))
                except asyncio.CancelledError:
                    d.meet()  # met through the caller's own timeout
                    raise
            d.meet()
            raise self._module.ReadTimeout(_line(d), request=request)
        if d.sleeps:
            await asyncio.sleep(d.duration_s)
        return self._refused(d, request)

    async def _aforward(self, request: Any) -> Any:
        if self.inner is None:
            raise UnboundCall(
                f"{request.method} {request.url}: the chaos transport has no inner transport to answer it"
            )
        return await self.inner.handle_async_request(request)

    def close(self) -> None:
        if self.inner is not None and hasattr(self.inner, "close"):
            self.inner.close()

    async def aclose(self) -> None:
        if self.inner is not None and hasattr(self.inner, "aclose"):
            await self.inner.aclose()

    # -- shared --------------------------------------------------------------------------

    def _begin(self, request: Any) -> tuple[Decision | None, Any]:
        injector = ACTIVE.get()
        method, url = request.method, str(request.url)
        if injector is None:
            if orphaned():
                raise UnboundCall(
                    f"{method} {url}: sent from a thread without the run's context while a fleetchaos run is active"
                )
            return None, None
        bindings = self.bindings
        if bindings.is_refresh(method, url) and hasattr(injector, "refresh_credentials"):
            injector.refresh_credentials()
            return None, None
        route = bindings.route(method, url)
        if route is None:
            injector.unbound(f"{method} {url}", "no route matches")
            return None, None
        try:
            attempt = int(request.headers.get("x-stainless-retry-count") or 0)
        except ValueError:
            attempt = 0
        item = route.item(request) if route.item is not None else None
        key = request.headers.get("idempotency-key")
        if route.mcp:
            method, _, name = rpc_call(self._content(request))
            scope = SCOPE.get()
            if method in (INITIALIZE, LIST_TOOLS) and scope is not None and scope.runtime is injector:
                scope.renew_mcp(method == INITIALIZE)
            if method != TOOLS_CALL:
                return None, None  # the session's own requests: forwarded untouched
            return injector.begin(name or route.tool, item, attempt=attempt, idempotency_key=key), route
        if not route.model:
            return injector.begin(route.tool, item, attempt=attempt, idempotency_key=key), route
        try:
            prompt = prompt_text(request.content)
        except self._module.RequestNotRead:  # a streamed request body: its messages are not measured
            prompt = None
        return injector.begin(route.tool, item, attempt=attempt, idempotency_key=key, prompt=prompt), route

    def _content(self, request: Any) -> bytes:
        try:
            return request.content
        except self._module.RequestNotRead:  # a streamed request body: read as one that declares nothing
            return b""

    def _mcp_failed(self, d: Decision, request: Any) -> Any:
        """An MCP kind as the server answers it (a JSON-RPC error, a 404, an isError result), or a refused connection."""
        kind = d.kind
        assert kind is not None
        d.fire()
        _, request_id, _ = rpc_call(self._content(request))
        answer = mcp_answer(kind.name, request_id, d.tool)
        d.meet()
        if answer is None:
            raise self._module.ConnectError(_line(d), request=request)
        status, body = answer
        headers = {"content-type": "application/json"}
        return self._module.Response(status, headers=headers, content=body, request=request)

    def _forwarded(self, d: Decision, request: Any, response: Any) -> Any:
        if 200 <= response.status_code < 300:
            d.commit()
        else:
            d.called = True  # the inner backend answered with its own error: nothing took effect
        return response

    @staticmethod
    def _hang_s(d: Decision, request: Any) -> float:
        timeout = request.extensions.get("timeout") or {}
        read = timeout.get("read") if isinstance(timeout, dict) else None
        return d.duration_s if read is None else min(d.duration_s, float(read))

    def _masked(self, d: Decision, route: Any, request: Any) -> Any:
        kind = d.kind
        assert kind is not None  # the callers checked d.masking, which needs a kind
        d.fire()
        body = route.body(kind.name, request)
        d.meet()
        return self._module.Response(200, headers={"content-type": "application/json"}, content=body, request=request)

    def _model_turn(self, d: Decision, request: Any) -> Any:
        """The model's broken turn in a 200 (met as the caller gets it), or a body cut mid-call (met at the cut)."""
        kind = d.kind
        assert kind is not None
        d.fire()
        try:
            content = request.content
        except self._module.RequestNotRead:  # a streamed request body: answered as one that declares nothing
            content = b""
        turn = model_turn(kind.name, content, (d.task_id, d.step, d.execution))
        headers = {"content-type": turn.content_type}
        if not turn.cut:
            d.meet()
            return self._module.Response(200, headers=headers, content=b"".join(turn.parts), request=request)
        error = self._module.RemoteProtocolError(CUT_MESSAGE, request=request)
        stream = _cut_stream(self._module)(turn.parts, d, error)
        return self._module.Response(200, headers=headers, stream=stream, request=request)

    def _refused(self, d: Decision, request: Any) -> Any:
        fault = d.fault
        kind = d.kind
        assert fault is not None and kind is not None
        d.fire()
        d.meet()
        if kind.name == "network_blip":
            raise self._module.ConnectError(_line(d), request=request)
        headers = {"content-type": "application/json"}
        if fault.retry_after_s is not None and math.isfinite(fault.retry_after_s):
            headers["retry-after"] = str(math.ceil(fault.retry_after_s))
            headers["retry-after-ms"] = str(fault.retry_after_ms)
        if not kind.transport_retryable:
            headers["x-should-retry"] = "false"
        if d.context is not None:  # a model call past the window: the provider's own 400
            return self._module.Response(400, headers=headers, content=context_exceeded(*d.context), request=request)
        wire = kind.wire
        body = {"error": {"message": _line(d), "type": wire.errno if wire else kind.name, "status": fault.status}}
        return self._module.Response(fault.status, headers=headers, content=json.dumps(body).encode(), request=request)


_STREAMS: dict[str, type] = {}


def _cut_stream(mod: Any) -> type:
    """A body stream for ``mod`` (httpx or httpx2) that yields its parts, then drops the connection."""
    cls = _STREAMS.get(mod.__name__)
    if cls is None:
        cls = _STREAMS[mod.__name__] = type("CutStream", (_CutStream, mod.SyncByteStream, mod.AsyncByteStream), {})
    return cls


class _CutStream:
    def __init__(self, parts: list[bytes], d: Decision, error: Exception):
        self.parts = parts
        self.d = d
        self.error = error

    def _cut(self) -> Exception:
        if not self.d.met:
            self.d.meet()  # the cut reached the caller: its reading of the body failed
        return self.error

    def __iter__(self) -> Any:
        yield from self.parts
        raise self._cut()

    async def __aiter__(self) -> Any:
        for part in self.parts:
            yield part
        raise self._cut()


def _line(d: Decision) -> str:
    """The one-line error an API gives for the fault (status and reason; no secrets)."""
    wire = d.kind.wire if d.kind is not None else None
    if wire is None:
        return f"{d.tool}: request failed"
    return f"{wire.status} {wire.reason} ({wire.errno}) calling {d.tool}"
