"""How long to wait before a retry, in simulated seconds: ``wait(observation, history) -> seconds``.

``n`` is ``history.retries``: 0 before the first retry.  Waits add up with ``+`` and combine
with :class:`wait_max`; every random draw comes from ``history.rng``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetchaos.policies._combinators import BlockBase, JoinBase, callable_repr, check_callable, init_members, join
from fleetchaos.policies._recovery import exponential, full_jitter
from fleetchaos.policies.readers import retry_after_s_of
from fleetchaos.sim.observation import Observation, TaskHistory

__all__ = [
    "decorrelated_jitter",
    "wait_decorrelated_jitter",
    "wait_equal_jitter",
    "wait_exponential",
    "wait_fixed",
    "wait_full_jitter",
    "wait_max",
    "wait_retry_after",
    "wait_sum",
]


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


class _WaitBase(BlockBase):
    """A wait: ``wait(observation, history) -> seconds``; ``+`` sums waits (``sum()`` works too)."""

    __slots__ = ()

    def __add__(self, other: Any) -> wait_sum:
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            other = wait_fixed(float(other))
        return join(wait_sum, self, other)

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, (int, float)) and other == 0:  # sum() starts from 0
            return self
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            other = wait_fixed(float(other))
        return join(wait_sum, other, self)


@dataclass(frozen=True, slots=True, repr=False, init=False)
class wait_sum(JoinBase, _WaitBase):
    """The sum of the member waits (tenacity's ``wait_combine``); written ``a + b``."""

    members: tuple[Any, ...]
    _op = "+"

    def __init__(self, *members: Any) -> None:
        init_members(self, members)

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
            check_callable(m, "wait_max member")
            flat.extend(m.members if isinstance(m, wait_max) else (m,))
        object.__setattr__(self, "members", tuple(flat))

    def __repr__(self) -> str:
        return f"wait_max({', '.join(callable_repr(m) for m in self.members)})"

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

    ``prev`` is this wait's own previous sleep for the task, kept in ``history.waits``
    (one entry per wait block), and one step is drawn, which keeps the exact chain.  It
    is never the task's whole delay: combined with another wait (``wait_fixed(x) + ...``,
    ``wait_max(...)``) the other wait's share does not feed back into the chain.  A
    history without that memory (a hand-built one) replays the chain from
    ``history.rng`` for ``history.retries + 1`` steps (see :func:`decorrelated_jitter`).
    """

    base_s: float
    cap_s: float

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """The n-th sleep of a decorrelated-jitter chain, n = ``history.retries``."""
        memory = getattr(history, "waits", None)
        if memory is None:
            return decorrelated_jitter(history.rng, history.retries, self.base_s, self.cap_s)
        # The first retry starts a fresh chain; later ones continue this block's own chain
        # (keyed by identity: two equal blocks in one policy keep two chains).
        prev = memory.get(id(self)) if history.retries > 0 else None
        sleep = decorrelated_jitter(history.rng, history.retries, self.base_s, self.cap_s, prev)
        memory[id(self)] = sleep
        return sleep


@dataclass(frozen=True, slots=True, repr=False)
class wait_retry_after(_WaitBase):
    """Honour the envelope's retry-after hint (see :func:`retry_after_s_of`); 0 without one."""

    def __call__(self, observation: Observation, history: TaskHistory) -> float:
        """The hint in seconds, or 0.0."""
        hint = retry_after_s_of(observation)
        return 0.0 if hint is None else hint
