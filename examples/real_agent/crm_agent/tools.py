"""The agent's tools: the CRM over HTTP (httpx2), the notes store in Python, a diagnostic script, each with its retry.

Each tool retries what a retry fixes at once with tenacity, its own configuration per tool (a
dropped connection on every tool, a timeout on the idempotent CRM calls, never on the append-only
note); the chaos suite declares the same configurations to fleetchaos (bindings.py), so the
simulation retries as this code does.  The CRM calls go through whatever transport the client was
built with (the chaos transport in tests, the network in production); the notes store's
``_store_note`` and the diagnostic ``_diagnose`` are bound with ``@fleetchaos.tool``, which does
nothing outside a fleetchaos run.
"""

from __future__ import annotations

import asyncio
import json
import sys

import httpx2
import tenacity

import fleetchaos

from .errors import StoreError, ToolError, ToolTimeout, ToolUnavailable, error_for_status, timeout_envelope
from .tracing import failed, tool_span

CRM = "https://crm.test/v1"
NOTES: list[tuple[str, str]] = []  # the notes store (production: a database)
DIAGNOSE_TIMEOUT_S = 20.0


def _retrying(attempts: int, on: tuple[type[BaseException], ...]) -> tenacity.AsyncRetrying:
    return tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=0.5, max=4),
        retry=tenacity.retry_if_exception_type(on),
        reraise=True,
    )


#: Each tool's own retry: reads and idempotent writes retry drops and timeouts, the note only drops.
FETCH_RETRY = _retrying(4, (ConnectionError, TimeoutError))
UPDATE_RETRY = _retrying(3, (ConnectionError, TimeoutError))
NOTE_RETRY = _retrying(2, (ConnectionError,))
DIAGNOSE_RETRY = _retrying(2, (ConnectionError,))


async def _retried(retrying: tenacity.AsyncRetrying, op):
    async for attempt in retrying.copy():
        with attempt:
            return await op()


async def _checked(request) -> httpx2.Response:
    try:
        response = await request
    except httpx2.ReadTimeout:
        raise ToolTimeout(timeout_envelope()) from None
    except httpx2.ConnectError:
        raise error_for_status(503) from None
    if response.status_code >= 400:
        raise error_for_status(response.status_code, dict(response.headers))
    return response


async def fetch_contacts(crm: httpx2.AsyncClient, company: str) -> list[str]:
    """The company's contacts."""
    response = await _retried(FETCH_RETRY, lambda: _checked(crm.get(f"{CRM}/contacts", params={"company": company})))
    return response.json()["contacts"]


async def update_contact(crm: httpx2.AsyncClient, slot: int, name: str) -> None:
    """Update one contact (idempotent: the same slot and fields twice is one update)."""
    await _retried(
        UPDATE_RETRY, lambda: _checked(crm.patch(f"{CRM}/contacts/{slot}", params={"slot": slot}, json={"name": name}))
    )


def _store_errors() -> dict:
    # Each injected fault reaches the store's client as the store's own error type.
    return {
        kind: (lambda f: StoreError(f.status, f.retry_after_s))
        for kind in ("network_blip", "rate_limit", "expired_key", "timeout", "validation_error", "permission_denied")
    }


@fleetchaos.tool("post_note", idempotency_key=lambda text, key: key, errors=_store_errors())
async def _store_note(text: str, key: str) -> None:
    NOTES.append((key, text))


async def _post_once(text: str, key: str) -> None:
    with tool_span("post_note") as current:
        try:
            await _store_note(text, key)
        except StoreError as exc:
            if exc.status == 504:
                failed(current, "TOOL_TIMEOUT", 504)
                raise ToolTimeout(timeout_envelope()) from None
            headers = {} if exc.retry_after_s is None else {"retry-after-ms": str(round(exc.retry_after_s * 1000))}
            error = error_for_status(exc.status, headers)
            failed(current, error.envelope["error_code"], exc.status, exc.retry_after_s)
            raise error from None


async def post_note(text: str, key: str) -> None:
    """Post a note; ``key`` makes a retried post take effect once."""
    await _retried(NOTE_RETRY, lambda: _post_once(text, key))


#: The diagnostic script: it checks the synced records and prints a verdict (production: the team's ops script).
SCRIPT = "import json, sys; print(json.dumps({'company': sys.argv[1], 'records': 5, 'verdict': 'consistent'}))"


@fleetchaos.tool("diagnose", errors={"network_blip": lambda f: ConnectionResetError(f.message)})
async def _diagnose(company: str) -> dict:
    """Run the diagnostic script for ``company`` in a subprocess, bounded by its own timeout."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", "-c", SCRIPT, company, stdout=asyncio.subprocess.PIPE
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), DIAGNOSE_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ToolTimeout(timeout_envelope()) from None
    if proc.returncode:
        raise ToolError({**timeout_envelope(), "error_code": "DIAGNOSTIC_FAILED", "category": "fatal"})
    return json.loads(out)


async def _diagnose_once(company: str) -> dict:
    with tool_span("diagnose") as current:
        try:
            return await _diagnose(company)
        except ConnectionResetError:
            failed(current, "NETWORK_UNREACHABLE")
            raise ToolUnavailable(error_for_status(503).envelope) from None
        except ToolError as exc:
            failed(current, exc.envelope["error_code"])
            raise


async def diagnose(company: str) -> dict:
    """The diagnostic verdict on ``company``'s synced records."""
    return await _retried(DIAGNOSE_RETRY, lambda: _diagnose_once(company))
