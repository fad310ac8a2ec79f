"""Workers: a node's state (:class:`~fleetchaos.sim.state.NodeState`) plus its tool slots.

The slots are the one part of the fleet that needs SimPy (a grant resumes a waiting
process); everything else the calls meet lives in :mod:`fleetchaos.sim.state`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

import simpy

from fleetchaos.sim.state import NodeState, TokenBucket


class SlotPool:
    """A worker's tool slots: the grants of a ``simpy.Resource``, in the same order, at a fraction of its cost.

    A ``Resource`` request costs two SimPy events even when a slot is free (the request,
    then the release), and a tool-slot grab is on the simulation's hottest path.  Here a
    free slot is taken with no event when nothing else is due at this instant, and the
    order of everything is kept exactly as a ``Resource`` would have it:

    * a free slot taken while other events are due now resumes the process after them
      (an already-triggered event), as a granted request would;
    * a released slot goes to the longest waiter when a release event is processed, one
      waiter per release, as ``Resource`` hands it over; a request that arrives in
      between first grants the longest waiter, then queues behind the others.

    ``tests/unit/test_rng_and_fleet.py`` checks the grants against ``simpy.Resource``
    with ties (integer times) and without, and a whole world against one built on
    ``Resource``.  The one difference: a process resumed by an event that other
    processes also wait on may run before them (the world has no such events).
    """

    __slots__ = ("_due", "_waiting", "capacity", "count", "env")

    def __init__(self, env: simpy.Environment, capacity: int):
        self.env = env
        self.capacity = capacity
        self.count = 0  # slots granted and not yet released
        self._waiting: deque[simpy.Event] = deque()
        # The environment's event heap, the one list ``env.peek()`` reads (SimPy keeps it for the
        # environment's life): read here directly, a Python call fewer on every step.
        self._due: list = env._queue

    def acquire(self, now: float) -> simpy.Event | None:
        """Take a slot at ``now`` (the environment's time, which the caller has just read): None if it was
        taken now, else an event to wait for (it fires when the slot is granted)."""
        env = self.env
        if self._waiting:
            if self.count < self.capacity:  # a release is pending: the longest waiter goes first
                self.count += 1
                self._waiting.popleft().succeed()
        elif self.count < self.capacity:
            self.count += 1
            due = self._due
            if not due or due[0][0] > now:  # env.peek() > now
                return None  # nothing else is due now: carrying on is what the request's event would do
            granted = env.event()
            granted.succeed()  # resume after the events already due now
            return granted
        event = env.event()
        self._waiting.append(event)
        return event

    def release(self) -> None:
        """Give a slot back; the longest waiter gets it when the release event is processed."""
        self.count -= 1
        if self._waiting:
            released = self.env.event()
            released.callbacks.append(self._grant_next)
            released.succeed()

    def cancel(self, request: simpy.Event) -> None:
        """Withdraw a request still waiting for a slot (its client gave up and its work is cancelled)."""
        self._waiting.remove(request)

    def _grant_next(self, _released: simpy.Event) -> None:
        if self._waiting and self.count < self.capacity:
            self.count += 1
            self._waiting.popleft().succeed()

    @property
    def queued(self) -> int:
        """Dispatches waiting for a slot."""
        return len(self._waiting)


class Worker(NodeState):
    """One worker node: its :class:`NodeState` (disk, credentials, crashes), tool slots and load."""

    __slots__ = ("in_flight", "slots")

    def __init__(
        self,
        env: simpy.Environment,
        index: int,
        tool_slots: int,
        disk_full_spans: list[tuple[float, float]],
        key_expiries: list[float],
        credential_lifetime_s: float,
        crash_spans: list[tuple[float, float]] | None = None,
        disk_capacity_mb: float = math.inf,
        api_keys: Sequence[tuple[list[float], float]] = (),
    ):
        super().__init__(
            index, disk_full_spans, key_expiries, credential_lifetime_s, crash_spans, disk_capacity_mb, api_keys
        )
        self.slots = SlotPool(env, tool_slots)
        self.in_flight = 0


def first_worker(workers: list[Worker], task_id: int) -> int:
    """The least loaded worker for a task's first dispatch (ties broken in rotation from the task's id)."""
    n = len(workers)
    return min(range(n), key=lambda i: (workers[i].in_flight, (i - task_id) % n))


def reroute(workers: list[Worker], current: int, least_loaded: bool) -> int:
    """The worker a reroute moves a task to: the next in rotation, or the least loaded other one."""
    n = len(workers)
    if n == 1:
        return current
    if not least_loaded:
        return (current + 1) % n
    others = [i for i in range(n) if i != current]
    return min(others, key=lambda i: (workers[i].in_flight, (i - current) % n))


__all__ = ["SlotPool", "TokenBucket", "Worker", "first_worker", "reroute"]
