"""How the orchestrator's model reads an error: the chances that it misreads, gives up or retries what cannot pass.

An LLM orchestrator does not execute its recovery policy like a program: it reads each
outcome its tools report, in the context of everything before it, and sometimes reads
it wrong.  This module is that reading, a component of its own with four chances, each
a scenario setting (``fleet.misread_probability`` and ``fleet.model``'s
``give_up_probability``, ``retry_permanent_probability``, ``notice_silent_probability``,
``attempt_factor``), scaled per format by how explicit the format makes a failure
(``fleet.misread_factor.<setting>``, :mod:`fleetchaos.sim.misread`: a raw trace 3, a
bare word 1, an envelope 0.2):

* **read as success**: the model takes a reported failure for a success and claims it
  (``misread_probability`` x the format's factor);
* **give up early**: the model stops on a failure before its policy decides, and says
  the task failed (``give_up_probability`` x the format's factor);
* **retry a permanent failure**: the policy stops on a failure that no retry can pass
  (its kind's contract says it is not recoverable) and the model retries it anyway
  (``retry_permanent_probability`` x the format's factor);
* **notice a silent failure**: a call that reported a success it did not achieve (a
  masked failure) is noticed from its hollow result, and the step is retried
  (``notice_silent_probability``, the same in every format: a silent failure looks like
  a success in all of them).

Each of the first three grows with the failed attempts already in the task's context:
the n-th failed observation of a task is read with the chance times
``attempt_factor ** (n - 1)`` (at most 1), so the model's chance of recovering falls
with each failed attempt, and a silent fault, which must first be noticed, is
recovered less often than a reported one.  The defaults are judgements, documented with
their sources in docs/formats.md ("How the model reads an error"); tests check the
shapes, never a published figure.  Each chance is drawn from its own keyed stream of
the task and its attempt, so every arm meets the same draws.  Standard library only;
simulator-only (in real-code mode the team's own model reads its errors).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fleetchaos.sim import _rng
from fleetchaos.sim.misread import misread_factor
from fleetchaos.sim.observation import DeadLetter, Escalate, GiveUp, Rollback
from fleetchaos.sim.truth import FAILURES

if TYPE_CHECKING:
    from fleetchaos.sim.config import FleetSpec

#: The actions that stop a task: the model may retry past one of them (:meth:`ModelReading.retries_past`).
STOPS = (GiveUp, Escalate, DeadLetter, Rollback)

S_MISREAD = _rng.stream_id("orchestrator:misread")
S_GIVE_UP = _rng.stream_id("model:give_up")
S_RETRY_PERMANENT = _rng.stream_id("model:retry_permanent")
S_NOTICE_SILENT = _rng.stream_id("model:notice_silent")


@dataclass(frozen=True, slots=True)
class ModelReading:
    """One run's reading model: the chances for the arm's format, and the run's draw keys."""

    misread_p: float
    give_up_p: float
    retry_permanent_p: float
    notice_silent_p: float
    attempt_factor: float
    misread_key: int
    give_up_key: int
    retry_permanent_key: int
    notice_silent_key: int

    @classmethod
    def build(cls, fleet: FleetSpec, errors: object, run_key: int) -> ModelReading:
        """The reading of ``errors`` under the fleet's settings."""
        factor = misread_factor(errors, fleet.misread_factor)
        model = fleet.model
        return cls(
            misread_p=fleet.misread_probability * factor,
            give_up_p=model.give_up_probability * factor,
            retry_permanent_p=model.retry_permanent_probability * factor,
            notice_silent_p=model.notice_silent_probability,
            attempt_factor=model.attempt_factor,
            misread_key=_rng.key(run_key, S_MISREAD),
            give_up_key=_rng.key(run_key, S_GIVE_UP),
            retry_permanent_key=_rng.key(run_key, S_RETRY_PERMANENT),
            notice_silent_key=_rng.key(run_key, S_NOTICE_SILENT),
        )

    def chance(self, base: float, failed: int) -> float:
        """``base`` read at the ``failed``-th failed observation of a task (1: the first)."""
        if base <= 0.0:
            return 0.0
        return min(1.0, base * self.attempt_factor ** (failed - 1))

    def reads_as_success(self, task_id: int, attempt: int, failed: int) -> bool:
        """The model reads this reported failure as a success."""
        p = self.chance(self.misread_p, failed)
        return p > 0.0 and _rng.uniform(_rng.extend(self.misread_key, task_id, attempt)) < p

    def gives_up(self, task_id: int, attempt: int, failed: int) -> bool:
        """The model stops on this failure before its policy decides."""
        p = self.chance(self.give_up_p, failed)
        return p > 0.0 and _rng.uniform(_rng.extend(self.give_up_key, task_id, attempt)) < p

    def retries_past(self, action: object, failure: str | None, task_id: int, attempt: int, failed: int) -> bool:
        """The model retries although its policy's ``action`` stops the task on ``failure``, which no retry can
        pass (its kind's contract says it is not recoverable)."""
        if not isinstance(action, STOPS) or failure is None or FAILURES[failure].recoverable is not False:
            return False
        p = self.chance(self.retry_permanent_p, failed)
        return p > 0.0 and _rng.uniform(_rng.extend(self.retry_permanent_key, task_id, attempt)) < p

    def notices_silent(self, task_id: int, attempt: int) -> bool:
        """The model notices that a call's success was hollow (a masked failure)."""
        p = self.notice_silent_p
        return p > 0.0 and _rng.uniform(_rng.extend(self.notice_silent_key, task_id, attempt)) < p


__all__ = ["STOPS", "ModelReading"]
