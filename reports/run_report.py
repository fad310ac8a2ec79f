"""The report of a single run: its metrics, breakdowns, charts and scheduled faults."""

from __future__ import annotations

import json
from concurrent.futures import Executor
from pathlib import Path

from fleetchaos.files import check_inside, write_text
from fleetchaos.reports.assumptions import stated_assumptions
from fleetchaos.reports.blocks import H1, H2, IMG, TABLE, UL, Block, write_pages
from fleetchaos.reports.cells import counts, num, pct, sorted_keys
from fleetchaos.reports.compare_report import CHART_FILES, CHARTS
from fleetchaos.reports.drawing import Chart, Drawing
from fleetchaos.reports.expectations import expectation_blocks
from fleetchaos.reports.notes import ASSUMPTIONS
from fleetchaos.reports.policy_errors import policy_error_blocks
from fleetchaos.reports.results_io import dumps, write_task_csv
from fleetchaos.results.models import RunResult
from fleetchaos.results.registry import is_rate

RUN_DETAIL_BREAKDOWNS = (
    ("wasted_retries_by_reason", "Wasted retries by reason"),
    ("faulted_tasks_by_first_fault", "Faulted tasks by kind of first fault"),
    ("recovered_tasks_by_first_fault", "Recovered tasks by kind of first fault"),
    ("fault_hits_by_error_code", "Faulted calls by error code"),
    ("fault_hits_by_tool", "Faulted calls by tool"),
    ("fault_hits_by_worker", "Faulted calls by worker"),
    ("misreported_failures_by_way", "Wrong envelopes by way (judged against the truth)"),
    ("claims", "Final claims"),
)


def run_blocks(result: RunResult, made: dict[str, Path], tasks_csv: str | None) -> list[Block]:
    """The blocks of a single run's report."""
    blocks = [
        H1(f"fleetchaos run: {result.scenario}"),
        UL(
            [
                f"Policy `{result.policy}` on `{result.errors}` errors, seed {result.seed}"
                + (f", parameters {json.dumps(result.params, sort_keys=True)}" if result.params else ""),
                f"Replay: `{result.replay}`",
                "Versions: " + (", ".join(f"{k} {v}" for k, v in result.versions.items()) or "not recorded"),
                "One seed: no confidence intervals; compare arms on 10 seeds or more with `fleetchaos compare`.",
            ]
            + (
                [f"Mode: `{result.mode}` (the team's real code under the scenario's fault schedule)"]
                if result.mode != "sim"
                else []
            )
        ),
        *expectation_blocks(result.expectations),
        H2("Metrics"),
        TABLE(
            ["metric", "value"],
            [[k, pct(v, 2) if is_rate(k) else num(v, 3)] for k, v in result.metrics.items()],
            align_right=1,
        ),
    ]
    blocks += policy_error_blocks([(result.policy, result.errors, result.metrics, result.breakdowns)], runs=1)
    blocks.append(H2("Breakdowns"))
    rows = []
    for key, title in RUN_DETAIL_BREAKDOWNS:
        d = result.breakdowns.get(key)
        if d is None:
            continue
        if key == "fault_hits_by_worker":
            d = {f"worker {k}": d[k] for k in sorted_keys(d)}
        rows.append([title, counts(d, 20)])
    blocks.append(TABLE(["breakdown", "counts"], rows, 0))
    captions = {
        "timeline": "Fleet timeline: one lane per worker",
        "error_codes": "Faulted calls per error code over time, spikes marked",
        "ecdf": "ECDF of time to recovery (simulated seconds, log scale)",
    }
    if made:
        blocks.append(H2("Charts"))
        for key, caption in captions.items():
            if key in made:
                blocks.append(IMG(made[key].name, caption))
    blocks += [H2("Scheduled faults"), UL(result.fault_schedule or ["none (per-call faults only)"])]
    blocks += [H2("Modelling assumptions"), UL(ASSUMPTIONS + stated_assumptions(result))]
    files = ["`results.json`: this run's figures" + (" and its per-task rows" if result.tasks else "")]
    if tasks_csv:
        files.append(f"`{tasks_csv}`: one row per task (truth, claim, effort)")
    files.append("Metric definitions, denominators and directions: docs/metrics.md")
    blocks += [H2("Files"), UL(files)]
    return blocks


def run_charts(result: RunResult) -> list[Chart]:
    """The charts of a run's report: its timeline and error codes (when traced), and its ECDF of recovery times."""
    out = []
    if result.timeline is not None:
        out.append(
            Chart("timeline", "timeline.png", "fleetchaos.reports.timeline_chart:timeline_chart", (result.timeline,))
        )
        out.append(
            Chart("error_codes", CHART_FILES["error_codes"], f"{CHARTS}:error_codes_chart", ([result.timeline],))
        )
    times = result.samples.get("time_to_recovery_s", [])
    out.append(
        Chart("ecdf", CHART_FILES["ecdf"], f"{CHARTS}:run_ecdf_chart", (times, f"{result.policy} on {result.errors}"))
    )
    return out


def write_run_report(
    result: RunResult, out_dir: Path, *, root: Path | None = None, executor: Executor | None = None
) -> list[Path]:
    """Write one run's results.json, tasks.csv (if it kept task rows), charts, summary.md and report.html.

    Each file is written atomically; ``out_dir`` must resolve inside ``root`` (default: itself).
    With an ``executor`` the charts are drawn side by side on it while this process writes
    results.json and tasks.csv (:class:`~fleetchaos.reports.drawing.Drawing`).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    check_inside(out_dir / "results.json", Path(root) if root is not None else out_dir)
    drawing = Drawing(run_charts(result), executor)
    try:
        written = [write_text(out_dir / "results.json", dumps(result))]
        csv_path = write_task_csv(result.tasks, out_dir / "tasks.csv")
        if csv_path is not None:
            written.append(csv_path)
    except BaseException:
        drawing.cancel()
        raise
    made = drawing.write(out_dir)
    written += list(made.values())
    blocks = run_blocks(result, made, csv_path.name if csv_path else None)
    written += write_pages(out_dir, blocks, f"fleetchaos run: {result.scenario}", made)
    return written
