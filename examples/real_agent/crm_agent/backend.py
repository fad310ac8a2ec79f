"""Offline stand-ins for the LLM provider and the CRM: httpx2 MockTransport handlers."""

from __future__ import annotations

import httpx2


def llm(request: httpx2.Request) -> httpx2.Response:
    """An OpenAI-compatible chat completion that names the company to sync."""
    return httpx2.Response(
        200,
        json={
            "id": "plan",
            "object": "chat.completion",
            "created": 0,
            "model": "planner",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Acme"}}],
            "usage": {"prompt_tokens": 412, "completion_tokens": 3, "total_tokens": 415},
        },
    )


def crm(request: httpx2.Request) -> httpx2.Response:
    """The CRM API: contacts, updates, and the auth endpoint that issues a fresh key."""
    if request.url.path.endswith("/contacts"):
        return httpx2.Response(200, json={"contacts": ["ada", "bob", "cy", "dee", "eve"]})
    return httpx2.Response(200, json={"ok": True})
