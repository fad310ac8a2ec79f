"""When to stop retrying: conditions ``stop(observation, history) -> bool``, joined with ``|`` (any) and ``&`` (all)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetchaos.policies._combinators import AllJoin, AnyJoin, BoolBlock
from fleetchaos.sim.observation import Observation, TaskHistory

__all__ = ["stop_after_attempt", "stop_after_delay", "stop_after_same_failure", "stop_all", "stop_any", "stop_never"]


class _StopBase(BoolBlock):
    """A stop condition: ``stop(observation, history) -> bool``; ``|`` stops on any, ``&`` on all."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, repr=False, init=False)
class stop_any(AnyJoin, _StopBase):
    """Stop when any member condition is reached."""

    members: tuple[Any, ...]


@dataclass(frozen=True, slots=True, repr=False, init=False)
class stop_all(AllJoin, _StopBase):
    """Stop only when every member condition is reached."""

    members: tuple[Any, ...]


_StopBase._any, _StopBase._all = stop_any, stop_all


@dataclass(frozen=True, slots=True, repr=False)
class stop_after_attempt(_StopBase):
    """Stop once ``max_attempts`` dispatches have been made (the first dispatch is attempt 1).

    ``stop_after_attempt(3)`` allows the first dispatch and two retries, as in tenacity.
    """

    max_attempts: int

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"stop_after_attempt: max_attempts must be >= 1, got {self.max_attempts}")

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """True when ``history.attempts >= max_attempts``."""
        return history.attempts >= self.max_attempts


@dataclass(frozen=True, slots=True, repr=False)
class stop_after_delay(_StopBase):
    """Stop once the task has run ``max_delay_s`` simulated seconds (``history.elapsed_s``): an overall deadline."""

    max_delay_s: float

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """True when ``history.elapsed_s >= max_delay_s``."""
        return history.elapsed_s >= self.max_delay_s


@dataclass(frozen=True, slots=True, repr=False)
class stop_after_same_failure(_StopBase):
    """Stop once the same failure has been seen ``count`` times in a row (``history.same_failure_streak``).

    The "repeated recoverable failures become fatal" rule of the category decision tree.
    """

    count: int

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """True when ``history.same_failure_streak >= count``."""
        return history.same_failure_streak >= self.count


@dataclass(frozen=True, slots=True, repr=False)
class stop_never(_StopBase):
    """Never stop (pair it with a bounded retry predicate, or the driver's per-task action cap stops it)."""

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """Always False."""
        return False
