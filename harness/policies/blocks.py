"""Composable recovery building blocks, in the spirit of tenacity's ``stop``/``wait``/``retry`` modules.

Small frozen dataclasses with one method, ``__call__(observation, history)``, joined with
operators and flattened into readable reprs a results file can record.  Nothing here
imports SimPy or reads a clock; every random draw comes from ``history.rng``, so a decision
is reproducible from its inputs.

* what to retry on (:mod:`~fleetchaos.policies.retry_on`): ``retry_if_category``,
  ``retry_if_code``, ``retry_if_retryable``, ``retry_always``, ``retry_never``; joined with
  ``|`` (any) and ``&`` (all);
* when to stop (:mod:`~fleetchaos.policies.stop`): ``stop_after_attempt``,
  ``stop_after_delay``, ``stop_after_same_failure``, ``stop_never``; joined with ``|`` (any)
  and ``&`` (all);
* how long to wait (:mod:`~fleetchaos.policies.wait`): ``wait_fixed``, ``wait_exponential``,
  ``wait_full_jitter``, ``wait_equal_jitter``, ``wait_decorrelated_jitter``,
  ``wait_retry_after``; summed with ``+`` and combined with ``wait_max``;
* what to do instead (:mod:`~fleetchaos.policies.instead`): ``instead_reroute``,
  ``instead_refresh``, ``instead_alternative``, ``instead_escalate``, ``instead_give_up``,
  ``instead_accept_partial``;
* :class:`Policy` (this module) joins one of each into a recovery policy with ``decide``.

Plain callables ``f(observation, history)`` are accepted wherever a block is.  This module
is the vocabulary a recipe is written in: ``from fleetchaos.policies.blocks import *`` gives
every block, the envelope readers (:mod:`~fleetchaos.policies.readers`) and :class:`Policy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetchaos.policies._combinators import callable_repr, check_callable
from fleetchaos.policies.instead import (
    instead_accept_partial,
    instead_alternative,
    instead_escalate,
    instead_give_up,
    instead_refresh,
    instead_reroute,
)
from fleetchaos.policies.readers import category_of, code_of, resume_of, retry_after_s_of, retryable_of
from fleetchaos.policies.retry_on import (
    retry_all,
    retry_always,
    retry_any,
    retry_if_category,
    retry_if_code,
    retry_if_retryable,
    retry_never,
)
from fleetchaos.policies.stop import (
    stop_after_attempt,
    stop_after_delay,
    stop_after_same_failure,
    stop_all,
    stop_any,
    stop_never,
)
from fleetchaos.policies.wait import (
    decorrelated_jitter,
    wait_decorrelated_jitter,
    wait_equal_jitter,
    wait_exponential,
    wait_fixed,
    wait_full_jitter,
    wait_max,
    wait_retry_after,
    wait_sum,
)
from fleetchaos.sim.observation import Action, Observation, Retry, TaskHistory

__all__ = [
    "Policy",
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
            check_callable(getattr(self, part), f"Policy.{part}")

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}"] + [
            f"{p}={callable_repr(getattr(self, p))}" for p in ("retry", "stop", "wait", "instead")
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
