"""Trace records folded into compact columns: one row per tool call, one entry per task.

Columns are ``array`` buffers while the file streams (about 50 bytes per call), turned
into NumPy arrays once, sorted by task and start time.  Strings (tasks, tools, workers,
templates) are interned to small integers.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fleetchaos.traces.bounded import TraceFileError
from fleetchaos.traces.codes import FAULT_KINDS, IGNORE, CodeMap
from fleetchaos.traces.records import TaskSpan, ToolCall

if TYPE_CHECKING:  # NumPy is loaded when the columns are finished, not on import
    import numpy as np
    from numpy.typing import NDArray

#: Kind codes of a call besides an index into FAULT_KINDS.
OK = -1
UNMAPPED = -2

#: The most distinct tool names a calibration takes: a fleet's agents call tens of tools;
#: thousands of names are ids inside the names (a URL, a ticket number), and each tool costs
#: a duration fit and a template step (a scenario file holds about 6,000 steps).
MAX_TOOLS = 1_000

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple:
    """Sort key that orders embedded numbers by value: worker-2 before worker-10."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(text))


class _Interner:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.names: list[str] = []

    def __call__(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.names)
            self.names.append(name)
        return i


class TooManyTools(TraceFileError):
    """More distinct tool names than a calibration takes (:data:`MAX_TOOLS`), found while reading."""


@dataclass
class Observations:
    """Every call and task of a set of trace files, as columns (NumPy after :meth:`finish`)."""

    codes: CodeMap
    tasks: _Interner = field(default_factory=_Interner)
    tools: _Interner = field(default_factory=_Interner)
    workers: _Interner = field(default_factory=_Interner)
    templates: _Interner = field(default_factory=_Interner)
    # per call
    task: array = field(default_factory=lambda: array("i"))
    start: array = field(default_factory=lambda: array("d"))
    duration: array = field(default_factory=lambda: array("d"))
    tool: array = field(default_factory=lambda: array("i"))
    worker: array = field(default_factory=lambda: array("i"))
    kind: array = field(default_factory=lambda: array("b"))
    attempt: array = field(default_factory=lambda: array("i"))
    item: array = field(default_factory=lambda: array("i"))
    retry_after: array = field(default_factory=lambda: array("d"))
    # per task (index = task id)
    task_start: array = field(default_factory=lambda: array("d"))
    task_template: array = field(default_factory=lambda: array("i"))
    ignored_failures: int = 0

    def add(self, records: Iterable[ToolCall | TaskSpan]) -> None:
        """Fold records in; a task's start is its root span's start, else its first call's."""
        classify = self.codes.kind
        kind_index = {k: i for i, k in enumerate(FAULT_KINDS)}
        for r in records:
            t = self.tasks(r.task)
            if t == len(self.task_start):
                self.task_start.append(math.inf)
                self.task_template.append(-1)
            if type(r) is TaskSpan:
                if r.start_s < self.task_start[t]:
                    self.task_start[t] = r.start_s
                if r.template:
                    self.task_template[t] = self.templates(r.template)
                continue
            if r.start_s < self.task_start[t]:
                self.task_start[t] = r.start_s
            if r.ok:
                k = OK
            else:
                name = classify(r.code, r.http_status)
                if name is None:
                    k = UNMAPPED
                elif name == IGNORE:
                    k = OK
                    self.ignored_failures += 1
                else:
                    k = kind_index[name]
            tool = self.tools(r.tool)
            if tool == MAX_TOOLS:
                raise TooManyTools(
                    f"tool: more than {MAX_TOOLS:,} distinct tool names (the limit; "
                    f"e.g. {', '.join(repr(n[:40]) for n in self.tools.names[:3])}, {r.tool[:40]!r}): "
                    "is an id part of the tool's name (a URL, a record number)? name each tool once "
                    "(gen_ai.tool.name, or the plain form's tool) and calibrate again"
                )
            self.task.append(t)
            self.start.append(r.start_s)
            self.duration.append(r.duration_s)
            self.tool.append(tool)
            self.worker.append(self.workers(r.worker))
            self.kind.append(k)
            self.attempt.append(-1 if r.attempt is None else r.attempt)
            self.item.append(-1 if r.item is None else r.item)
            self.retry_after.append(math.nan if r.retry_after_s is None else r.retry_after_s)

    def finish(self) -> Calls:
        """The columns as NumPy arrays sorted by (task, start), workers renumbered in natural order."""
        import numpy as np

        order_workers = sorted(range(len(self.workers.names)), key=lambda i: natural_key(self.workers.names[i]))
        renumber = np.empty(max(len(order_workers), 1), dtype=np.int32)
        for new, old in enumerate(order_workers):
            renumber[old] = new
        task = np.frombuffer(self.task, dtype=np.int32).copy()
        start = np.frombuffer(self.start, dtype=np.float64).copy()
        order = np.lexsort((start, task))
        return Calls(
            task=task[order],
            start=start[order],
            duration=np.frombuffer(self.duration, dtype=np.float64)[order],
            tool=np.frombuffer(self.tool, dtype=np.int32)[order],
            worker=renumber[np.frombuffer(self.worker, dtype=np.int32)][order] if len(task) else task.copy(),
            kind=np.frombuffer(self.kind, dtype=np.int8)[order],
            attempt=np.frombuffer(self.attempt, dtype=np.int32)[order],
            item=np.frombuffer(self.item, dtype=np.int32)[order],
            retry_after=np.frombuffer(self.retry_after, dtype=np.float64)[order],
            tools=list(self.tools.names),
            workers=[self.workers.names[i] for i in order_workers],
            task_start=np.frombuffer(self.task_start, dtype=np.float64).copy(),
            task_template=np.frombuffer(self.task_template, dtype=np.int32).copy(),
            templates=list(self.templates.names),
            task_ids=list(self.tasks.names),
        )


@dataclass
class Calls:
    """The observed calls as sorted NumPy columns (see :class:`Observations`)."""

    task: NDArray[np.int32]
    start: NDArray[np.float64]
    duration: NDArray[np.float64]
    tool: NDArray[np.int32]
    worker: NDArray[np.int32]
    kind: NDArray[np.int8]
    attempt: NDArray[np.int32]
    item: NDArray[np.int32]
    retry_after: NDArray[np.float64]
    tools: list[str]
    workers: list[str]
    task_start: NDArray[np.float64]
    task_template: NDArray[np.int32]
    templates: list[str]
    task_ids: list[str]

    def __len__(self) -> int:
        return len(self.task)

    def kind_mask(self, name: str) -> NDArray[np.bool_]:
        """Calls that failed with fault kind ``name``."""
        return self.kind == FAULT_KINDS.index(name)
