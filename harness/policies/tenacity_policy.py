"""A team's tenacity retry configuration as a recovery policy: :class:`TenacityPolicy`.

Built by :func:`fleetchaos.policies.tenacity_adapter.from_tenacity` from a ``tenacity.Retrying``
(or a function decorated with ``@tenacity.retry``); it decides in the order tenacity's
``Retrying.iter`` does, in simulated seconds:

1. the failure becomes the exception the wrapped call would raise
   (:mod:`fleetchaos.policies.exception_map`);
2. ``retry`` false: the call raises, the task gives up (``GiveUp``);
3. ``wait`` is drawn (jitter from the task's seeded stream), then ``stop`` is asked (it sees
   the wait, for ``stop_before_delay``); a stop gives up;
4. otherwise ``Retry(delay=wait)``, from the first step (tenacity calls the whole function
   again), or from the partial progress the envelope revealed with ``resume=True``; a wait
   the configuration's sleep cannot take fails the task as that sleep fails (:meth:`TenacityPolicy.slept`).

No tenacity import: the policy runs, pickles and prints without it.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

from fleetchaos.policies.exception_map import ExceptionMap, build_exception_map
from fleetchaos.policies.readers import resume_of
from fleetchaos.policies.tenacity_blocks import AttemptState, retry_if_exception_type, stop_never, wait_fixed
from fleetchaos.sim.observation import Action, GiveUp, Observation, Retry, TaskHistory

__all__ = ["ASYNC_SLEEP", "CUSTOM_SLEEP", "TIME_SLEEP", "TIME_SLEEP_LIMIT_S", "TenacityPolicy"]

#: The sleeps a configuration can wait with (:attr:`TenacityPolicy.sleep`).
TIME_SLEEP = "time.sleep"
ASYNC_SLEEP = "asyncio.sleep"
CUSTOM_SLEEP = "custom"
#: ``time.sleep`` counts in 64-bit nanoseconds: a longer sleep raises ``OverflowError`` (measured on CPython 3.11,
#: Linux: 9.3e9 s raises; within a few seconds below the limit, ``OSError`` instead).
TIME_SLEEP_LIMIT_S = 2**63 / 1e9


@dataclass(frozen=True, slots=True, repr=False)
class TenacityPolicy:
    """A tenacity retry configuration evaluated in simulated time: retry, wait, then stop, as tenacity orders them.

    ``stop``, ``wait`` and ``retry`` are the strategies of
    :mod:`fleetchaos.policies.tenacity_blocks`; ``exceptions`` is the failure -> exception
    table (:func:`fleetchaos.policies.exception_map.build_exception_map`).  The repr names
    the source and every part, so a results file records what ran.
    """

    stop: Any = field(default_factory=stop_never)
    wait: Any = field(default_factory=lambda: wait_fixed(0.0))
    retry: Any = field(default_factory=lambda: retry_if_exception_type((Exception,)))
    exceptions: ExceptionMap = field(default_factory=build_exception_map)
    resume: bool = False
    """Resume from the partial progress the envelope revealed (False: the whole call again, as tenacity does)."""
    name: str = "tenacity"
    """What was translated (``mypkg.retrying:RETRY``), for people and results files."""
    ignored: tuple[str, ...] = ()
    """The configuration's hooks that are set and not modelled (``retry_error_callback``, ``before_sleep``...)."""
    sleep: str = TIME_SLEEP
    """What the configuration sleeps with: :data:`TIME_SLEEP` (``Retrying``'s default), :data:`ASYNC_SLEEP`
    (``AsyncRetrying``'s) or :data:`CUSTOM_SLEEP`; it decides what a wait no clock can take does (:meth:`slept`)."""

    @property
    def description(self) -> str:
        """What ``fleetchaos policies show`` says of it."""
        text = (
            f"The tenacity configuration {self.name}, evaluated in simulated time: retry, wait, then stop, "
            "in tenacity's order; each failure raises the exception the exception map gives it."
        )
        if "retry_error_callback" in self.ignored:
            text += (
                " Its retry_error_callback is not modelled: a task whose retries ran out gives up as failed, "
                "whatever the callback would have returned."
            )
        return text

    def __repr__(self) -> str:
        parts = [
            f"name={self.name!r}",
            f"stop={self.stop!r}",
            f"wait={self.wait!r}",
            f"retry={self.retry!r}",
            f"exceptions={self.exceptions!r}",
        ]
        if self.resume:
            parts.append("resume=True")
        if self.ignored:  # results record that these hooks were set and not modelled
            parts.append(f"ignored={self.ignored!r}")
        if self.sleep != TIME_SLEEP:
            parts.append(f"sleep={self.sleep!r}")
        return f"TenacityPolicy({', '.join(parts)})"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """GiveUp when the exception is not retried or the stop is reached; else Retry after the drawn wait."""
        state = AttemptState(
            attempt_number=history.attempts,
            seconds_since_start=history.elapsed_s,
            exception=self.exceptions.exception_for(observation),
            rng=history.rng,
        )
        if not self.retry(state):
            return GiveUp()
        state.upcoming_sleep = float(self.wait(state))
        if self.stop(state):
            return GiveUp()
        delay = self.slept(state.upcoming_sleep)
        start, done = resume_of(observation) if self.resume else (0, ())
        return Retry(delay, start, done)

    def slept(self, wait: float) -> float:
        """How long the configuration's sleep really waits for ``wait``, or the exception it raises, as tenacity's
        loop meets it at the retry (the task then fails: containment records the exception on it).

        ``time.sleep`` refuses a negative or NaN length (``ValueError``) and one past its clock's range
        (``OverflowError``; inf included); ``asyncio.sleep`` returns at once for a length <= 0 or NaN and never
        returns for inf; a custom sleep's answer cannot be known, so such a wait fails the task naming it.
        """
        if 0.0 <= wait < TIME_SLEEP_LIMIT_S:
            return wait
        if self.sleep == ASYNC_SLEEP:
            return 0.0 if not wait > 0.0 else min(wait, sys.float_info.max)  # inf: a sleep that never ends
        if self.sleep == CUSTOM_SLEEP:
            raise ValueError(
                f"the wait is {wait!r}, and what the configuration's own sleep function does with it cannot be "
                "simulated (time.sleep raises, asyncio.sleep returns at once or never)"
            )
        where = f"time.sleep({wait!r}) at a retry of tenacity's Retrying"
        if math.isnan(wait):
            raise ValueError(f"Invalid value NaN (not a number): {where}")
        if abs(wait) >= TIME_SLEEP_LIMIT_S:
            raise OverflowError(f"timestamp out of range for platform time_t: {where}")
        raise ValueError(f"sleep length must be non-negative: {where}")
