"""Writes a report folder: JSON results, a Markdown summary, charts and per-task CSV."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from harness.results import CompareResult, RunResult

from .charts import cost_chart, recovery_chart
from .tables import COLUMNS, fmt, fmt_ci

#: Modelling assumptions every report states, so readers can judge the figures.
ASSUMPTIONS: tuple[str, ...] = (
    "Each seed is one simulated day of the whole fleet; intervals are Student-t intervals of the mean across seeds.",
    "Every arm faces the same fault realisation for a seed: per-call faults are drawn from streams keyed by "
    "(task, step, item, execution number); scheduled faults (full disks, key expiries, rate-limit cuts) are drawn once per seed.",
    "Rate limiting is not a coin flip: a fleet-wide API token bucket refuses calls when load exceeds its rate; "
    "a rate-limit fault cuts that rate for a window.",
    "A full disk stays full until cleanup (cleanup_after_s); an expired key fails every API call until the orchestrator refreshes it.",
    "A timeout is ambiguous: the call's side effect commits with committed_probability; retrying a committed "
    "non-idempotent step duplicates its side effect.",
    "Generic errors carry only a status word; a generic fan-out tool returns what it gathered as 'ok' "
    "(no per-item status), so a partly failed batch is passed on as success.",
    "Structured errors carry error_code, category, recoverable, suggested_action, partial_success, retry_after_ms, "
    "context and schema_version; a policy can only resume from what partial_success reveals.",
    "Escalation hands the task to a human and ends automatic recovery; it is reported honestly, not counted as recovered.",
    "Tasks are dispatched round-robin; a reroute goes to the next worker in rotation.",
)


def _dump(model) -> str:
    return model.model_dump_json(indent=2) + "\n"


def write_compare_report(result: CompareResult, out_dir: Path) -> list[Path]:
    """Write the report of a comparison into ``out_dir``; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    results_path = out_dir / "results.json"
    results_path.write_text(_dump(result), encoding="utf-8")
    written.append(results_path)
    written.append(recovery_chart(result, out_dir / "recovery.png"))
    written.append(cost_chart(result, out_dir / "silent_and_wasted.png"))
    summary = out_dir / "summary.md"
    summary.write_text(compare_markdown(result), encoding="utf-8")
    written.append(summary)
    return written


def compare_markdown(result: CompareResult) -> str:
    """The Markdown summary of a comparison."""
    pct = int(round(result.confidence * 100))
    lines = [
        f"# fleetchaos comparison: {result.scenario}",
        "",
        result.description.strip(),
        "",
        f"Seeds: {', '.join(map(str, result.seeds))} ({len(result.seeds)} simulated days per arm). "
        f"Figures are means per seed with {pct}% confidence intervals.",
        "",
        "| policy | errors | " + " | ".join(h for _, h, _ in COLUMNS) + " |",
        "|---|---|" + "---:|" * len(COLUMNS),
    ]
    for arm in result.arms:
        cells = []
        for key, _, kind in COLUMNS:
            text = fmt(arm.metrics.get(key), kind)
            if key in ("recovery_rate", "silent_failure_rate", "wasted_retries"):
                text += fmt_ci(arm.ci.get(key, [None, None]), kind)
            cells.append(text)
        lines.append(f"| {arm.policy} | {arm.errors} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "![recovery per arm](recovery.png)",
        "",
        "![silent failures and wasted retries](silent_and_wasted.png)",
        "",
        "## Wasted retries by reason (all seeds)",
        "",
    ]
    for arm in result.arms:
        reasons = arm.breakdowns.get("wasted_retries_by_reason", {})
        text = ", ".join(f"{k}: {v}" for k, v in reasons.items()) or "none"
        lines.append(f"- {arm.policy} on {arm.errors}: {text}")
    lines += ["", "## Modelling assumptions", ""]
    lines += [f"- {a}" for a in ASSUMPTIONS]
    lines += ["", "## Versions", ""]
    lines += [f"- {k} {v}" for k, v in result.versions.items()]
    lines += [
        "",
        "Metric definitions: docs/metrics.md. Replay any arm and seed with "
        "`fleetchaos run --scenario NAME --policy POLICY --errors FORMAT --seed N`.",
        "",
    ]
    return "\n".join(lines)


def write_run_report(result: RunResult, out_dir: Path) -> list[Path]:
    """Write one run's results and its per-task outcomes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / "results.json"
    results_path.write_text(_dump(result), encoding="utf-8")
    written = [results_path]
    if result.tasks:
        csv_path = out_dir / "tasks.csv"
        with csv_path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(result.tasks[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(result.tasks)
        written.append(csv_path)
    summary = out_dir / "summary.md"
    body = [f"# fleetchaos run: {result.scenario}", "", f"`{result.replay}`", "", "| metric | value |", "|---|---:|"]
    body += [f"| {k} | {json.dumps(v)} |" for k, v in result.metrics.items()]
    body += ["", "## Scheduled faults", ""] + [f"- {line}" for line in result.fault_schedule] + [""]
    summary.write_text("\n".join(body), encoding="utf-8")
    written.append(summary)
    return written
