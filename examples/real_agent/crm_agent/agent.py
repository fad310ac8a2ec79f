"""The orchestrator: a tool-calling loop with the LLM, recovering from what the tools' own retries could not.

The model plans the sync turn by turn (fetch the contacts, update five of them, post a note, run the
diagnostic); the loop runs the tool calls each turn asks for and hands their results back.  Each
tool retries what a retry fixes at once by itself (tools.py); what still fails reaches the loop's
recovery, which follows the structured contract: wait out a retry-after, refresh an expired key,
back off on transient failures, stop on what a retry cannot fix.  The note carries an idempotency
key so a retry after a timeout that committed does not post it twice.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import httpx2
import openai

from . import tools
from .errors import ToolError
from .tracing import span

MAX_TRIES = 8
MAX_TURNS = 12
AUTH = "https://auth.test/token"

#: The tools as the model sees them (OpenAI function schemas).
TOOL_SCHEMAS = [
    {"type": "function", "function": {"name": name, "description": text, "parameters": {"type": "object", "properties": props}}}
    for name, text, props in (
        ("fetch_contacts", "The company's contacts.", {"company": {"type": "string"}}),
        ("update_contact", "Update one contact.", {"slot": {"type": "integer"}, "name": {"type": "string"}}),
        ("post_note", "Post a note on the company.", {"text": {"type": "string"}}),
        ("diagnose", "Check the company's synced records.", {"company": {"type": "string"}}),
    )
]  # fmt: skip


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
            return await op()
        except ToolError as exc:
            envelope = exc.envelope
        except openai.RateLimitError as exc:  # the SDK already honoured Retry-After twice
            envelope = {"error_code": "RATE_LIMITED", "recoverable": True,
                        "retry_after_ms": int(exc.response.headers.get("retry-after-ms", "1000"))}  # fmt: skip
        except openai.AuthenticationError:
            envelope = {"error_code": "AUTH_EXPIRED", "recoverable": True, "retry_after_ms": None}
        except (openai.APIConnectionError, openai.APITimeoutError):
            envelope = {"error_code": "NETWORK_UNREACHABLE", "recoverable": True, "retry_after_ms": None}
        if not envelope.get("recoverable"):
            raise GiveUp(envelope["error_code"])
        if envelope["error_code"] == "AUTH_EXPIRED":
            await crm.post(AUTH)  # refresh the API key, then try again at once
            continue
        wait_ms = envelope.get("retry_after_ms")
        await asyncio.sleep(wait_ms / 1000 if wait_ms else min(2.0**attempt, 30.0))
    raise GiveUp("retries exhausted")


async def _call_tool(name: str, args: dict, task_id: int, crm: httpx2.AsyncClient) -> str:
    if name == "fetch_contacts":
        return json.dumps(await tools.fetch_contacts(crm, args["company"]))
    if name == "update_contact":
        await tools.update_contact(crm, args["slot"], args["name"])
        return "updated"
    if name == "post_note":
        await tools.post_note(args["text"], key=f"note-{task_id}")
        return "posted"
    if name == "diagnose":
        return json.dumps(await tools.diagnose(args["company"]))
    raise GiveUp(f"unknown tool {name}")


async def run_task(title: str, task_id: int, *, llm: openai.AsyncOpenAI, crm: httpx2.AsyncClient) -> Report:
    """Sync the contacts of the company a task names: the model's loop, with recovery around every call."""
    messages: list[dict] = [{"role": "user", "content": f"Sync the CRM contacts for: {title}"}]
    with span("invoke_agent crm_sync", **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "crm_sync"}):
        try:
            for _ in range(MAX_TURNS):
                turn = await _with_recovery(
                    lambda: llm.chat.completions.create(model="planner", messages=messages, tools=TOOL_SCHEMAS), crm
                )
                message = turn.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    return Report("success", message.content or "")
                calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]
                results = await asyncio.gather(  # a turn's tool calls run side by side, as the model asked
                    *(
                        _with_recovery(lambda n=name, a=args: _call_tool(n, a, task_id, crm), crm)
                        for _, name, args in calls
                    ),
                    return_exceptions=True,  # every call ends before the task goes on or gives up
                )
                for result in results:
                    if isinstance(result, BaseException):
                        raise result
                for (call_id, name, _), result in zip(calls, results):
                    messages.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": result})
            raise GiveUp("the model did not finish")
        except GiveUp as exc:
            status = "escalated" if str(exc) in ("PERMISSION_DENIED", "VALIDATION_FAILED") else "failed"
            return Report(status, str(exc))
