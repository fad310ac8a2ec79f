"""The fault a real call meets, as the team's code will see it: its contract, its retry-after, a vendor's text.

:func:`injected_fault` turns a call's decided outcome into the :class:`~fleetchaos.real.faults.Fault` the
injection point raises or answers with; its message is what a vendor SDK's error would say, with the run's
planted secrets in it, so the containment of what the team's code re-raises is tested on real shapes.
"""

from __future__ import annotations

from fleetchaos.real.faults import Fault, make_fault
from fleetchaos.sim.calls import CallOutcome
from fleetchaos.sim.formats._vendor import planted, vendor_text
from fleetchaos.sim.truth import AttemptReport

__all__ = ["injected_fault"]


def injected_fault(
    outcome: CallOutcome,
    tool: str,
    ids: tuple[int, int, int, int],
    worker: int,
    names: tuple[str, ...],
    now: float,
    seed: int,
) -> Fault | None:
    """The :class:`Fault` a real call decided as ``outcome`` at ``now`` meets (None: none).

    ``ids`` are the call's (task id, step, item, execution) on ``worker``, ``names`` its template's tools.  Its
    retry-after hint counts from the call's end; its message is a vendor SDK's error text with the run's planted
    secrets in it (for a masking kind, which never reports a failure, a note of what it did).
    """
    kind, duration, committed, retry_at = outcome
    if kind is None:
        return None
    if kind.wire is None:
        message = f"{kind.name}: the call returned a success that took no effect"
    else:
        _, si, _, _ = ids
        report = AttemptReport(
            task_id=ids[0], worker=worker, start_step=si, failed_step=si, step_names=names, failure=kind.name
        )
        message = vendor_text(report, planted(seed))
    retry_after = None if retry_at is None else max(0.0, retry_at - (now + duration))
    return make_fault(kind, tool, ids, retry_after_s=retry_after, committed=committed, message=message)
