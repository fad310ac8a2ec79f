"""What every trace reader yields: tool calls and the tasks (traces) they belong to."""

from __future__ import annotations

from typing import NamedTuple, final


class ToolCall(NamedTuple):
    """One tool call as a trace recorded it, whatever the file's format."""

    task: str
    """The task's (trace's) id."""
    start_s: float
    """Unix seconds when the call started."""
    duration_s: float
    tool: str
    worker: str
    """The worker (host, process, instance) that ran it; "" when the trace does not say."""
    ok: bool
    code: str | None = None
    """The error code the call reported (``error.type``), None when it reported none."""
    http_status: int | None = None
    retry_after_s: float | None = None
    attempt: int | None = None
    """Which dispatch of its task the call belongs to (1 = first), when the trace says."""
    item: int | None = None
    """Which parallel item of a fan-out step the call served, when the trace says."""


@final  # readers tell the two apart with ``type(r) is TaskSpan``
class TaskSpan(NamedTuple):
    """A task's own span (the root of its trace): when it arrived and what kind of task it is."""

    task: str
    start_s: float
    end_s: float
    template: str | None = None
