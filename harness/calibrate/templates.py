"""Task templates from the observed tool sequences, parallel items, and tool slots.

A *step execution* is the calls of one task to one tool that start at the same instant
(a fan-out step's parallel items).  A task that met no failure ran its template once,
with no retry, so its *signature* is its step executions in order, each with its items:
a tool called again later in the task (the model's turns, each a call of its own) is a
step again.  A task that failed repeated steps on its retries, so only its tools in order
of first appearance are read: it is counted under the most frequent clean template
whose tools, in that order, it starts; a failed task no clean template explains is a
template of its own, its tools in order of first appearance with the most items each
was seen with.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # NumPy is imported by the functions that use it, not on import
    import numpy as np
    from numpy.typing import NDArray

    from fleetchaos.calibrate.observed import Calls


@dataclass(frozen=True)
class TemplateFit:
    """One task template: its tools in order, their parallel items, and how many tasks had it."""

    name: str
    steps: tuple[tuple[str, int], ...]
    """(tool, fan-out) per step."""
    tasks: int
    clean: int
    """Of them, tasks that met no failure (whose signature is exact)."""


def step_groups(calls: Calls) -> tuple[NDArray[np.intp], NDArray[np.int32]]:
    """Start index of each step execution in the (task, start)-sorted columns, and the items per call.

    Returns ``(group_start, item)``: ``group_start[g]`` indexes the first call of step
    execution ``g``; ``item[i]`` is the call's own item attribute if the trace gave one,
    else its rank among the calls of its step execution.
    """
    import numpy as np

    n = len(calls)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
    new = np.ones(n, dtype=bool)
    new[1:] = (
        (calls.task[1:] != calls.task[:-1])
        | (calls.start[1:] != calls.start[:-1])
        | (calls.tool[1:] != calls.tool[:-1])
    )
    group_start = np.flatnonzero(new)
    group_id = np.cumsum(new) - 1
    rank = np.arange(n) - group_start[group_id]
    item = np.where(calls.item >= 0, calls.item, rank).astype(np.int32)
    return group_start, item


def fit_templates(calls: Calls, group_start: NDArray[np.intp]) -> tuple[list[TemplateFit], list[int]]:
    """The templates, and for every task the index of its template (-1 for a task with no calls)."""
    import numpy as np

    n_tasks = len(calls.task_ids)
    sizes = np.diff(np.append(group_start, len(calls)))
    g_task = calls.task[group_start]
    g_tool = calls.tool[group_start]
    failed_task = np.zeros(n_tasks, dtype=bool)
    failed_task[calls.task[calls.kind != -1]] = True
    signatures: list[tuple | None] = [None] * n_tasks
    bounds = np.flatnonzero(np.diff(g_task)) + 1
    starts = np.concatenate(([0], bounds)) if len(g_task) else np.zeros(0, dtype=np.int64)
    ends = np.concatenate((bounds, [len(g_task)])) if len(g_task) else np.zeros(0, dtype=np.int64)
    for a, b in zip(starts.tolist(), ends.tolist()):
        steps = tuple(zip(g_tool[a:b].tolist(), sizes[a:b].tolist()))
        task = int(g_task[a])
        signatures[task] = steps if not failed_task[task] else _first_appearances(steps)
    clean = Counter(s for t, s in enumerate(signatures) if s is not None and not failed_task[t])
    ranked = [(s, _tool_order(s)) for s, _ in clean.most_common()]
    assigned: list[tuple | None] = []
    for t, sig in enumerate(signatures):
        if sig is None or not failed_task[t]:
            assigned.append(sig)
            continue
        tools = [tool for tool, _ in sig]
        match = next((c for c, order in ranked if order[: len(tools)] == tools), None)
        assigned.append(match if match is not None else sig)
    counts = Counter(s for s in assigned if s is not None)
    names = _names(calls, assigned, counts)
    fits = [
        TemplateFit(names[sig], tuple((calls.tools[tool], size) for tool, size in sig), count, clean.get(sig, 0))
        for sig, count in counts.most_common()
    ]
    index = {sig: i for i, sig in enumerate(s for s, _ in counts.most_common())}
    return fits, [index[s] if s is not None else -1 for s in assigned]


def _first_appearances(steps: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """A failed task's steps: each tool once, in order of first appearance, with the most items it was seen with."""
    order: dict[int, int] = {}
    for tool, size in steps:
        if order.get(tool, 0) < size:
            order[tool] = size
    return tuple(order.items())


def _tool_order(steps: tuple[tuple[int, int], ...]) -> list[int]:
    """A template's tools in order of first appearance (what a failed task's retries leave readable)."""
    return list(dict.fromkeys(tool for tool, _ in steps))


def _names(calls, assigned, counts) -> dict[tuple, str]:
    """Each signature's name: the template name most of its tasks' root spans give, else template_N."""
    votes: dict[tuple, Counter] = {}
    for t, sig in enumerate(assigned):
        if sig is not None and calls.task_template[t] >= 0:
            votes.setdefault(sig, Counter())[calls.templates[calls.task_template[t]]] += 1
    names: dict[tuple, str] = {}
    used: set[str] = set()
    for n, (sig, _count) in enumerate(counts.most_common(), start=1):
        name = votes[sig].most_common(1)[0][0] if sig in votes else f"template_{n}"
        base, k = name, 2
        while name in used:
            name = f"{base}_{k}"
            k += 1
        used.add(name)
        names[sig] = name
    return names


def partial_batch_seen(
    calls: Calls, group_start: NDArray[np.intp], templates: list[TemplateFit], task_template: list[int]
) -> tuple[int, int]:
    """How the tools reported a partly failed fan-out step, as the traces show it (``fleet.partial_batch``).

    Returns ``(continued, told)``: of the fan-out step executions in which some items
    failed and others did not, and after which the task's template has a next step
    (``told``), those whose task's next step execution was that next step (``continued``):
    the dispatch went on, so the tool said "ok".  A retry of the step (a resume) or of the
    first step (a restart) means it reported the failure.
    """
    import numpy as np

    if len(group_start) == 0:
        return 0, 0
    sizes = np.diff(np.append(group_start, len(calls)))
    failed = np.add.reduceat((calls.kind != -1).astype(np.int64), group_start)
    continued = told = 0
    for g in np.flatnonzero((sizes > 1) & (failed > 0) & (failed < sizes)).tolist():
        first = int(group_start[g])
        task = int(calls.task[first])
        if task_template[task] < 0:
            continue
        steps = [tool for tool, _ in templates[task_template[task]].steps]
        tool = calls.tools[int(calls.tool[first])]
        if tool not in steps or steps.index(tool) + 1 >= len(steps):
            continue  # the last step: nothing after it tells whether the tool said ok
        told += 1
        if g + 1 < len(group_start):
            after = int(group_start[g + 1])
            if int(calls.task[after]) == task and calls.tools[int(calls.tool[after])] == steps[steps.index(tool) + 1]:
                continued += 1
    return continued, told


def tool_slots(calls: Calls, group_start: NDArray[np.intp]) -> int:
    """The most step executions one worker ran at once (each holds one tool slot)."""
    import numpy as np

    if len(group_start) == 0:
        return 1
    sizes = np.diff(np.append(group_start, len(calls)))
    ends = np.maximum.reduceat(calls.start + calls.duration, group_start) if len(calls) else np.zeros(0)
    starts = calls.start[group_start]
    workers = calls.worker[group_start]
    best = 1
    for w in np.unique(workers).tolist():
        mask = workers == w
        s, e = starts[mask], ends[mask]
        times = np.concatenate((s, e))
        steps = np.concatenate((np.ones(len(s)), -np.ones(len(e))))
        order = np.lexsort((steps, times))  # at a tie an end comes before a start
        best = max(best, int(np.max(np.cumsum(steps[order]))))
    del sizes
    return best
