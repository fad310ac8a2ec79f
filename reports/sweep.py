"""Sweep reports: a table per point, and curves of a metric against a swept parameter.

Charts use matplotlib's object API on the Agg backend and are written without a
software tag, so the same sweep result gives the same PNG bytes.  matplotlib is imported
when a chart is drawn, so the sweep's terminal table costs none of it.
"""

from __future__ import annotations

import json
from concurrent.futures import Executor
from pathlib import Path
from typing import IO, Any

from rich.table import Table
from rich.text import Text

from fleetchaos.escaping import markdown_cell, rich_text
from fleetchaos.files import atomic_write, write_text
from fleetchaos.reports.drawing import Chart, draw_charts
from fleetchaos.reports.tables import COLUMNS, count_interval, display_kind, fmt, is_count, with_interval
from fleetchaos.results.models import SweepEntry, SweepResult
from fleetchaos.results.registry import HEADLINE_METRICS

#: Most panels one curve chart draws; further points are listed in the summary only.
MAX_PANELS = 12
POLICY_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
POLICY_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
FORMAT_STYLES = {"structured": "-", "generic": "--"}
_OTHER_STYLES = (":", "-.")


def value_text(value: Any) -> str:
    """A swept value for display."""
    return value if isinstance(value, str) else json.dumps(value)


def params_text(params: dict[str, Any]) -> str:
    """``path=value`` pairs of one point, or ``-`` for no parameters."""
    return ", ".join(f"{k}={value_text(v)}" for k, v in params.items()) or "-"


def metric_names(result: SweepResult) -> list[str]:
    """The sweep's chosen metrics (``result.metric`` is one name, or several comma-separated)."""
    return [m for m in result.metric.split(",") if m]


def chart_name(metric: str) -> str:
    """The file name of the curve chart of ``metric``."""
    return f"curve_{metric}.png"


def _terminal_cell(entry: SweepEntry, metric: str) -> str:
    value, ci = entry.metrics.get(metric), entry.ci.get(metric, [None, None])
    return count_interval(value, ci) if is_count(metric) else with_interval(value, ci, display_kind(metric))


def sweep_table(result: SweepResult, columns: tuple[str, ...] | None = None) -> Table:
    """One row per point and arm: the chosen metrics with their intervals, and the headline metrics.

    ``columns`` names the metrics shown instead (``--columns``).  Counts read as whole numbers.
    """
    pct = round(result.confidence * 100)
    table = Table(
        title=Text(
            f"sweep: {len(result.entries)} arms x {len(result.seeds)} seeds, mean per seed and {pct}% CI "
            "(rates [low, high], counts ± half-width)"
        ),
        header_style="bold",
    )
    for name in ("scenario", "params", "policy", "errors"):
        table.add_column(name)
    if columns is not None:
        shown = [(m, m) for m in columns]
    else:
        chosen = metric_names(result)
        shown = [(m, m) for m in chosen] + [(m, h) for m, h, _ in COLUMNS[:3] if m not in chosen]
    for _, header in shown:
        table.add_column(header, justify="right")
    for e in result.entries:
        cells = [_terminal_cell(e, m) for m, _ in shown]
        table.add_row(*(rich_text(t) for t in (e.scenario, params_text(e.params), e.policy, e.errors)), *cells)
    return table


def _panels(result: SweepResult) -> dict[tuple, list[SweepEntry]]:
    """Entries grouped by scenario and the parameters other than the curve's x."""
    panels: dict[tuple, list[SweepEntry]] = {}
    for e in result.entries:
        rest = tuple((k, json.dumps(v, sort_keys=True)) for k, v in e.params.items() if k != result.x)
        panels.setdefault((e.scenario, rest), []).append(e)
    return panels


def curve_chart(result: SweepResult, path: Path, metric: str | None = None) -> Path | None:
    """``metric`` (default: the sweep's) against the swept ``x``, one line per policy and format.

    Lines are means across seeds with their confidence band; colour is the policy, line
    style the error format.  One panel per scenario and combination of the other swept
    parameters (at most :data:`MAX_PANELS`).  Returns None when nothing is swept.
    """
    x = result.x
    if x is None:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from fleetchaos.reports.charts import PNG_METADATA

    metric = metric or metric_names(result)[0]
    scale = 100.0 if display_kind(metric) == "pct" else 1.0
    panels = list(_panels(result).items())[:MAX_PANELS]
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig = Figure(figsize=(max(9.0, 5.2 * cols), 3.8 * rows + 1.0), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    xs_all = result.grid.get(x, [])
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs_all)
    position = {json.dumps(v, sort_keys=True): (v if numeric else i) for i, v in enumerate(xs_all)}
    styles = dict(FORMAT_STYLES)
    for i, name in enumerate(f for f in result.errors if f not in styles):
        styles[name] = _OTHER_STYLES[i % len(_OTHER_STYLES)]
    colours = {p: POLICY_COLOURS[i % len(POLICY_COLOURS)] for i, p in enumerate(result.policies)}
    markers = {p: POLICY_MARKERS[i % len(POLICY_MARKERS)] for i, p in enumerate(result.policies)}
    for n, ((scenario, rest), entries) in enumerate(panels):
        ax = axes[n // cols][n % cols]
        for policy in result.policies:
            for errors in result.errors:
                line = [e for e in entries if e.policy == policy and e.errors == errors]
                points = []
                for e in line:
                    mean = e.metrics.get(metric)
                    if mean is None:
                        continue
                    lo, hi = e.ci.get(metric, [None, None])
                    points.append(
                        (
                            position[json.dumps(e.params[x], sort_keys=True)],
                            mean * scale,
                            (lo if lo is not None else mean) * scale,
                            (hi if hi is not None else mean) * scale,
                        )
                    )
                if not points:
                    continue
                points.sort()
                px = [p[0] for p in points]
                colour = colours[policy]
                ax.plot(
                    px,
                    [p[1] for p in points],
                    styles[errors],
                    color=colour,
                    marker=markers[policy],
                    markersize=4,
                    linewidth=1.4,
                    label=f"{policy} on {errors}",
                )
                ax.fill_between(
                    px, [p[2] for p in points], [p[3] for p in points], color=colour, alpha=0.12, linewidth=0
                )
        title = scenario + "".join(f", {k}={v}" for k, v in rest)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(x, fontsize=8)
        ax.set_ylabel(f"{metric} (%)" if scale == 100.0 else metric, fontsize=8)
        if not numeric:
            ax.set_xticks(list(range(len(xs_all))), [value_text(v) for v in xs_all], fontsize=8)
        if scale == 100.0:
            ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    for n in range(len(panels), rows * cols):
        axes[n // cols][n % cols].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(3, len(labels)), fontsize=8)
    pct = round(result.confidence * 100)
    fig.suptitle(f"{metric} against {x}: mean of {len(result.seeds)} seeds, {pct}% CI band", fontsize=10)
    FigureCanvasAgg(fig)
    if not isinstance(path, (str, Path)):  # drawn in a worker, into memory (fleetchaos.reports.drawing)
        fig.savefig(path, format="png", dpi=100, metadata=PNG_METADATA)
        return path
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100, metadata=PNG_METADATA)
    return path


def sweep_markdown(result: SweepResult, charts: str | list[str] | None) -> str:
    """The Markdown summary of a sweep: the grid, the curves (one chart per chosen metric), and a table per point."""
    if isinstance(charts, str):
        charts = [charts]
    charts = charts or []
    pct = round(result.confidence * 100)
    lines = [
        f"# fleetchaos sweep: {markdown_cell(', '.join(result.scenarios))}",
        "",
        f"Policies: {markdown_cell(', '.join(result.policies))}. Error formats: {markdown_cell(', '.join(result.errors))}. "
        f"Seeds: {', '.join(map(str, result.seeds))} ({len(result.seeds)} simulated days per arm and point). "
        f"Figures are means per seed with {pct}% confidence intervals.",
        "",
    ]
    if result.grid:
        lines += ["Swept parameters:", ""]
        lines += [
            f"- `{markdown_cell(k)}`: {markdown_cell(', '.join(value_text(v) for v in vals))}"
            for k, vals in result.grid.items()
        ]
        lines.append("")
    for chart in charts:
        metric = chart.removeprefix("curve_").removesuffix(".png")
        lines += [f"![{metric} against {markdown_cell(str(result.x))}]({chart})", ""]
    if charts and len(_panels(result)) > MAX_PANELS:
        lines += [f"The chart draws the first {MAX_PANELS} panels; every point is in the tables below.", ""]
    columns = [(m, m, display_kind(m)) for m in metric_names(result) if m not in {c[0] for c in COLUMNS}] + list(
        COLUMNS
    )
    header = "| scenario | params | policy | errors | " + " | ".join(h for _, h, _ in columns) + " |"
    lines += [header, "|---|---|---|---|" + "---:|" * len(columns)]
    for e in result.entries:
        cells = []
        for key, _, kind in columns:
            if key in HEADLINE_METRICS or key in metric_names(result):
                cells.append(with_interval(e.metrics.get(key), e.ci.get(key, [None, None]), kind))
            else:
                cells.append(fmt(e.metrics.get(key), kind))
        lines.append(
            f"| {' | '.join(markdown_cell(t) for t in (e.scenario, params_text(e.params), e.policy, e.errors))} | "
            + " | ".join(cells)
            + " |"
        )
    lines += ["", "## Versions", ""]
    lines += [f"- {k} {v}" for k, v in result.versions.items()]
    lines += [
        "",
        "Metric definitions: docs/metrics.md. Replay any run with "
        "`fleetchaos run --scenario NAME --param PATH=VALUE ... --policy POLICY --errors FORMAT --seed N`.",
        "",
    ]
    return "\n".join(lines)


def metric_curve(result: SweepResult, metric: str, file: Path | IO[bytes]) -> Path | IO[bytes] | None:
    """:func:`curve_chart` of ``metric`` with the file last, as :mod:`fleetchaos.reports.drawing` calls a chart."""
    return curve_chart(result, file, metric)  # type: ignore[arg-type]  # savefig takes a binary file as well


def write_sweep_report(result: SweepResult, out_dir: Path, executor: Executor | None = None) -> list[Path]:
    """Write a sweep's results.json, curve chart and summary.md into ``out_dir``.

    With an ``executor`` the curves are drawn side by side on it (:func:`~fleetchaos.reports.drawing.draw_charts`).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [write_text(out_dir / "results.json", result.model_dump_json(indent=2) + "\n")]
    curves = [
        Chart(f"curve{i}", chart_name(metric), "fleetchaos.reports.sweep:metric_curve", (result, metric))
        for i, metric in enumerate(metric_names(result))
    ]
    made = draw_charts(curves, out_dir, executor)
    written += made.values()
    charts = [path.name for path in made.values()]
    written.append(write_text(out_dir / "summary.md", sweep_markdown(result, charts)))
    return written
