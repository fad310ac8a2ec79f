"""Policy containment: a recovery policy's mistakes end its own task, never the run.

:class:`ContainedPolicy` wraps a user's :class:`~fleetchaos.sim.observation.RecoveryPolicy`
for the driver.  It reads the policy's optional attributes once, checks every action it
returns field by field and rebuilds it as one of the canonical action types, and turns an exception in any hook into a ``policy_error`` on the task
(the task then gives up), so the driver only ever acts on well-formed actions.

*Any* exception: ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit`` and other
``BaseException`` subclasses a policy raises are its own failure, never the harness's
exit; only the harness's own interrupts pass (:data:`fleetchaos.sim.interrupts.PASS_THROUGH`:
the user's Ctrl-C or SIGTERM, the run's wall-clock limit).  Every text recorded from a
policy goes through :func:`~fleetchaos.sim.interrupts.policy_text` (sanitised, bounded,
never raising), because it reaches results, reports, the history and the terminal.
"""

from __future__ import annotations

import math
from dataclasses import fields
from operator import attrgetter
from typing import SupportsFloat

from fleetchaos.sim.interrupts import PASS_THROUGH, check_expired, describe_exception, exception_parts, policy_text
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.observation import (
    ACTION_TYPES,
    MODEL_TURN_ACTIONS,
    Action,
    DeadLetter,
    Escalate,
    GiveUp,
    Observation,
    RecoveryPolicy,
    RefreshCredentials,
    Remediate,
    Reroute,
    Retry,
    Rollback,
    TaskHistory,
    UseAlternative,
)
from fleetchaos.sim.transport import TransportRetry, TransportSpecError, transport_layers


def as_number(value: SupportsFloat, what: str) -> float:
    """A finite, non-negative float from any real number (numpy scalars included)."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a number, got a bool")
    number = float(value)
    if not (0.0 <= number < math.inf):
        raise ValueError(f"{what} must be finite and >= 0, got {value!r}")
    return number


def as_index(value: SupportsFloat, what: str) -> int:
    """A non-negative whole number from any real number."""
    number = as_number(value, what)
    if number != int(number):
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    return int(number)


#: Every field of a TaskHistory, in its constructor's order.
_HISTORY_FIELDS = attrgetter(*(f.name for f in fields(TaskHistory)))


def copy_history(history: TaskHistory) -> TaskHistory:
    """A shallow copy, as ``dataclasses.replace(history)`` makes it (every field passed to the
    constructor), without its per-call field introspection: one per policy decision."""
    return TaskHistory(*_HISTORY_FIELDS(history))


def canonical(action: object) -> Action:
    """Rebuild a policy's action as a checked instance of one of the action classes."""
    if type(action) is Retry or type(action) is Reroute or type(action) is UseAlternative:
        # The common answer, already well formed (a finite float delay, a whole-number resume
        # point a float holds exactly, nothing done): what the checks below would build.
        delay, start, done = action.delay_s, action.resume_from, action.done_items
        exact = type(delay) is float and type(start) is int and type(done) is tuple
        if exact and 0.0 <= delay < math.inf and 0 <= start < 2**53 and not done:
            return type(action)(delay, start, ())
    for cls in (Escalate, Rollback, DeadLetter):
        if isinstance(action, cls):
            return cls(policy_text(action.reason))
    if isinstance(action, GiveUp):
        if action.claim not in ("failed", "partial"):
            raise ValueError(f"GiveUp claim must be 'failed' or 'partial', got {action.claim!r}")
        return GiveUp(action.claim)
    if isinstance(action, (Retry, Reroute, RefreshCredentials, UseAlternative, Remediate, *MODEL_TURN_ACTIONS)):
        start = as_index(action.resume_from, "resume_from")
        done = tuple(sorted({as_index(i, "done_items entry") for i in action.done_items}))
        for held in (RefreshCredentials, Remediate):  # the base class, as for every action: the driver dispatches on it
            if isinstance(action, held):
                return held(start, done)
        assert isinstance(action, (Reroute, UseAlternative, Retry, *MODEL_TURN_ACTIONS))  # the others just checked
        delay = as_number(action.delay_s, "delay_s")
        for moved in (Reroute, UseAlternative, Retry, *MODEL_TURN_ACTIONS):
            if isinstance(action, moved):
                return moved(delay, start, done)
    raise TypeError(f"expected an action ({', '.join(t.__name__ for t in ACTION_TYPES)}), got {type(action).__name__}")


class ContainedPolicy:
    """A recovery policy as the driver uses it: optional attributes read once, every hook contained."""

    def __init__(self, policy: RecoveryPolicy, orchestrators: int):
        """Read ``policy``'s optional attributes and build each orchestrator's shared state."""
        self.policy = policy
        self.hooks_error: str | None = None
        """Why the policy's hooks are unusable: every task then records it and gives up."""
        self.guardrail = bool(self._attribute("guardrail", False))
        self.idempotent = bool(self._attribute("idempotency_keys", False))
        self.transport: tuple[TransportRetry, ...] = ()
        """The policy's transport layers, nearest the tool first (the CLI refuses a malformed one before any run)."""
        try:
            self.transport = transport_layers(self._attribute("transport", None))
        except TransportSpecError as exc:
            self._broken(str(exc))
        self._observe = self._attribute("observe", None)
        self._choose = self._attribute("choose_worker", None)
        self._admit = self._attribute("before_dispatch", None)
        self.observes = self._observe is not None
        self.chooses = self._choose is not None
        self.admits = self._admit is not None
        self.shared: list[object] = [None] * orchestrators
        new_shared = self._attribute("new_shared_state", None)
        if new_shared is not None:
            try:
                self.shared = [new_shared() for _ in range(orchestrators)]
            except PASS_THROUGH:
                raise
            except BaseException as exc:  # a broken user policy is contained: every task records why
                name, message = exception_parts(exc)
                self._broken(f"policy raised {name} in new_shared_state(): {message}")

    def _broken(self, why: str) -> None:
        self.hooks_error = self.hooks_error or policy_text(why)

    def _attribute(self, name: str, default):
        """The policy's optional attribute, or ``default``; a property that raises makes the policy unusable."""
        try:
            return getattr(self.policy, name, default)
        except PASS_THROUGH:
            raise
        except BaseException as exc:
            self._broken(f"policy raised {describe_exception(exc)} reading its attribute {name!r}")
            return default

    def decide(self, obs: Observation, history: TaskHistory, rec: TaskRecord) -> Action:
        """Ask the policy, containing anything it does wrong to this task.

        Whatever the policy returns is checked field by field and rebuilt as one of the
        canonical action types, so the driver never acts on a malformed action.
        """
        if self.hooks_error is not None:
            rec.policy_error = self.hooks_error
            return GiveUp()
        try:
            # A copy of the history: a policy cannot corrupt the driver's state.
            action = self.policy.decide(obs, copy_history(history))
        except PASS_THROUGH:
            raise
        except BaseException as exc:  # a broken user policy must not stop the run, whatever it raises
            check_expired()  # the exception may be the limit's interrupt, swallowed and replaced
            rec.policy_error = policy_text(f"policy raised {describe_exception(exc)}")
            return GiveUp()
        check_expired()  # a policy that caught the limit's interrupt itself
        try:
            return canonical(action)
        except (TypeError, ValueError, OverflowError) as exc:
            rec.policy_error = policy_text(f"policy returned an invalid action: {policy_text(exc)}")
            return GiveUp()
        except PASS_THROUGH:
            raise
        except BaseException as exc:  # reading the action ran the policy's code (a property, __float__)
            rec.policy_error = policy_text(f"policy returned an action that raised {describe_exception(exc)}")
            return GiveUp()

    def choose_worker(self, proposed: int, workers: int, shared: object, now: float, rec: TaskRecord) -> int:
        """Let the policy move a dispatch (a breaker skipping open workers); a bad answer keeps ``proposed``."""
        try:
            chosen = as_index(self._choose(proposed, workers, shared, now), "choose_worker()")
            if chosen >= workers:
                raise ValueError(f"choose_worker() returned worker {chosen}; the fleet has {workers}")
            return chosen
        except PASS_THROUGH:
            raise
        except BaseException as exc:
            rec.policy_error = rec.policy_error or policy_text(
                f"policy choose_worker() failed: {describe_exception(exc)}"
            )
            return proposed

    def before_dispatch(
        self, shared: object, now: float, first: bool, draw: float, rec: TaskRecord
    ) -> GiveUp | Escalate | None:
        """The policy's verdict on a dispatch about to go out: None sends it; GiveUp or Escalate refuses it.

        Anything else it returns, or raises, is recorded as a policy error and the dispatch goes out.
        """
        try:
            verdict = self._admit(shared, now, first, draw)
            if verdict is None:
                return None
            action = canonical(verdict)
            if not isinstance(action, (GiveUp, Escalate)):
                raise TypeError(f"expected None, GiveUp or Escalate, got {type(action).__name__}")
            return action
        except Exception as exc:
            rec.policy_error = rec.policy_error or f"policy before_dispatch() failed: {type(exc).__name__}: {exc}"[:500]
            return None

    def observe(self, obs: Observation, shared: object, now: float, rec: TaskRecord) -> None:
        """Tell the policy's shared controls about a dispatch's outcome; a raising hook is recorded, not fatal."""
        try:
            self._observe(obs, shared, now, rec.id)
        except PASS_THROUGH:
            raise
        except BaseException as exc:
            rec.policy_error = rec.policy_error or policy_text(f"policy observe() raised {describe_exception(exc)}")
