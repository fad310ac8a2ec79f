"""The team's code contained to its task, as the simulator contains a policy (:mod:`fleetchaos.sim.containment`).

Whatever escapes the entrypoint or the claim function of a real run, ``SystemExit``,
``KeyboardInterrupt`` and every other ``BaseException`` included, ends that task: it is
noted on the task's record as a policy error and the task claims ``failed``.  Only the
harness's own interrupts pass (:data:`~fleetchaos.sim.interrupts.PASS_THROUGH`: the
user's Ctrl-C, which :func:`~fleetchaos.sim.interrupts.user_signals` raises as
``UserInterrupt`` while a run is on).

asyncio lets a ``SystemExit`` or ``KeyboardInterrupt`` of any task out of the event loop;
:meth:`Containment.task_factory` watches every task the code under test starts and notes
it on the task scope that started it, and :meth:`Containment.stray` on the tasks in
flight when no task could be named (a loop callback raised it).

Every text noted goes through :func:`~fleetchaos.sim.interrupts.policy_text`: one line,
bounded, the run's planted secrets and the environment's secrets redacted by value and
every known key shape by pattern.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from fleetchaos.real.runtime import CLAIMS, Runtime
from fleetchaos.real.scope import SCOPE, TaskScope
from fleetchaos.sim.formats._vendor import planted
from fleetchaos.sim.interrupts import PASS_THROUGH, describe_exception, policy_text
from fleetchaos.sim.sanitise import environment_secrets

__all__ = ["Containment"]

#: What asyncio lets out of its loop instead of keeping it on the task.
_LOOP_EXITS = (SystemExit, KeyboardInterrupt)


class Containment:
    """One run's containment of the team's code, with the secrets it redacts from what that code raises."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self.secrets: tuple[str, ...] = (*planted(rt.seed).all(), *environment_secrets())
        self._noted: set[int] = set()  # ids of the loop exits already noted on a task

    def failed(self, scope: TaskScope, exc: BaseException, where: str = "") -> None:
        """The task's code raised ``exc``: note it (the first error is kept) and claim failed."""
        rec = scope.record
        rec.policy_error = rec.policy_error or f"agent raised {describe_exception(exc, self.secrets)}{where}"
        if rec.claim == "in_flight":
            rec.claim = "failed"

    def claimed(self, scope: TaskScope, value: Any, claim: Callable[[Any], str]) -> None:
        """The entrypoint returned ``value``: its claim, as ``claim(value)`` words it."""
        try:
            word = claim(value)
            word = word if type(word) is str and word in CLAIMS else policy_text(word, values=self.secrets)
        except PASS_THROUGH:
            raise
        except BaseException as exc:  # a broken claim function is the team's: contained to the task
            scope.record.policy_error = f"claim() raised {describe_exception(exc, self.secrets)}"
            word = "failed"
        if scope.record.claim == "in_flight":
            scope.claim(word)

    def scrub(self) -> None:
        """Scrub every record's noted error once more (the runtime notes some itself: an unknown claim word)."""
        for rec in self.rt.records:
            if rec.policy_error:
                rec.policy_error = policy_text(rec.policy_error, values=self.secrets)

    # -- asyncio ------------------------------------------------------------------------------

    def task_factory(self, loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task:
        """The loop's task factory: a plain task, watched for a loop exit if a task scope made it."""
        task: asyncio.Task = asyncio.Task(coro, loop=loop, **kwargs)
        scope = SCOPE.get()
        if scope is not None:
            task.add_done_callback(functools.partial(self._ended, scope))
        return task

    def _ended(self, scope: TaskScope, task: asyncio.Future) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if isinstance(exc, _LOOP_EXITS) and not isinstance(exc, PASS_THROUGH):
            self._noted.add(id(exc))
            self.failed(scope, exc)

    def stray(self, exc: BaseException) -> None:
        """A loop exit no watched task noted (call it from the loop, after the tasks' own callbacks)."""
        if id(exc) in self._noted:
            return
        for rec in self.rt.records:
            if rec.end_s is None:
                rec.policy_error = rec.policy_error or (
                    f"agent raised {describe_exception(exc, self.secrets)} outside any task, while this one ran"
                )
                if rec.claim == "in_flight":
                    rec.claim = "failed"

    def drive(self, loop: asyncio.AbstractEventLoop, main: Any) -> None:
        """Run ``main`` on ``loop`` to its end, whatever loop exits the code under test raises on the way."""
        loop.set_task_factory(self.task_factory)
        run = loop.create_task(main)
        while not run.done():
            try:
                loop.run_until_complete(run)
            except PASS_THROUGH:
                raise
            except BaseException as exc:  # asyncio let a task's SystemExit or KeyboardInterrupt out
                loop.call_soon(self.stray, exc)
