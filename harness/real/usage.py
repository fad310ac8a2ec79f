"""A model call's tokens from its answer's ``usage``, whole or streamed.

A bound model route's answered call counts its input and output tokens from the API's
``usage`` (OpenAI's ``prompt_tokens`` and ``completion_tokens``, or ``input_tokens`` and
``output_tokens``) instead of the scenario's rule.  A body read whole carries it at its top
level.  A streamed answer (``text/event-stream``) carries it in its events: OpenAI's final
chunk when the request asked for it (``stream_options={"include_usage": True}``),
Anthropic's ``message_start`` (input) and ``message_delta`` (output) events.  The stream
is not buffered: its bytes pass through to the caller as they come, and the events are
read on the way; the tokens are counted once, when the stream ends or the caller closes
it (an SDK closes it after the last event it wants), from the usage the events the caller
read reported.  A stream without usage, or one the caller stops reading before its usage
event, leaves the turn modelled, as a whole body without usage does; the run's ``model_turns`` breakdown says how many were
observed.

Standard library only; httpx and httpx2 are reached through the response's module.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

from fleetchaos.real.decision import Decision

__all__ = ["acount_usage", "count_usage"]

#: The longest event line kept while looking for usage (a longer one is skipped, never buffered whole).
MAX_EVENT_BYTES = 1 << 20


def count_usage(d: Decision, response: Any) -> None:
    """Count a model call's tokens from ``response`` (sync client): now for a body, at its end for a stream."""
    if not _reports_usage(d, response):
        return
    if _streamed(response):
        _watch_stream(d, response)
        return
    response.read()
    _count(d, _body_usage(response.content))


async def acount_usage(d: Decision, response: Any) -> None:
    """Count a model call's tokens from ``response`` (async client): now for a body, at its end for a stream."""
    if not _reports_usage(d, response):
        return
    if _streamed(response):
        _watch_stream(d, response)
        return
    await response.aread()
    _count(d, _body_usage(response.content))


def _reports_usage(d: Decision, response: Any) -> bool:
    """Whether a model call's answer may carry its ``usage``: a model call answered 2xx."""
    return d.modelled is not None and d.committed


def _streamed(response: Any) -> bool:
    return "event-stream" in response.headers.get("content-type", "")


def _watch_stream(d: Decision, response: Any) -> None:
    """Read a streamed answer's events as the caller reads them; count its usage at the stream's end."""
    module = sys.modules[type(response).__module__.split(".")[0]]
    try:
        content = response.content  # a mock answered with its body in memory: nothing streams
    except module.ResponseNotRead:
        response.stream = _stream_class(module)(response.stream, d)
        return
    events = _Events()
    events.feed(content)
    events.end(d)


_CLASSES: dict[str, type] = {}


def _stream_class(module: Any) -> type:
    """The usage-reading stream for ``module`` (httpx or httpx2), a sync and async byte stream both."""
    cls = _CLASSES.get(module.__name__)
    if cls is None:
        cls = _CLASSES[module.__name__] = type(
            "UsageStream", (_UsageStream, module.SyncByteStream, module.AsyncByteStream), {}
        )
    return cls


class _UsageStream:
    """Passes the inner stream's bytes through and reads its events; counts the usage when it ends."""

    def __init__(self, inner: Any, d: Decision):
        self.inner = inner
        self.d = d
        self.events = _Events()

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            self.events.feed(chunk)
            yield chunk
        self.events.end(self.d)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.events.feed(chunk)
            yield chunk
        self.events.end(self.d)

    def close(self) -> None:  # an SDK closes the stream after its last event, without reading on to its end
        self.events.end(self.d)
        if hasattr(self.inner, "close"):
            self.inner.close()

    async def aclose(self) -> None:
        self.events.end(self.d)
        if hasattr(self.inner, "aclose"):
            await self.inner.aclose()


class _Events:
    """The ``data:`` lines of an event stream, fed in chunks: the usage the events report, the last value winning."""

    __slots__ = ("done", "line", "read", "skipping", "wrote")

    def __init__(self) -> None:
        self.line = b""
        self.skipping = False
        self.read: object = None
        self.wrote: object = None
        self.done = False

    def feed(self, chunk: bytes) -> None:
        *lines, rest = (self.line + chunk).split(b"\n")
        for line in lines:
            if self.skipping:
                self.skipping = False
            else:
                self._event(line)
        self.line = rest
        if len(rest) > MAX_EVENT_BYTES:  # an event too long to be a usage report: skip to its end
            self.line, self.skipping = b"", True

    def end(self, d: Decision) -> None:
        if self.done:
            return
        self.done = True
        if not self.skipping:
            self._event(self.line)
        _count(d, {"input_tokens": self.read, "output_tokens": self.wrote})

    def _event(self, line: bytes) -> None:
        line = line.strip()
        if not line.startswith(b"data:"):
            return
        try:
            event = json.loads(line[5:])
        except ValueError:  # [DONE], or a line that is not JSON
            return
        if not isinstance(event, dict):
            return
        message = event.get("message")
        usage = event.get("usage") or (message.get("usage") if isinstance(message, dict) else None)
        if isinstance(usage, dict):
            read, wrote = _tokens(usage)
            self.read = self.read if read is None else read
            self.wrote = self.wrote if wrote is None else wrote


def _body_usage(content: bytes) -> dict | None:
    try:
        body = json.loads(content)
    except ValueError:
        return None
    usage = body.get("usage") if isinstance(body, dict) else None
    return usage if isinstance(usage, dict) else None


def _tokens(usage: dict) -> tuple[object, object]:
    return usage.get("prompt_tokens", usage.get("input_tokens")), usage.get(
        "completion_tokens", usage.get("output_tokens")
    )


def _count(d: Decision, usage: dict | None) -> None:
    """Hand the call's observed tokens to its injector when ``usage`` reports both as whole numbers."""
    if usage is None:
        return
    read, wrote = _tokens(usage)
    if all(type(n) is int and n >= 0 for n in (read, wrote)):
        d.injector.usage(d, read, wrote)
