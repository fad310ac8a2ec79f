"""Composable recovery building blocks and the classic retry controls, as pure functions.

Two halves, neither of which imports SimPy or reads a clock:

**Building blocks** (in the spirit of tenacity's ``stop``/``wait``/``retry`` modules):
small frozen dataclasses with one method, ``__call__(observation, history)``, joined with
operators and flattened into readable reprs a results file can record.

* what to retry on: ``retry_if_category``, ``retry_if_code``, ``retry_if_retryable``,
  ``retry_always``, ``retry_never``; joined with ``|`` (any) and ``&`` (all);
* when to stop: ``stop_after_attempt``, ``stop_after_delay``, ``stop_after_same_failure``,
  ``stop_never``; joined with ``|`` (any) and ``&`` (all);
* how long to wait: ``wait_fixed``, ``wait_exponential``, ``wait_full_jitter``,
  ``wait_equal_jitter``, ``wait_decorrelated_jitter``, ``wait_retry_after``; summed with
  ``+`` and combined with :class:`wait_max`;
* what to do instead: ``instead_reroute``, ``instead_refresh``, ``instead_alternative``,
  ``instead_escalate``, ``instead_give_up``, ``instead_accept_partial``;
* :class:`Policy` joins one of each into a recovery policy with ``decide``.

Plain callables ``f(observation, history)`` are accepted wherever a block is.  Every
random draw comes from ``history.rng``, so a decision is reproducible from its inputs.

**Classic controls**: the AWS SDK retry quota, gRPC retry throttling, the Envoy retry
budget, Google SRE client-side adaptive throttling and a circuit breaker, each a frozen
configuration (what a results file records) with pure transitions over an explicit
frozen state (what the driver keeps, shared across tasks).  Draws and times are inputs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fleetchaos.policies._recovery import exponential, full_jitter, resume_from_refs, resume_point
from fleetchaos.sim.envelope import AgentToolError
from fleetchaos.sim.observation import (
    Action,
    Escalate,
    GiveUp,
    Observation,
    RefreshCredentials,
    Reroute,
    Retry,
    TaskHistory,
    UseAlternative,
)

__all__ = [
    "AdaptiveThrottle",
    "AwsRetryQuota",
    "BreakerBoard",
    "BreakerState",
    "CircuitBreaker",
    "EnvoyLoad",
    "EnvoyRetryBudget",
    "GrpcRetryThrottle",
    "GrpcTokens",
    "Policy",
    "QuotaState",
    "ThrottleWindow",
    "breaker_key",
    "category_of",
    "code_of",
    "decorrelated_jitter",
    "instead_accept_partial",
    "instead_alternative",
    "instead_escalate",
    "instead_give_up",
    "instead_refresh",
    "instead_reroute",
    "resume_of",
    "retry_after_s_of",
    "retry_all",
    "retry_always",
    "retry_any",
    "retry_if_category",
    "retry_if_code",
    "retry_if_retryable",
    "retry_never",
    "retryable_of",
    "stop_after_attempt",
    "stop_after_delay",
    "stop_after_same_failure",
    "stop_all",
    "stop_any",
    "stop_never",
    "wait_decorrelated_jitter",
    "wait_equal_jitter",
    "wait_exponential",
    "wait_fixed",
    "wait_full_jitter",
    "wait_max",
    "wait_retry_after",
    "wait_sum",
]

Block = Callable[[Observation, TaskHistory], Any]

# =======================================================================================
# What an envelope says, whatever the contract


def category_of(observation: Observation) -> str | None:
    """The failure's category word: ``category``, ``error_category`` or ``failure_type``, else None.

    AgentToolError gives ``transient``/``resource``/``auth``/...; SubagentResult gives
    ``transient``/``validation``/``permission``/...; FailureTypeError gives its failure type
    (``timeout``, ``rate_limited``, ...).  A ToolEnvelope or no envelope gives None.
    """
    envelope = observation.envelope
    for attr in ("category", "error_category", "failure_type"):
        value = getattr(envelope, attr, None)
        if value is not None:
            return str(value)
    return None


def code_of(observation: Observation) -> str | None:
    """The envelope's stable error code (a field or a property of every contract), else None."""
    code = getattr(observation.envelope, "error_code", None)
    return str(code) if code is not None else None


def retryable_of(observation: Observation) -> bool | None:
    """The envelope's retry flag: ``recoverable``, ``retriable``, ``is_retryable`` or ``retry_recommended``; None if not told."""
    envelope = observation.envelope
    for attr in ("recoverable", "retriable", "is_retryable", "retry_recommended"):
        value = getattr(envelope, attr, None)
        if value is not None:
            return bool(value)
    return None


def retry_after_s_of(observation: Observation) -> float | None:
    """The envelope's retry-after hint in simulated seconds, from whichever field carries it; None if absent."""
    envelope = observation.envelope
    ms = getattr(envelope, "retry_after_ms", None)
    if ms is not None:
        return ms / 1000.0
    seconds = getattr(envelope, "retry_after_s", None)
    if seconds is not None:
        return float(seconds)
    metadata = getattr(envelope, "metadata", None) or {}
    if "retry_after_ms" in metadata:
        try:
            return float(metadata["retry_after_ms"]) / 1000.0
        except ValueError:
            return None
    return None


def resume_of(observation: Observation) -> tuple[int, tuple[int, ...]]:
    """Where to resume, from whatever partial-progress field the envelope has: (step, items done); (0, ()) if none."""
    envelope = observation.envelope
    if isinstance(envelope, AgentToolError):
        return resume_point(envelope)
    for attr in ("partial_results", "partial_data"):
        refs = getattr(envelope, attr, None)
        if refs is not None:
            return resume_from_refs(refs)
    data = getattr(envelope, "data", None)
    if isinstance(data, Mapping):
        return resume_from_refs(tuple(data.get("completed_steps", ())) + tuple(data.get("completed_items", ())))
    return 0, ()


# =======================================================================================
# Readable reprs


def _block_repr(obj: Any) -> str:
    """``name(a, b, key=value)``: required fields positionally, defaulted ones only when changed."""
    parts = []
    for f in dataclasses.fields(obj):
        if not f.repr:
            continue
        value = getattr(obj, f.name)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            parts.append(repr(value))
        elif value != f.default:
            parts.append(f"{f.name}={value!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"


def _callable_repr(fn: Any) -> str:
    """A plain callable by its qualified name; a block by its own repr."""
    if isinstance(fn, _Block):
        return repr(fn)
    return getattr(fn, "__qualname__", None) or repr(fn)


class _Block:
    """Shared repr for the one-method blocks (no state of its own)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _block_repr(self)


def _check_callable(value: Any, kind: str) -> Any:
    if not callable(value):
        raise TypeError(f"{kind}: {value!r} is not a block or a callable f(observation, history)")
    return value


def _join(cls: type, left: Any, right: Any) -> Any:
    """``cls(*members)`` with nested joins of the same kind flattened."""
    members: list[Any] = []
    for side in (left, right):
        _check_callable(side, f"{cls.__name__} member")
        members.extend(side.members if isinstance(side, cls) else (side,))
    return cls(*members)


def _member_repr(member: Any, own: type) -> str:
    text = _callable_repr(member)
    if isinstance(member, (_AnyAll,)) and type(member) is not own and len(member.members) > 1:
        return f"({text})"
    return text


class _AnyAll(_Block):
    """Base of the flattened any/all joins: members in order, joined in the repr by ``_op``."""

    __slots__ = ()
    _op = "?"

    def __repr__(self) -> str:
        if not self.members:  # type: ignore[attr-defined]
            return f"{type(self).__name__}()"
        return f" {self._op} ".join(_member_repr(m, type(self)) for m in self.members)  # type: ignore[attr-defined]


def _init_members(self: Any, members: tuple[Any, ...]) -> None:
    for m in members:
        _check_callable(m, f"{type(self).__name__} member")
    object.__setattr__(self, "members", tuple(members))


class _BoolBlock(_Block):
    """A block answering yes or no: ``|`` joins into its family's any-join, ``&`` into its all-join.

    Each family (retry predicates, stop conditions) names its two join classes in
    ``_any`` and ``_all`` once they are defined.
    """

    __slots__ = ()
    _any: type
    _all: type

    def __or__(self, other: Any) -> Any:
        return _join(self._any, self, other)

    def __ror__(self, other: Any) -> Any:
        return _join(self._any, other, self)

    def __and__(self, other: Any) -> Any:
        return _join(self._all, self, other)

    def __rand__(self, other: Any) -> Any:
        return _join(self._all, other, self)


class _AnyJoin(_AnyAll):
    """Holds when any member holds (an empty join never holds)."""

    __slots__ = ()
    _op = "|"

    def __init__(self, *members: Any) -> None:
        _init_members(self, members)

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """True when any member holds."""
        return any(m(observation, history) for m in self.members)  # type: ignore[attr-defined]


class _AllJoin(_AnyAll):
    """Holds when every member holds (an empty join always holds)."""

    __slots__ = ()
    _op = "&"

    def __init__(self, *members: Any) -> None:
        _init_members(self, members)

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """True when every member holds."""
        return all(m(observation, history) for m in self.members)  # type: ignore[attr-defined]


# =======================================================================================
# What to retry on


class _RetryBase(_BoolBlock):
    """A retry predicate: ``pred(observation, history) -> bool``; ``|`` is any, ``&`` is all."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, repr=False, init=False)
class retry_any(_AnyJoin, _RetryBase):
    """Retry when any member predicate holds (an empty join never holds)."""

    members: tuple[Any, ...]


@dataclass(frozen=True, slots=True, repr=False, init=False)
class retry_all(_AllJoin, _RetryBase):
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


# =======================================================================================
# When to stop


class _StopBase(_BoolBlock):
    """A stop condition: ``stop(observation, history) -> bool``; ``|`` stops on any, ``&`` on all."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, repr=False, init=False)
class stop_any(_AnyJoin, _StopBase):
    """Stop when any member condition is reached."""

    members: tuple[Any, ...]


@dataclass(frozen=True, slots=True, repr=False, init=False)
class stop_all(_AllJoin, _StopBase):
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


# =======================================================================================
# How long to wait (simulated seconds).  ``n`` is ``history.retries``: 0 before the first retry.


def decorrelated_jitter(rng: Any, n: int, base_s: float, cap_s: float, prev_s: float | None = None) -> float:
    """Decorrelated jitter (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015).

    ``sleep = min(cap, uniform(base, sleep * 3))`` with ``sleep`` starting at ``base``.
    Given the previous sleep ``prev_s``, one step is drawn (one draw).  Without it the
    chain is replayed from ``base`` for ``n + 1`` steps (``n + 1`` draws), so the n-th
    sleep has exactly the formula's distribution; successive decisions for one task then
    draw independent chains (the marginal law per retry is exact, the correlation
    between one task's consecutive sleeps is not kept).
    """
    if prev_s is not None:
        return min(cap_s, rng.uniform(base_s, prev_s * 3.0))
    sleep = base_s
    for _ in range(n + 1):
        sleep = min(cap_s, rng.uniform(base_s, sleep * 3.0))
    return sleep


class _WaitBase(_Block):
    """A wait: ``wait(observation, history) -> seconds``; ``+`` sums waits (``sum()`` works too)."""

    __slots__ = ()

    def __add__(self, other: Any) -> wait_sum:
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            other = wait_fixed(float(other))
        return _join(wait_sum, self, other)

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, (int, float)) and other == 0:  # sum() starts from 0
            return self
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            other = wait_fixed(float(other))
        return _join(wait_sum, other, self)


@dataclass(frozen=True, slots=True, repr=False, init=False)
class wait_sum(_AnyAll, _WaitBase):
    """The sum of the member waits (tenacity's ``wait_combine``); written ``a + b``."""

    members: tuple[Any, ...]
    _op = "+"

    def __init__(self, *members: Any) -> None:
        _init_members(self, members)

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """The members' waits added up (each member's draws in order)."""
        return float(sum(m(observation, history) for m in self.members))


@dataclass(frozen=True, slots=True, repr=False, init=False)
class wait_max(_WaitBase):
    """The longest of the member waits, e.g. ``wait_max(wait_retry_after(), wait_full_jitter(1, 60))``.

    Every member is evaluated (and draws) every time, so the RNG stream does not depend on which wins.
    """

    members: tuple[Any, ...]

    def __init__(self, *members: Any) -> None:
        if not members:
            raise ValueError("wait_max: give at least one wait")
        flat: list[Any] = []
        for m in members:
            _check_callable(m, "wait_max member")
            flat.extend(m.members if isinstance(m, wait_max) else (m,))
        object.__setattr__(self, "members", tuple(flat))

    def __repr__(self) -> str:
        return f"wait_max({', '.join(_callable_repr(m) for m in self.members)})"

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """The largest member wait."""
        return float(max([m(observation, history) for m in self.members]))


@dataclass(frozen=True, slots=True, repr=False)
class wait_fixed(_WaitBase):
    """The same wait before every retry."""

    wait_s: float

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """``wait_s``."""
        return self.wait_s


@dataclass(frozen=True, slots=True, repr=False)
class wait_exponential(_WaitBase):
    """Exponential backoff with no jitter: ``min(cap, base * 2**n)``, n = retries so far."""

    base_s: float
    cap_s: float

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """``min(cap_s, base_s * 2**history.retries)``."""
        return exponential(self.base_s, self.cap_s, history.retries)


@dataclass(frozen=True, slots=True, repr=False)
class wait_full_jitter(_WaitBase):
    """Full jitter (AWS Architecture Blog): ``uniform(0, min(cap, base * 2**n))``; one draw."""

    base_s: float
    cap_s: float

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """A uniform draw in ``[0, min(cap_s, base_s * 2**history.retries))``."""
        return full_jitter(history, self.base_s, self.cap_s)


@dataclass(frozen=True, slots=True, repr=False)
class wait_equal_jitter(_WaitBase):
    """Equal jitter (AWS Architecture Blog): ``t/2 + uniform(0, t/2)`` with ``t = min(cap, base * 2**n)``; one draw."""

    base_s: float
    cap_s: float

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """Half of the capped exponential fixed, half drawn uniformly."""
        half = exponential(self.base_s, self.cap_s, history.retries) / 2.0
        return half + history.rng.uniform(0.0, half)


@dataclass(frozen=True, slots=True, repr=False)
class wait_decorrelated_jitter(_WaitBase):
    """Decorrelated jitter (AWS Architecture Blog): ``min(cap, uniform(base, prev * 3))``, prev starting at base.

    The driver keeps the task's last retry delay in ``history.last_delay_s``; it is used
    as ``prev`` and one step is drawn, which keeps the exact chain.  A history without
    it (a hand-built one) replays the chain from ``history.rng`` for
    ``history.retries + 1`` steps (see :func:`decorrelated_jitter`).
    """

    base_s: float
    cap_s: float

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """The n-th sleep of a decorrelated-jitter chain, n = ``history.retries``."""
        prev = getattr(history, "last_delay_s", None)
        if prev is not None and history.retries == 0:
            prev = None
        return decorrelated_jitter(history.rng, history.retries, self.base_s, self.cap_s, prev)


@dataclass(frozen=True, slots=True, repr=False)
class wait_retry_after(_WaitBase):
    """Honour the envelope's retry-after hint (see :func:`retry_after_s_of`); 0 without one."""

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """The hint in seconds, or 0.0."""
        hint = retry_after_s_of(observation)
        return 0.0 if hint is None else hint


# =======================================================================================
# What to do instead


@dataclass(frozen=True, slots=True, repr=False)
class instead_reroute(_Block):
    """Dispatch to another worker, resuming from whatever partial progress the envelope revealed."""

    delay_s: float = 0.0

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """A Reroute from the revealed resume point."""
        start, done = resume_of(observation)
        return Reroute(self.delay_s, start, done)


@dataclass(frozen=True, slots=True, repr=False)
class instead_refresh(_Block):
    """Refresh the worker's credentials and dispatch again, resuming."""

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """A RefreshCredentials from the revealed resume point."""
        start, done = resume_of(observation)
        return RefreshCredentials(start, done)


@dataclass(frozen=True, slots=True, repr=False)
class instead_alternative(_Block):
    """Switch the failed items to their next alternative source and dispatch again, resuming."""

    delay_s: float = 0.0

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """A UseAlternative from the revealed resume point."""
        start, done = resume_of(observation)
        return UseAlternative(self.delay_s, start, done)


@dataclass(frozen=True, slots=True, repr=False)
class instead_escalate(_Block):
    """Hand the task to a human; the reason names the error code when the envelope has one."""

    reason: str = "recovery exhausted"

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """An Escalate with ``CODE: reason`` (or just the reason)."""
        code = code_of(observation)
        return Escalate(f"{code}: {self.reason}" if code else self.reason)


@dataclass(frozen=True, slots=True, repr=False)
class instead_give_up(_Block):
    """Stop and report the task as failed."""

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """GiveUp('failed')."""
        return GiveUp("failed")


@dataclass(frozen=True, slots=True, repr=False)
class instead_accept_partial(_Block):
    """Stop and report the task as partial (``GiveUp('partial')``).

    With ``require_evidence`` (the default) the claim is partial only when the envelope
    revealed some completed step or item; otherwise it is 'failed', so the policy never
    claims progress it was not shown.
    """

    require_evidence: bool = True

    def __call__(self, observation: Observation, history: TaskHistory) -> Action:
        """GiveUp('partial'), or GiveUp('failed') when no progress was revealed and evidence is required."""
        start, done = resume_of(observation)
        if self.require_evidence and start == 0 and not done:
            return GiveUp("failed")
        return GiveUp("partial")


# =======================================================================================
# The composite


@dataclass(frozen=True, slots=True, repr=False)
class Policy:
    """A recovery policy joined from blocks: retry when ``retry`` holds and ``stop`` is not reached, else ``instead``.

    A retry waits ``wait`` and resumes from the partial progress the envelope revealed
    (``resume=False`` restarts from the first step).  Any block may be a plain callable
    ``f(observation, history)``.  The repr is the flattened recipe, for results files.
    """

    retry: Any = field(default_factory=retry_always)
    stop: Any = field(default_factory=lambda: stop_after_attempt(4))
    wait: Any = field(default_factory=lambda: wait_fixed(0.0))
    instead: Any = field(default_factory=instead_give_up)
    name: str = "composed"
    resume: bool = True
    description: str = ""
    """What this recipe is for, in words (``fleetchaos policies show`` prints it); not part of the repr."""

    def __post_init__(self) -> None:
        for part in ("retry", "stop", "wait", "instead"):
            _check_callable(getattr(self, part), f"Policy.{part}")

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}"] + [
            f"{p}={_callable_repr(getattr(self, p))}" for p in ("retry", "stop", "wait", "instead")
        ]
        if not self.resume:
            parts.append("resume=False")
        return f"Policy({', '.join(parts)})"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """Retry(wait, resume point) when the predicate holds and the stop is not reached; else the fallback's action.

        The stop is checked before the wait is drawn, so a stopped task consumes no draw.
        """
        if self.retry(observation, history) and not self.stop(observation, history):
            delay = float(self.wait(observation, history))
            start, done = resume_of(observation) if self.resume else (0, ())
            return Retry(max(0.0, delay), start, done)
        return self.instead(observation, history)


# =======================================================================================
# Classic controls: frozen configuration + pure transitions over explicit frozen state


@dataclass(frozen=True, slots=True)
class QuotaState:
    """Tokens left in an AWS-style retry quota."""

    available: int


@dataclass(frozen=True, slots=True)
class AwsRetryQuota:
    """The AWS SDK "standard" retry mode's client-side retry quota (a token bucket).

    Source: AWS SDKs and Tools Reference Guide, "Retry behavior" (standard mode), as
    implemented in botocore ``retries/standard.py`` (``RetryQuotaChecker``):

    * the bucket starts full at ``initial`` = 500 tokens and never exceeds it;
    * a retry costs ``retry_cost`` = 5 tokens, or ``timeout_cost`` = 10 after a timeout;
      when fewer tokens are left than the cost, the retry is refused (not attempted);
    * a successful response refunds what its retry paid, or ``success_refund`` = 1 when
      it was a first attempt that paid nothing (capped at ``initial``).

    The driver keeps one :class:`QuotaState` per client (per orchestrator, or per worker).
    """

    initial: int = 500
    retry_cost: int = 5
    timeout_cost: int = 10
    success_refund: int = 1

    def initial_state(self) -> QuotaState:
        """A full bucket."""
        return QuotaState(self.initial)

    def acquire(self, state: QuotaState, timeout: bool = False) -> tuple[QuotaState, int | None]:
        """Try to pay for one retry: (new state, cost paid), or (unchanged state, None) when refused."""
        cost = self.timeout_cost if timeout else self.retry_cost
        if state.available < cost:
            return state, None
        return QuotaState(state.available - cost), cost

    def on_success(self, state: QuotaState, paid: int | None = None) -> QuotaState:
        """A successful response: refund the retry's cost if it paid one, else ``success_refund``; capped at ``initial``."""
        gain = paid if paid else self.success_refund
        return QuotaState(min(self.initial, state.available + gain))


@dataclass(frozen=True, slots=True)
class GrpcTokens:
    """gRPC retry-throttling token count, in thousandths of a token (exact arithmetic, as gRPC does)."""

    milli: int

    @property
    def tokens(self) -> float:
        """The token count as a number of tokens."""
        return self.milli / 1000.0


@dataclass(frozen=True, slots=True)
class GrpcRetryThrottle:
    """gRPC retry throttling (gRFC A6 "Client Retries", ``retryThrottling`` in the service config).

    * ``token_count`` starts at ``max_tokens`` (1..1000) and stays in [0, max_tokens];
    * each failed RPC (a retryable or non-fatal status) decrements it by 1;
    * each successful RPC increments it by ``token_ratio`` (0 < ratio <= 1, three decimals);
    * retries (and hedges) are allowed only while ``token_count > max_tokens / 2``.

    Counts are kept in thousandths, so ``token_ratio`` is applied exactly.  One state per
    client channel (the orchestrator's, or one per worker).
    """

    max_tokens: int = 10
    token_ratio: float = 0.1

    def __post_init__(self) -> None:
        if not 1 <= self.max_tokens <= 1000:
            raise ValueError(f"GrpcRetryThrottle: max_tokens must be in 1..1000, got {self.max_tokens}")
        if not 0 < self.token_ratio <= 1:
            raise ValueError(f"GrpcRetryThrottle: token_ratio must be in (0, 1], got {self.token_ratio}")

    def initial_state(self) -> GrpcTokens:
        """A full bucket of ``max_tokens``."""
        return GrpcTokens(self.max_tokens * 1000)

    def allows_retry(self, state: GrpcTokens) -> bool:
        """True while ``token_count > max_tokens / 2``."""
        return state.milli * 2 > self.max_tokens * 1000

    def on_failure(self, state: GrpcTokens) -> GrpcTokens:
        """One failed RPC: ``token_count - 1``, not below 0."""
        return GrpcTokens(max(0, state.milli - 1000))

    def on_success(self, state: GrpcTokens) -> GrpcTokens:
        """One successful RPC: ``token_count + token_ratio``, not above ``max_tokens``."""
        return GrpcTokens(min(self.max_tokens * 1000, state.milli + round(self.token_ratio * 1000)))


@dataclass(frozen=True, slots=True)
class EnvoyLoad:
    """Requests and retries in flight to one upstream (what an Envoy retry budget reads)."""

    active_requests: int = 0
    active_retries: int = 0


@dataclass(frozen=True, slots=True)
class EnvoyRetryBudget:
    """Envoy's retry budget (``envoy.config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget``).

    A retry may start while ``active_retries < max(min_retry_concurrency,
    floor(budget_percent / 100 * active_requests))``; defaults 20% and 3.  A retry is
    itself a request in flight, so starting one raises both counts.  One state per
    upstream (per worker pool or per tool).
    """

    budget_percent: float = 20.0
    min_retry_concurrency: int = 3

    def initial_state(self) -> EnvoyLoad:
        """Nothing in flight."""
        return EnvoyLoad()

    def limit(self, state: EnvoyLoad) -> int:
        """The concurrent-retry limit for the current load."""
        return max(self.min_retry_concurrency, math.floor(self.budget_percent / 100.0 * state.active_requests + 1e-9))

    def allows_retry(self, state: EnvoyLoad) -> bool:
        """True while active retries are below the limit."""
        return state.active_retries < self.limit(state)

    def start_request(self, state: EnvoyLoad) -> EnvoyLoad:
        """A first attempt goes out."""
        return EnvoyLoad(state.active_requests + 1, state.active_retries)

    def start_retry(self, state: EnvoyLoad) -> tuple[EnvoyLoad, bool]:
        """A retry goes out if the budget allows: (new state, allowed); unchanged when refused."""
        if not self.allows_retry(state):
            return state, False
        return EnvoyLoad(state.active_requests + 1, state.active_retries + 1), True

    def finish(self, state: EnvoyLoad, was_retry: bool = False) -> EnvoyLoad:
        """A request (or retry) in flight completes, whatever its outcome."""
        return EnvoyLoad(max(0, state.active_requests - 1), max(0, state.active_retries - (1 if was_retry else 0)))


@dataclass(frozen=True, slots=True)
class ThrottleWindow:
    """Recent request and accept counts in time buckets: ``((bucket start s, requests, accepts), ...)``, oldest first."""

    buckets: tuple[tuple[float, int, int], ...] = ()

    def totals(self) -> tuple[int, int]:
        """(requests, accepts) over the kept buckets."""
        return sum(b[1] for b in self.buckets), sum(b[2] for b in self.buckets)


@dataclass(frozen=True, slots=True)
class AdaptiveThrottle:
    """Client-side adaptive throttling (Google, *Site Reliability Engineering*, ch. 21 "Handling Overload").

    Over the last ``window_s`` (two minutes in the book) the client counts ``requests``
    (every attempt the application made, including ones rejected locally) and
    ``accepts`` (requests the backend accepted).  A new request is rejected locally with
    probability ``max(0, (requests - K * accepts) / (requests + 1))``; K = 2 by default.
    The window is kept in ``bucket_s`` buckets; a bucket leaves the window when its
    start is ``window_s`` or more before now.  The uniform draw is an input
    (``history.rng.random()`` from the caller), so the transition stays pure.
    """

    k: float = 2.0
    window_s: float = 120.0
    bucket_s: float = 1.0

    def initial_state(self) -> ThrottleWindow:
        """An empty window."""
        return ThrottleWindow()

    def _prune(self, state: ThrottleWindow, now_s: float) -> tuple[tuple[float, int, int], ...]:
        return tuple(b for b in state.buckets if b[0] > now_s - self.window_s)

    def _add(self, state: ThrottleWindow, now_s: float, requests: int, accepts: int) -> ThrottleWindow:
        start = math.floor(now_s / self.bucket_s) * self.bucket_s
        buckets = list(self._prune(state, now_s))
        if buckets and buckets[-1][0] == start:
            _, r, a = buckets[-1]
            buckets[-1] = (start, r + requests, a + accepts)
        else:
            buckets.append((start, requests, accepts))
        return ThrottleWindow(tuple(buckets))

    def reject_probability(self, state: ThrottleWindow, now_s: float) -> float:
        """``max(0, (requests - K * accepts) / (requests + 1))`` over the window ending at ``now_s``."""
        pruned = ThrottleWindow(self._prune(state, now_s))
        requests, accepts = pruned.totals()
        return max(0.0, (requests - self.k * accepts) / (requests + 1))

    def request(self, state: ThrottleWindow, now_s: float, draw: float) -> tuple[ThrottleWindow, bool]:
        """One attempt at ``now_s`` with a uniform ``draw`` in [0, 1): (new state, allowed); counted either way."""
        allowed = draw >= self.reject_probability(state, now_s)
        return self.on_request(state, now_s), allowed

    def on_request(self, state: ThrottleWindow, now_s: float) -> ThrottleWindow:
        """Count one request at ``now_s`` whose admission was decided elsewhere (sent, or refused locally)."""
        return self._add(state, now_s, 1, 0)

    def on_accept(self, state: ThrottleWindow, now_s: float) -> ThrottleWindow:
        """The backend accepted a request (it was served, not rejected for overload)."""
        return self._add(state, now_s, 0, 1)


BreakerMode = Literal["closed", "open", "half_open"]


@dataclass(frozen=True, slots=True)
class BreakerState:
    """One circuit breaker's state: mode, consecutive failures, when it opened, half-open trials and successes."""

    mode: BreakerMode = "closed"
    failures: int = 0
    opened_at_s: float = 0.0
    trials: int = 0
    successes: int = 0


@dataclass(frozen=True, slots=True)
class CircuitBreaker:
    """A circuit breaker (Nygard, *Release It!*; the closed/open/half-open machine of Hystrix and resilience4j).

    * closed: calls pass; ``failure_threshold`` consecutive failures open it (a success resets the count);
    * open: calls are refused until ``cooldown_s`` simulated seconds after it opened, then
      the next call finds it half-open;
    * half-open: up to ``half_open_trials`` trial calls pass; any failure re-opens it
      (cool-down restarts); ``half_open_trials`` successes close it.

    Results that arrive while open (calls let through before it opened) change nothing.
    """

    failure_threshold: int = 5
    cooldown_s: float = 30.0
    half_open_trials: int = 1

    def __post_init__(self) -> None:
        if self.failure_threshold < 1 or self.half_open_trials < 1:
            raise ValueError(
                f"CircuitBreaker: failure_threshold and half_open_trials must be >= 1, "
                f"got {self.failure_threshold} and {self.half_open_trials}"
            )

    def initial_state(self) -> BreakerState:
        """Closed, no failures."""
        return BreakerState()

    def allow(self, state: BreakerState, now_s: float) -> tuple[BreakerState, bool]:
        """May a call go out at ``now_s``? (new state, allowed); an open breaker past its cool-down turns half-open."""
        if state.mode == "closed":
            return state, True
        if state.mode == "open":
            if now_s < state.opened_at_s + self.cooldown_s:
                return state, False
            state = BreakerState("half_open", state.failures, state.opened_at_s, 0, 0)
        if state.trials < self.half_open_trials:
            return dataclasses.replace(state, trials=state.trials + 1), True
        return state, False

    def on_success(self, state: BreakerState, now_s: float) -> BreakerState:
        """A call succeeded: reset the count when closed; count a trial when half-open (close after enough)."""
        if state.mode == "closed":
            return BreakerState() if state.failures else state
        if state.mode == "half_open":
            if state.successes + 1 >= self.half_open_trials:
                return BreakerState()
            return dataclasses.replace(state, successes=state.successes + 1)
        return state

    def on_failure(self, state: BreakerState, now_s: float) -> BreakerState:
        """A call failed: count it when closed (open at the threshold); re-open when half-open."""
        if state.mode == "closed":
            failures = state.failures + 1
            if failures >= self.failure_threshold:
                return BreakerState("open", failures, now_s)
            return BreakerState("closed", failures)
        if state.mode == "half_open":
            return BreakerState("open", state.failures, now_s)
        return state


def breaker_key(*, worker: int | None = None, tool: str | None = None) -> tuple[str, Hashable]:
    """The key of a breaker per worker (``("worker", 3)``) or per tool (``("tool", "search")``); exactly one of them."""
    if (worker is None) == (tool is None):
        raise ValueError("breaker_key: give exactly one of worker= or tool=")
    return ("worker", worker) if worker is not None else ("tool", tool)


@dataclass(frozen=True, slots=True)
class BreakerBoard:
    """Circuit breakers keyed per worker or per tool (see :func:`breaker_key`), one configuration for all.

    Each transition returns a new board; keys never seen are closed.  The driver keeps
    one board per orchestrator (shared across tasks).
    """

    breaker: CircuitBreaker = field(default_factory=CircuitBreaker)
    states: Mapping[Hashable, BreakerState] = field(default_factory=dict)

    def state(self, key: Hashable) -> BreakerState:
        """The breaker state for ``key`` (closed if never seen)."""
        return self.states.get(key, BreakerState())

    def _with(self, key: Hashable, state: BreakerState) -> BreakerBoard:
        states = dict(self.states)
        states[key] = state
        return BreakerBoard(self.breaker, states)

    def allow(self, key: Hashable, now_s: float) -> tuple[BreakerBoard, bool]:
        """May a call to ``key`` go out at ``now_s``?"""
        state, allowed = self.breaker.allow(self.state(key), now_s)
        return self._with(key, state), allowed

    def on_success(self, key: Hashable, now_s: float) -> BreakerBoard:
        """A call to ``key`` succeeded."""
        return self._with(key, self.breaker.on_success(self.state(key), now_s))

    def on_failure(self, key: Hashable, now_s: float) -> BreakerBoard:
        """A call to ``key`` failed."""
        return self._with(key, self.breaker.on_failure(self.state(key), now_s))
