"""Results files and per-task CSV: what a report folder holds besides its pages and charts.

``dumps`` writes a result model as compact JSON with exactly pydantic's values;
``load_results`` reads a results.json (or an ablation.json) back with a readable reason
when it is not one;
:class:`TaskCsvWriter` streams per-task rows while a comparison runs and sorts them at
the end, so the file does not depend on the number of processes.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from fleetchaos.escaping import csv_cell, csv_row
from fleetchaos.files import FileTooLargeError, StrictJsonError, atomic_write, loads_json, read_text_bounded
from fleetchaos.reports.ablation_io import check_ablation, is_ablation
from fleetchaos.results.models import CompareResult, RunResult, SweepResult
from fleetchaos.results.studies import SensitivityResult, TunedCompareResult
from fleetchaos.results.task_rows import CSV_LEAD, TASK_COLUMNS

#: Largest results file ``fleetchaos report`` reads (a run report with every task's row is ~12.6 KB per task).
MAX_RESULTS_BYTES = 200_000_000


#: Widest line a container is kept on (its indent included), unless it is a flat list.
LINE_WIDTH = 100


def _scalar(x: Any) -> bool:
    return not isinstance(x, (dict, list))


def _within(obj: Any, budget: int) -> str | None:
    """``obj`` on one line (``json.dumps``: ``, `` and ``: `` between items) if that is at most ``budget``
    characters, else None: a long container is given up on at the first part past the budget,
    instead of being encoded whole at every level it is nested in."""
    if _scalar(obj):
        text = json.dumps(obj)
        return text if len(text) <= budget else None
    is_dict = isinstance(obj, dict)
    items = obj.items() if is_dict else obj
    parts: list[str] = []
    used = 2  # the brackets
    for item in items:
        if parts:
            used += 2  # ", "
        if is_dict:
            key = json.dumps(item[0]) + ": "
            value = _within(item[1], budget - used - len(key))
            part = None if value is None else key + value
        else:
            part = _within(item, budget - used)
        if part is None:
            return None
        used += len(part)
        parts.append(part)
    if used > budget:  # an empty container past the budget, or a part that took all of it
        return None
    return ("{" if is_dict else "[") + ", ".join(parts) + ("}" if is_dict else "]")


def _encode(obj: Any, level: int, in_list: bool) -> str:
    if _scalar(obj):
        return json.dumps(obj)
    values = list(obj.values()) if isinstance(obj, dict) else obj
    if not values or (all(_scalar(v) for v in values) and (isinstance(obj, list) or in_list)):
        return json.dumps(obj)  # empty, or flat in a list: one line, however long
    inline = _within(obj, LINE_WIDTH - 2 * level)
    if inline is not None:
        return inline
    pad = "  " * (level + 1)
    if isinstance(obj, dict):
        parts = [f"{pad}{json.dumps(k)}: {_encode(v, level + 1, False)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(parts) + "\n" + "  " * level + "}"
    parts = [pad + _encode(v, level + 1, True) for v in obj]
    return "[\n" + ",\n".join(parts) + "\n" + "  " * level + "]"


def dumps(model: BaseModel) -> str:
    """A result model as readable, compact JSON: short and flat containers stay on one line.

    Values are exactly pydantic's JSON serialisation; only the whitespace differs.
    """
    return _encode(json.loads(model.model_dump_json()), 0, False) + "\n"


class TaskCsvWriter:
    """Streams the per-task rows of runs into a CSV while a comparison runs.

    Rows go to ``<path>.partial`` as each run arrives (whatever order the runs finish
    in), one run's rows together in task id order; :meth:`close` puts the runs in order
    by arm (in ``arms`` order), seed and task id and writes ``path``, so the file does not
    depend on the number of processes.  A run brings its rows as tasks.csv lines made
    where it ran (``RunResult.tasks_csv``) or as dicts (``RunResult.tasks``); runs without
    task rows are ignored.
    """

    LEAD = CSV_LEAD

    def __init__(self, path: Path, arms: list[tuple[str, str]] | None = None):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.arms = list(arms or [])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.partial.unlink(missing_ok=True)  # a stale partial file, or a symlink planted in its place
        self._fh = self.partial.open("xb")  # created afresh: never through a link
        self._fields: list[str] | None = None
        # Each run's lines in the partial file: (arm, seed, byte offset, byte length).
        self._runs: list[tuple[tuple[str, str], int, int, int]] = []
        self._offset = 0
        self.rows = 0

    def add(self, result: RunResult) -> None:
        """Append the task rows of one run."""
        if result.tasks_csv is not None:
            lines, rows = result.tasks_csv
            if not rows:
                return
            if self._fields is None:
                self._start([*self.LEAD, *TASK_COLUMNS])
            elif self._fields != [*self.LEAD, *TASK_COLUMNS]:
                raise ValueError(f"{self.path}: runs with other per-task columns than the first run's")
        elif result.tasks:
            if self._fields is None:
                self._start([*self.LEAD, *result.tasks[0]])
            lines, rows = _dict_lines(result, self._fields or []), len(result.tasks)
        else:
            return
        data = lines.encode("utf-8")
        self._fh.write(data)
        arm = (str(csv_cell(result.policy)), str(csv_cell(result.errors)))
        self._runs.append((arm, result.seed, self._offset, len(data)))
        self._offset += len(data)
        self.rows += rows
        self._fh.flush()

    def _start(self, fields: list[str]) -> None:
        self._fields = fields
        header = _csv_line(fields).encode("utf-8")
        self._fh.write(header)
        self._offset += len(header)

    def close(self) -> Path | None:
        """Sort the rows into ``path``; returns it, or None when no run had task rows."""
        self._fh.close()
        if self._fields is None:
            self.partial.unlink(missing_ok=True)
            return None
        order = {(csv_cell(p), csv_cell(e)): i for i, (p, e) in enumerate(self.arms)}  # as the cells were written
        data = self.partial.read_bytes()
        keys = [(order.get(arm, len(order)), arm, seed) for arm, seed, _, _ in self._runs]
        # Each run's lines are in task id order already, so the runs in order are the file in
        # order: the lines are copied as they are.  Two runs of one arm and seed (an arm named
        # twice) interleave by task id: then the file is read back and sorted row by row.
        if len(set(keys)) == len(keys):
            ranked = sorted(range(len(keys)), key=keys.__getitem__)
            with atomic_write(self.path, "wb") as out:
                out.write(_csv_line(self._fields).encode("utf-8"))
                for i in ranked:
                    _, _, start, length = self._runs[i]
                    out.write(data[start : start + length])
        else:
            _sort_rows(self.partial, self.path, order)
        self.partial.unlink()
        return self.path

    def abort(self) -> None:
        """Close without sorting: keep ``<path>.partial`` (rows of the runs that finished)."""
        self._fh.close()


def _csv_line(cells: list[Any]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    return out.getvalue()


def _dict_lines(result: RunResult, fields: list[str]) -> str:
    """The lines of a run whose rows are dicts, in task id order (a stable sort, as the file's)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    lead = {"policy": result.policy, "errors": result.errors, "seed": result.seed}
    for row in sorted(result.tasks, key=lambda row: int(row["id"])):
        writer.writerow(csv_row({**lead, **row}))
    return out.getvalue()


def _sort_rows(partial: Path, path: Path, order: dict[tuple[Any, Any], int]) -> None:
    """Read the rows back from ``partial`` and write them to ``path`` by arm, seed and task id."""
    with partial.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        fields = list(reader.fieldnames or [])
        rows = list(reader)

    def key(row: dict) -> tuple:
        arm = (row["policy"], row["errors"])
        return (order.get(arm, len(order)), arm, int(row["seed"]), int(row["id"]))

    rows.sort(key=key)
    with atomic_write(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def write_task_csv(tasks: list[dict[str, Any]], path: Path) -> Path | None:
    """Write one run's per-task rows; None when there are none."""
    if not tasks:
        return None
    with atomic_write(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(tasks[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(csv_row(row) for row in tasks)
    return path


def load_results(path: Path) -> CompareResult | RunResult | SweepResult | SensitivityResult | dict:
    """Read a results file back; ValueError with a readable reason when it is not one.

    The results.json of run, compare, sweep or a best-against-best robustness study (as their models), or an
    ablation.json (as
    the checked plain document the ablation report draws).  A report folder stands for the
    results.json (else the ablation.json) inside it.
    """
    from pydantic import ValidationError

    path = Path(path)
    if path.is_dir():
        path = next((path / name for name in ("results.json", "ablation.json") if (path / name).is_file()), path)
    try:
        text = read_text_bounded(path, MAX_RESULTS_BYTES, what="results file")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder without results.json or ablation.json; give a results file") from None
    except FileTooLargeError as exc:
        raise ValueError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read it ({exc})") from None
    try:
        doc = loads_json(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except StrictJsonError as exc:
        raise ValueError(f"{path}: not a results file: {exc}") from None
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply to be a results file") from None
    if not isinstance(doc, dict):
        raise ValueError(
            f"{path}: expected a JSON object from `fleetchaos run` or `compare`, got a {type(doc).__name__}"
        )
    if is_ablation(doc):
        return check_ablation(doc, str(path))
    model: type[RunResult | CompareResult | SweepResult | SensitivityResult] = (
        SensitivityResult if "bars" in doc and "settings" in doc
        else TunedCompareResult if "tuning" in doc
        else CompareResult if "arms" in doc
        else SweepResult if "entries" in doc and "grid" in doc
        else RunResult
    )  # fmt: skip
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        kind = {RunResult: "run", SweepResult: "sweep", SensitivityResult: "robustness"}.get(model, "comparison")
        raise ValueError(
            f"{path}: not a fleetchaos {kind} result: {where}: {first['msg']} ({exc.error_count()} problem(s)); "
            "give a results.json written by `fleetchaos run`, `compare` or `sweep`, or an ablation.json"
        ) from None
