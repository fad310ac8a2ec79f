"""The robustness report: where the ordering of arms holds and where it flips, as a table, a chart and results.json."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matplotlib.figure import Figure
from rich.table import Table
from rich.text import Text

from fleetchaos.reports import palette
from fleetchaos.reports.blocks import H1, H2, IMG, TABLE, UL, Block, P, write_pages
from fleetchaos.reports.cells import diff, diff_ci, metric_cell
from fleetchaos.reports.charts import save_png
from fleetchaos.reports.fitting import fit_columns
from fleetchaos.reports.ordering import ordering_lines, summary, value_text
from fleetchaos.reports.results_io import dumps
from fleetchaos.reports.studies import seed_range
from fleetchaos.results.registry import is_rate
from fleetchaos.results.studies import RobustnessResult

__all__ = [
    "CHART",
    "flip_lines",
    "robustness_chart",
    "robustness_table",
    "write_robustness_report",
]

CHART = "robustness.png"


def _name(result: RobustnessResult, path: str) -> str:
    """A varied path with what it is, e.g. ``faults[0].probability (network_blip rate)``."""
    words = result.described.get(path)
    return f"{path} ({words})" if words else path


def flip_lines(result: RobustnessResult) -> list[str]:
    """The study's verdict (:func:`ordering_lines`): where the leader flips, or that it held over every value tried."""
    return ordering_lines(summary(result), result.described)


def robustness_table(result: RobustnessResult, width: int | None = None) -> Table:
    """Every varied value: each arm's metric, the paired difference (second minus first) and the leader.

    ``width``: the columns it must fit in (a terminal's); the arms' means are left out first,
    then the interval, then the difference, and the caption names them: parameter, value and
    leader always stay, with every name whole.
    """
    table = Table(header_style="bold")
    table.add_column("parameter")
    table.add_column("value", justify="right")
    for arm in result.arms:
        table.add_column(arm, justify="right", overflow="fold")
    table.add_column("difference", justify="right")
    table.add_column("interval", justify="right")
    table.add_column("leader", overflow="fold")
    flips = {(f.parameter, repr(f.flips_at)) for f in result.flips}
    for point in result.points:
        marker = " ⇄" if (point.parameter, repr(point.value)) in flips else ""
        table.add_row(
            Text(_name(result, point.parameter)),
            Text(value_text(point.value)),
            *(Text(metric_cell(arm, result.metric)) for arm in point.arms),
            diff(result.metric, point.difference),
            diff_ci(result.metric, point.ci),
            Text(point.leader + marker),
        )
    return fit_columns(table, width, [*result.arms, "interval", "difference"])


def robustness_chart(result: RobustnessResult, path: Path) -> Path | None:
    """One panel per varied parameter: the paired difference against the value, with its interval and flips marked."""
    params = list(result.varied)
    if not params:
        return None
    scale = 100.0 if is_rate(result.metric) else 1.0
    unit = " (pp)" if is_rate(result.metric) else ""
    cols = min(3, len(params))
    rows = (len(params) + cols - 1) // cols
    fig = Figure(figsize=(4.6 * cols, 3.2 * rows), layout="constrained")
    flips = {(f.parameter, repr(f.flips_at)) for f in result.flips}
    for i, param in enumerate(params):
        ax = fig.add_subplot(rows, cols, i + 1)
        points = [p for p in result.points if p.parameter == param]
        xs = list(range(len(points)))
        ys = [None if p.difference is None else p.difference * scale for p in points]
        lows = [None if p.ci[0] is None else p.ci[0] * scale for p in points]
        highs = [None if p.ci[1] is None else p.ci[1] * scale for p in points]
        ax.axhline(0.0, color="#7f7f7f", linewidth=0.8)
        drawn = [(x, y, lo, hi) for x, y, lo, hi in zip(xs, ys, lows, highs) if y is not None]
        if drawn:
            ax.plot([d[0] for d in drawn], [d[1] for d in drawn], marker="o", color=palette.BLUE)
            spans = [(d[0], d[2], d[3]) for d in drawn if d[2] is not None and d[3] is not None]
            if spans:
                ax.fill_between([s[0] for s in spans], [s[1] for s in spans], [s[2] for s in spans],
                                color=palette.BLUE, alpha=0.2, linewidth=0)  # fmt: skip
        for x, p in zip(xs, points):
            if (param, repr(p.value)) in flips:
                ax.axvline(x - 0.5, color=palette.VERMILLION, linestyle="--", linewidth=1.0)
        ax.set_xticks(xs, [value_text(p.value) for p in points])
        ax.set_title(textwrap.fill(_name(result, param), 48), fontsize=9)
        ax.tick_params(labelsize=8)
        if i % cols == 0:
            ax.set_ylabel(f"difference{unit}", fontsize=8)
    title = (
        f"{result.metric}: {result.arms[1]} minus {result.arms[0]}, per seed, with its "
        f"{round(result.confidence * 100)}% interval; dashed: the leader flips"
    )
    fig.suptitle(textwrap.fill(title, 55 * cols), fontsize=9)
    return save_png(fig, path)


def robustness_blocks(result: RobustnessResult, chart: Path | None) -> list[Block]:
    """The page: the conclusion (flips), the setup, the chart and the table."""
    pct = round(result.confidence * 100)
    blocks: list[Block] = [H1(f"fleetchaos robustness: {result.scenario}")]
    blocks += [H2("Where the ordering flips"), UL(flip_lines(result))]
    blocks += [
        H2("Setup"),
        UL(
            [
                f"Arms: {' and '.join(result.arms)}; difference = {result.arms[1]} minus {result.arms[0]}",
                f"Metric: {result.metric} ({'higher' if result.higher_is_better else 'lower'} is better)",
                f"Seeds: {seed_range(result.seeds)} (every arm meets the same faults for a seed)",
                f"At the scenario's own values: {result.baseline_leader} leads",
                "Varied one at a time, the others at the scenario's values: "
                + "; ".join(
                    f"{_name(result, p)} over {', '.join(map(value_text, v))}" for p, v in result.varied.items()
                ),
            ]
        ),
    ]
    if chart is not None:
        blocks.append(IMG(chart.name, f"Paired difference on {result.metric} against each varied value"))
    blocks += [
        H2("Every value"),
        P(f"Mean per seed with its {pct}% interval; the difference is paired by seed."),
        TABLE(
            ["parameter", "value", *result.arms, "difference", "interval", "leader"],
            [
                [_name(result, p.parameter), value_text(p.value)]
                + [metric_cell(a, result.metric) for a in p.arms]
                + [diff(result.metric, p.difference), diff_ci(result.metric, p.ci), p.leader]
                for p in result.points
            ],
            align_right=1,
        ),
    ]
    return blocks


def write_robustness_report(result: RobustnessResult, out_dir: Path) -> list[Path]:
    """results.json, robustness.png, summary.md and report.html."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / "results.json"
    results.write_text(dumps(result), encoding="utf-8")
    chart = robustness_chart(result, out_dir / CHART)
    made = {"robustness": chart} if chart is not None else {}
    pages = write_pages(out_dir, robustness_blocks(result, chart), f"fleetchaos robustness: {result.scenario}", made)
    return [results, *made.values(), *pages]
