"""A streamed model call's tokens come from the stream's own usage event.

The agent is the tool-calling loop of test_real_model_turns written with the OpenAI SDK's streaming
(``stream=True``), against an OpenAI-compatible fake that streams its answer as server-sent events, a chunk
at a time (not a body held in memory), and ends with the usage chunk when the request asks for it
(``stream_options={"include_usage": True}``).  The fake bills by hand-checkable rules: 100 tokens plus 40
per message read, 25 written for a tool call and 10 for the final answer.
"""

from __future__ import annotations

import json

import httpx2
import openai
import pytest
from model_loop_world import TOOLS, loop_scenario

from fleetchaos import Bindings, Route
from fleetchaos.real import run_real
from fleetchaos.scenario.load import Scenario

BINDINGS = Bindings(routes=[Route("llm", "POST https://llm.test/v1/*", model=True)])
TASKS = 4


def _chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
    choices = [] if usage is not None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": choices}
    body["usage"] = usage
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _events(request: httpx2.Request, in_memory: bool) -> httpx2.Response:
    payload = json.loads(request.content)
    messages = payload["messages"]
    done = sum(m["role"] == "tool" for m in messages)
    if done == 2:
        parts = [_chunk({"role": "assistant", "content": "upd"}), _chunk({"content": "ated"}, "stop")]
    else:
        name = ("lookup", "update")[done]
        call = {"index": 0, "id": f"call_{done}", "type": "function", "function": {"name": name, "arguments": ""}}
        parts = [
            _chunk({"role": "assistant", "tool_calls": [call]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, "tool_calls"),
        ]
    if (payload.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": 100 + 40 * len(messages), "completion_tokens": 10 if done == 2 else 25}
        parts.append(_chunk({}, usage=usage))
    parts.append(b"data: [DONE]\n\n")
    headers = {"content-type": "text/event-stream"}
    if in_memory:
        return httpx2.Response(200, headers=headers, content=b"".join(parts))
    # A streamed body: the split falls inside events, as network reads do.
    raw = b"".join(parts)
    pieces = [raw[i : i + 37] for i in range(0, len(raw), 37)]
    return httpx2.Response(200, headers=headers, stream=httpx2.ByteStream(b"") if not pieces else _Stream(pieces))


class _Stream(httpx2.SyncByteStream):
    def __init__(self, pieces: list[bytes]):
        self.pieces = pieces

    def __iter__(self):
        yield from self.pieces


def _agent(include_usage: bool, in_memory: bool = False):
    def agent(task, rt):
        backend = httpx2.MockTransport(lambda request: _events(request, in_memory))
        http = httpx2.Client(transport=BINDINGS.transport(backend))
        client = openai.OpenAI(api_key="test-key", base_url="https://llm.test/v1", http_client=http)
        options = {"stream_options": {"include_usage": True}} if include_usage else {}
        messages: list[dict] = [{"role": "user", "content": task.title}]
        while True:
            text, calls = "", {}
            for chunk in client.chat.completions.create(model="m", messages=messages, stream=True, **options):
                for choice in chunk.choices:
                    text += choice.delta.content or ""
                    for call in choice.delta.tool_calls or ():
                        calls.setdefault(call.index, {"id": call.id, "name": call.function.name, "arguments": ""})
                        calls[call.index]["arguments"] += call.function.arguments or ""
            if not calls:
                return "success" if text == "updated" else "failed"
            tool_calls = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls.values()
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
            for c in calls.values():
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": TOOLS[c["name"]](task.id)})

    return agent


def _scenario() -> Scenario:
    return loop_scenario("streamed-loop", tasks=TASKS)


@pytest.mark.parametrize("in_memory", [False, True], ids=["streamed", "in-memory"])
def test_the_usage_chunk_of_a_stream_gives_the_turns_tokens(in_memory):
    """Per task the three turns read 140 + 220 + 300 tokens (one, three, five messages) and write 25 + 25 + 10."""
    run = run_real(_scenario(), _agent(include_usage=True, in_memory=in_memory), seed=1, bindings=BINDINGS)
    m = run.metrics
    assert m["success_rate"] == 1.0
    assert m["input_tokens"] == TASKS * (140 + 220 + 300)
    assert m["tokens"] == TASKS * (140 + 220 + 300 + 25 + 25 + 10)
    assert run.result.breakdowns["model_turns"] == {"observed": 3 * TASKS, "turns": 3 * TASKS}
    assert f"tokens from the API's usage on {3 * TASKS} of {3 * TASKS} model turns" in run.result.recipe


def test_a_stream_without_usage_is_modelled_and_says_so():
    """Without ``include_usage`` no event reports usage: the scenario's rule counts the turns (the context starts at
    the 2000-token system prompt and grows by 200 per result: 2000 + 2400 + 2800 read, 300 written a turn)."""
    run = run_real(_scenario(), _agent(include_usage=False), seed=1, bindings=BINDINGS, tasks=2)
    assert [(r.turns, r.observed_turns, r.input_tokens, r.tokens) for r in run.records] == [(3, 0, 7200, 8100)] * 2
    assert run.result.breakdowns["model_turns"] == {"observed": 0, "turns": 6}
    assert "tokens from the API's usage on 0 of 6 model turns" in run.result.recipe
