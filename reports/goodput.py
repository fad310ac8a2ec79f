"""Goodput over time: one curve per arm, from the ``goodput_by_time`` breakdown.

A scenario that sets ``goodput_bin_s`` records, per run, how many tasks really completed
(and were reported complete) in each time bin; the comparison sums the bins over seeds.
The chart divides by the seeds and the bin's minutes: tasks completed per minute, mean
per seed, for every arm on one axis, so a retry storm that outlives its trigger shows as
a curve that stays down while the others come back.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from fleetchaos.reports import palette
from fleetchaos.reports.charts import LINESTYLES, arm_label, errors_colour, save_png
from fleetchaos.results.models import CompareResult

#: The breakdown the chart reads (see ``goodput_bin_s`` in docs/scenarios.md).
GOODPUT = "goodput_by_time"


def goodput_series(counts: dict[str, int], width_s: float, seeds: int, end_s: float) -> tuple[list[float], list[float]]:
    """(bin starts in minutes, tasks completed per minute, mean per seed) from a summed ``goodput_by_time``.

    Bins with no completed task are zero; the bins cover the horizon ``[0, end_s)`` (tasks
    that ended in the drain after it are not drawn), or every recorded bin without one.
    """
    per_bin = {round(float(k) / width_s): v for k, v in counts.items()}
    n = int(end_s // width_s) if end_s > 0 else max(per_bin, default=-1) + 1
    minutes = width_s / 60.0
    return [i * minutes for i in range(n)], [per_bin.get(i, 0) / seeds / minutes for i in range(n)]


def goodput_chart(result: CompareResult, path: Path) -> Path | None:
    """Tasks completed per minute over simulated time, one line per arm; None without the breakdown."""
    arms = [a for a in result.arms if a.breakdowns.get(GOODPUT)]
    if not arms:
        return None
    width_s = result.scenario_config.get("goodput_bin_s")
    if not width_s:
        return None
    seeds = max(1, len(result.seeds))
    end_s = float(result.scenario_config.get("duration_s", 0.0))
    fig = Figure(figsize=(9, 4.2))
    ax = fig.add_subplot()
    for i, arm in enumerate(arms):
        xs, ys = goodput_series(arm.breakdowns[GOODPUT], float(width_s), seeds, end_s)
        ax.step(
            [*xs, len(xs) * width_s / 60.0],
            [*ys, ys[-1] if ys else 0.0],
            where="post",
            label=arm_label(arm),
            color=errors_colour(result, arm.errors) if len({a.errors for a in arms}) > 1 else palette.category(i)[0],
            linestyle=LINESTYLES[i % len(LINESTYLES)],
            linewidth=1.6,
        )
    ax.set_xlabel("simulated minutes")
    ax.set_ylabel(f"tasks completed per minute (mean of {seeds} seeds)")
    ax.set_title("Goodput over time")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return save_png(fig, path)


__all__ = ["GOODPUT", "goodput_chart", "goodput_series"]
