"""Comparison charts with matplotlib's object API on the Agg backend.

No pyplot state; PNGs are written without a timestamp or software tag so the same
result gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from harness.results import CompareResult

PALETTE = {"generic": "#c0504d", "structured": "#4f81bd"}
PNG_METADATA = {"Software": None}


def _labels(result: CompareResult) -> list[str]:
    return [f"{a.policy}\non {a.errors}" for a in result.arms]


def _bar_with_ci(ax, result: CompareResult, metric: str, scale: float) -> None:
    labels = _labels(result)
    means, lows, highs, colours = [], [], [], []
    for arm in result.arms:
        mean = arm.metrics.get(metric)
        lo, hi = arm.ci.get(metric, [None, None])
        m = 0.0 if mean is None else mean * scale
        means.append(m)
        lows.append(0.0 if lo is None else max(0.0, m - lo * scale))
        highs.append(0.0 if hi is None else max(0.0, hi * scale - m))
        colours.append(PALETTE.get(arm.errors, "#7f7f7f"))
    xs = range(len(labels))
    ax.bar(xs, means, color=colours, yerr=[lows, highs], capsize=4, edgecolor="black", linewidth=0.5)
    ax.set_xticks(list(xs), labels, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    for x, m in zip(xs, means):
        ax.annotate(f"{m:.1f}", (x, m), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png", dpi=110, metadata=PNG_METADATA)
    return path


def recovery_chart(result: CompareResult, path: Path) -> Path:
    """Recovery rate per arm with confidence-interval bars."""
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.subplots()
    _bar_with_ci(ax, result, "recovery_rate", 100.0)
    pct = int(round(result.confidence * 100))
    ax.set_ylabel("recovery rate (% of faulted tasks)")
    ax.set_ylim(0, 105)
    ax.set_title(f"Recovery per arm, {result.scenario}: mean of {len(result.seeds)} seeds, {pct}% CI")
    return _save(fig, path)


def cost_chart(result: CompareResult, path: Path) -> Path:
    """Silent failures and wasted retries per arm, side by side."""
    fig = Figure(figsize=(10, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    _bar_with_ci(left, result, "silent_failure_rate", 100.0)
    left.set_ylabel("silent failures (% of all tasks)")
    left.set_title("Claimed success, truth incomplete")
    _bar_with_ci(right, result, "wasted_retries", 1.0)
    right.set_ylabel("wasted retries per simulated run")
    right.set_title("Retries while the cause still held")
    return _save(fig, path)
