"""Context overflow met by a real agent: a chat-completions request whose messages are past the model's window comes
back as the provider's 400 ``context_length_exceeded``, through the OpenAI SDK.

The agent asks the model, which calls ``fetch`` once; the tool's page joins the conversation and the model answers on
the next turn.  Every fourth task's page is 20,000 characters: the second request's messages, as compact JSON, are
past a 3,000-token window (at 4 characters a token, the page alone is 5,000 tokens), so that request is refused before
the provider reads it.  The other pages are 40 characters and every request fits.  Worked out by hand per task.
"""

from __future__ import annotations

import json

import httpx
import openai
import pytest

import fleetchaos
from fleetchaos import Bindings, Route
from fleetchaos.real import run_real
from fleetchaos.real.model_turns import prompt_text
from fleetchaos.scenario.load import Scenario

BINDINGS = Bindings(routes=[Route("llm", "POST https://llm.test/v1/*", model=True)])
TASKS = 8
WINDOW = 3000
BIG, SMALL = "x" * 20_000, "y" * 40
SUMMARY = "[the fetched page, summarised]"


def chat_completions(request: httpx.Request) -> httpx.Response:
    messages = json.loads(request.content)["messages"]
    if any(m["role"] == "tool" for m in messages):
        message: dict = {"role": "assistant", "content": "answered"}
    else:
        call = {"id": "call_0", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return httpx.Response(200, json={"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})


@fleetchaos.tool("fetch")
def fetch(task_id: int) -> str:
    return BIG if task_id % 4 == 0 else SMALL


def _client() -> openai.OpenAI:
    http = httpx.Client(transport=BINDINGS.transport(httpx.MockTransport(chat_completions)))
    return openai.OpenAI(api_key="test-key", base_url="https://llm.test/v1", max_retries=2, http_client=http)


def _agent(compact: bool):
    """The loop; on a context_length_exceeded it compacts (each tool result replaced by a short summary) or asks again
    as it is, three times at most, then reports the task failed (or partial, after a compaction)."""

    def agent(task, rt):
        client = _client()
        messages: list[dict] = [{"role": "user", "content": str(task.title)}]
        compacted, refused = False, 0
        while True:
            try:
                message = client.chat.completions.create(model="m", messages=messages).choices[0].message
            except openai.BadRequestError as exc:
                assert exc.status_code == 400 and exc.code == "context_length_exceeded"
                refused += 1
                if refused > 3:
                    return "failed"
                if compact:
                    messages = [{**m, "content": SUMMARY} if m["role"] == "tool" else m for m in messages]
                    compacted = True
                continue
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return "partial" if compacted else "success"
            for call in message.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": fetch(task.id)})

    return agent


def _scenario() -> Scenario:
    return Scenario.model_validate(
        {
            "name": "real-context",
            "duration_s": 3600,
            "fleet": {"orchestrators": 1, "workers": 1, "api_burst": 1000, "model": {"context_window_tokens": WINDOW}},
            "workload": {
                "templates": [
                    {
                        "name": "ask",
                        "steps": [
                            {"tool": "llm", "duration": {"mean_s": 2, "cv": 0}, "tokens": 100},
                            {"tool": "fetch", "duration": {"mean_s": 1, "cv": 0}, "uses_api": False},
                        ],
                    }
                ],
                "arrivals": [{"at_s": 60.0 * i, "template": "ask"} for i in range(TASKS)],
            },
        }
    )


def test_the_window_is_counted_on_the_requests_messages():
    messages = [{"role": "user", "content": "hi"}]
    assert prompt_text(json.dumps({"model": "m", "messages": messages}).encode()) == '[{"role":"user","content":"hi"}]'
    assert prompt_text(b"not json") is None and prompt_text(b'{"model": "m"}') is None


@pytest.mark.parametrize("compact", [False, True])
def test_a_request_past_the_window_is_the_providers_400_and_asking_again_is_wasted(compact):
    """Tasks 0 and 4 meet the big page.  Asking again sends the same messages: refused three times more, each retry
    wasted (the messages still past the window), and the task fails.  Compacting sends the summary instead: the retry
    fits, is not wasted, and the task ends partial (the agent says so; the tools' work took effect, so the truth is
    full and the oracle counts a false alarm, as it would for any honest-but-cautious claim)."""
    run = run_real(_scenario(), _agent(compact), seed=1, bindings=BINDINGS, claim=str)
    big = [r for r in run.records if r.id % 4 == 0]
    small = [r for r in run.records if r.id % 4]
    assert [r.id for r in big] == [0, 4] and all(r.fault_hits == {} and r.claim == "success" for r in small)
    for rec in big:
        if compact:
            assert rec.fault_hits == {"context_overflow": 1} and (rec.retries, rec.wasted_retries) == (1, 0)
            assert rec.claim == "partial"
        else:
            assert rec.fault_hits == {"context_overflow": 4} and (rec.retries, rec.wasted_retries) == (3, 3)
            assert rec.claim == "failed"
    assert run.metrics["wasted_retries"] == (0 if compact else 6)
