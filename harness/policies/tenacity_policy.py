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
   again), or from the partial progress the envelope revealed with ``resume=True``.

No tenacity import: the policy runs, pickles and prints without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetchaos.policies.exception_map import ExceptionMap, build_exception_map
from fleetchaos.policies.readers import resume_of
from fleetchaos.policies.tenacity_blocks import AttemptState, retry_if_exception_type, stop_never, wait_fixed
from fleetchaos.sim.observation import Action, GiveUp, Observation, Retry, TaskHistory

__all__ = ["TenacityPolicy"]


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
        start, done = resume_of(observation) if self.resume else (0, ())
        return Retry(max(0.0, state.upcoming_sleep), start, done)
