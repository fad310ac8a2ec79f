"""tasks.csv: runs streamed in any order give the file the row-by-row sort gives; results JSON keeps its layout."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetchaos.escaping import csv_row
from fleetchaos.reports.results_io import TaskCsvWriter, _encode
from fleetchaos.results.models import RunResult
from fleetchaos.results.task_rows import CSV_LEAD, TASK_COLUMNS, csv_lines

ARMS = [("blind-retry", "generic"), ("structured", "structured"), ("=cmd", "-generic")]


def _row(task: int, title: str, **over: Any) -> dict[str, Any]:
    row = dict.fromkeys(TASK_COLUMNS, 0)
    row.update(id=task, template="coding", title=title, arrival_s=task / 7, end_s=None, truth="full", claim="success",
               faulted=task % 2 == 0, first_fault=None, time_to_recovery_s=None, faults="", policy_error=None)  # fmt: skip
    row.update(over)
    return row


TITLES = ["fix a.py in x/y", "sync contacts of Smith, Jones and Co", 'say "hi"', "two\nlines", "=SUM(A1)", "@x", ""]


def _run(policy: str, errors: str, seed: int, n: int, *, as_lines: bool, title: str | None = None) -> RunResult:
    """A run with ``n`` task rows in creation order (ids not in order), as dicts or as tasks.csv lines."""
    ids = list(range(n))
    random.Random(seed * 31 + n).shuffle(ids)
    rows = [_row(i, title if title is not None else TITLES[i % len(TITLES)], policy_error="-boom" if i == 3 else None)
            for i in ids]  # fmt: skip
    result = RunResult(scenario="s", policy=policy, errors=errors, seed=seed, metrics={}, breakdowns={},
                       fault_schedule=[], replay="")  # fmt: skip
    if as_lines:
        result.tasks_csv = (csv_lines(policy, errors, seed, [list(r.values()) for r in rows]), n)
    else:
        result.tasks = rows
    return result


def _sorted_row_by_row(runs: list[RunResult], arms: list[tuple[str, str]]) -> bytes:
    """The file as the comparison wrote it before: rows of each run as they came, read back, sorted, written again."""
    raw = io.StringIO(newline="")
    writer = None
    for result in runs:
        if not result.tasks:
            continue
        if writer is None:
            writer = csv.DictWriter(raw, fieldnames=[*CSV_LEAD, *result.tasks[0]], lineterminator="\n")
            writer.writeheader()
        for row in result.tasks:
            writer.writerow(csv_row({"policy": result.policy, "errors": result.errors, "seed": result.seed, **row}))
    order = {tuple(csv_row({"p": p, "e": e}).values()): i for i, (p, e) in enumerate(arms)}
    reader = csv.DictReader(io.StringIO(raw.getvalue(), newline=""))
    fields = list(reader.fieldnames or [])
    rows = sorted(reader, key=lambda r: (order.get((r["policy"], r["errors"]), len(order)), (r["policy"], r["errors"]),
                                         int(r["seed"]), int(r["id"])))  # fmt: skip
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def _written(tmp_path: Path, runs: list[RunResult], arms: list[tuple[str, str]]) -> bytes | None:
    writer = TaskCsvWriter(tmp_path / "tasks.csv", arms)
    for result in runs:
        writer.add(result)
    path = writer.close()
    assert not writer.partial.exists()
    return None if path is None else path.read_bytes()


def _runs(as_lines: bool, **kw: Any) -> list[RunResult]:
    return [_run(p, e, seed, 5 + seed, as_lines=as_lines, **kw) for p, e in ARMS for seed in (3, 1, 2)]


def test_runs_in_any_order_give_the_row_by_row_file(tmp_path):
    """Runs arriving in any order, their rows as lines or as dicts: the bytes the row-by-row sort gives."""
    dicts = _runs(as_lines=False)
    expected = _sorted_row_by_row(dicts, ARMS)
    assert expected.count(b"\n") > len(dicts) * 5  # quoted line ends included
    for attempt in range(4):
        runs = _runs(as_lines=attempt % 2 == 0)
        random.Random(attempt).shuffle(runs)
        assert _written(tmp_path, runs, ARMS) == expected
    assert b"'=SUM(A1)" in expected and b"'-boom" in expected and b"'=cmd,'-generic" in expected


def test_lines_are_what_a_dict_writer_writes():
    """A run's tasks.csv lines are DictWriter's lines of the same rows, escaped, in task id order."""
    dicts = _run("p", "e", 4, 9, as_lines=False)
    lines, rows = _run("p", "e", 4, 9, as_lines=True).tasks_csv  # type: ignore[misc]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[*CSV_LEAD, *TASK_COLUMNS], lineterminator="\n")
    for row in sorted(dicts.tasks, key=lambda r: r["id"]):
        writer.writerow(csv_row({"policy": "p", "errors": "e", "seed": 4, **row}))
    assert (lines, rows) == (out.getvalue(), 9)


def test_an_arm_named_twice_is_sorted_row_by_row(tmp_path):
    """Two runs of one arm and seed interleave by task id, as the row-by-row sort leaves them."""
    specs = [("p", "e", 1, 6), ("p", "e", 1, 5), ("p", "e", 2, 3), ("q", "e", 1, 2)]
    for order in (specs, specs[::-1]):
        runs = [_run(*spec, as_lines=True) for spec in order]
        dicts = [_run(*spec, as_lines=False) for spec in order]
        assert _written(tmp_path, runs, [("p", "e"), ("q", "e")]) == _sorted_row_by_row(dicts, [("p", "e"), ("q", "e")])


def test_a_carriage_return_in_a_cell_keeps_its_row_whole(tmp_path):
    """A carriage return in a cell (which the csv module would write unquoted, splitting the row for every
    reader) is written as a line feed in a quoted field: the file reads back with every row whole."""
    runs = [_run(p, e, 1, 4, as_lines=True, title="a\rb\r\nc") for p, e in ARMS]
    written = _written(tmp_path, runs, ARMS)
    assert written is not None and b"\r" not in written
    rows = list(csv.DictReader(io.StringIO(written.decode())))
    assert len(rows) == 12 and {row["title"] for row in rows} == {"a\nb\nc"}


def test_no_rows_no_file(tmp_path):
    """Runs without task rows (or with none at all) write no tasks.csv and leave no partial file."""
    empty = _run("p", "e", 1, 0, as_lines=True)
    assert _written(tmp_path, [empty, _run("p", "e", 2, 0, as_lines=False)], [("p", "e")]) is None
    assert not (tmp_path / "tasks.csv").exists()


def test_abort_keeps_the_rows_of_the_runs_that_finished(tmp_path):
    """After an interruption the partial file holds the header and every finished run's rows."""
    writer = TaskCsvWriter(tmp_path / "tasks.csv", ARMS)
    writer.add(_run("p", "e", 1, 4, as_lines=True))
    writer.add(_run("p", "e", 2, 3, as_lines=False))
    writer.abort()
    rows = list(csv.DictReader(writer.partial.open(newline="", encoding="utf-8")))
    assert len(rows) == 7 == writer.rows and not (tmp_path / "tasks.csv").exists()


# -- results JSON layout ----------------------------------------------------------------------


def _reference_encode(obj: Any, level: int, in_list: bool) -> str:
    """The layout rule as first written: the whole container encoded at every level to measure it."""
    if not isinstance(obj, (dict, list)):
        return json.dumps(obj)
    values = list(obj.values()) if isinstance(obj, dict) else obj
    inline = json.dumps(obj, separators=(", ", ": "))
    flat = all(not isinstance(v, (dict, list)) for v in values)
    if not values or (flat and (isinstance(obj, list) or in_list)) or len(inline) + 2 * level <= 100:
        return inline
    pad = "  " * (level + 1)
    if isinstance(obj, dict):
        parts = [f"{pad}{json.dumps(k)}: {_reference_encode(v, level + 1, False)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(parts) + "\n" + "  " * level + "}"
    parts = [pad + _reference_encode(v, level + 1, True) for v in obj]
    return "[\n" + ",\n".join(parts) + "\n" + "  " * level + "]"


_scalars = (
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats(allow_nan=False) | st.text(max_size=30)
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=12), inner, max_size=8),
    max_leaves=60,
)


@settings(max_examples=300, deadline=None)
@given(_documents)
def test_results_json_layout_is_the_rule_as_first_written(doc):
    """The layout measures a container only as far as the line width: the same text as encoding it whole."""
    assert _encode(doc, 0, False) == _reference_encode(doc, 0, False)
    assert json.loads(_encode(doc, 0, False)) == doc
