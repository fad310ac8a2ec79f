"""The comparison report: what it found, the headline table, the setup, charts and breakdowns, then an appendix.

The page opens with the finding (:mod:`fleetchaos.reports.conclusion`) and the compact
headline table of the arm-independent figures with their verdicts
(:mod:`fleetchaos.reports.headline`); the full verdict matrix, the pooled rates and the
scenario document as it ran close it, collapsed in the HTML page.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import Executor
from pathlib import Path

from fleetchaos.files import check_inside, write_text
from fleetchaos.reports.assumptions import stated_assumptions
from fleetchaos.reports.best import tuning_blocks
from fleetchaos.reports.blocks import (
    DETAILS,
    END_DETAILS,
    H1,
    H2,
    H3,
    IMG,
    PRE,
    TABLE,
    UL,
    Block,
    P,
    literal,
    to_markdown,
    write_pages,
)
from fleetchaos.reports.breakdown_sections import breakdown_blocks
from fleetchaos.reports.cells import diff, diff_ci, metric_cell, num, proportion
from fleetchaos.reports.conclusion import finding
from fleetchaos.reports.drawing import Chart, Drawing
from fleetchaos.reports.expectations import expectation_blocks
from fleetchaos.reports.goodput import GOODPUT
from fleetchaos.reports.headline import headline_table
from fleetchaos.reports.naming import arm_names
from fleetchaos.reports.notes import ASSUMPTIONS, READING_NOTES
from fleetchaos.reports.ordering import ordering_lines
from fleetchaos.reports.policy_errors import policy_error_blocks
from fleetchaos.reports.provider_load import load_captions, load_charts
from fleetchaos.reports.results_io import dumps
from fleetchaos.reports.sensitivity import sensitivity_blocks
from fleetchaos.reports.tables import COLUMNS, fmt
from fleetchaos.results.models import CompareResult, Timeline
from fleetchaos.results.registry import HEADLINE_METRICS, is_rate, lead_metrics
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
    ("human_hours", "paged human hours", 1),
)

#: The module of the chart functions (imported where the charts are drawn).
CHARTS = "fleetchaos.reports.charts"
ARM_CHARTS = "fleetchaos.reports.arm_charts"

CHART_FILES = {
    "headline": "headline.png",
    "silent_and_wasted": "silent_and_wasted.png",
    "failed_retries": "failed_retries.png",
    "cost_split": "cost_split.png",
    "cost_vs_success": "cost_vs_success.png",
    "heatmap": "recovery_by_fault_kind.png",
    "ecdf": "time_to_recovery_ecdf.png",
    "error_codes": "error_codes.png",
    "goodput": "goodput_over_time.png",
}


def _timeline_file(index: int, t: Timeline) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", t.label.lower()).strip("_") or str(index)
    return f"timeline_{slug}.png"


def compare_charts(result: CompareResult) -> list[Chart]:
    """The charts of a comparison report, with their data and file names (drawn by name, maybe in a worker)."""
    of_arms = (
        ("headline", f"{ARM_CHARTS}:lead_chart"),
        ("silent_and_wasted", f"{ARM_CHARTS}:silent_and_wasted_chart"),
        ("failed_retries", f"{ARM_CHARTS}:failed_retries_chart"),
        ("cost_split", f"{ARM_CHARTS}:cost_split_chart"),
        ("cost_vs_success", f"{ARM_CHARTS}:pareto_chart"),
        ("heatmap", f"{CHARTS}:heatmap_chart"),
        ("ecdf", f"{CHARTS}:ecdf_chart"),
        ("goodput", "fleetchaos.reports.goodput:goodput_chart"),
    )
    out = [Chart(key, CHART_FILES[key], function, (result,)) for key, function in of_arms]
    out += load_charts(result)  # a chart per provider, when the scenario records their load (goodput_bin_s)
    for i, t in enumerate(result.timelines):
        out.append(
            Chart(f"timeline{i}", _timeline_file(i, t), "fleetchaos.reports.timeline_chart:timeline_chart", (t,))
        )
    out.append(Chart("error_codes", CHART_FILES["error_codes"], f"{CHARTS}:error_codes_chart", (result.timelines,)))
    study = getattr(result, "sensitivity", None)
    if study is not None:
        out.append(Chart("tornado", "tornado.png", "fleetchaos.reports.tornado:tornado_chart", (study,)))
    return out


def _headline_blocks(result: CompareResult, pct: int) -> list[Block]:
    names = arm_names(result.arms)
    reference = f" against the reference arm, {literal(names[0])}" if len(result.arms) > 1 else ""
    what = (
        "successful tasks per simulated day (the arms of a closed loop run different tasks)"
        if result.closed_loop
        else "the success rate over all tasks and recovery on the common set (every task faulted in any arm "
        "on the same seed)"
    )
    return [
        H2("Headline"),
        P(
            f"The figures every arm shares a denominator for: {what}. Mean per seed with its {pct}% interval; "
            f"'vs reference' is the paired difference{reference}, seed by seed, with its interval and verdict. "
            "Recovery on each arm's own faulted tasks is secondary: its denominator differs between arms. "
            "Cost per run is split into the model (tokens and tool calls) and how the tasks ended: paged humans' "
            "handling hours, silent failures, tasks left undone and refused requests, at the scenario's prices."
        ),
        headline_table(result),
    ]


def _setup_blocks(result: CompareResult) -> list[Block]:
    n = len(result.seeds)
    pct = round(result.confidence * 100)
    seeds = (
        ", ".join(map(str, result.seeds)) if n <= 30 else f"{n} seeds from {min(result.seeds)} to {max(result.seeds)}"
    )
    names = arm_names(result.arms)
    setup = [
        f"Scenario: {literal(result.scenario)}" + (" (closed loop)" if result.closed_loop else ""),
        f"Seeds: {seeds} ({n} independent simulated runs per arm; every arm meets the same faults for a seed)",
        f"Arms: {len(result.arms)} ({', '.join(literal(x) for x in names)})",
        f"Confidence: {pct}%",
        "Versions: " + (", ".join(f"{k} {v}" for k, v in result.versions.items()) or "not recorded"),
    ]
    if len(result.arms) > 1:
        setup.append(f"Reference arm for verdicts: {literal(names[0])}")
    blocks = [H2("Setup")]
    if result.description.strip():
        blocks.append(P(literal(" ".join(result.description.split()))))
    blocks.append(UL(setup))
    if n < MIN_SEEDS:
        blocks.append(
            P(
                f"Only {n} seed{'s' if n != 1 else ''}: too few to name a winner. Intervals are wide or missing; "
                "run with `--seeds 10` or more before deciding."
            )
        )
    return blocks


def _figure_blocks(result: CompareResult) -> list[Block]:
    names = [literal(x) for x in arm_names(result.arms)]
    return [
        H2("More figures"),
        TABLE(
            ["arm"] + [h for _, h, _ in COLUMNS],
            [
                [name]
                + [
                    metric_cell(a, key) if key in HEADLINE_METRICS else fmt(a.metrics.get(key), kind)
                    for key, _, kind in COLUMNS
                ]
                for name, a in zip(names, result.arms)
            ],
            align_right=1,
        ),
        TABLE(
            ["arm"] + [h for _, h, _ in DETAIL_COLUMNS],
            [
                [name]
                + [
                    metric_cell(a, key, d) if is_rate(key) else num(a.metrics.get(key), d)
                    for key, _, d in DETAIL_COLUMNS
                ]
                for name, a in zip(names, result.arms)
            ],
            align_right=1,
        ),
    ]


def _chart_blocks(result: CompareResult, made: dict[str, Path]) -> list[Block]:
    n = len(result.seeds)
    pct = round(result.confidence * 100)
    lead = " and ".join(m.replace("_", " ") for m in lead_metrics(result.closed_loop))
    captions = {
        "headline": f"The headline per arm ({lead}), mean of {n} seeds with {pct}% CI bars",
        "silent_and_wasted": "Silent failures (% of tasks) and wasted retries (count per run) per arm, with CI bars",
        "failed_retries": "Retries that failed again per run, by the fault they met; diamonds: wasted retries per run",
        "cost_split": "Cost per run split into model tokens, tool calls, paged humans' handling hours, silent failures, "
        "tasks left undone and refused requests, each on its own scale",
        "cost_vs_success": f"Cost per run (USD) against {lead_metrics(result.closed_loop)[0].replace('_', ' ')}; "
        "the dashed line joins the Pareto front",
        "heatmap": "Recovery by arm and kind of the task's first fault (each arm's own faulted tasks, pooled over seeds)",
        "ecdf": "ECDF of time to recovery (simulated seconds, log scale), recovered tasks pooled over seeds",
    }
    if any(a.breakdowns.get(GOODPUT) for a in result.arms):  # only scenarios that set goodput_bin_s record it
        captions["goodput"] = f"Goodput over time: tasks completed per minute per arm, mean of {n} seeds"
    captions.update(load_captions(result, literal))
    blocks = [H2("Charts")]
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
    return blocks


def _robustness_blocks(result: CompareResult) -> list[Block]:
    robustness = result.robustness
    if robustness is None:
        return []
    varied = [f"{literal(p)}: {', '.join(literal(str(v)) for v in values)}" for p, values in robustness.varied.items()]
    blocks = [H2("Robustness"), P("What was varied, and where the ordering of the arms flipped."), UL(varied)]
    blocks.append(UL(ordering_lines(robustness, quote=literal)))
    if robustness.flips:
        blocks.append(
            TABLE(
                ["parameter", "metric", "ahead", "behind", "holds at", "flips at"],
                [
                    [
                        literal(f.parameter),
                        f.metric,
                        literal(f.ahead),
                        literal(f.behind),
                        literal(str(f.holds_at)),
                        literal(str(f.flips_at)),
                    ]
                    for f in robustness.flips
                ],
                align_right=4,
            )
        )
    return blocks


def _appendix_blocks(result: CompareResult) -> list[Block]:
    pct = round(result.confidence * 100)
    blocks = [DETAILS("Appendix: every verdict, pooled rates and the scenario as it ran")]
    if result.comparisons:
        ref = result.comparisons[0]
        by_arm = {(a.policy, a.errors): literal(name) for a, name in zip(result.arms, arm_names(result.arms))}
        reference = by_arm.get((ref.reference_policy, ref.reference_errors), literal(ref.reference_policy))
        blocks += [
            H3("Verdicts against the reference arm"),
            P(
                f"Each arm minus {reference}, seed by seed on the same seeds: mean difference with its {pct}% "
                "interval, and the verdict in the metric's direction ('no difference': equal on every seed)."
            ),
            TABLE(
                ["arm", "metric", "better", "paired seeds", "mean difference", f"{pct}% interval", "verdict"],
                [
                    [
                        by_arm.get((c.policy, c.errors), literal(f"{c.policy} on {c.errors}")),
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
    pooled_names = [k for k in dict.fromkeys(k for a in result.arms for k in a.pooled)]
    if pooled_names:
        names = [literal(x) for x in arm_names(result.arms)]
        blocks += [
            H3("Pooled task-level rates"),
            P(f"Every task of every seed counted as one trial, with the Wilson {pct}% interval (see How to read)."),
            TABLE(
                ["arm", *pooled_names],
                [[name] + [proportion(a.pooled.get(k)) for k in pooled_names] for name, a in zip(names, result.arms)],
                align_right=1,
            ),
        ]
    if result.scenario_config:
        blocks += [
            H3("The scenario as it ran (every modelling parameter)"),
            PRE(json.dumps(result.scenario_config, indent=2, sort_keys=True)),
        ]
    return [*blocks, END_DETAILS()]


def compare_blocks(
    result: CompareResult, made: dict[str, Path] | None = None, tasks_csv: str | None = None
) -> list[Block]:
    """The blocks of a comparison report; ``made`` maps chart keys to the PNGs written (None: link every chart)."""
    pct = round(result.confidence * 100)
    blocks = [H1(f"fleetchaos comparison: {literal(result.scenario)}"), Block("p", finding(result), items=("finding",))]
    blocks += _headline_blocks(result, pct)
    blocks += tuning_blocks(result)  # best against best: the verdict of a tuned comparison, and which arm is which
    blocks += expectation_blocks(result.expectations)
    blocks += _setup_blocks(result)
    blocks += policy_error_blocks(
        [(a.policy, a.errors, a.metrics, a.breakdowns) for a in result.arms], runs=len(result.seeds)
    )
    recipes = {a.policy: a.recipe for a in result.arms if a.recipe}
    if recipes:
        blocks += [H2("Policies as run"), UL([f"`{name}`: `{recipe}`" for name, recipe in recipes.items()])]
    blocks += _figure_blocks(result)
    blocks += _robustness_blocks(result)
    study = getattr(result, "sensitivity", None)
    if study is not None:
        chart = (made or {}).get("tornado") if made is not None else Path("tornado.png")
        blocks += sensitivity_blocks(study, chart.name if chart is not None else None)
    blocks += _chart_blocks(result, made if made is not None else {k: Path(v) for k, v in CHART_FILES.items()})
    blocks += breakdown_blocks(result)
    blocks += [H2("How to read these figures"), UL(READING_NOTES)]
    blocks += [H2("Modelling assumptions"), UL(ASSUMPTIONS + stated_assumptions(result))]
    files = ["`results.json`: every figure above, per seed, with intervals"]
    if tasks_csv:
        files.append(f"`{tasks_csv}`: one row per task, arm and seed (truth, claim, effort)")
    files.append("Metric definitions, denominators and directions: docs/metrics.md")
    files.append("Replay any arm and seed: `fleetchaos run --scenario NAME --policy POLICY --errors FORMAT --seed N`")
    blocks += [H2("Files and replay"), UL(files)]
    blocks += _appendix_blocks(result)
    return blocks


def compare_markdown(result: CompareResult) -> str:
    """The Markdown summary of a comparison (charts linked by their file names)."""
    return to_markdown(compare_blocks(result))


def write_compare_report(
    result: CompareResult,
    out_dir: Path,
    *,
    tasks_csv: Path | None = None,
    root: Path | None = None,
    executor: Executor | None = None,
) -> list[Path]:
    """Write the report of a comparison into ``out_dir``; returns the files written.

    Writes results.json, summary.md, report.html and the charts, each atomically
    (:mod:`fleetchaos.files`).  ``tasks_csv`` names a per-task CSV already written into
    ``out_dir`` (by :class:`TaskCsvWriter`) for the report to point at.  ``out_dir`` must
    resolve inside ``root`` (default: itself), so a symlinked sub-folder cannot lead out.
    With an ``executor`` the charts are drawn side by side on it while this process writes
    results.json (:class:`~fleetchaos.reports.drawing.Drawing`).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    check_inside(out_dir / "results.json", Path(root) if root is not None else out_dir)
    drawing = Drawing(compare_charts(result), executor)
    try:
        written = [write_text(out_dir / "results.json", dumps(result))]
    except BaseException:
        drawing.cancel()
        raise
    made = drawing.write(out_dir)
    written += list(made.values())
    csv_name = tasks_csv.name if tasks_csv is not None else None
    blocks = compare_blocks(result, made, csv_name)
    written += write_pages(out_dir, blocks, f"fleetchaos comparison: {result.scenario}", made)
    if tasks_csv is not None:
        written.append(tasks_csv)
    return written
