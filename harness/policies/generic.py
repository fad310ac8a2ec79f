"""Policies that make the most of a failure they cannot read: no envelope field, no error text.

A generic error format tells the orchestrator one thing: the dispatch failed.  The
baselines answer that with the same remedy every time (retry, or retry after a short
backoff).  :class:`RemedyLadder` tries each remedy the fleet offers in turn, cheapest
first, because the cause is unknown: a quick retry (a blip, a timeout), then fresh
credentials (an expired key), then another worker (a full disk, a crashed node, a missing
tool), then long waits on the time scale of outages (a provider's rate-limit window, a
partition), then a human.  The ``ladder-breaker`` preset adds per-worker circuit breakers,
so a worker that keeps failing across tasks is routed around before a task meets it.

What these policies read: ``history.attempts`` (which rung this failure is) and
``history.rng`` (jitter).  Never ``observation.envelope`` or ``observation.text``: a test
runs them on structured errors with the envelope and text blanked and checks every
decision is the same.

Why the defaults are what they are (none is fitted to a figure; ``fleetchaos tune``
searches them per scenario):

* ``quick_s = 1``: a blip or a slow call clears in about a round trip; a second's jitter
  spreads the retries of tasks that failed together without costing a task noticeable time.
* rungs ``retry, refresh, reroute``: cheapest first.  A retry costs one dispatch; a refresh
  costs the fleet's ``credential_refresh_s`` (20 s by default) and one dispatch; a reroute
  moves the task's workspace to another worker and redoes its work there.
* ``long_base_s = 120``, ``long_cap_s = 1800``, three waits: the outages of the scenario
  catalogue last minutes to an hour (rate-limit windows of 45 to 60 minutes, crashed
  workers down for 15 minutes, partitions of 20 minutes to an hour).  Waits of about 2, 4
  and 8 minutes (equal jitter: between half and all of each) outlast a short outage within
  three rungs and stop a quarter of an hour after the failure, inside the 30-minute deadline
  the catalogue's task templates set, instead of retrying into the outage every few seconds.
* then ``escalate``: a cause none of the machine remedies cleared needs a person.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetchaos.policies._recovery import exponential
from fleetchaos.sim.observation import (
    Action,
    Escalate,
    GiveUp,
    Observation,
    RefreshCredentials,
    Reroute,
    Retry,
    TaskHistory,
)

__all__ = ["RUNGS", "RemedyLadder"]

#: The remedies a ladder can climb, in words: ``retry`` (at once, within ``quick_s``),
#: ``refresh`` (fresh credentials, then the same worker), ``reroute`` (the next worker),
#: ``wait`` (a long backoff, then the same worker), ``escalate`` (a human), ``give_up``.
RUNGS = ("retry", "refresh", "reroute", "wait", "escalate", "give_up")


@dataclass(frozen=True, slots=True)
class RemedyLadder:
    """An escalating ladder of remedies for failures it cannot read: retry, refresh, reroute, wait long, escalate.

    The n-th failure of a task takes rung n of ``rungs``; past the top it gives up if the
    ladder ends in ``give_up`` and escalates otherwise.  ``wait``
    rungs back off exponentially from ``long_base_s`` (doubling per wait rung, at most
    ``long_cap_s``) with equal jitter.  Every dispatch restarts the task from its first
    step: nothing it was shown says what completed.  It reads no envelope and no error text.
    """

    rungs: tuple[str, ...] = ("retry", "refresh", "reroute", "wait", "wait", "wait", "escalate")
    quick_s: float = 1.0
    long_base_s: float = 120.0
    long_cap_s: float = 1800.0
    name: str = "ladder"

    def __post_init__(self) -> None:
        unknown = [r for r in self.rungs if r not in RUNGS]
        if not self.rungs or unknown:
            raise ValueError(
                f"rungs must be a non-empty tuple of {', '.join(RUNGS)}"
                + (f"; got {', '.join(map(repr, unknown))}" if unknown else "")
            )

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        """The rung of this failure (the task's n-th): its remedy, with its wait."""
        index = max(0, history.attempts - 1)
        if index >= len(self.rungs):
            return GiveUp() if self.rungs[-1] == "give_up" else Escalate("remedy ladder climbed to the top")
        rung = self.rungs[index]
        if rung == "retry":
            return Retry(history.rng.uniform(0.0, self.quick_s))
        if rung == "refresh":
            return RefreshCredentials()
        if rung == "reroute":
            return Reroute()
        if rung == "wait":
            waits_before = self.rungs[:index].count("wait")
            ceiling = exponential(self.long_base_s, self.long_cap_s, waits_before)
            return Retry(ceiling / 2.0 + history.rng.uniform(0.0, ceiling / 2.0))
        if rung == "give_up":
            return GiveUp()
        return Escalate("remedy ladder climbed to the top")
