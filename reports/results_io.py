"""Results files and per-task CSV: what a report folder holds besides its pages and charts.

``dumps`` writes a result model as compact JSON with exactly pydantic's values;
``load_results`` reads a results.json (or an ablation.json) back with a readable reason
when it is not one;
:class:`TaskCsvWriter` streams per-task rows while a comparison runs and sorts them at
the end, so the file does not depend on the number of processes.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from fleetchaos.escaping import csv_cell, csv_row
from fleetchaos.files import FileTooLargeError, StrictJsonError, atomic_write, loads_json, read_text_bounded
from fleetchaos.reports.ablation_io import check_ablation, is_ablation
from fleetchaos.results.models import CompareResult, RunResult, SweepResult
from fleetchaos.results.studies import TunedCompareResult

#: Largest results file ``fleetchaos report`` reads (a run report with every task's row is ~12.6 KB per task).
MAX_RESULTS_BYTES = 200_000_000


def _scalar(x: Any) -> bool:
    return not isinstance(x, (dict, list))


def _encode(obj: Any, level: int, in_list: bool) -> str:
    if _scalar(obj):
        return json.dumps(obj)
    values = list(obj.values()) if isinstance(obj, dict) else obj
    inline = json.dumps(obj, separators=(", ", ": "))
    flat = all(_scalar(v) for v in values)
    if not values or (flat and (isinstance(obj, list) or in_list)) or len(inline) + 2 * level <= 100:
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
    in); :meth:`close` sorts them by arm (in ``arms`` order), seed and task id and writes
    ``path``, so the file does not depend on the number of processes.  Runs without task
    rows are ignored.
    """

    LEAD = ("policy", "errors", "seed")

    def __init__(self, path: Path, arms: list[tuple[str, str]] | None = None):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.arms = list(arms or [])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.partial.unlink(missing_ok=True)  # a stale partial file, or a symlink planted in its place
        self._fh = self.partial.open("x", newline="", encoding="utf-8")  # created afresh: never through a link
        self._writer: csv.DictWriter | None = None
        self.rows = 0

    def add(self, result: RunResult) -> None:
        """Append the task rows of one run."""
        if not result.tasks:
            return
        if self._writer is None:
            self._writer = csv.DictWriter(self._fh, fieldnames=[*self.LEAD, *result.tasks[0]], lineterminator="\n")
            self._writer.writeheader()
        for row in result.tasks:
            self._writer.writerow(
                csv_row({"policy": result.policy, "errors": result.errors, "seed": result.seed, **row})
            )
        self.rows += len(result.tasks)
        self._fh.flush()

    def close(self) -> Path | None:
        """Sort the rows into ``path``; returns it, or None when no run had task rows."""
        self._fh.close()
        if self._writer is None:
            self.partial.unlink(missing_ok=True)
            return None
        order = {(csv_cell(p), csv_cell(e)): i for i, (p, e) in enumerate(self.arms)}  # as the cells were written
        with self.partial.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            fields = list(reader.fieldnames or [])
            rows = list(reader)

        def key(row: dict) -> tuple:
            arm = (row["policy"], row["errors"])
            return (order.get(arm, len(order)), arm, int(row["seed"]), int(row["id"]))

        rows.sort(key=key)
        with atomic_write(self.path, "w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        self.partial.unlink()
        return self.path

    def abort(self) -> None:
        """Close without sorting: keep ``<path>.partial`` (rows of the runs that finished)."""
        self._fh.close()


def write_task_csv(tasks: list[dict[str, Any]], path: Path) -> Path | None:
    """Write one run's per-task rows; None when there are none."""
    if not tasks:
        return None
    with atomic_write(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(tasks[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(csv_row(row) for row in tasks)
    return path


def load_results(path: Path) -> CompareResult | RunResult | SweepResult | dict:
    """Read a results file back; ValueError with a readable reason when it is not one.

    The results.json of run, compare or sweep (as their models), or an ablation.json (as
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
    model: type[RunResult | CompareResult | SweepResult] = (
        TunedCompareResult if "tuning" in doc
        else CompareResult if "arms" in doc
        else SweepResult if "entries" in doc and "grid" in doc
        else RunResult
    )  # fmt: skip
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        kind = "run" if model is RunResult else "sweep" if model is SweepResult else "comparison"
        raise ValueError(
            f"{path}: not a fleetchaos {kind} result: {where}: {first['msg']} ({exc.error_count()} problem(s)); "
            "give a results.json written by `fleetchaos run`, `compare` or `sweep`, or an ablation.json"
        ) from None
