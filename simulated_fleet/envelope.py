"""The structured error contract workers return across the orchestration boundary.

One shared, versioned model: a stable error code, a category that selects the recovery
branch, whether the orchestrator may act without a human, a suggested next step, what
completed before the failure, a retry-after hint, sanitised context and the schema
version that lets an orchestrator detect contract drift between nodes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.0"

ErrorCategory = Literal["transient", "resource", "auth", "validation", "dependency", "fatal"]


class PartialSuccess(BaseModel):
    """What finished before the failure: step references and safe artifact references."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    completed_steps: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()


class AgentToolError(BaseModel):
    """A tool failure as a control-plane message rather than a log line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    error_code: str = Field(min_length=1, description="stable and greppable, e.g. DISK_FULL")
    category: ErrorCategory
    recoverable: bool = Field(description="can the orchestrator act without a human?")
    suggested_action: str
    partial_success: PartialSuccess | None = None
    retry_after_ms: int | None = Field(default=None, ge=0)
    context: dict[str, str] = Field(default_factory=dict)
    schema_version: str = SCHEMA_VERSION


def step_ref(index: int, name: str) -> str:
    """The reference a worker uses for a completed step, e.g. ``"1:edit"``."""
    return f"{index}:{name}"


def item_ref(index: int, name: str, item: int) -> str:
    """The reference for one completed item of a fan-out step, e.g. ``"0:search#3"``."""
    return f"{index}:{name}#{item}"


def parse_step_ref(ref: str) -> int:
    """The step index of a step or item reference."""
    return int(ref.split(":", 1)[0])


def parse_item_ref(ref: str) -> tuple[int, int] | None:
    """``(step, item)`` of an item reference, or None for a plain step reference."""
    head, _, item = ref.partition("#")
    if not item:
        return None
    return parse_step_ref(head), int(item)
