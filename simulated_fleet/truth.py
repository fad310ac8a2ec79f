"""Ground-truth vocabulary: why a call failed, and what one dispatch of a task did.

Only the simulator and the oracle see these objects.  An error format turns an
:class:`AttemptReport` into an :class:`~fleetchaos.sim.observation.Observation`, which
is all a recovery policy ever gets.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from fleetchaos.sim.kinds import KINDS, REPORTING, FailureContract, FaultKind, fault_kind


class _Contracts(Mapping[str, FailureContract]):
    """Every kind that can fail a call -> its :class:`FailureContract`, read from the records.

    A live view of :data:`fleetchaos.sim.kinds.KINDS` (reporting kinds left out), not a
    copy: there is one table of kinds.
    """

    __slots__ = ()

    def __getitem__(self, kind: str) -> FailureContract:
        record = fault_kind(kind)
        if record.stage == REPORTING:
            raise KeyError(kind)
        return record.contract

    def __iter__(self) -> Iterator[str]:
        return (name for name, record in KINDS.items() if record.stage != REPORTING)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, kind: object) -> bool:
        if not isinstance(kind, str):  # every key is a kind's name
            return False
        record = KINDS.get(kind)
        return record is not None and record.stage != REPORTING

    def __repr__(self) -> str:
        return f"FAILURES({dict(self)!r})"


#: How a contract-following worker classifies each fault kind, keyed by the ``kind`` used
#: in scenario files.  Masking kinds (silent suppression, fabricated defaults) are never
#: shown to an orchestrator: their code is what the truth calls them.
FAILURES: Mapping[str, FailureContract] = _Contracts()


@dataclass(slots=True)
class AttemptReport:
    """The truth of one dispatch of a task to a worker, as the worker experienced it.

    ``failed_step`` is -1 when the worker ran every step it was given and saw each as
    done.  ``done_items`` lists the items of ``failed_step`` that did succeed (a partial
    batch), including items the orchestrator asked it to skip because they were done.
    """

    task_id: int
    worker: int
    start_step: int
    failed_step: int
    step_names: tuple[str, ...]
    failure: str | None = None
    fan_out: int = 1
    done_items: tuple[int, ...] = ()
    retry_after_s: float | None = None
    item_failures: tuple[tuple[int, str], ...] = ()
    """(item, kind) of every item of the failed step that failed."""
    masked: tuple[tuple[int, int, str], ...] = ()
    """(step, item, kind) of calls in this dispatch that looked successful but took no effect."""
    alternatives_left: int = 0
    """Untried alternative sources for the failed items (a not-found source)."""
    schema_version: str | None = None
    """The envelope version the worker speaks, when it differs from the current one."""
    dropped_fields: tuple[str, ...] = ()
    """Envelope fields the worker's envelope leaves out (an older contract does not have them, or a
    worker's wrong envelope omits them)."""
    committed_items: tuple[int, ...] = ()
    """Items of ``failed_step`` whose call failed yet took effect (its outcome unknown to the client: a cut stream,
    a timeout after the work ran)."""
    shown_as: FaultKind | None = None
    """The kind record a worker's wrong envelope reports instead of the truth's (None: the truth's).
    Only a copy of a report made for rendering carries one (:mod:`fleetchaos.sim.envelope_errors`)."""

    @property
    def completed(self) -> bool:
        """True when the worker saw every step through."""
        return self.failed_step < 0
