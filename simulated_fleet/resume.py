"""Where a dispatch after a failure starts: the policy's resume point, or the workers' checkpoint.

A policy resumes from what an observation revealed (an envelope's partial success), and
restarts from the first step when it revealed nothing.  With ``fleet.checkpoints`` the
workers keep their own checkpoint (resume tokens, steps that skip work already done), so
the next dispatch resumes where the last one stopped whatever the format showed.  No SimPy.
"""

from __future__ import annotations

from fleetchaos.sim.truth import AttemptReport


def resume_point(
    resume_from: int,
    done_items: tuple[int, ...],
    report: AttemptReport,
    fan_outs: tuple[int, ...],
    checkpoints: bool,
) -> tuple[int, tuple[int, ...]]:
    """(the step the next dispatch starts at, the items of that step it skips).

    ``resume_from`` and ``done_items`` are the policy's; ``report`` is the last dispatch's
    truth as its worker saw it and ``fan_outs`` each step's fan-out.  With ``checkpoints``
    the worker's checkpoint (the steps the last dispatch completed and the items of its
    failed step that looked done) wins when it is further along, and adds its items when
    both name the same step.
    """
    start = min(resume_from, len(fan_outs) - 1)
    done = set(done_items)
    if checkpoints and report.failed_step >= 0:
        if report.failed_step > start:
            start, done = report.failed_step, set(report.done_items)
        elif report.failed_step == start:
            done.update(report.done_items)
    return start, tuple(sorted(i for i in done if i < fan_outs[start]))


__all__ = ["resume_point"]
