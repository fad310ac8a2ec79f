"""The orchestrator: plan with the LLM, fetch, update five contacts, post a note; recover on the way.

Recovery follows the structured contract: wait out a retry-after, refresh an expired key,
back off on transient failures, stop on what a retry cannot fix.  Every call is bounded
by the agent's own timeout (``asyncio.wait_for``), and the note carries an idempotency key
so a retry after a timeout that committed does not post it twice.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx2
import openai

from . import tools
from .errors import ToolError

CALL_TIMEOUT_S = 30.0
MAX_TRIES = 8
AUTH = "https://auth.test/token"


@dataclass
class Report:
    """What the agent reports for one task."""

    status: str  # success | failed | escalated
    detail: str = ""


class GiveUp(Exception):
    """A failure no retry fixes."""


async def _with_recovery(op, crm: httpx2.AsyncClient):
    for attempt in range(MAX_TRIES):
        try:
            return await asyncio.wait_for(op(), CALL_TIMEOUT_S)
        except TimeoutError:
            envelope = {"error_code": "TOOL_TIMEOUT", "recoverable": True, "retry_after_ms": None}
        except ToolError as exc:
            envelope = exc.envelope
        except openai.RateLimitError as exc:  # the SDK already honoured Retry-After twice
            envelope = {"error_code": "RATE_LIMITED", "recoverable": True,
                        "retry_after_ms": int(exc.response.headers.get("retry-after-ms", "1000"))}  # fmt: skip
        except openai.AuthenticationError:
            envelope = {"error_code": "AUTH_EXPIRED", "recoverable": True, "retry_after_ms": None}
        except openai.APIConnectionError:
            envelope = {"error_code": "NETWORK_UNREACHABLE", "recoverable": True, "retry_after_ms": None}
        if not envelope.get("recoverable"):
            raise GiveUp(envelope["error_code"])
        if envelope["error_code"] == "AUTH_EXPIRED":
            await crm.post(AUTH)  # refresh the API key, then try again at once
            continue
        wait_ms = envelope.get("retry_after_ms")
        await asyncio.sleep(wait_ms / 1000 if wait_ms else min(2.0**attempt, 30.0))
    raise GiveUp("retries exhausted")


async def run_task(title: str, task_id: int, *, llm: openai.AsyncOpenAI, crm: httpx2.AsyncClient) -> Report:
    """Sync the contacts of the company a task names."""
    try:
        plan = await _with_recovery(
            lambda: llm.chat.completions.create(model="planner", messages=[{"role": "user", "content": title}]), crm
        )
        company = plan.choices[0].message.content or title
        contacts = await _with_recovery(lambda: tools.fetch_contacts(crm, company), crm)
        for slot, name in enumerate(contacts[:5]):
            await _with_recovery(lambda slot=slot, name=name: tools.update_contact(crm, slot, name), crm)
        await _with_recovery(lambda: tools.post_note(f"synced {company}", key=f"note-{task_id}"), crm)
    except GiveUp as exc:
        return Report("escalated" if str(exc) in ("PERMISSION_DENIED", "VALIDATION_FAILED") else "failed", str(exc))
    return Report("success")
