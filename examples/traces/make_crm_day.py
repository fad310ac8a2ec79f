"""Write crm_day.csv: a small day of CRM-sync tool calls in the plain trace form.

The calls come from a simulated day (the catalogue's crm_sync_403 at 150 tasks a day,
seed 11, exponential backoff on generic errors), exported as OTLP JSON and rewritten
the way a team's own log pipeline might: ISO times, worker host names, and its own
error codes beside the HTTP status.  Run from the repository root:

    .venv/bin/python examples/traces/make_crm_day.py
"""

from __future__ import annotations

import csv
import datetime as dt
import tempfile
from pathlib import Path

from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import load_scenario
from fleetchaos.traces.otlp_write import write_run_traces
from fleetchaos.traces.read import read_file
from fleetchaos.traces.records import TaskSpan, ToolCall

HERE = Path(__file__).parent

#: The simulated wire codes, rewritten as this imaginary team's own codes.
TEAM_CODES = {"ECONNRESET": "UPSTREAM_RESET", "EACCES": "FORBIDDEN", "ERR_INVALID_ARG_VALUE": "CRM_FIELD_REJECTED"}


def main() -> None:
    scenario = load_scenario("crm_sync_403")
    scenario = scenario.model_copy(update={"workload": scenario.workload.model_copy(update={"tasks_per_day": 150})})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "day.otlp.jsonl"
        run_one(
            scenario, "backoff", "generic", 11, trace=True,
            on_trace=lambda out: write_run_traces(out, path, scenario="crm", policy="backoff", errors="generic", seed=11),
        )  # fmt: skip
        records = list(read_file(path))
    templates = {r.task: r.template for r in records if isinstance(r, TaskSpan)}
    calls = sorted((r for r in records if isinstance(r, ToolCall)), key=lambda c: (c.start_s, c.task, c.item))
    task_names = {}
    with open(HERE / "crm_day.csv", "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["time", "task", "tool", "worker", "duration_s", "outcome", "error", "http_status", "attempt",
                         "item", "template"])  # fmt: skip
        for c in calls:
            task = task_names.setdefault(c.task, f"sync-{len(task_names) + 1:04d}")
            stamp = dt.datetime.fromtimestamp(c.start_s, tz=dt.UTC).isoformat(timespec="milliseconds")
            error = "" if c.ok else TEAM_CODES.get(c.code or "", c.code or "")
            status = "" if c.ok or error == "UPSTREAM_RESET" else c.http_status  # the reset comes with no status
            writer.writerow([stamp.replace("+00:00", "Z"), task, c.tool, f"crm-w{int(c.worker):02d}",
                             f"{c.duration_s:.3f}", "ok" if c.ok else "error", error, status, c.attempt, c.item,
                             templates.get(c.task, "")])  # fmt: skip


if __name__ == "__main__":
    main()
