"""Per-task rows: each task's outcome as a row of a run's results, or as lines of tasks.csv.

A run that keeps per-task rows builds one row per task as the task ends
(:func:`row_values`: the oracle's :class:`~fleetchaos.results.oracle.TaskOutcome` fields in
their order, times rounded as results are), kept as ``RunResult.tasks`` dicts
(:func:`row_dict`) or, once the run is over, turned into the CSV lines of a comparison's
tasks.csv (:func:`csv_lines`).  The CSV lines are made where the run ran, in a worker
process, so what travels back to the command is one string per run instead of a dict per
task, and the command only appends it to the file.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import fields
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from fleetchaos.escaping import FORMULA_PREFIXES, csv_cell
from fleetchaos.results.models import DIGITS, rounded
from fleetchaos.results.oracle import TaskOutcome, Verdict, outcome_values

if TYPE_CHECKING:
    from fleetchaos.sim.ledger import TaskRecord

__all__ = ["CSV_LEAD", "TASK_COLUMNS", "csv_lines", "outcome_row", "row_dict", "row_values"]

#: The fields of a per-task row, in TaskOutcome's order.
TASK_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(TaskOutcome))
#: The columns tasks.csv puts before a task's fields: the arm and the seed of its run.
CSV_LEAD: tuple[str, ...] = ("policy", "errors", "seed")

#: Positions of the times a row rounds (as every figure of a result is rounded).
_ROUNDED = tuple(TASK_COLUMNS.index(name) for name in ("arrival_s", "end_s", "time_to_recovery_s"))
#: Positions of the fields that can hold text, from TaskOutcome's annotations: only text can
#: read as a spreadsheet formula (:func:`fleetchaos.escaping.csv_cell`), so only these are escaped.
_TEXT = tuple(i for i, f in enumerate(fields(TaskOutcome)) if "str" in str(f.type))
_ID = TASK_COLUMNS.index("id")


def row_values(record: TaskRecord, judged: Verdict) -> list[Any]:
    """One task's row: the fields of its outcome in :data:`TASK_COLUMNS` order, times rounded."""
    row = list(outcome_values(record, judged))
    for i in _ROUNDED:
        value = row[i]
        if value is not None:  # rounded(), inlined: this runs for every task of a run that keeps rows
            row[i] = round(float(value), DIGITS)
    return row


def outcome_row(outcome: TaskOutcome) -> dict[str, Any]:
    """The row of an outcome already judged (:func:`fleetchaos.results.oracle.judge`), as a dict:
    what :func:`row_values` and :func:`row_dict` give for its task."""
    row = [getattr(outcome, name) for name in TASK_COLUMNS]
    for i in _ROUNDED:
        row[i] = rounded(row[i])
    return row_dict(row)


def row_dict(row: Sequence[Any]) -> dict[str, Any]:
    """A row as ``RunResult.tasks`` holds it: a dict keyed by :data:`TASK_COLUMNS`."""
    return dict(zip(TASK_COLUMNS, row))


def csv_lines(policy: str, errors: str, seed: int, rows: Sequence[list[Any]]) -> str:
    """The tasks.csv lines of one run's rows (no header): the arm and seed, then each task's fields.

    Rows come in the run's creation order and leave in task id order (the file's order
    within a run; a stable sort, so tasks with the same id keep their creation order).
    Text is escaped for spreadsheets (:func:`fleetchaos.escaping.csv_cell`, in place in
    ``rows``) and written by the csv module exactly as :class:`csv.DictWriter` writes the
    same row as a dict.
    """
    lead = (csv_cell(policy), csv_cell(errors), seed)
    text = _TEXT
    ordered = sorted(rows, key=itemgetter(_ID))
    for row in ordered:
        for i in text:  # csv_cell, inlined: only text can start like a formula or hold a carriage return
            cell = row[i]
            if cell.__class__ is str and (cell.startswith(FORMULA_PREFIXES) or "\r" in cell):
                row[i] = csv_cell(cell)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows((*lead, *row) for row in ordered)
    return out.getvalue()
