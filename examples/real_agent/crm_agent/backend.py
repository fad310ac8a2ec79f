"""Offline stand-ins for the LLM provider and the CRM: httpx2 MockTransport handlers.

The provider is an OpenAI-compatible chat completions endpoint that plays the planner's part of a
CRM sync: from the conversation so far it asks for the next tool call (fetch the contacts, update
each of them, post a note, run the diagnostic), then answers.  It bills 50 tokens plus 30 per
message read, and 20 written.
"""

from __future__ import annotations

import json

import httpx2


def _next_calls(messages: list[dict]) -> list[tuple[str, dict]]:
    done = {m.get("name") for m in messages if m["role"] == "tool"}
    if "fetch_contacts" not in done:
        return [("fetch_contacts", {"company": "Acme"})]
    if "update_contact" not in done:
        contacts = json.loads(next(m["content"] for m in messages if m.get("name") == "fetch_contacts"))
        return [("update_contact", {"slot": i, "name": n}) for i, n in enumerate(contacts[:5])]
    if "post_note" not in done:
        return [("post_note", {"text": "synced Acme"})]
    if "diagnose" not in done:
        return [("diagnose", {"company": "Acme"})]
    return []


def llm(request: httpx2.Request) -> httpx2.Response:
    """The model's next turn: tool calls, or the final answer."""
    messages = json.loads(request.content)["messages"]
    calls = _next_calls(messages)
    if calls:
        tool_calls = [
            {"id": f"call_{len(messages)}_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ]  # fmt: skip
        message, finish = {"role": "assistant", "content": None, "tool_calls": tool_calls}, "tool_calls"
    else:
        message, finish = (
            {"role": "assistant", "content": "Synced Acme: 5 contacts, note posted, records consistent."},
            "stop",
        )
    return httpx2.Response(
        200,
        json={
            "id": f"turn-{len(messages)}",
            "object": "chat.completion",
            "created": 0,
            "model": "planner",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 50 + 30 * len(messages), "completion_tokens": 20,
                      "total_tokens": 70 + 30 * len(messages)},
        },
    )  # fmt: skip


def crm(request: httpx2.Request) -> httpx2.Response:
    """The CRM API: contacts, updates, and the auth endpoint that issues a fresh key."""
    if request.url.path.endswith("/contacts"):
        return httpx2.Response(200, json={"contacts": ["ada", "bob", "cy", "dee", "eve"]})
    return httpx2.Response(200, json={"ok": True})
