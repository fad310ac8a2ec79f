"""Circuit breakers as pure transitions: one breaker's closed/open/half-open machine, and a board of them.

A frozen configuration (:class:`CircuitBreaker`) with pure transitions over an explicit
frozen state (:class:`BreakerState`); :class:`BreakerBoard` keys breakers per worker or per
tool.  Times are inputs: nothing here reads a clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["BreakerBoard", "BreakerMode", "BreakerState", "CircuitBreaker", "breaker_key"]


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
