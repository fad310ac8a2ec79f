"""The scenario models of the model-side fault kinds (records in :mod:`fleetchaos.sim.kinds_model`).

Each is a per-call fault on the turns that emit the tools' calls: ``tools`` and
``templates`` choose the steps whose turns can meet it, ``probability`` how often.  A
refusal, a filter stop and a length stop are drawn once per task and step (the same
request gets the same answer on every try); the others afresh for every execution.
Imported by :mod:`fleetchaos.sim.fault_specs`, which collects every kind's model (and re-exports these).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fleetchaos.sim.fault_base import _CallFault, _Fault


class Refusal(_CallFault):
    """The model declines a step's request and emits no call; the same request is refused on every try."""

    kind: Literal["refusal"] = "refusal"
    probability: float = Field(default=0.01, ge=0, le=1, description="per task and step")


class ContentFilter(_CallFault):
    """The provider's content filter stops a step's answer; the same request is stopped on every try."""

    kind: Literal["content_filter"] = "content_filter"
    probability: float = Field(default=0.01, ge=0, le=1, description="per task and step")


class TruncatedCall(_CallFault):
    """The model's call is cut at the output length limit (a length stop); the same request is cut again."""

    kind: Literal["truncated_call"] = "truncated_call"
    probability: float = Field(default=0.01, ge=0, le=1, description="per task and step")


class MalformedArgs(_CallFault):
    """The model's call has arguments that do not parse or break the schema; asked again it usually gets them right."""

    kind: Literal["malformed_args"] = "malformed_args"


class UnknownTool(_CallFault):
    """The model calls a tool that does not exist; asked again it usually names a real one."""

    kind: Literal["unknown_tool"] = "unknown_tool"


class DuplicateCallId(_CallFault):
    """The model's turn emits two tool calls under one id; the turn is rejected before any call runs."""

    kind: Literal["duplicate_call_id"] = "duplicate_call_id"


class EmptyTurn(_CallFault):
    """The model's turn comes back empty: no text, no call."""

    kind: Literal["empty_turn"] = "empty_turn"


class StreamCut(_CallFault):
    """The model's stream is cut mid-answer; the calls it emitted before the cut may already have run."""

    kind: Literal["stream_cut"] = "stream_cut"
    probability: float = Field(default=0.01, ge=0, le=1, description="per call, while active")
    committed_probability: float = Field(
        default=0.5, ge=0, le=1, description="chance the cut call had already run (its side effect took effect)"
    )
    timeout_s: float = Field(default=30, gt=0, description="how long into the stream the cut comes")


class ContextOverflow(_Fault):
    """A model turn whose context is past the model's window; it emerges from fleet.model and is never declared."""

    kind: Literal["context_overflow"] = "context_overflow"

    @model_validator(mode="after")
    def _emerges(self) -> ContextOverflow:
        raise ValueError(
            "context_overflow is not declared: it emerges when a model turn's context passes "
            "fleet.model.context_window_tokens; set that, and fleet.model.result_tokens_sigma (how heavy-tailed tool "
            "outputs are), instead"
        )


__all__ = [
    "ContentFilter",
    "ContextOverflow",
    "DuplicateCallId",
    "EmptyTurn",
    "MalformedArgs",
    "Refusal",
    "StreamCut",
    "TruncatedCall",
    "UnknownTool",
]
