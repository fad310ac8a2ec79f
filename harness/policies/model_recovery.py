"""Presets that answer failures with the model-side actions: a repair turn, a re-prompt with the tool's schema, a
fallback model, a stream resume, a context compaction (:mod:`fleetchaos.sim.model_turns` and
:mod:`fleetchaos.sim.compaction` realise them).

* ``repair-turn``, ``reprompt-schema``, ``fallback-model``, ``resume-stream``, ``compact-context``: the naive agent
  loop with one of the actions: every failure, whatever it is, gets that action (an agent SDK that hands every tool
  error back to the model and asks again), from the resume point the observation reveals, up to ``max_retries``,
  then give up.  They read nothing, so they run on any format; on a failure the action is not made for (a rate limit, a
  disk full) the action is the step's next turn, a plain retry.
* ``structured-llm``: the structured decision tree (:class:`~fleetchaos.policies.builtins.StructuredDecisionTree`)
  with every model-side branch on: a malformed call re-prompted with its schema, a denial sent to the fallback
  model once, a cut stream resumed, a context overflow compacted.  Each branch is taken only where the envelope's
  code says which model-side fault it is (:func:`~fleetchaos.policies.readers.model_fault_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fleetchaos.policies.builtins import StructuredDecisionTree
from fleetchaos.policies.readers import resume_of
from fleetchaos.sim.observation import (
    Action,
    CompactContext,
    FallbackModel,
    GiveUp,
    Observation,
    RecoveryPolicy,
    RepairTurn,
    RepromptWithSchema,
    ResumeStream,
    TaskHistory,
)

__all__ = ["MODEL_PRESETS", "ModelTurnRetry"]

_ACTIONS: dict[str, type[RepairTurn | RepromptWithSchema | FallbackModel | ResumeStream | CompactContext]] = {
    "repair": RepairTurn,
    "reprompt": RepromptWithSchema,
    "fallback": FallbackModel,
    "resume": ResumeStream,
    "compact": CompactContext,
}
_Mode = Literal["repair", "reprompt", "fallback", "resume", "compact"]


@dataclass(frozen=True, slots=True)
class ModelTurnRetry:
    """Answer every failure with one model-side action (``action``), up to ``max_retries``, then give up.

    ``repair``: show the model its call and the error and ask again; ``reprompt``: the same with the tool's
    schema; ``fallback``: send the turn to the fallback model; ``resume``: resume a cut stream keeping what
    committed; ``compact``: compact the context (a summary replaces the conversation: a partial answer at
    best).  The resume point is what the observation reveals (the start, on a bare "failed").
    """

    action: _Mode = "repair"
    max_retries: int = 3
    name: str = "repair-turn"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        if history.retries >= self.max_retries:
            return GiveUp()
        start, done = resume_of(observation)
        return _ACTIONS[self.action](0.0, start, done)


def _naive(name: str, action: _Mode) -> Callable[[], RecoveryPolicy]:
    def build() -> RecoveryPolicy:
        return ModelTurnRetry(action=action, name=name)

    build.__doc__ = f"Every failure gets the {action} action (three at most), whatever the error says."
    return build


def _structured_llm() -> RecoveryPolicy:
    """The structured tree with every model-side branch: re-prompt a malformed call, fall back on a denial, resume a
    cut stream, compact an overflowed context."""
    return StructuredDecisionTree(
        malformed="reprompt", denial="fallback", cut="resume", overflow="compact", name="structured-llm"
    )


#: The presets of this module, by name (joined into :data:`fleetchaos.policies.presets.PRESETS`).
MODEL_PRESETS: dict[str, Callable[[], RecoveryPolicy]] = {
    "repair-turn": _naive("repair-turn", "repair"),
    "reprompt-schema": _naive("reprompt-schema", "reprompt"),
    "fallback-model": _naive("fallback-model", "fallback"),
    "resume-stream": _naive("resume-stream", "resume"),
    "compact-context": _naive("compact-context", "compact"),
    "structured-llm": _structured_llm,
}
