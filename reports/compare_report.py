"""The comparison report: setup, headline tables, verdicts, pooled rates, charts and breakdowns."""

from __future__ import annotations

import json
import re
from concurrent.futures import Executor
from pathlib import Path

from fleetchaos.reports.blocks import H1, H2, H3, IMG, PRE, TABLE, UL, Block, P, to_markdown, write_pages
from fleetchaos.reports.cells import arm_label, counts, diff, diff_ci, kind_recovery, metric_cell, num, proportion
from fleetchaos.reports.drawing import Chart, Drawing
from fleetchaos.reports.notes import ASSUMPTIONS, READING_NOTES
from fleetchaos.reports.policy_errors import policy_error_blocks
from fleetchaos.reports.results_io import dumps
from fleetchaos.reports.tables import COLUMNS, fmt
from fleetchaos.results.models import CompareResult, Timeline
from fleetchaos.results.registry import HEADLINE_METRICS, is_rate
from fleetchaos.results.stats import MIN_SEEDS

#: Extra metrics in the comparison report's second table, with their headers and digits.
DETAIL_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("data_loss_tasks", "data loss (tasks)", 1),
    ("escalation_rate", "escalation rate", 1),
    ("human_pages_per_day", "pages / day", 1),
    ("mean_time_to_recovery_s", "time to rec. mean (s)", 1),
    ("p50_time_to_recovery_s", "p50 (s)", 1),
    ("p95_time_to_recovery_s", "p95 (s)", 1),
    ("p95_steps_to_recovery", "steps to rec. p95", 1),
    ("retry_amplification", "calls per logical call", 3),
    ("tokens", "tokens", 0),
    ("cost_usd", "cost (USD)", 2),
)

#: The module of the chart functions (imported where the charts are drawn).
CHARTS = "fleetchaos.reports.charts"

CHART_FILES = {
    "recovery": "recovery.png",
    "silent_and_wasted": "silent_and_wasted.png",
    "cost_vs_recovery": "cost_vs_recovery.png",
    "heatmap": "recovery_by_fault_kind.png",
    "ecdf": "time_to_recovery_ecdf.png",
    "error_codes": "error_codes.png",
}


def _timeline_file(index: int, t: Timeline) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", t.label.lower()).strip("_") or str(index)
    return f"timeline_{slug}.png"


def compare_charts(result: CompareResult) -> list[Chart]:
    """The charts of a comparison report, with their data and file names."""
    of_arms = (
        ("recovery", "recovery_chart"),
        ("silent_and_wasted", "cost_chart"),
        ("cost_vs_recovery", "pareto_chart"),
        ("heatmap", "heatmap_chart"),
        ("ecdf", "ecdf_chart"),
    )
    out = [Chart(key, CHART_FILES[key], f"{CHARTS}:{function}", (result,)) for key, function in of_arms]
    for i, t in enumerate(result.timelines):
        out.append(Chart(f"timeline{i}", _timeline_file(i, t), f"{CHARTS}:timeline_chart", (t,)))
    out.append(Chart("error_codes", CHART_FILES["error_codes"], f"{CHARTS}:error_codes_chart", (result.timelines,)))
    return out


def compare_blocks(
    result: CompareResult, made: dict[str, Path] | None = None, tasks_csv: str | None = None
) -> list[Block]:
    """The blocks of a comparison report; ``made`` maps chart keys to the PNGs written (None: link every chart)."""
    pct = round(result.confidence * 100)
    n = len(result.seeds)
    blocks = [H1(f"fleetchaos comparison: {result.scenario}")]
    if result.description.strip():
        blocks.append(P(" ".join(result.description.split())))
    reference = result.arms[0] if result.arms else None
    seeds = (
        ", ".join(map(str, result.seeds)) if n <= 30 else f"{n} seeds from {min(result.seeds)} to {max(result.seeds)}"
    )
    setup = [
        f"Scenario: `{result.scenario}`",
        f"Seeds: {seeds} ({n} independent simulated runs per arm; every arm meets the same faults for a seed)",
        f"Arms: {len(result.arms)} ({', '.join(arm_label(a) for a in result.arms)})",
        f"Confidence: {pct}%",
        "Versions: " + (", ".join(f"{k} {v}" for k, v in result.versions.items()) or "not recorded"),
    ]
    if reference is not None and len(result.arms) > 1:
        setup.append(f"Reference arm for verdicts: {arm_label(reference)}")
    blocks += [H2("Setup"), UL(setup)]
    if n < MIN_SEEDS:
        blocks.append(
            P(
                f"Only {n} seed{'s' if n != 1 else ''}: too few to name a winner. Intervals are wide or missing; "
                "run with `--seeds 10` or more before deciding."
            )
        )

    blocks += [
        H2("Headline figures"),
        P(f"Mean per seed with its {pct}% confidence interval [low, high] across seeds."),
        TABLE(
            ["policy", "errors"] + [h for _, h, _ in COLUMNS],
            [
                [a.policy, a.errors]
                + [
                    metric_cell(a, key) if key in HEADLINE_METRICS else fmt(a.metrics.get(key), kind)
                    for key, _, kind in COLUMNS
                ]
                for a in result.arms
            ],
            align_right=2,
        ),
        TABLE(
            ["policy", "errors"] + [h for _, h, _ in DETAIL_COLUMNS],
            [
                [a.policy, a.errors]
                + [
                    metric_cell(a, key, d) if is_rate(key) else num(a.metrics.get(key), d)
                    for key, _, d in DETAIL_COLUMNS
                ]
                for a in result.arms
            ],
            align_right=2,
        ),
    ]

    blocks += policy_error_blocks(
        [(a.policy, a.errors, a.metrics, a.breakdowns) for a in result.arms], runs=len(result.seeds)
    )
    recipes = {a.policy: a.recipe for a in result.arms if a.recipe}
    if recipes:
        blocks += [
            H2("Policies as run"),
            UL([f"`{name}`: `{recipe}`" for name, recipe in recipes.items()]),
        ]

    if result.comparisons:
        ref = result.comparisons[0]
        blocks += [
            H2("Verdicts against the reference arm"),
            P(
                f"Each arm minus {ref.reference_policy} on {ref.reference_errors}, seed by seed on the same seeds: "
                f"mean difference with its {pct}% interval, and the verdict in the metric's direction."
            ),
            TABLE(
                ["arm", "metric", "better", "paired seeds", "mean difference", f"{pct}% interval", "verdict"],
                [
                    [
                        f"{c.policy} on {c.errors}",
                        c.metric,
                        {True: "higher", False: "lower", None: "-"}[c.higher_is_better],
                        str(c.n),
                        diff(c.metric, c.mean_difference),
                        diff_ci(c.metric, c.ci),
                        c.verdict,
                    ]
                    for c in result.comparisons
                ],
                align_right=3,
            ),
        ]

    pooled_names = sorted({k for a in result.arms for k in a.pooled})
    if pooled_names:
        blocks += [
            H2("Pooled task-level rates"),
            P(f"Every task of every seed counted as one trial, with the Wilson {pct}% interval (see How to read)."),
            TABLE(
                ["policy", "errors", *pooled_names],
                [[a.policy, a.errors] + [proportion(a.pooled.get(k)) for k in pooled_names] for a in result.arms],
                align_right=2,
            ),
        ]

    made = made if made is not None else {k: Path(v) for k, v in CHART_FILES.items()}
    blocks.append(H2("Charts"))
    captions = {
        "recovery": f"Recovery rate per arm (% of faulted tasks), mean of {n} seeds with {pct}% CI bars",
        "silent_and_wasted": "Silent failures (% of tasks) and wasted retries (count per run) per arm, with CI bars",
        "cost_vs_recovery": "Cost per simulated run (USD) against recovery rate; the dashed line joins the Pareto front",
        "heatmap": "Recovery rate by arm and kind of the task's first fault, tasks pooled over seeds",
        "ecdf": "ECDF of time to recovery (simulated seconds, log scale), recovered tasks pooled over seeds",
    }
    for key, caption in captions.items():
        if key in made:
            blocks.append(IMG(made[key].name, caption))
    for i, t in enumerate(result.timelines):
        key = f"timeline{i}"
        if key in made:
            blocks.append(
                IMG(made[key].name, f"Fleet timeline, {t.label}: {t.policy} on {t.errors} errors, seed {t.seed}")
            )
    if "error_codes" in made:
        blocks.append(
            IMG(made["error_codes"].name, "Faulted calls per error code over time in the traced runs, spikes marked")
        )
    if not result.timelines:
        blocks.append(P("No traced run is stored in these results, so there is no fleet timeline or error-code chart: "
                        "`fleetchaos compare --report DIR` records one for the best and the worst arm."))  # fmt: skip
    else:
        blocks.append(UL(f"{t.label}: `{t.replay}`" for t in result.timelines))

    blocks += _breakdown_blocks(result)
    blocks += [H2("How to read these figures"), UL(READING_NOTES)]
    blocks += [H2("Modelling assumptions"), UL(ASSUMPTIONS)]
    if result.scenario_config:
        blocks += [
            H3("The scenario as it ran (every modelling parameter)"),
            PRE(json.dumps(result.scenario_config, indent=2, sort_keys=True)),
        ]
    files = ["`results.json`: every figure above, per seed, with intervals"]
    if tasks_csv:
        files.append(f"`{tasks_csv}`: one row per task, arm and seed (truth, claim, effort)")
    files.append("Metric definitions, denominators and directions: docs/metrics.md")
    files.append("Replay any arm and seed: `fleetchaos run --scenario NAME --policy POLICY --errors FORMAT --seed N`")
    blocks += [H2("Files and replay"), UL(files)]
    return blocks


def _breakdown_blocks(result: CompareResult) -> list[Block]:
    blocks = [H2("Breakdowns (all seeds pooled)")]
    kinds = sorted({k for a in result.arms for k in a.breakdowns.get("faulted_tasks_by_first_fault", {})})
    if kinds:
        rows = []
        for a in result.arms:
            d = kind_recovery(a)
            rows.append([a.policy, a.errors] + [
                (f"{100 * d[k][0] / d[k][1]:.0f}% ({d[k][0]}/{d[k][1]})" if d.get(k, (0, 0))[1] else "-") for k in kinds
            ])  # fmt: skip
        blocks += [
            H3("Recovery by kind of first fault (recovered / faulted tasks)"),
            TABLE(["policy", "errors", *kinds], rows, 2),
        ]
    sections = (
        ("wasted_retries_by_reason", "Wasted retries by reason"),
        ("fault_hits_by_error_code", "Faulted calls by error code"),
        ("fault_hits_by_tool", "Faulted calls by tool"),
        ("fault_hits_by_worker", "Faulted calls by worker"),
        ("claims", "Final claims"),
    )
    for key, title in sections:
        rows = [[a.policy, a.errors, counts(a.breakdowns.get(key, {}))] for a in result.arms]
        if any(a.breakdowns.get(key) for a in result.arms) or key == "wasted_retries_by_reason":
            blocks += [H3(title), TABLE(["policy", "errors", "counts"], rows, 0)]
    return blocks


def compare_markdown(result: CompareResult) -> str:
    """The Markdown summary of a comparison (charts linked by their file names)."""
    return to_markdown(compare_blocks(result))


def write_compare_report(
    result: CompareResult, out_dir: Path, *, tasks_csv: Path | None = None, executor: Executor | None = None
) -> list[Path]:
    """Write the report of a comparison into ``out_dir``; returns the files written.

    Writes results.json, summary.md, report.html and the charts.  ``tasks_csv`` names the
    per-task CSV in ``out_dir`` (written by :class:`TaskCsvWriter`) for the report to point
    at.  With an ``executor`` the charts are drawn side by side on it while this process
    writes results.json (:class:`~fleetchaos.reports.drawing.Drawing`).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    drawing = Drawing(compare_charts(result), executor)
    try:
        results_path = out_dir / "results.json"
        results_path.write_text(dumps(result), encoding="utf-8")
    except BaseException:
        drawing.cancel()
        raise
    written = [results_path]
    made = drawing.write(out_dir)
    written += list(made.values())
    csv_name = tasks_csv.name if tasks_csv is not None else None
    blocks = compare_blocks(result, made, csv_name)
    written += write_pages(out_dir, blocks, f"fleetchaos comparison: {result.scenario}", made)
    if tasks_csv is not None:
        written.append(tasks_csv)
    return written
