"""tenacity's stop, wait and retry strategies, re-stated on simulated time and the run's seeded stream.

Each class here has the name, the parameters and the arithmetic of the tenacity strategy it
stands for (tenacity 9: ``tenacity/stop.py``, ``wait.py``, ``retry.py``), and is called with
an :class:`AttemptState`, the simulated counterpart of tenacity's ``RetryCallState``:

* ``attempt_number``: the dispatches so far (``history.attempts``; 1 after the first);
* ``seconds_since_start``: simulated seconds from the task's first dispatch to the failure
  just seen (``history.elapsed_s``), what ``stop_after_delay`` reads;
* ``upcoming_sleep``: the wait just drawn (``stop_before_delay`` reads it: tenacity draws the
  wait before it asks the stop, and so does :class:`~fleetchaos.policies.tenacity_policy.TenacityPolicy`);
* ``exception``: the exception the failure raises (:mod:`fleetchaos.policies.exception_map`);
* ``rng``: the task's seeded stream (``history.rng``), drawn exactly where tenacity calls
  the ``random`` module (``random()`` for ``wait_random``, ``uniform(a, b)`` for the other
  jittered waits), so the same stream gives tenacity's very numbers.

No tenacity import: a translated policy runs, pickles and prints without it.
:mod:`fleetchaos.policies.tenacity_adapter` builds these from a team's tenacity objects.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from typing import Any, Protocol

from fleetchaos.policies._combinators import BlockBase

__all__ = [
    "MAX_WAIT",
    "AttemptState",
    "retry_all",
    "retry_always",
    "retry_any",
    "retry_if_exception_cause_type",
    "retry_if_exception_message",
    "retry_if_exception_type",
    "retry_if_not_exception_message",
    "retry_if_not_exception_type",
    "retry_never",
    "stop_after_attempt",
    "stop_after_delay",
    "stop_all",
    "stop_any",
    "stop_before_delay",
    "stop_never",
    "wait_chain",
    "wait_combine",
    "wait_exponential",
    "wait_exponential_jitter",
    "wait_fixed",
    "wait_incrementing",
    "wait_random",
    "wait_random_exponential",
]

#: tenacity's default upper bound of a wait (``tenacity._utils.MAX_WAIT``).
MAX_WAIT = sys.maxsize / 2


class Draws(Protocol):
    """The task's seeded stream, as the jittered waits use it (a ``random.Random``): this
    module draws nothing of its own and imports no ``random``."""

    def random(self) -> float: ...

    def uniform(self, a: float, b: float) -> float: ...


@dataclass(slots=True)
class AttemptState:
    """One failed attempt as tenacity's ``RetryCallState`` shows it, in simulated time."""

    attempt_number: int
    seconds_since_start: float
    exception: BaseException
    rng: Draws
    upcoming_sleep: float = 0.0


def _types_repr(types: tuple[type[BaseException], ...]) -> str:
    names = []
    for t in types:
        module = getattr(t, "__module__", "builtins")
        names.append(t.__qualname__ if module == "builtins" else f"{module}.{t.__qualname__}")
    return ", ".join(names)


class _Join(BlockBase):
    """A join of members, written with the operator tenacity uses (``|``, ``&`` or ``+``)."""

    __slots__ = ()
    _op = "?"
    members: tuple[Any, ...]

    def __repr__(self) -> str:
        if len(self.members) < 2:
            return f"{type(self).__name__}({', '.join(map(repr, self.members))})"
        return f" {self._op} ".join(
            f"({m!r})" if isinstance(m, _Join) and len(m.members) > 1 else repr(m) for m in self.members
        )


@dataclass(frozen=True, slots=True, repr=False)
class _AnyOf(_Join):
    """Holds when any member holds (``a | b``): the members asked in order, up to the first that holds,
    as tenacity's ``any``."""

    members: tuple[Any, ...]
    _op = "|"

    def __call__(self, state: AttemptState) -> bool:
        """Any member, in order."""
        return any(m(state) for m in self.members)


@dataclass(frozen=True, slots=True, repr=False)
class _AllOf(_Join):
    """Holds when every member holds (``a & b``): the members asked in order, up to the first that does not."""

    members: tuple[Any, ...]
    _op = "&"

    def __call__(self, state: AttemptState) -> bool:
        """Every member, in order."""
        return all(m(state) for m in self.members)


# -- stop ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, repr=False)
class stop_after_attempt(BlockBase):
    """Stop once ``max_attempt_number`` attempts have been made.

    A translated configuration keeps the number tenacity was given, a fraction included (2.9 makes 3 attempts,
    as in tenacity); a spec sets a whole number (``stop.max_attempt_number=5``).
    """

    max_attempt_number: int

    def __call__(self, state: AttemptState) -> bool:
        """``attempt_number >= max_attempt_number``."""
        return state.attempt_number >= self.max_attempt_number


@dataclass(frozen=True, slots=True, repr=False)
class stop_after_delay(BlockBase):
    """Stop once ``max_delay`` simulated seconds have passed since the first attempt, at a failure."""

    max_delay: float

    def __call__(self, state: AttemptState) -> bool:
        """``seconds_since_start >= max_delay``."""
        return state.seconds_since_start >= self.max_delay


@dataclass(frozen=True, slots=True, repr=False)
class stop_before_delay(BlockBase):
    """Stop when the next attempt would start ``max_delay`` seconds or more after the first."""

    max_delay: float

    def __call__(self, state: AttemptState) -> bool:
        """``seconds_since_start + upcoming_sleep >= max_delay``."""
        return state.seconds_since_start + state.upcoming_sleep >= self.max_delay


@dataclass(frozen=True, slots=True, repr=False)
class stop_never(BlockBase):
    """Never stop (the world's per-task action cap still ends the task)."""

    def __call__(self, state: AttemptState) -> bool:
        """Always False."""
        return False


@dataclass(frozen=True, slots=True, repr=False)
class stop_any(_AnyOf):
    """Stop when any member stops (``a | b``)."""


@dataclass(frozen=True, slots=True, repr=False)
class stop_all(_AllOf):
    """Stop when every member stops (``a & b``)."""


# -- wait ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, repr=False)
class wait_fixed(BlockBase):
    """The same wait before every retry (``wait_none()`` is ``wait_fixed(0)``)."""

    wait: float

    def __call__(self, state: AttemptState) -> float:
        """``wait``."""
        return self.wait


@dataclass(frozen=True, slots=True, repr=False)
class wait_random(BlockBase):
    """``min + random() * (max - min)``: one draw."""

    min: float = 0.0
    max: float = 1.0

    def __call__(self, state: AttemptState) -> float:
        """A uniform wait between ``min`` and ``max``."""
        return self.min + (state.rng.random() * (self.max - self.min))


@dataclass(frozen=True, slots=True, repr=False)
class wait_incrementing(BlockBase):
    """``start + increment * (attempt_number - 1)``, kept within ``[0, max]``."""

    start: float = 0.0
    increment: float = 100.0
    max: float = MAX_WAIT

    def __call__(self, state: AttemptState) -> float:
        """The incremented wait."""
        result = self.start + (self.increment * (state.attempt_number - 1))
        return max(0, min(result, self.max))


@dataclass(frozen=True, slots=True, repr=False)
class wait_exponential(BlockBase):
    """``multiplier * exp_base ** (attempt_number - 1)`` kept within ``[max(0, min), max]``, no jitter."""

    multiplier: float = 1
    max: float = MAX_WAIT
    exp_base: float = 2
    min: float = 0.0

    def __call__(self, state: AttemptState) -> float:
        """tenacity's arithmetic, its overflow guard included."""
        return _exponential(self, state.attempt_number)


def _exponential(w: Any, attempt_number: int) -> float:
    exponent = attempt_number - 1
    if (
        w.multiplier > 0
        and w.max > 0
        and w.exp_base > 1
        and math.isfinite(w.max)
        and exponent > math.log(w.max, w.exp_base) - math.log(w.multiplier, w.exp_base)
    ):
        return max(max(0, w.min), w.max)
    try:
        result = w.multiplier * (w.exp_base**exponent)
    except OverflowError:
        return w.max
    return max(max(0, w.min), min(result, w.max))


@dataclass(frozen=True, slots=True, repr=False)
class wait_random_exponential(BlockBase):
    """Full jitter: ``uniform(min, wait_exponential(...))``; one draw."""

    multiplier: float = 1
    max: float = MAX_WAIT
    exp_base: float = 2
    min: float = 0.0

    def __call__(self, state: AttemptState) -> float:
        """A uniform draw up to the exponential wait."""
        return state.rng.uniform(self.min, _exponential(self, state.attempt_number))


@dataclass(frozen=True, slots=True, repr=False)
class wait_exponential_jitter(BlockBase):
    """``multiplier * exp_base ** (attempt_number - 1) + uniform(0, jitter)`` within ``[max(0, min), max]``; one draw."""

    multiplier: float = 1
    max: float = MAX_WAIT
    exp_base: float = 2
    jitter: float = 1.0
    min: float = 0.0

    def __call__(self, state: AttemptState) -> float:
        """The jitter is drawn first, as tenacity does."""
        jitter = state.rng.uniform(0, self.jitter)
        try:
            result = self.multiplier * (self.exp_base ** (state.attempt_number - 1)) + jitter
        except OverflowError:
            result = self.max
        return max(max(0, self.min), min(result, self.max))


@dataclass(frozen=True, slots=True, repr=False)
class wait_chain(BlockBase):
    """The n-th strategy for the n-th attempt, the last one thereafter."""

    strategies: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"wait_chain({', '.join(map(repr, self.strategies))})"

    def __call__(self, state: AttemptState) -> float:
        """The strategy of this attempt number."""
        number = min(max(state.attempt_number, 1), len(self.strategies))
        return self.strategies[number - 1](state)


@dataclass(frozen=True, slots=True, repr=False)
class wait_combine(_Join):
    """The sum of the member waits (``a + b``), each member's draws in order."""

    members: tuple[Any, ...]
    _op = "+"

    def __call__(self, state: AttemptState) -> float:
        """The members' waits added up."""
        return float(sum(m(state) for m in self.members))


# -- retry --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, repr=False)
class retry_always(BlockBase):
    """Retry every failure."""

    def __call__(self, state: AttemptState) -> bool:
        """Always True."""
        return True


@dataclass(frozen=True, slots=True, repr=False)
class retry_never(BlockBase):
    """Retry nothing."""

    def __call__(self, state: AttemptState) -> bool:
        """Always False."""
        return False


@dataclass(frozen=True, slots=True, repr=False)
class retry_if_exception_type(BlockBase):
    """Retry when the failure's exception is an instance of one of ``exception_types``."""

    exception_types: tuple[type[BaseException], ...]

    def __repr__(self) -> str:
        return f"retry_if_exception_type({_types_repr(self.exception_types)})"

    def __call__(self, state: AttemptState) -> bool:
        """``isinstance(exception, exception_types)``."""
        return isinstance(state.exception, self.exception_types)


@dataclass(frozen=True, slots=True, repr=False)
class retry_if_not_exception_type(BlockBase):
    """Retry unless the failure's exception is an instance of one of ``exception_types``.

    Stands for ``retry_unless_exception_type`` too: the two differ only on a returned
    result, and a policy is asked only about failures.
    """

    exception_types: tuple[type[BaseException], ...]

    def __repr__(self) -> str:
        return f"retry_if_not_exception_type({_types_repr(self.exception_types)})"

    def __call__(self, state: AttemptState) -> bool:
        """``not isinstance(exception, exception_types)``."""
        return not isinstance(state.exception, self.exception_types)


@dataclass(frozen=True, slots=True, repr=False)
class retry_if_exception_cause_type(BlockBase):
    """Retry when an exception in the failure's ``__cause__`` chain is one of ``exception_types``."""

    exception_types: tuple[type[BaseException], ...]

    def __repr__(self) -> str:
        return f"retry_if_exception_cause_type({_types_repr(self.exception_types)})"

    def __call__(self, state: AttemptState) -> bool:
        """Walks the cause chain, cycles guarded, as tenacity does."""
        exc: BaseException | None = state.exception
        seen: set[int] = set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            if isinstance(exc.__cause__, self.exception_types):
                return True
            exc = exc.__cause__
        return False


@dataclass(frozen=True, slots=True, repr=False)
class retry_if_exception_message(BlockBase):
    """Retry when the exception's message equals ``message``, or the pattern ``match`` matches its start."""

    message: str | None = None
    match: re.Pattern[str] | None = None
    negate: bool = False

    def __repr__(self) -> str:
        name = "retry_if_not_exception_message" if self.negate else "retry_if_exception_message"
        if self.message is not None:
            return f"{name}(message={self.message!r})"
        pattern = self.match.pattern if self.match is not None else ""
        flags = self.match.flags & ~re.UNICODE if self.match is not None else 0
        return f"{name}(match={pattern!r}" + (f", flags={flags}" if flags else "") + ")"

    def __call__(self, state: AttemptState) -> bool:
        """``str(exception) == message`` or ``match.match(str(exception))``, negated for the not-form."""
        text = str(state.exception)
        if self.message is not None:
            hit = self.message == text
        else:
            hit = self.match is not None and self.match.match(text) is not None
        return hit != self.negate


def retry_if_not_exception_message(
    message: str | None = None, match: re.Pattern[str] | None = None
) -> retry_if_exception_message:
    """Retry unless the exception's message equals ``message`` or ``match`` matches it."""
    return retry_if_exception_message(message, match, negate=True)


@dataclass(frozen=True, slots=True, repr=False)
class retry_any(_AnyOf):
    """Retry when any member holds (``a | b``)."""


@dataclass(frozen=True, slots=True, repr=False)
class retry_all(_AllOf):
    """Retry when every member holds (``a & b``)."""
