"""The agent's tools: the CRM over HTTP (httpx2), the notes store in Python, both bound to the scenario.

The CRM calls go through whatever transport the client was built with (the chaos
transport in tests, the real network in production); the notes store's ``_store_note`` is
bound with ``@fleetchaos.tool``, which does nothing outside a fleetchaos run.
"""

from __future__ import annotations

import httpx2

import fleetchaos

from .errors import StoreError, ToolError, envelope_for_status, timeout_envelope

CRM = "https://crm.test/v1"
NOTES: list[tuple[str, str]] = []  # the notes store (production: a database)


async def _checked(request) -> httpx2.Response:
    try:
        response = await request
    except httpx2.ReadTimeout:
        raise ToolError(timeout_envelope()) from None
    except httpx2.ConnectError:
        raise ToolError(envelope_for_status(503)) from None
    if response.status_code >= 400:
        raise ToolError(envelope_for_status(response.status_code, dict(response.headers)))
    return response


async def fetch_contacts(crm: httpx2.AsyncClient, company: str) -> list[str]:
    """The company's contacts."""
    response = await _checked(crm.get(f"{CRM}/contacts", params={"company": company}))
    return response.json()["contacts"]


async def update_contact(crm: httpx2.AsyncClient, slot: int, name: str) -> None:
    """Update one contact (idempotent: the same slot and fields twice is one update)."""
    await _checked(crm.patch(f"{CRM}/contacts/{slot}", params={"slot": slot}, json={"name": name}))


def _store_errors() -> dict:
    # Each injected fault reaches the store's client as the store's own error type.
    return {
        kind: (lambda f: StoreError(f.status, f.retry_after_s))
        for kind in ("network_blip", "rate_limit", "expired_key", "timeout", "validation_error", "permission_denied")
    }


@fleetchaos.tool("post_note", idempotency_key=lambda text, key: key, errors=_store_errors())
async def _store_note(text: str, key: str) -> None:
    NOTES.append((key, text))


async def post_note(text: str, key: str) -> None:
    """Post a note; ``key`` makes a retried post take effect once."""
    try:
        await _store_note(text, key)
    except StoreError as exc:
        if exc.status == 504:
            raise ToolError(timeout_envelope()) from None
        headers = {} if exc.retry_after_s is None else {"retry-after-ms": str(round(exc.retry_after_s * 1000))}
        raise ToolError(envelope_for_status(exc.status, headers)) from None
