"""Adversarial user policies for the containment tests, importable as ``adversarial_policies:Name`` (not a test module)."""

from __future__ import annotations

from fleetchaos.sim.observation import Retry

#: Module-level state a misbehaving policy appends to on every decision.
SHARED: list[int] = []


class Raises:
    """Raises on every decision."""

    name = "raises"

    def decide(self, observation, history):
        """Always raise."""
        raise RuntimeError("adversary raised on purpose")


class Garbage:
    """Returns a string instead of an action."""

    name = "garbage"

    def decide(self, observation, history):
        """Return garbage."""
        return "retry please"


class SleepsForever:
    """Retries after 1e15 simulated seconds: the task never ends within the horizon."""

    name = "sleeps-forever"

    def decide(self, observation, history):
        """Wait (in simulated time) far past the end of the run."""
        return Retry(delay_s=1e15)


class SleepsAtTheFloatLimit:
    """Retries after the largest finite float: the clock must not overflow to inf."""

    name = "sleeps-at-float-limit"

    def decide(self, observation, history):
        """Wait 1.7976931348623157e308 simulated seconds."""
        return Retry(delay_s=1.7976931348623157e308)


class NeverGivesUp:
    """Retries at once, forever."""

    name = "never-gives-up"

    def decide(self, observation, history):
        """Always retry."""
        return Retry()


class MutatesSharedState:
    """Corrupts the history it is handed (wrong types), appends to a module-level list, then retries."""

    name = "mutates-shared-state"

    def decide(self, observation, history):
        """Scribble over the task history and module state, then retry."""
        SHARED.append(history.task_id)
        history.retries = None
        history.refreshes = "many"
        history.reroutes = -1
        history.same_failure_streak = "streak"
        history.last_code = None
        history.rng = None
        return Retry()


class MutatesObservation:
    """Tries to assign to the frozen Observation."""

    name = "mutates-observation"

    def decide(self, observation, history):
        """Assign to a frozen field (raises FrozenInstanceError)."""
        observation.ok = True
        return Retry()
