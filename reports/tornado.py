"""The tornado chart of a sensitivity study: how far each assumption moves the envelope's lead over its range.

One horizontal bar per assumption (:class:`~fleetchaos.results.studies.TornadoBar`), the
widest on top, spanning the envelope's lead (the best with an envelope minus the best
without one, paired by seed) over every value tried; its two ends' values are marked (the
low end of the range and the high end), the scenario's own values are the dashed line all
bars meet, and a cross marks each value where the winning format changes (a filled one
where the envelope's lead changes sign).  Success-rate assumptions (percentage points) and
prices (dollars per run) get a panel each, since they are judged on different figures.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fleetchaos.reports import palette
from fleetchaos.reports.charts import save_png
from fleetchaos.reports.ordering import short_value
from fleetchaos.results.registry import is_rate
from fleetchaos.results.studies import SensitivityFlip, SensitivityResult, TornadoBar

__all__ = ["tornado_chart"]

#: Inches of figure per bar.
_BAR_INCHES = 0.42


def _label(bar: TornadoBar) -> str:
    return f"{bar.parameter}\n{short_value(bar.low_value)} to {short_value(bar.high_value)} (own {short_value(bar.own_value)})"


def _panel(ax, result: SensitivityResult, bars: list[TornadoBar], metric: str) -> None:
    scale = 100.0 if is_rate(metric) else 1.0
    flips: dict[str, list[SensitivityFlip]] = {}
    for f in result.flips:
        if f.parameter in {b.parameter for b in bars}:
            flips.setdefault(f.parameter, []).append(f)
    values = {(p.parameter, repr(p.value)): p.difference for p in result.points}
    ys = list(range(len(bars)))[::-1]
    ax.axvline(0.0, color=palette.GREY, linewidth=0.8)
    own = [b.at_own for b in bars if b.at_own is not None]
    if own:
        ax.axvline(own[0] * scale, color=palette.BLACK, linestyle="--", linewidth=1.0)
    for y, bar in zip(ys, bars):
        if bar.least is not None and bar.most is not None:
            width = (bar.most - bar.least) * scale
            ax.barh(y, max(width, 1e-9), left=bar.least * scale, height=0.55, color=palette.SKY_BLUE, alpha=0.6,
                    linewidth=0)  # fmt: skip
        if bar.at_low is not None:
            ax.plot([bar.at_low * scale], [y], marker="<", color=palette.BLUE, markersize=7, linestyle="none")
        if bar.at_high is not None:
            ax.plot([bar.at_high * scale], [y], marker=">", color=palette.ORANGE, markersize=7, linestyle="none")
        ends = {repr(bar.low_value), repr(bar.high_value)}
        inner = [d for (name, v), d in values.items() if name == bar.parameter and v not in ends and d is not None]
        if inner:
            ax.plot([d * scale for d in inner], [y] * len(inner), marker="o", color=palette.GREY, markersize=4,
                    linestyle="none")  # fmt: skip
        for flip in flips.get(bar.parameter, []):
            at = values.get((bar.parameter, repr(flip.flips_at)))
            if at is not None:
                marker, colour = ("X", palette.VERMILLION) if flip.reverses else ("x", palette.REDDISH_PURPLE)
                ax.plot([at * scale], [y], marker=marker, color=colour, markersize=9, linestyle="none")
    drawn = [0.0] + [v * scale for b in bars for v in (b.least, b.most, b.at_own) if v is not None]
    low, high = min(drawn), max(drawn)
    pad = 0.06 * (high - low or 1.0)
    ax.set_xlim(low - pad, high + pad)  # markers at a bar's end stay whole
    ax.set_yticks(ys, [_label(b) for b in bars], fontsize=7)
    ax.set_ylim(-0.7, len(bars) - 0.3)
    ax.tick_params(axis="x", labelsize=8)
    if is_rate(metric):
        ax.set_xlabel("the envelope's lead, percentage points: the best with an envelope minus the best without one",
                      fontsize=8)  # fmt: skip
    else:
        ax.set_xlabel(f"the same two bests' difference on {metric}, dollars per run (below 0: the envelope's best is "
                      "cheaper)", fontsize=8)  # fmt: skip


def tornado_chart(result: SensitivityResult, path: Path) -> Path | None:
    """The tornado chart (see the module's text); None when no bar has a value."""
    panels = []
    for metric in dict.fromkeys(b.metric for b in result.bars):
        bars = [b for b in result.bars if b.metric == metric and b.least is not None]
        if bars:
            panels.append((metric, bars))
    if not panels:
        return None
    heights = [max(1.6, _BAR_INCHES * len(bars) + 0.9) for _, bars in panels]
    fig = Figure(figsize=(9.5, sum(heights) + 1.6), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, (metric, bars) in zip(axes, panels):
        _panel(ax, result, bars, metric)
    handles = [
        Line2D([], [], marker="<", color=palette.BLUE, linestyle="none", label="low end of the range"),
        Line2D([], [], marker=">", color=palette.ORANGE, linestyle="none", label="high end of the range"),
        Line2D([], [], marker="o", color=palette.GREY, linestyle="none", label="a value inside the range"),
        Line2D([], [], color=palette.BLACK, linestyle="--", label="the scenario's own values"),
        Line2D([], [], marker="x", color=palette.REDDISH_PURPLE, linestyle="none", label="the winning format changes"),
        Line2D(
            [], [], marker="X", color=palette.VERMILLION, linestyle="none", label="the envelope's lead changes sign"
        ),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=7, frameon=False)
    retuned = "each format's best tuned again at every value" if result.retune else "the scenario's own bests"
    title = (
        f"What best against best on {result.scenario} depends on: each assumption alone over its range "
        f"({retuned}; {len(result.seeds)} seeds per value; bars span every value tried)"
    )
    fig.suptitle(textwrap.fill(title, 110), fontsize=9)
    return save_png(fig, path)
