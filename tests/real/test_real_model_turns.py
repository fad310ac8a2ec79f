"""A real agent's tool-calling loop: each model call is a turn of the task's conversation, not a redone step, and its
tokens are the API's ``usage``.

The agent is written as teams write one: a chat-completions loop over httpx against an OpenAI-compatible endpoint (a
MockTransport), which answers with a tool call for two turns (``lookup``, then ``update``) and a final answer on the
third, each with its ``usage``; the team's loop retries a 429 itself after its Retry-After.
"""

from __future__ import annotations

import json
import time

import httpx
import openai
from model_loop_world import TOOLS, loop_scenario

from fleetchaos import Bindings, Route
from fleetchaos.real import run_real
from fleetchaos.scenario.load import Scenario

BINDINGS = Bindings(routes=[Route("llm", "POST https://llm.test/v1/*", model=True)])
TASKS = 20


def _usage(messages: list) -> dict:
    """What the fake provider bills: 100 + 40 per message read, 25 for a tool call written, 10 for a final answer."""
    final = sum(m["role"] == "tool" for m in messages) == 2
    return {"prompt_tokens": 100 + 40 * len(messages), "completion_tokens": 10 if final else 25}


def chat_completions(request: httpx.Request) -> httpx.Response:
    messages = json.loads(request.content)["messages"]
    done = sum(m["role"] == "tool" for m in messages)
    if done == 2:
        message = {"role": "assistant", "content": "updated"}
    else:
        name = ("lookup", "update")[done]
        call = {"id": f"call_{done}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": _usage(messages)}
    return httpx.Response(200, json=body)


def agent(task, rt, client: httpx.Client | None = None):
    client = client or httpx.Client(transport=BINDINGS.transport(httpx.MockTransport(chat_completions)))
    messages: list[dict] = [{"role": "user", "content": task.title}]
    while True:
        for _ in range(5):  # the team's own retry of a rate-limited model call
            response = client.post("https://llm.test/v1/chat/completions", json={"model": "m", "messages": messages})
            if response.status_code != 429:
                break
            time.sleep(float(response.headers["retry-after"]))
        message = response.raise_for_status().json()["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return "success"
        for call in message["tool_calls"]:
            result = TOOLS[call["function"]["name"]](task.id)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


def _scenario(faults: list[dict], **fleet) -> Scenario:
    return loop_scenario("real-loop", tasks=TASKS, faults=faults, duration_s=7200, **fleet)


def test_a_fault_free_loop_takes_turns_and_redoes_nothing():
    """Three model calls and two tool calls a task: five logical calls (three steps, two more turns), none redone.
    Tokens are the responses' usage: per task the three turns read 140 + 220 + 300 tokens (one, three, five
    messages) and write 25 + 25 + 10; the tools' calls spend none of the scenario's 2000 each."""
    run = run_real(_scenario([]), agent, seed=1, bindings=BINDINGS)
    m = run.metrics
    assert m["success_rate"] == 1.0
    assert (m["tool_calls"], m["logical_calls"]) == (5 * TASKS, 5 * TASKS)
    assert (m["redone_steps"], m["retries"], m["retry_amplification"]) == (0, 0, 1.0)
    assert m["input_tokens"] == TASKS * (140 + 220 + 300)
    assert m["tokens"] == TASKS * (140 + 220 + 300 + 25 + 25 + 10)
    assert all((r.turns, r.observed_turns) == (3, 3) for r in run.records)
    assert run.result.breakdowns["model_turns"] == {"observed": 3 * TASKS, "turns": 3 * TASKS}
    assert "tokens from the API's usage on 60 of 60 model turns" in run.result.recipe


def test_one_rate_limited_model_call_is_one_retry():
    """The provider's rate is cut to nearly nothing from 1 s to 31 s: the first task's first turn takes the bucket's one
    token, its second the token refilled before the cut, its third is refused with a 429, which the loop retries after
    its Retry-After: the run's one retry, one call more than the logical calls, and no step redone."""
    window = {"start_s": 1, "duration_s": 30}
    faults = [{"kind": "rate_limit", "windows": [window], "capacity_factor": 0.0001}]
    run = run_real(_scenario(faults, api_burst=1, api_rate_per_s=1), agent, seed=1, bindings=BINDINGS)
    m = run.metrics
    first = run.records[0]
    assert first.fault_hits == {"rate_limit": 1}
    assert (m["retries"], m["redone_steps"], m["success_rate"]) == (1, 0, 1.0)
    assert (m["tool_calls"], m["logical_calls"]) == (5 * TASKS + 1, 5 * TASKS)
    assert m["retry_amplification"] == round((5 * TASKS + 1) / (5 * TASKS), 6)
    assert run.result.breakdowns["model_turns"] == {"observed": 3 * TASKS, "turns": 3 * TASKS + 1}


def test_without_usage_the_scenario_models_the_tokens():
    """A provider that reports no usage: the scenario's rule counts the same turns.  The context starts at the
    2000-token system prompt and grows by 200 per result (the model's own answers and the tools'): the turns read
    2000, 2400 and 2800 tokens and write the llm step's 300 each; the tools' calls write none."""

    def no_usage(request: httpx.Request) -> httpx.Response:
        body = json.loads(chat_completions(request).content)
        del body["usage"]
        return httpx.Response(200, json=body)

    def plain_agent(task, rt):
        return agent(task, rt, httpx.Client(transport=BINDINGS.transport(httpx.MockTransport(no_usage))))

    run = run_real(_scenario([]), plain_agent, seed=1, bindings=BINDINGS, tasks=2)
    assert [(r.turns, r.observed_turns, r.input_tokens, r.tokens) for r in run.records] == [(3, 0, 7200, 8100)] * 2
    assert run.result.breakdowns["model_turns"] == {"observed": 0, "turns": 6}


def sdk_agent(task, rt):
    """The same loop with the OpenAI SDK, which retries a 429 itself (up to three tries more)."""
    http = httpx.Client(transport=BINDINGS.transport(httpx.MockTransport(chat_completions)))
    client = openai.OpenAI(api_key="test-key", base_url="https://llm.test/v1", max_retries=3, http_client=http)
    messages: list[dict] = [{"role": "user", "content": task.title}]
    while True:
        message = client.chat.completions.create(model="m", messages=messages).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return "success"
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": TOOLS[call.function.name](task.id)})


def test_a_429_the_sdk_retried_by_itself_is_a_transport_retry_and_the_next_turn_new_work():
    """The cut starts at 0.5 s: the first task's first turn takes the bucket's one token, its second (after the
    lookup) is refused and the SDK retries it after the Retry-After, inside the same call.  The team's code saw no
    failure: one transport retry, no retry of its own, and the third turn is the next turn, not a redone step."""
    faults = [{"kind": "rate_limit", "windows": [{"start_s": 0.5, "duration_s": 30}], "capacity_factor": 0.0001}]
    run = run_real(_scenario(faults, api_burst=1, api_rate_per_s=1), sdk_agent, seed=1, bindings=BINDINGS)
    m = run.metrics
    assert run.records[0].fault_hits == {"rate_limit": 1}
    assert (m["transport_retries"], m["retries"], m["failed_retries"], m["redone_steps"]) == (1, 0, 0, 0)
    assert (m["tool_calls"], m["logical_calls"], m["success_rate"]) == (5 * TASKS + 1, 5 * TASKS, 1.0)
