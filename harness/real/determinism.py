"""A real run done twice must decide every call alike: the run-twice check.

Real code can make a seed's run depend on more than the seed: a thread that calls
before another, a subprocess whose real duration moves the virtual clock, a timer that
reads the wall clock.  :func:`first_difference` compares two runs of one seed call by
call, each call named by who it is (task, tool, item, execution, the HTTP client's own
try), and names the earliest whose decision (the fault it met, or none) or virtual time
differs, or that only one run made; then the first task whose claim differs.  Standard
library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["CallEntry", "NondeterministicRun", "first_difference"]


class CallEntry(NamedTuple):
    """One decided call of a real run."""

    task: int
    tool: str
    item: int
    execution: int
    attempt: int
    """0 for a call, n for the n-th try an HTTP client's own retry loop made of it."""
    met: str
    """The fault kind it met, or ``ok``."""
    at_s: float
    """The run's virtual time when it was decided."""
    duration_s: float


class NondeterministicRun(AssertionError):
    """Two runs of one seed decided a call differently (the message names the first such call)."""


def _name(e: CallEntry) -> str:
    tries = f", the HTTP client's try {e.attempt}" if e.attempt else ""
    return f"task {e.task}: {e.tool} item {e.item}, execution {e.execution}{tries}"


def _said(e: CallEntry | None) -> str:
    if e is None:
        return "never made it"
    met = "met no fault" if e.met == "ok" else f"met {e.met}"
    return f"{met} at {e.at_s:.6g} s (taking {e.duration_s:.6g} s)"


def first_difference(
    first: Sequence[CallEntry], second: Sequence[CallEntry], claims: tuple[Sequence, Sequence] = ((), ())
) -> str | None:
    """The earliest call (by virtual time) the two runs decided differently, in words; None when they agree.

    ``claims`` are each run's ``(task id, claim)`` pairs, compared after the calls.
    Calls are matched by identity, not by arrival order, so threads that interleave
    differently but decide every call alike agree.
    """

    def key(e: CallEntry) -> tuple:
        return (e.task, e.tool, e.item, e.execution, e.attempt)

    a = {key(e): e for e in first}
    b = {key(e): e for e in second}
    differ = []
    for k in a.keys() | b.keys():
        x, y = a.get(k), b.get(k)
        if (
            x is None
            or y is None
            or (x.met, round(x.at_s, 6), round(x.duration_s, 6))
            != (
                y.met,
                round(y.at_s, 6),
                round(y.duration_s, 6),
            )
        ):
            at = min(e.at_s for e in (x, y) if e is not None)
            differ.append((at, k, x, y))
    if differ:
        _, _, x, y = min(differ, key=lambda d: (d[0], d[1]))
        entry = x if x is not None else y
        assert entry is not None
        return f"{len(differ)} call(s) differ; the first is {_name(entry)}: run 1 {_said(x)}, run 2 {_said(y)}"
    ca, cb = dict(claims[0]), dict(claims[1])
    for task in sorted(ca.keys() | cb.keys()):
        if ca.get(task) != cb.get(task):
            return f"every call agrees, but task {task} claims {ca.get(task)!r} in run 1 and {cb.get(task)!r} in run 2"
    return None
