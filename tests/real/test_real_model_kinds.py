"""The model's own faults met by real code: a team's loop over the real ``openai`` client sees each injected kind as
the SDK surfaces it from the provider's answer, and the run's records count it with the kind's ground truth.

The agent is written as teams write one: chat completions through ``openai.OpenAI`` (its own retries off) over httpx
against an OpenAI-compatible fake (a MockTransport) that answers with a call of ``lookup``, then of ``update``, then
a final answer, streamed when asked.  The loop asks again after a turn it cannot run (arguments that do not parse, a
tool it does not have, two calls under one id, an empty turn, a cut stream) and gives up on a refusal, a filter stop
or a length stop, unless it is the naive loop that asks again whatever happened.  Each fault hits the first task's
first model call only (a window of the first second); a re-asked turn comes after it.
"""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from model_loop_world import TOOLS, loop_scenario

from fleetchaos import Bindings, Route
from fleetchaos.real import run_real
from fleetchaos.real.model_turns import MODEL_TURNS, REFUSAL_TEXT, model_turn
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.kinds_model import DETERMINISTIC_DENIAL, MODEL_KINDS

BINDINGS = Bindings(routes=[Route("llm", "POST https://llm.test/v1/*", model=True)])
TOOL_SPECS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
    for name in ("lookup", "update")
]


def _sse(chunks: list[dict]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def chat_completions(request: httpx.Request) -> httpx.Response:
    doc = json.loads(request.content)
    done = sum(m["role"] == "tool" for m in doc["messages"])
    head = {"id": f"chatcmpl-{done}", "created": 0, "model": doc["model"]}
    if done == 2:
        message, finish = {"role": "assistant", "content": "updated"}, "stop"
    else:
        name = ("lookup", "update")[done]
        call = {"id": f"call_{done}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    if not doc.get("stream"):
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return httpx.Response(200, json={**head, "object": "chat.completion", "choices": [choice]})
    delta = {k: v for k, v in message.items() if k != "tool_calls"}
    if "tool_calls" in message:
        delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
    chunks = [
        {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": f}]}
        for d, f in ((delta, None), ({}, finish))
    ]
    return httpx.Response(200, content=_sse(chunks), headers={"content-type": "text/event-stream"})


def _ask(client: openai.OpenAI, messages: list, stream: bool) -> tuple[dict, str | None]:
    """One model call: the assistant message (content, refusal, tool calls) and its finish reason."""
    if not stream:
        choice = client.chat.completions.create(model="m", messages=messages, tools=TOOL_SPECS).choices[0]
        message = choice.message.model_dump(exclude_none=True)
        return message, choice.finish_reason
    message: dict = {"role": "assistant", "content": ""}
    calls: dict[int, dict] = {}
    finish = None
    for chunk in client.chat.completions.create(model="m", messages=messages, tools=TOOL_SPECS, stream=True):
        choice = chunk.choices[0]
        delta = choice.delta
        message["content"] += delta.content or ""
        if delta.refusal:
            message["refusal"] = message.get("refusal", "") + delta.refusal
        for part in delta.tool_calls or ():
            call = calls.setdefault(
                part.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            )
            call["id"] = part.id or call["id"]
            call["function"]["name"] += (part.function.name or "") if part.function else ""
            call["function"]["arguments"] += (part.function.arguments or "") if part.function else ""
        finish = choice.finish_reason or finish
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message, finish


def make_agent(seen: list, *, stream: bool = False, naive: bool = False):
    """The team's loop; ``seen`` gets what it met, as (what, detail) pairs."""

    def agent(task, rt):
        http = httpx.Client(transport=BINDINGS.transport(httpx.MockTransport(chat_completions)))
        client = openai.OpenAI(base_url="https://llm.test/v1", api_key="test", max_retries=0, http_client=http)
        messages: list[dict] = [{"role": "user", "content": task.title}]
        for _ in range(8):
            try:
                message, finish = _ask(client, messages, stream)
            except openai.APIConnectionError as exc:  # the SDK's error for a body the connection dropped
                seen.append(("connection error", type(exc.__cause__).__name__))
                continue
            calls = message.get("tool_calls") or []
            stop = message.get("refusal") or finish in ("content_filter", "length")
            if stop:
                seen.append((finish if not message.get("refusal") else "refusal", message.get("refusal") or calls))
                if naive:
                    continue
                return "failed"
            if not calls:
                if message.get("content"):
                    return "success"
                seen.append(("empty turn", finish))
                continue
            ids = [c["id"] for c in calls]
            if len(set(ids)) < len(ids):
                seen.append(("duplicate id", ids))
                continue
            try:
                runs = [(TOOLS[c["function"]["name"]], json.loads(c["function"]["arguments"]), c) for c in calls]
            except KeyError as exc:
                seen.append(("unknown tool", exc.args[0]))
                continue
            except json.JSONDecodeError as exc:
                seen.append(("bad arguments", exc.msg))
                continue
            messages.append({k: v for k, v in message.items() if k != "refusal"})
            for tool, _args, call in runs:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": tool(task.id)})
        return "failed"

    return agent


def _scenario(kind: str) -> Scenario:
    window = {"start_s": 0, "duration_s": 1}
    return loop_scenario("real-model-kinds", tasks=1, workers=1,
                         faults=[{"kind": kind, "tools": ["llm"], "probability": 1.0, "windows": [window]}])  # fmt: skip


#: kind -> what the loop meets, as the SDK surfaces it (the first entry of ``seen``)
SURFACES = {
    "refusal": ("refusal", REFUSAL_TEXT),
    "content_filter": ("content_filter", []),
    "truncated_call": ("length", None),
    "malformed_args": ("bad arguments", "Unterminated string starting at"),
    "unknown_tool": ("unknown tool", "lookup_v2"),
    "duplicate_call_id": ("duplicate id", None),
    "empty_turn": ("empty turn", "stop"),
    "stream_cut": ("connection error", "RemoteProtocolError"),
}
DENIALS = ("refusal", "content_filter", "truncated_call")


def test_every_model_side_kind_has_a_wire_answer():
    """Every model-side kind a call meets has its answer; context_overflow, emergent and simulator only, does not."""
    assert set(SURFACES) == MODEL_TURNS == {k.name for k in MODEL_KINDS} - {"context_overflow"}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("kind", sorted(SURFACES))
def test_each_model_kind_reaches_the_agent_as_the_sdk_surfaces_it_and_is_counted_with_its_truth(kind, stream):
    """The first model call meets the kind: the loop sees it through the openai client as a provider's answer would
    show it; the record counts one hit of it.  A denial (refusal, filter or length stop) ends the task as failed with
    no tool run; any other kind is asked again (one retry, not wasted: the re-asked turn is past the window), after
    which the task's two tools run once each.  A cut body reaches the loop as the SDK's APIConnectionError over
    httpx's RemoteProtocolError, streamed or not."""
    seen: list = []
    run = run_real(_scenario(kind), make_agent(seen, stream=stream), seed=1, bindings=BINDINGS, tasks=1)
    (rec,) = run.records
    what, detail = SURFACES[kind]
    assert seen[0][0] == what, seen
    if kind == "malformed_args":
        assert seen[0][1].startswith(detail)
    elif kind == "truncated_call":
        assert [c["function"]["arguments"] for c in seen[0][1]] == ['{"task_id": ']  # half-emitted
    elif kind == "duplicate_call_id":
        assert len(seen[0][1]) == 2 and len(set(seen[0][1])) == 1
    elif detail is not None:
        assert seen[0][1] == detail
    assert len(seen) == 1 and rec.fault_hits == {kind: 1}
    assert ("llm", kind, 1, 1, 1) in run.injections.rows  # drawn, realised and met once
    if kind in DENIALS:
        assert (rec.claim, rec.commits[1:], rec.retries) == ("failed", [[0], [0]], 0)
    else:
        assert (rec.claim, rec.commits[1:], rec.retries, rec.wasted_retries) == ("success", [[1], [1]], 1, 0)


@pytest.mark.parametrize("kind", ["refusal", "content_filter"])
def test_a_denial_a_naive_loop_asks_again_is_refused_again_and_every_retry_is_wasted(kind):
    """The window covers the task's model calls (60 s): the loop that asks again whatever happened meets the same
    denial on each of its eight calls (keyed per task and step); its seven retries are wasted, in the denial's
    family."""
    doc = _scenario(kind).model_dump(mode="json")
    doc["faults"][0]["windows"] = [{"start_s": 0, "duration_s": 60}]
    seen: list = []
    run = run_real(Scenario.model_validate(doc), make_agent(seen, naive=True), seed=1, bindings=BINDINGS, tasks=1)
    (rec,) = run.records
    assert len(seen) == 8 and rec.fault_hits == {kind: 8} and rec.claim == "failed"
    assert (rec.retries, rec.wasted_retries) == (7, 7)
    assert run.result.breakdowns["wasted_retries_by_family"] == {DETERMINISTIC_DENIAL: 7}


@pytest.mark.parametrize("kind, stream", [("stream_cut", True), ("stream_cut", False), ("malformed_args", True)])
def test_an_async_client_meets_the_same_answers(kind, stream):
    """The transport's async side answers alike: over ``openai.AsyncOpenAI`` a cut body is the SDK's
    APIConnectionError over httpx's RemoteProtocolError, streamed or not, and a streamed call's arguments do not
    parse; the re-asked turn is the task's one retry."""
    seen: list = []

    async def agent(task, rt):
        http = httpx.AsyncClient(transport=BINDINGS.transport(httpx.MockTransport(chat_completions)))
        client = openai.AsyncOpenAI(base_url="https://llm.test/v1", api_key="test", max_retries=0, http_client=http)
        messages: list[dict] = [{"role": "user", "content": task.title}]
        for _ in range(6):
            try:
                content, calls = "", []
                if stream:
                    async for chunk in await client.chat.completions.create(
                        model="m", messages=messages, tools=TOOL_SPECS, stream=True
                    ):
                        for part in chunk.choices[0].delta.tool_calls or ():
                            if part.id:
                                calls.append({"id": part.id, "name": part.function.name, "arguments": ""})
                            calls[-1]["arguments"] += part.function.arguments or ""
                        content += chunk.choices[0].delta.content or ""
                else:
                    message = (
                        (await client.chat.completions.create(model="m", messages=messages, tools=TOOL_SPECS))
                        .choices[0]
                        .message
                    )
                    content = message.content
                    calls = [
                        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                        for c in message.tool_calls or ()
                    ]
            except openai.APIConnectionError as exc:
                seen.append(("connection error", type(exc.__cause__).__name__))
                continue
            if not calls:
                return "success" if content else "failed"
            try:
                arguments = [json.loads(c["arguments"]) for c in calls]
            except json.JSONDecodeError as exc:
                seen.append(("bad arguments", exc.msg))
                continue
            messages.append(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": "{}"}}
                        for c in calls
                    ],
                }
            )
            for call, _ in zip(calls, arguments):
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": TOOLS[call["name"]](task.id)})
        return "failed"

    run = run_real(_scenario(kind), agent, seed=1, bindings=BINDINGS, tasks=1)
    (rec,) = run.records
    assert seen == [SURFACES[kind]] if kind == "stream_cut" else [s[0] for s in seen] == ["bad arguments"]
    assert rec.fault_hits == {kind: 1} and (rec.claim, rec.commits[1:], rec.retries) == ("success", [[1], [1]], 1)


def test_an_answer_for_any_request_body():
    """A body that is not JSON, or declares no tools, still gets the kind's turn: its call names ``tool``; an unknown
    tool's name is never one the request declared."""
    for content in (b"not json", b"[1, 2]", b"{}"):
        body = json.loads(b"".join(model_turn("malformed_args", content, (1, 0, 1)).parts))
        (call,) = body["choices"][0]["message"]["tool_calls"]
        assert call["function"]["name"] == "tool" and call["id"] == "call_fleetchaos_1_0_1"
    declared = json.dumps({"tools": [{"type": "function", "function": {"name": n}} for n in ("a", "a_v2")]}).encode()
    body = json.loads(b"".join(model_turn("unknown_tool", declared, (1, 0, 1)).parts))
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "a_v3"
