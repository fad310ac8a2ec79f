"""What a run logs beside the ledger: every fault a call met, and (when tracing) its events.

The trace is a list of event tuples ``(time, name, task id, ...)``: ``task``, ``dispatch``,
``calls``, ``fault``, ``observe``, ``action`` and ``end`` (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fleetchaos.sim.ledger import TaskRecord

if TYPE_CHECKING:
    from fleetchaos.sim.observation import Observation
    from fleetchaos.sim.truth import AttemptReport


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

    def emit(self, *event: object) -> None:
        """Trace an event at the current simulated time (nothing when not tracing)."""
        if self.trace is not None:
            self.trace.append((round(self.clock(), 6), *event))

    # Trace-only events: callers check ``trace is not None`` first, so an untraced run pays nothing.

    def calls(self, task_id: int, worker: int, si: int, tool: str, start: float, calls: list[list]) -> None:
        """Trace one step's tool calls: when they started and, per item, (item, duration, fault kind or None)."""
        self.emit("calls", task_id, worker, si, tool, round(start, 6), tuple((i, round(d, 6), k) for i, d, k in calls))

    def observation(self, task_id: int, worker: int, obs: Observation, report: AttemptReport) -> None:
        """Trace what the orchestrator was shown: ok, status word, error code, and the truth's retry-after."""
        code = getattr(obs.envelope, "error_code", None) if obs.envelope is not None else None
        retry_after = None if report.retry_after_s is None else round(report.retry_after_s, 6)
        self.emit("observe", task_id, worker, obs.ok, obs.status, code, retry_after)
