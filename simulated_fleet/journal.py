"""What a run logs beside the ledger: every fault a call met, and (when tracing) its events."""

from __future__ import annotations

from collections.abc import Callable

from fleetchaos.sim.ledger import TaskRecord


class Journal:
    """The run's fault log, fault tally and trace.

    The tally, faulted calls by (kind, tool, worker), is kept in every mode: it is bounded
    by the fleet and the catalogue, not by the length of the run.  The full fault log is
    kept when asked (records are kept, or the run is traced); the trace only when traced.
    """

    __slots__ = ("clock", "fault_log", "fault_tally", "trace")

    def __init__(self, clock: Callable[[], float], *, keep_log: bool, trace: bool):
        """``clock()`` reads the simulated time events are stamped with."""
        self.clock = clock
        self.fault_log: list[tuple[float, str, str, int, int]] | None = [] if keep_log else None
        self.fault_tally: dict[tuple[str, str, int], int] = {}
        self.trace: list[tuple] | None = [] if trace else None

    def fault(self, rec: TaskRecord, kind: str, now: float, tool: str, worker: int) -> None:
        """A call of task ``rec`` on ``worker`` met a fault of ``kind`` at ``now``."""
        rec.note_fault(kind, now)
        if self.fault_log is not None:
            self.fault_log.append((now, kind, tool, worker, rec.id))
        key = (kind, tool, worker)
        self.fault_tally[key] = self.fault_tally.get(key, 0) + 1
        if self.trace is not None:
            self.trace.append((round(self.clock(), 6), "fault", rec.id, worker, kind, tool))

    def emit(self, *event) -> None:
        """Trace an event at the current simulated time (nothing when not tracing)."""
        if self.trace is not None:
            self.trace.append((round(self.clock(), 6), *event))
