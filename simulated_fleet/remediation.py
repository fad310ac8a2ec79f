"""What a remediation agent repairs on a worker, per remedy a fault kind's record names.

The world runs a remediation (minutes of an agent's work, which may fail) and then asks
:func:`repair` to undo the last failure's cause; :data:`REPAIRS` holds one function per
remedy of :data:`fleetchaos.sim.kinds.REMEDIES`.  A rollback's compensating calls are :func:`rollback`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from fleetchaos.sim.calls import CallModel
from fleetchaos.sim.fleet import Worker
from fleetchaos.sim.kinds import fault_kind
from fleetchaos.sim.template import Template
from fleetchaos.sim.truth import AttemptReport

if TYPE_CHECKING:
    from fleetchaos.sim.ledger import TaskRecord


def _refresh_credentials(calls: CallModel, w: Worker, report: AttemptReport, tpl: Template, now: float) -> bool:
    w.refresh_credentials(now)
    return True


def _clear_disk(calls: CallModel, w: Worker, report: AttemptReport, tpl: Template, now: float) -> bool:
    return w.clear_disk_fault(now)  # False when no fault filled the disk


def _install_tool(calls: CallModel, w: Worker, report: AttemptReport, tpl: Template, now: float) -> bool:
    if report.failed_step < 0:
        return False
    calls.installed.add((w.index, tpl.names[report.failed_step]))
    return True


#: Each remedy of :data:`fleetchaos.sim.kinds.REMEDIES` -> what it does; True when it repaired the cause.
REPAIRS: dict[str, Callable[[CallModel, Worker, AttemptReport, Template, float], bool]] = {
    "refresh_credentials": _refresh_credentials,
    "clear_disk": _clear_disk,
    "install_tool": _install_tool,
}


def repair(calls: CallModel, w: Worker, report: AttemptReport, tpl: Template, now: float) -> bool:
    """Repair what a machine can repair on ``w`` at ``now`` (the failure kind's ``remedy``); False if nothing."""
    remedy = fault_kind(report.failure).remedy if report.failure is not None else None
    return remedy is not None and REPAIRS[remedy](calls, w, report, tpl, now)


def rollback(env: Any, rec: TaskRecord, latency_s: float) -> Generator:
    """Compensate every committed item of ``rec`` (one compensating call each, a round trip of ``latency_s``
    apiece, per step in reverse) on the world's SimPy ``env``."""
    calls = 0
    for commits in reversed(rec.commits):
        undone = sum(1 for c in commits if c > 0)
        if undone:
            calls += undone
            for item in range(len(commits)):
                commits[item] = 0
            yield env.timeout(latency_s)
    rec.rolled_back = True
    rec.compensations += calls
    rec.calls += calls


__all__ = ["REPAIRS", "repair", "rollback"]
