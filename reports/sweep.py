"""Sweep reports: the terminal table, and a report folder like a comparison's.

The folder holds results.json, one curve chart per chosen metric
(:mod:`fleetchaos.reports.sweep_chart`), and the same page as summary.md and a
self-contained report.html (:mod:`fleetchaos.reports.blocks`): the setup with the swept
parameters named by fault kind, the curves with a note on lines that coincide, a table
of every point, how to replay a run, and the scenario as it ran.
"""

from __future__ import annotations

import json
from concurrent.futures import Executor
from pathlib import Path

from rich.table import Table
from rich.text import Text

from fleetchaos.escaping import rich_text
from fleetchaos.files import check_inside, write_text
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
from fleetchaos.reports.drawing import Chart, Drawing
from fleetchaos.reports.fitting import figure_column, fit_table, left_out_note
from fleetchaos.reports.sweep_chart import (
    MAX_PANELS,
    chart_name,
    coincidences,
    curve_chart,
    curve_panels,
    metric_curve,
    metric_names,
    panel_groups,
    param_label,
    params_text,
    value_text,
)
from fleetchaos.reports.tables import COLUMNS, count_interval, display_kind, fmt, is_count, with_interval
from fleetchaos.results.models import SweepEntry, SweepResult
from fleetchaos.results.registry import HEADLINE_METRICS

__all__ = [
    "MAX_PANELS",
    "chart_name",
    "curve_chart",
    "metric_curve",
    "metric_names",
    "params_text",
    "sweep_blocks",
    "sweep_markdown",
    "sweep_table",
    "value_text",
    "write_sweep_report",
]


def _terminal_cell(entry: SweepEntry, metric: str) -> str:
    value, ci = entry.metrics.get(metric), entry.ci.get(metric, [None, None])
    return count_interval(value, ci) if is_count(metric) else with_interval(value, ci, display_kind(metric))


def sweep_table(result: SweepResult, columns: tuple[str, ...] | None = None, width: int | None = None) -> Table:
    """One row per point and arm: the chosen metrics with their intervals, and the headline metrics.

    ``columns`` names the metrics shown instead (``--columns``).  Counts read as whole numbers.
    ``width``: the terminal's columns, which the table fits without breaking a figure
    (:func:`fleetchaos.reports.fitting.fit_table`).
    """
    if columns is not None:
        shown = [(m, m) for m in columns]
    else:
        chosen = metric_names(result)
        shown = [(m, m) for m in chosen] + [(m, h) for m, h, _ in COLUMNS[:3] if m not in chosen]

    def build(figures: list[tuple[str, str]], left_out: list[str], compact: bool) -> Table:
        return _sweep_table(result, figures, left_out, width, compact=compact)

    return fit_table(build, shown, width, keep=1)


def _sweep_table(
    result: SweepResult, shown: list[tuple[str, str]], left_out: list[str], width: int | None, *, compact: bool
) -> Table:
    pct = round(result.confidence * 100)
    narrowed = left_out_note(left_out, width)
    table = Table(
        title=Text(
            f"sweep: {len(result.entries)} arms x {len(result.seeds)} seeds, mean per seed and {pct}% CI "
            "(rates [low, high], counts ± half-width)"
        ),
        header_style="bold",
        caption=Text(narrowed) if narrowed is not None else None,
        caption_justify="left",
        caption_style="dim",
    )
    for name in ("scenario", "params", "policy", "errors"):
        table.add_column(name, overflow="fold")  # in a narrow terminal a cell folds, never cut
    rows = [[_terminal_cell(e, m) for m, _ in shown] for e in result.entries]
    for i, (_, header) in enumerate(shown):
        figure_column(table, header, [row[i] for row in rows], compact=compact)
    for e, cells in zip(result.entries, rows, strict=True):
        table.add_row(*(rich_text(t) for t in (e.scenario, params_text(e.params), e.policy, e.errors)), *cells)
    return table


def _setup_blocks(result: SweepResult) -> list[Block]:
    n = len(result.seeds)
    seeds = (
        ", ".join(map(str, result.seeds)) if n <= 30 else f"{n} seeds from {min(result.seeds)} to {max(result.seeds)}"
    )
    setup = [
        f"Scenarios: {', '.join(literal(s) for s in result.scenarios)}",
        f"Policies: {', '.join(literal(p) for p in result.policies)}",
        f"Error formats: {', '.join(literal(e) for e in result.errors)}",
        f"Seeds: {seeds} ({n} simulated days per arm and point; every arm meets the same faults for a seed)",
        f"Confidence: {round(result.confidence * 100)}%",
        "Versions: " + (", ".join(f"{k} {v}" for k, v in result.versions.items()) or "not recorded"),
    ]
    swept = []
    for path, values in result.grid.items():
        label = param_label(path, result.scenario_configs)
        notes = ([] if label == path else [literal(path)]) + (["the curves' x axis"] if path == result.x else [])
        named = literal(label) + (f" ({'; '.join(notes)})" if notes else "")
        swept.append(f"{named}: {literal(', '.join(value_text(v) for v in values))}")
    blocks = [H2("Setup"), UL(setup)]
    if swept:
        blocks += [
            P("Swept parameters (each value applied to the validated scenario, then validated again):"),
            UL(swept),
        ]
    return blocks


def _curve_blocks(result: SweepResult, charts: dict[str, str]) -> list[Block]:
    if result.x is None:
        return [H2("Curves"), P("Nothing was swept, so there is no curve; the table below has every arm.")]
    x_label = param_label(result.x, result.scenario_configs)
    pct = round(result.confidence * 100)
    blocks = [H2("Curves")]
    for metric in metric_names(result):
        if metric in charts:
            caption = (
                f"{metric} against {x_label}: one line per policy (colour, marker) and error format (line style), "
                f"mean of {len(result.seeds)} seeds with its {pct}% confidence band"
            )
            blocks.append(IMG(charts[metric], caption))
        notes = coincidences(curve_panels(result, metric))
        if notes:
            said = "; ".join(f"{literal(label)} {literal(note)}" for label, note in notes.items())
            blocks.append(
                P(
                    f"Lines that coincide on the {metric} chart (the same mean at every point): {said}. "
                    "Each is drawn on top of the other with hollow, larger markers and a broken line."
                )
            )
    if len(panel_groups(result)) > MAX_PANELS:
        blocks.append(P(f"The charts draw the first {MAX_PANELS} panels; every point is in the table below."))
    return blocks


def _point_blocks(result: SweepResult) -> list[Block]:
    chosen = metric_names(result)
    columns = [(m, m, display_kind(m)) for m in chosen if m not in {c[0] for c in COLUMNS}] + list(COLUMNS)
    rows = []
    for e in result.entries:
        cells = [
            with_interval(e.metrics.get(key), e.ci.get(key, [None, None]), kind)
            if key in HEADLINE_METRICS or key in chosen
            else fmt(e.metrics.get(key), kind)
            for key, _, kind in columns
        ]
        rows.append([literal(t) for t in (e.scenario, params_text(e.params), e.policy, e.errors)] + cells)
    pct = round(result.confidence * 100)
    return [
        H2("Every point"),
        P(
            f"One row per scenario, point and arm: mean per seed, with the {pct}% interval for the chosen and "
            "headline metrics (rates [low, high] in percent, counts ± half-width)."
        ),
        TABLE(["scenario", "params", "policy", "errors", *(h for _, h, _ in columns)], rows, align_right=4),
    ]


def _scenario_blocks(result: SweepResult) -> list[Block]:
    blocks = [DETAILS("Appendix: the scenario as it ran")]
    if not result.scenario_configs:
        return [*blocks, P("Not recorded in these results (written before sweeps kept their scenario)."), END_DETAILS()]
    swept = ", ".join(literal(p) for p in result.grid) or "none"
    blocks.append(P(f"Each scenario as validated; every point sets its swept values ({swept}) on it."))
    for name, config in result.scenario_configs.items():
        blocks += [H3(literal(name)), PRE(json.dumps(config, indent=2, sort_keys=True))]
    return [*blocks, END_DETAILS()]


def sweep_blocks(result: SweepResult, charts: dict[str, str] | None = None) -> list[Block]:
    """The blocks of a sweep's page; ``charts`` maps a metric to its chart's file name (None: every curve's name)."""
    if charts is None:
        charts = {m: chart_name(m) for m in metric_names(result)} if result.x is not None else {}
    pct = round(result.confidence * 100)
    blocks = [
        H1(f"fleetchaos sweep: {literal(', '.join(result.scenarios))}"),
        P(
            f"Every policy on every error format at each point of the grid, on the same seeds; figures are means "
            f"per seed with {pct}% confidence intervals."
        ),
    ]
    blocks += _setup_blocks(result)
    blocks += _curve_blocks(result, charts)
    blocks += _point_blocks(result)
    files = [
        "`results.json`: every figure above, per seed, with intervals, and the scenario as it ran",
        "Metric definitions, denominators and directions: docs/metrics.md",
        "Replay any run: `fleetchaos run --scenario NAME --param PATH=VALUE ... --policy POLICY --errors FORMAT "
        "--seed N`",
    ]
    blocks += [H2("Files and replay"), UL(files)]
    blocks += _scenario_blocks(result)
    return blocks


def sweep_markdown(result: SweepResult, charts: str | list[str] | None) -> str:
    """The Markdown summary of a sweep (charts linked by file name; ``charts`` None: none drawn)."""
    if isinstance(charts, str):
        charts = [charts]
    by_metric = {name.removeprefix("curve_").removesuffix(".png"): name for name in charts or []}
    return to_markdown(sweep_blocks(result, by_metric))


def write_sweep_report(
    result: SweepResult, out_dir: Path, executor: Executor | None = None, *, root: Path | None = None
) -> list[Path]:
    """Write a sweep's results.json, curve charts, summary.md and report.html into ``out_dir``; the files written.

    With an ``executor`` the curves are drawn side by side on it
    (:class:`~fleetchaos.reports.drawing.Drawing`) while this process writes results.json.
    ``out_dir`` must resolve inside ``root`` (default: itself).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    check_inside(out_dir / "results.json", Path(root) if root is not None else out_dir)
    curves = [
        Chart(metric, chart_name(metric), "fleetchaos.reports.sweep_chart:metric_curve", (result, metric))
        for metric in metric_names(result)
    ]
    drawing = Drawing(curves, executor)
    try:
        written = [write_text(out_dir / "results.json", result.model_dump_json(indent=2) + "\n")]
    except BaseException:
        drawing.cancel()
        raise
    made = drawing.write(out_dir)
    written += made.values()
    blocks = sweep_blocks(result, {metric: path.name for metric, path in made.items()})
    written += write_pages(out_dir, blocks, f"fleetchaos sweep: {', '.join(result.scenarios)}", made)
    return written
