"""The model's own faults as a model provider puts them on the wire: the turn a chat completion carries.

A model route (``Route(..., model=True)``) is an OpenAI-compatible chat-completions
endpoint.  When one of its calls meets a model-side kind (:mod:`fleetchaos.sim.kinds_model`),
the chaos transport answers as the provider does: the request succeeds (200) and the
model's broken turn is in the body, where the agent's code (through its SDK) meets it:

=====================  =======================================================================
kind                   the answer
=====================  =======================================================================
``refusal``            ``message.refusal`` set, no content, no call; ``finish_reason`` ``stop``
``content_filter``     no content, no call; ``finish_reason`` ``content_filter``
``truncated_call``     one tool call whose arguments stop half-way; ``finish_reason`` ``length``
``malformed_args``     one tool call whose arguments are not JSON; ``finish_reason`` ``tool_calls``
``unknown_tool``       one tool call naming a tool the request did not declare
``duplicate_call_id``  two tool calls under one id
``empty_turn``         empty content, no call; ``finish_reason`` ``stop``
``stream_cut``         the body ends mid-call (a half-emitted tool call; for ``stream: true``,
                       SSE chunks without a finish chunk or ``[DONE]``), then the connection
                       drops: httpx raises ``RemoteProtocolError`` as the body is read
=====================  =======================================================================

Every other kind (a 429, a timeout, a dropped connection) keeps the HTTP shape the transport
gives any call.  A request whose ``messages`` are past the model's window
(``fleet.model.context_window_tokens``, counted by the tokeniser rule on the messages as compact JSON:
:func:`prompt_text`) is refused as the provider refuses it, a 400 whose error's ``code`` is
``context_length_exceeded`` (:func:`context_exceeded`): the ``context_overflow`` kind, met by the team's own
conversation.  A request with ``"stream": true`` gets the same turn as server-sent
``chat.completion.chunk`` events.  The calls name the first function the request declares
(``tools``, or the older ``functions``), ``tool`` when it declares none; their ids are
deterministic.  No ``usage`` is reported: the scenario's rule counts the turn's tokens.
Standard library only.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["CUT_MESSAGE", "MODEL_TURNS", "ModelTurn", "context_exceeded", "model_turn", "prompt_text"]

#: What httpx says when a server closes the connection before the body's end.
CUT_MESSAGE = "peer closed connection without sending complete message body (incomplete chunked read)"

REFUSAL_TEXT = "I'm sorry, but I can't help with that request."
#: Arguments that are not JSON (an unterminated string), and arguments cut half-way (a length stop, a cut stream).
BAD_ARGUMENTS = '{"task_id": 1, "note": "unterminated'
HALF_ARGUMENTS = '{"task_id": '


class ModelTurn:
    """One injected answer: its body's parts (all of them, or those before the cut) and its content type."""

    __slots__ = ("content_type", "cut", "parts")

    def __init__(self, parts: list[bytes], content_type: str, cut: bool):
        self.parts = parts
        self.content_type = content_type
        self.cut = cut
        """The connection drops after the parts: the body never ends."""


def _declared(doc: dict) -> list[str]:
    """The function names a chat-completions request declares (``tools``, or ``functions``), in its order."""
    names = []
    for tool in doc.get("tools") or doc.get("functions") or ():
        if isinstance(tool, dict):
            fn = tool["function"] if isinstance(tool.get("function"), dict) else tool
            if isinstance(fn.get("name"), str):
                names.append(fn["name"])
    return names


def _call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _turn(kind: str, doc: dict, call_id: str) -> tuple[dict, str | None]:
    """(the assistant message, its finish reason) of ``kind``'s answer; a cut stream's has no finish reason."""
    declared = _declared(doc)
    name = declared[0] if declared else "tool"
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if kind == "refusal":
        return {**message, "refusal": REFUSAL_TEXT}, "stop"
    if kind == "content_filter":
        return message, "content_filter"
    if kind == "empty_turn":
        return {**message, "content": ""}, "stop"
    if kind == "truncated_call":
        return {**message, "tool_calls": [_call(call_id, name, HALF_ARGUMENTS)]}, "length"
    if kind == "malformed_args":
        return {**message, "tool_calls": [_call(call_id, name, BAD_ARGUMENTS)]}, "tool_calls"
    if kind == "unknown_tool":
        unknown = next(f"{name}_v{n}" for n in range(2, len(declared) + 3) if f"{name}_v{n}" not in declared)
        return {**message, "tool_calls": [_call(call_id, unknown, "{}")]}, "tool_calls"
    if kind == "duplicate_call_id":
        return {**message, "tool_calls": [_call(call_id, name, "{}"), _call(call_id, name, "{}")]}, "tool_calls"
    assert kind == "stream_cut", kind
    return {**message, "tool_calls": [_call(call_id, name, HALF_ARGUMENTS)]}, None


#: The kinds a model route answers in the body (every model-side kind of the catalogue).
MODEL_TURNS: frozenset[str] = frozenset(
    {
        "refusal",
        "content_filter",
        "truncated_call",
        "malformed_args",
        "unknown_tool",
        "duplicate_call_id",
        "empty_turn",
        "stream_cut",
    }
)


def _event(data: dict | str) -> bytes:
    return b"data: " + (data if isinstance(data, str) else json.dumps(data)).encode() + b"\n\n"


def _chunks(head: dict, message: dict, finish: str | None) -> list[bytes]:
    """The turn as ``chat.completion.chunk`` events: the role, the content or refusal, each call (its id and name,
    then its arguments), the finish reason and ``[DONE]``; a turn without a finish reason stops after its calls."""
    chunk = {**head, "object": "chat.completion.chunk"}

    def event(delta: dict, finish_reason: str | None = None) -> bytes:
        return _event({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})

    events = [event({"role": "assistant", "content": ""})]
    for field in ("content", "refusal"):
        if message.get(field):
            events.append(event({field: message[field]}))
    for i, call in enumerate(message.get("tool_calls") or ()):
        fn = call["function"]
        opened = {"index": i, "id": call["id"], "type": "function", "function": {"name": fn["name"], "arguments": ""}}
        events.append(event({"tool_calls": [opened]}))
        events.append(event({"tool_calls": [{"index": i, "function": {"arguments": fn["arguments"]}}]}))
    if finish is not None:
        events += [event({}, finish), _event("[DONE]")]
    return events


def model_turn(kind: str, content: bytes, ids: tuple[int, int, int]) -> ModelTurn:
    """The answer to a chat-completions request (its body ``content``) whose call met ``kind`` (one of
    :data:`MODEL_TURNS`); ``ids`` (task, step, execution) name its completion and its calls."""
    try:
        doc = json.loads(content)
    except ValueError:
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    task, step, execution = ids
    model = doc.get("model") if isinstance(doc.get("model"), str) else "model"
    head = {"id": f"chatcmpl-fleetchaos-{task}-{step}-{execution}", "created": 0, "model": model}
    message, finish = _turn(kind, doc, f"call_fleetchaos_{task}_{step}_{execution}")
    cut = finish is None
    if doc.get("stream") is True:
        return ModelTurn(_chunks(head, message, finish), "text/event-stream", cut)
    choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
    body = json.dumps({**head, "object": "chat.completion", "choices": [choice]}).encode()
    return ModelTurn([body[: len(body) // 2] if cut else body], "application/json", cut)


def prompt_text(content: bytes) -> str | None:
    """The ``messages`` of a chat-completions request body as compact JSON (what the window is counted on), or None
    when the body names none."""
    try:
        doc = json.loads(content)
    except ValueError:
        return None
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list):
        return None
    return json.dumps(messages, separators=(",", ":"), ensure_ascii=False)


def context_exceeded(window: int, tokens: int) -> bytes:
    """The body of a provider's 400 for a request whose messages (``tokens``) are past the ``window``."""
    message = (
        f"This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} "
        "tokens. Please reduce the length of the messages."
    )
    error = {
        "message": message,
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
    return json.dumps({"error": error}).encode()
