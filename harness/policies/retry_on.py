"""What to retry on: predicates ``pred(observation, history) -> bool``, joined with ``|`` (any) and ``&`` (all)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetchaos.policies._combinators import AllJoin, AnyJoin, BoolBlock
from fleetchaos.policies.readers import category_of, code_of, retryable_of
from fleetchaos.sim.observation import Observation, TaskHistory

__all__ = [
    "retry_all",
    "retry_always",
    "retry_any",
    "retry_if_category",
    "retry_if_code",
    "retry_if_retryable",
    "retry_never",
]


class _RetryBase(BoolBlock):
    """A retry predicate: ``pred(observation, history) -> bool``; ``|`` is any, ``&`` is all."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, repr=False, init=False)
class retry_any(AnyJoin, _RetryBase):
    """Retry when any member predicate holds (an empty join never holds)."""

    members: tuple[Any, ...]


@dataclass(frozen=True, slots=True, repr=False, init=False)
class retry_all(AllJoin, _RetryBase):
    """Retry when every member predicate holds (an empty join always holds)."""

    members: tuple[Any, ...]


_RetryBase._any, _RetryBase._all = retry_any, retry_all


@dataclass(frozen=True, slots=True, repr=False, init=False)
class retry_if_category(_RetryBase):
    """Retry when the envelope's category word (see :func:`category_of`) is one of ``categories``."""

    categories: tuple[str, ...]

    def __init__(self, *categories: str) -> None:
        if not categories:
            raise ValueError("retry_if_category: name at least one category, e.g. retry_if_category('transient')")
        object.__setattr__(self, "categories", tuple(categories))

    def __repr__(self) -> str:
        return f"retry_if_category({', '.join(map(repr, self.categories))})"

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """True when the category is listed."""
        return category_of(observation) in self.categories


@dataclass(frozen=True, slots=True, repr=False, init=False)
class retry_if_code(_RetryBase):
    """Retry when the envelope's error code (see :func:`code_of`) is one of ``codes``."""

    codes: tuple[str, ...]

    def __init__(self, *codes: str) -> None:
        if not codes:
            raise ValueError("retry_if_code: name at least one code, e.g. retry_if_code('RATE_LIMITED')")
        object.__setattr__(self, "codes", tuple(codes))

    def __repr__(self) -> str:
        return f"retry_if_code({', '.join(map(repr, self.codes))})"

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """True when the code is listed."""
        return code_of(observation) in self.codes


@dataclass(frozen=True, slots=True, repr=False)
class retry_if_retryable(_RetryBase):
    """Retry when the envelope says a retry may succeed (see :func:`retryable_of`); ``unknown`` when it does not say."""

    unknown: bool = False

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """The envelope's flag, or ``unknown`` without one."""
        flag = retryable_of(observation)
        return self.unknown if flag is None else flag


@dataclass(frozen=True, slots=True, repr=False)
class retry_always(_RetryBase):
    """Retry every failure, whatever it says."""

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """Always True."""
        return True


@dataclass(frozen=True, slots=True, repr=False)
class retry_never(_RetryBase):
    """Retry nothing: every failure goes straight to the fallback."""

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """Always False."""
        return False
