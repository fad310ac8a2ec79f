"""The sweep's curves: a metric against the swept parameter, one line per policy and error format.

What the chart draws is worked out first, without matplotlib (:func:`curve_panels`): the
panels, each line's points, its style, and which lines coincide (equal means at every
point, so one would hide the other).  A coinciding line is drawn on top with hollow,
larger markers and a broken line, so the line below shows through, and its legend entry
says which line it coincides with.  The x axis names a swept fault by its kind
(``network_blip probability`` for ``faults[0].probability``), read from the scenario the
sweep ran (:attr:`~fleetchaos.results.models.SweepResult.scenario_configs`).

Charts use matplotlib's object API on the Agg backend and are written without a
software tag, so the same sweep result gives the same PNG bytes.  matplotlib is imported
when a chart is drawn, so the sweep's terminal table and its page cost none of it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, cast

from fleetchaos.reports import palette
from fleetchaos.results.models import SweepEntry, SweepResult
from fleetchaos.results.registry import is_rate

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "MAX_PANELS",
    "CurveLine",
    "Panel",
    "chart_name",
    "coincidences",
    "curve_chart",
    "curve_figure",
    "curve_panels",
    "marker_size",
    "metric_curve",
    "metric_names",
    "panel_groups",
    "param_label",
    "params_text",
    "value_text",
]

#: Most panels one curve chart draws; further points are listed in the report's tables only.
MAX_PANELS = 12
POLICY_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: A policy's colour (with its marker: colour is never the only difference), readable with a colour-vision deficiency.
POLICY_COLOURS = palette.CATEGORICAL
FORMAT_STYLES = {"structured": "-", "generic": "--"}
_OTHER_STYLES = (":", "-.")
#: The broken line a coinciding line is drawn with (on, off in points), so the one below shows in the gaps.
COINCIDING_DASHES = (2.0, 3.0)


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


_FAULT_PATH = re.compile(r"faults\[(\d+)\](?:\.(.+))?")


def param_label(path: str, configs: dict[str, dict[str, Any]]) -> str:
    """A swept parameter as people read it: a fault's field by the fault's kind, anything else by its path.

    ``faults[0].probability`` reads ``network_blip probability`` when ``faults[0]`` is a
    ``network_blip`` in every scenario of ``configs`` (``network_blip (faults[3]) probability``
    when the scenario has several faults of that kind; the kinds joined by ``/`` when the
    scenarios differ there).  Other paths (``fleet.workers``, ``policy.base_s``) are what
    ``--param`` names; they read as they are.  Without ``configs`` (results of an older
    version) the path is kept.
    """
    match = _FAULT_PATH.fullmatch(path)
    if match is None or not configs:
        return path
    index, field = int(match.group(1)), match.group(2)
    kinds = []
    repeated = False
    for config in configs.values():
        faults = config.get("faults") or []
        if index >= len(faults) or not isinstance(faults[index], dict) or "kind" not in faults[index]:
            return path
        kind = str(faults[index]["kind"])
        repeated = repeated or sum(isinstance(f, dict) and f.get("kind") == kind for f in faults) > 1
        if kind not in kinds:
            kinds.append(kind)
    name = "/".join(kinds) + (f" (faults[{index}])" if repeated else "")
    return f"{name} {field}" if field else name


@dataclass(frozen=True, slots=True)
class CurveLine:
    """One line of a panel: an arm's means (and interval band) at each swept value it has."""

    policy: str
    errors: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    lows: tuple[float, ...]
    highs: tuple[float, ...]
    colour: str
    style: Any
    """Its line style: the error format's (solid structured, dashed generic)."""
    marker: str
    """Its marker: the policy's."""
    coincides_with: str = ""
    """The label of the earlier line of the panel with the same means at every point ('' if none)."""
    layer: int = 0
    """0 for a line of its own or the first of coinciding ones; k for the k-th drawn on top of it."""

    @property
    def label(self) -> str:
        """``policy on errors``."""
        return f"{self.policy} on {self.errors}"


@dataclass(frozen=True, slots=True)
class Panel:
    """One scenario and combination of the other swept parameters: its title and lines."""

    title: str
    lines: tuple[CurveLine, ...]


def panel_groups(result: SweepResult) -> dict[tuple, list[SweepEntry]]:
    """Entries grouped by scenario and the parameters other than the curve's x."""
    panels: dict[tuple, list[SweepEntry]] = {}
    for e in result.entries:
        rest = tuple((k, json.dumps(v, sort_keys=True)) for k, v in e.params.items() if k != result.x)
        panels.setdefault((e.scenario, rest), []).append(e)
    return panels


def _same(a: CurveLine, b: CurveLine) -> bool:
    """Equal means at the same x values (to rounding): drawn, one line would hide the other."""
    return a.xs == b.xs and all(math.isclose(p, q, rel_tol=1e-9, abs_tol=1e-9) for p, q in zip(a.ys, b.ys))


def _x_positions(result: SweepResult) -> tuple[bool, dict[str, float]]:
    values = result.grid.get(result.x or "", [])
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return numeric, {json.dumps(v, sort_keys=True): (v if numeric else i) for i, v in enumerate(values)}


def curve_panels(result: SweepResult, metric: str) -> list[Panel]:
    """What the chart of ``metric`` draws: up to :data:`MAX_PANELS` panels, their lines and coincidences.

    Values are in the chart's unit (percent for a rate).  Empty when nothing is swept.
    """
    x = result.x
    if x is None:
        return []
    scale = 100.0 if is_rate(metric) else 1.0
    _, position = _x_positions(result)
    styles: dict[str, Any] = dict(FORMAT_STYLES)
    for i, name in enumerate(f for f in result.errors if f not in styles):
        styles[name] = _OTHER_STYLES[i % len(_OTHER_STYLES)]
    colours = {p: POLICY_COLOURS[i % len(POLICY_COLOURS)] for i, p in enumerate(result.policies)}
    markers = {p: POLICY_MARKERS[i % len(POLICY_MARKERS)] for i, p in enumerate(result.policies)}
    panels = []
    for (scenario, rest), entries in list(panel_groups(result).items())[:MAX_PANELS]:
        lines: list[CurveLine] = []
        for policy in result.policies:
            for errors in result.errors:
                points = []
                for e in entries:
                    mean = e.metrics.get(metric) if (e.policy, e.errors) == (policy, errors) else None
                    if mean is None:
                        continue
                    lo, hi = e.ci.get(metric, [None, None])
                    lo, hi = (lo if lo is not None else mean), (hi if hi is not None else mean)
                    points.append(
                        (position[json.dumps(e.params[x], sort_keys=True)], mean * scale, lo * scale, hi * scale)
                    )
                if not points:
                    continue
                points.sort()
                xs, ys, lows, highs = (tuple(p[i] for p in points) for i in range(4))
                line = CurveLine(policy, errors, xs, ys, lows, highs, colours[policy], styles[errors], markers[policy])
                below = [other for other in lines if _same(other, line)]
                if below:
                    first = next(other for other in below if not other.coincides_with)
                    line = replace(line, coincides_with=first.label, layer=len(below))
                lines.append(line)
        title = scenario + "".join(f", {k}={v}" for k, v in rest)
        panels.append(Panel(title, tuple(lines)))
    return panels


def coincidences(panels: list[Panel]) -> dict[str, str]:
    """Each arm drawn on top of another, with a note: ``coincides with X`` (``... in 2 of 3 panels`` when not in all)."""
    drawn: dict[str, int] = {}
    on_top: dict[str, dict[str, int]] = {}
    for panel in panels:
        for line in panel.lines:
            drawn[line.label] = drawn.get(line.label, 0) + 1
            if line.coincides_with:
                counts = on_top.setdefault(line.label, {})
                counts[line.coincides_with] = counts.get(line.coincides_with, 0) + 1
    notes = {}
    for label, counts in on_top.items():
        parts = []
        for other, n in counts.items():
            parts.append(other if n == drawn[label] else f"{other} in {n} of {drawn[label]} panels")
        notes[label] = "coincides with " + "; ".join(parts)
    return notes


def marker_size(layer: int) -> float:
    """The marker size of a line ``layer`` lines up a stack of coinciding ones: each ring larger than the one below."""
    return 4.0 + 2.5 * min(layer, 5)


def _legend_label(line: CurveLine, notes: dict[str, str]) -> str:
    note = notes.get(line.label)
    return f"{line.label} ({note})" if note else line.label


def curve_figure(result: SweepResult, metric: str | None = None) -> Figure | None:
    """The :class:`~matplotlib.figure.Figure` of ``metric`` (default: the sweep's first) against ``x``; None
    when nothing is swept.

    One panel per scenario and combination of the other swept parameters (at most
    :data:`MAX_PANELS`); lines are means across seeds with their confidence band, colour
    and marker the policy, line style the error format.
    """
    if result.x is None:
        return None
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    metric = metric or metric_names(result)[0]
    percent = is_rate(metric)
    panels = curve_panels(result, metric)
    numeric, _ = _x_positions(result)
    xs_all = result.grid.get(result.x, [])
    x_label = param_label(result.x, result.scenario_configs)
    cols = max(1, min(3, len(panels)))
    rows = max(1, -(-len(panels) // cols))
    fig = Figure(figsize=(max(9.0, 5.2 * cols), 3.8 * rows + 1.4), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    notes = coincidences(panels)
    legend: dict[str, Any] = {}
    for n, panel in enumerate(panels):
        ax = axes[n // cols][n % cols]
        bands: list[tuple] = []
        for line in panel.lines:
            on_top = line.layer > 0
            style = (line.layer * COINCIDING_DASHES[0], COINCIDING_DASHES) if on_top else line.style
            ax.plot(line.xs, line.ys, linestyle=style, color=line.colour, marker=line.marker,
                    markersize=marker_size(line.layer), markerfacecolor="none" if on_top else line.colour,
                    markeredgewidth=1.2 if on_top else 1.0, linewidth=1.4, zorder=2 + line.layer,
                    gid=line.label)  # fmt: skip
            band = (line.xs, line.lows, line.highs)
            if band not in bands:  # the same band twice would only darken it
                bands.append(band)
                ax.fill_between(line.xs, line.lows, line.highs, color=line.colour, alpha=0.12, linewidth=0)
            if line.label not in legend:
                legend[line.label] = Line2D([], [], linestyle=line.style, color=line.colour, marker=line.marker,
                                            markersize=5, markerfacecolor="none" if line.label in notes else line.colour,
                                            linewidth=1.4, label=_legend_label(line, notes))  # fmt: skip
        ax.set_title(panel.title, fontsize=9)
        ax.set_xlabel(x_label, fontsize=9)
        ax.set_ylabel(f"{metric} (%)" if percent else metric, fontsize=9)
        if not numeric:
            ax.set_xticks(list(range(len(xs_all))), [value_text(v) for v in xs_all], fontsize=8)
        if percent:
            ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    for n in range(len(panels), rows * cols):
        axes[n // cols][n % cols].set_visible(False)
    if legend:
        handles = list(legend.values())
        ncols = 1 if notes else min(3, len(handles))  # a note makes an entry long: one per row
        fig.legend(handles=handles, loc="outside lower center", ncols=ncols, fontsize=8)
    pct = round(result.confidence * 100)
    fig.suptitle(f"{metric} against {x_label}: mean of {len(result.seeds)} seeds, {pct}% CI band", fontsize=10)
    return fig


def curve_chart(result: SweepResult, path: Path | IO[bytes], metric: str | None = None) -> Path | IO[bytes] | None:
    """Draw :func:`curve_figure` as PNG into ``path`` (a file name, or a binary file); None when nothing is swept."""
    fig = curve_figure(result, metric)
    if fig is None:
        return None
    from fleetchaos.reports.charts import save_png

    if isinstance(path, (str, Path)):
        return save_png(fig, Path(path), dpi=100)
    return save_png(fig, cast("BinaryIO", path), dpi=100)  # drawn in a worker, into memory (reports.drawing)


def metric_curve(result: SweepResult, metric: str, file: Path | IO[bytes]) -> Path | IO[bytes] | None:
    """:func:`curve_chart` of ``metric`` with the file last, as :mod:`fleetchaos.reports.drawing` calls a chart."""
    return curve_chart(result, file, metric)
