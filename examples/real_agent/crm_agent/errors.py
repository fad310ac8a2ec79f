"""The agent's error contract: every tool failure becomes a ToolError carrying an AgentToolError-shaped envelope.

A failure a retry may fix at once is also the built-in exception a Python client raises for it
(``ToolUnavailable`` is a ``ConnectionError``, ``ToolTimeout`` a ``TimeoutError``), so the tools'
tenacity retries name them by type, as teams write them.
"""

from __future__ import annotations

import math


class ToolError(Exception):
    """A tool failure the orchestrator can act on: ``envelope`` holds code, category, recoverable, hints."""

    def __init__(self, envelope: dict):
        super().__init__(envelope["error_code"])
        self.envelope = envelope


class ToolUnavailable(ToolError, ConnectionError):
    """The tool's backend could not be reached (a dropped connection): retry it."""


class ToolTimeout(ToolError, TimeoutError):
    """The tool did not answer in time: its side effect may or may not have happened."""


class StoreError(Exception):
    """What the notes store's client raises: an HTTP-like status and an optional retry-after."""

    def __init__(self, status: int, retry_after_s: float | None = None):
        super().__init__(f"notes store answered {status}")
        self.status = status
        self.retry_after_s = retry_after_s


#: HTTP status -> (error_code, category, recoverable, suggested_action), as the team's API contract says.
STATUS_CONTRACT = {
    401: ("AUTH_EXPIRED", "auth", True, "refresh_credentials"),
    403: ("PERMISSION_DENIED", "auth", False, "request_access"),
    404: ("NOT_FOUND", "dependency", True, "use_alternative_source"),
    422: ("VALIDATION_FAILED", "validation", False, "fix_input_upstream"),
    424: ("DEPENDENCY_MISSING", "dependency", True, "reroute_or_provision"),
    500: ("BATCH_ITEM_FAILED", "transient", True, "retry_failed_items"),
    503: ("NETWORK_UNREACHABLE", "transient", True, "retry_with_backoff"),
}


def error_for_status(status: int, headers: dict | None = None) -> ToolError:
    """The error for an HTTP error status (429 by its retry headers; a 503 is a backend out of reach)."""
    envelope = envelope_for_status(status, headers)
    return ToolUnavailable(envelope) if status == 503 else ToolError(envelope)


def envelope_for_status(status: int, headers: dict | None = None) -> dict:
    """The contract envelope for an HTTP error status (429 by its retry headers)."""
    headers = headers or {}
    if status == 429:
        ms = headers.get("retry-after-ms")
        retry_ms = int(ms) if ms else math.ceil(float(headers.get("retry-after", "1")) * 1000)
        if headers.get("x-should-retry") == "false":
            return _env("QUOTA_EXCEEDED", "resource", True, "wait_for_quota_reset", retry_ms)
        return _env("RATE_LIMITED", "transient", True, "wait_retry_after", retry_ms)
    code, category, recoverable, action = STATUS_CONTRACT.get(status, ("UNCLASSIFIED", "fatal", False, "escalate"))
    return _env(code, category, recoverable, action)


def timeout_envelope() -> dict:
    """A call that timed out: its side effect may or may not have happened."""
    return _env("TOOL_TIMEOUT", "transient", True, "retry_with_backoff", context={"outcome": "unknown"})


def _env(code, category, recoverable, action, retry_after_ms=None, context=None) -> dict:
    return {
        "error_code": code,
        "category": category,
        "recoverable": recoverable,
        "suggested_action": action,
        "retry_after_ms": retry_after_ms,
        "context": context or {},
    }
