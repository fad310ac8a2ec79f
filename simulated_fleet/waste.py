"""The wasted-retry judge: does the cause of a task's last failure still hold when it is retried?

A metric definition, not part of what happens: the judge reads the truth at the moment a
retry is dispatched and, when the cause of the previous failure still holds (the
credentials are still expired, the disk still full, the retry-after instant not reached,
the same persistent fault would hit again), counts the retry as wasted under the
reason the kind's record gives (:attr:`fleetchaos.sim.kinds.FaultKind.waste`).  It
changes nothing in the run: no draw, no state.

Each cause a record may name (:data:`fleetchaos.sim.kinds.CAUSES`) has one check here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from fleetchaos.sim import _rng
from fleetchaos.sim.calls import CallModel, Template
from fleetchaos.sim.kinds import fault_kind
from fleetchaos.sim.state import NodeState


class LastFailure(NamedTuple):
    """What the judge needs of a task's last failed dispatch."""

    kind: str
    retry_at: float | None
    """The instant its retry-after hint pointed to (None without a hint)."""
    step: int
    items: tuple[int, ...]
    """The items of ``step`` that failed with ``kind`` (``(0,)`` when none is named)."""


class RetryJudge:
    """Judges each retry of a run at the moment it is dispatched."""

    __slots__ = ("_checks", "calls", "partitioned", "run_key")

    def __init__(self, calls: CallModel, run_key: int, partitioned: Callable[[int, int, float], object]):
        """``partitioned(orchestrator, worker, now)`` is truthy while a partition cuts them apart."""
        self.calls = calls
        self.run_key = run_key
        self.partitioned = partitioned
        self._checks: dict[str, Callable[..., bool]] = {
            "credentials_expired": self._credentials_expired,
            "disk_refuses": self._disk_refuses,
            "retry_after": self._before_retry_after,
            "worker_down": self._worker_down,
            "partitioned": self._partitioned,
            "persistent": self._persistent,
            "batch": self._batch,
        }

    def wasted(
        self,
        last: LastFailure,
        node: NodeState,
        task_id: int,
        orchestrator: int,
        tpl: Template,
        sources: dict[tuple[int, int], int],
        now: float,
    ) -> str | None:
        """The waste reason when the cause of ``last`` still holds for a retry on ``node`` at ``now``, else None."""
        waste = fault_kind(last.kind).waste
        if waste is None:
            return None
        held = self._checks[waste.cause](last, node, task_id, orchestrator, tpl, sources, now)
        return waste.reason if held else None

    @staticmethod
    def _credentials_expired(last, node, task_id, orchestrator, tpl, sources, now) -> bool:
        return node.credentials_expired(now)

    @staticmethod
    def _disk_refuses(last, node, task_id, orchestrator, tpl, sources, now) -> bool:
        return node.disk_refuses(now, tpl.steps[last.step].disk_mb)

    @staticmethod
    def _before_retry_after(last, node, task_id, orchestrator, tpl, sources, now) -> bool:
        return last.retry_at is not None and now < last.retry_at

    @staticmethod
    def _worker_down(last, node, task_id, orchestrator, tpl, sources, now) -> bool:
        return node.down(now)

    def _partitioned(self, last, node, task_id, orchestrator, tpl, sources, now) -> bool:
        return self.partitioned(orchestrator, node.index, now) is not None

    def _persistent(self, last, node, task_id, orchestrator, tpl, sources, now) -> bool:
        """The same persistent fault would hit one of the failed items again."""
        task_key = _rng.task_key(self.run_key, task_id)
        step = tpl.steps[last.step]
        rules = self.calls.rules_for(node.index, tpl, last.step)[0]
        return any(
            r.kind == last.kind and self.calls.persistent_hit(r, task_key, step, item, node.index, now, sources)
            for r in rules
            for item in last.items
        )

    def _batch(self, last, node, task_id, orchestrator, tpl, sources, now) -> bool:
        """A persistent batch rule would choose one of the failed items again (a fresh draw would not)."""
        task_key = _rng.task_key(self.run_key, task_id)
        rules = [r for r in self.calls.rules_for(node.index, tpl, last.step)[2] if r.spec.persistent]
        chosen = self.calls.batch_failures(
            tuple(rules), tpl.steps[last.step].fan_out, task_key, last.step, 0, node.index, now
        )
        return any(item in chosen for item in last.items)
