"""What counts as the failure being shrunk: a task ending as a silent failure, or a metric comparison."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fleetchaos.errors import UserError
from fleetchaos.names import check_metric

__all__ = ["ARRIVAL_TOLERANCE_S", "MetricProperty", "TaskSilent", "parse_property", "task_property"]

#: Tolerance when matching a task by its arrival time (task rows round to 6 digits).
ARRIVAL_TOLERANCE_S = 1e-3

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}
_PROPERTY = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class TaskSilent:
    """The property "the task that arrived at ``arrival_s`` with ``template`` ended as a silent failure"."""

    arrival_s: float
    template: str
    original_id: int

    def holds(self, metrics: dict, outcomes: Sequence) -> bool:
        """Whether the task (matched by arrival time and template) is a silent failure in this run."""
        return any(o.silent_failure for o in self.matching(outcomes))

    def matching(self, outcomes: Sequence) -> list:
        """The task outcomes that are this task (by arrival time and template)."""
        return [
            o
            for o in outcomes
            if o.template == self.template and abs(o.arrival_s - self.arrival_s) <= ARRIVAL_TOLERANCE_S
        ]

    def describe(self) -> str:
        """The property in words."""
        return (
            f"the {self.template} task arriving at {self.arrival_s:.3f} s (task {self.original_id} of the "
            "original run) ends as a silent failure"
        )


@dataclass(frozen=True)
class MetricProperty:
    """The property "``metric`` ``op`` ``threshold``" on one run's metrics (e.g. ``recovery_rate<0.7``)."""

    metric: str
    op: str
    threshold: float

    def holds(self, metrics: dict, outcomes: Sequence) -> bool:
        """Whether the metric is defined and satisfies the comparison."""
        value = metrics.get(self.metric)
        return value is not None and _OPS[self.op](float(value), self.threshold)

    def expression(self) -> str:
        """The property as the user writes it."""
        return f"{self.metric}{self.op}{self.threshold:g}"

    def describe(self) -> str:
        """The property in words."""
        return f"{self.expression()} holds"


def parse_property(text: str) -> MetricProperty:
    """Parse ``METRIC OP NUMBER`` (OP one of < <= > >= == !=); a UserError names the mistake."""
    match = _PROPERTY.match(text or "")
    if match is None:
        raise UserError(
            f"--property {text!r}: expected METRIC OP NUMBER, e.g. 'recovery_rate<0.7' or "
            "'silent_failure_rate>0' (OP: <, <=, >, >=, ==, !=)"
        )
    name, op, number = match.groups()
    check_metric(name, f"--property {text!r}")
    value = float(number)
    if not math.isfinite(value):
        raise UserError(f"--property {text!r}: the threshold must be a finite number")
    return MetricProperty(name, op, value)


def task_property(outcomes: Sequence, task_id: int) -> TaskSilent:
    """The :class:`TaskSilent` property of task ``task_id`` of a run; a UserError if it was not a silent failure."""
    match = [o for o in outcomes if o.id == task_id]
    if not match:
        raise UserError(f"--task-silent {task_id}: the run has no task {task_id} (tasks 0..{len(outcomes) - 1})")
    o = match[0]
    if not o.silent_failure:
        silent = [x.id for x in outcomes if x.silent_failure][:10]
        hint = (
            f"silent failures in this run: tasks {', '.join(map(str, silent))}"
            if silent
            else "this run has no silent failures"
        )
        raise UserError(
            f"--task-silent {task_id}: task {task_id} did not end as a silent failure (truth {o.truth}, "
            f"claim {o.claim}); {hint}"
        )
    return TaskSilent(o.arrival_s, o.template, task_id)
