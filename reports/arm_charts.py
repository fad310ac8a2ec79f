"""Charts of arms side by side: the headline, silent failures and wasted retries, cost against success,
failed retries by fault kind, and the cost split.

The same rules as :mod:`fleetchaos.reports.charts` (matplotlib's object API on Agg, no PNG
metadata, colours by error format, markers by policy), whose helpers these charts use.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fleetchaos.reports import palette
from fleetchaos.reports.charts import (
    MARKERS,
    arm_label,
    bar_with_ci,
    ci_text,
    errors_colour,
    errors_handles,
    policy_index,
    save_png,
    slot_inches,
)
from fleetchaos.results.models import CompareResult
from fleetchaos.results.registry import is_rate, lead_metrics

#: Axis labels of the metrics the headline chart can draw.
LEAD_LABELS = {
    "success_rate": "success rate (% of all tasks)",
    "common_recovery_rate": "recovery (% of the tasks faulted in any arm)",
    "goodput_per_day": "successful tasks per simulated day",
}


def lead_chart(result: CompareResult, path: Path) -> Path:
    """The arm-independent lead metrics (success and common-set recovery, or goodput) per arm, with CI bars."""
    leads = lead_metrics(result.closed_loop)
    panel = max(5.5, slot_inches(result) * len(result.arms) + 1.0)  # every arm's name in its own slot
    fig = Figure(figsize=(panel * len(leads) + 1.0, 4.5), layout="constrained")
    axes = fig.subplots(1, len(leads), squeeze=False)[0]
    for ax, metric in zip(axes, leads):
        scale = 100.0 if is_rate(metric) else 1.0
        bar_with_ci(ax, result, metric, scale)
        ax.set_ylabel(LEAD_LABELS.get(metric, metric))
        top = max([100.0 if is_rate(metric) else 0.0] + [((a.ci.get(metric) or [None, None])[1] or 0.0) * scale
                                                          for a in result.arms])  # fmt: skip
        ax.set_ylim(0, (top or 1.0) * 1.12)
    fig.legend(handles=errors_handles(result), loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(f"Headline per arm, {result.scenario}: {ci_text(result)}", fontsize=10)
    return save_png(fig, path)


def silent_and_wasted_chart(result: CompareResult, path: Path) -> Path:
    """Silent failures and wasted retries per arm, side by side (wasted: judged against the fault's truth)."""
    panel = max(5.5, slot_inches(result) * len(result.arms) + 1.0)  # every arm's name in its own slot
    fig = Figure(figsize=(2 * panel, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    bar_with_ci(left, result, "silent_failure_rate", 100.0)
    left.set_ylabel("silent failures (% of all tasks)")
    left.set_title("Claimed success, truth incomplete")
    left.set_ylim(bottom=0)
    bar_with_ci(right, result, "wasted_retries", 1.0)
    right.set_ylabel("wasted retries per run (count, one seed)")
    right.set_title("Retries sent while the true cause still held")
    right.set_ylim(bottom=0)
    fig.legend(handles=errors_handles(result), loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(f"{result.scenario}: {ci_text(result)}", fontsize=10)
    return save_png(fig, path)


# -- cost against recovery ---------------------------------------------------------------


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates (lower or equal cost and higher or equal recovery, one strictly).

    Sorted by cost.  Points are (cost, recovery).
    """
    front = []
    for i, (c, r) in enumerate(points):
        dominated = any((c2 <= c and r2 >= r) and (c2 < c or r2 > r) for j, (c2, r2) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: (points[i][0], -points[i][1]))


def pareto_chart(result: CompareResult, path: Path) -> Path | None:
    """Mean cost per run against the lead metric per arm (success rate, or goodput in a closed loop), with CI
    bars and the Pareto front marked."""
    metric = lead_metrics(result.closed_loop)[0]
    scale = 100.0 if is_rate(metric) else 1.0
    arms = [a for a in result.arms if a.metrics.get("cost_usd") is not None and a.metrics.get(metric) is not None]
    if not arms:
        return None
    fig = Figure(figsize=(8.5, 5.2), layout="constrained")
    ax = fig.subplots()
    points = [
        (cost, scale * lead)
        for a in arms
        if (cost := a.metrics["cost_usd"]) is not None and (lead := a.metrics[metric]) is not None  # (every arm here)
    ]
    front = pareto_front(points)
    fx = [points[i][0] for i in front]
    fy = [points[i][1] for i in front]
    ax.plot(
        fx,
        fy,
        color="#555555",
        linewidth=1.2,
        linestyle="--",
        zorder=1,
        label="Pareto front (no arm cheaper and better)",
    )
    for i, arm in enumerate(arms):
        x, y = points[i]
        clo, chi = arm.ci.get("cost_usd", [None, None])
        rlo, rhi = arm.ci.get(metric, [None, None])
        xerr = [[0.0 if clo is None else max(0.0, x - clo)], [0.0 if chi is None else max(0.0, chi - x)]]
        yerr = [[0.0 if rlo is None else max(0.0, y - scale * rlo)],
                [0.0 if rhi is None else max(0.0, scale * rhi - y)]]  # fmt: skip
        colour = errors_colour(result, arm.errors)
        index = policy_index(result, arm.policy)
        marker = MARKERS[index % len(MARKERS)]
        size = max(5.0, 12.0 - 2.5 * index)  # later policies drawn smaller, so coinciding arms stay visible
        ax.errorbar(
            [x], [y], xerr=xerr, yerr=yerr, fmt=marker, color=colour, markersize=size, markeredgecolor="black",
            ecolor=colour, elinewidth=1, capsize=3, zorder=3, label=arm_label(arm),
        )  # fmt: skip
        if i in front:
            ax.scatter([x], [y], s=260, facecolors="none", edgecolors="#333333", linewidths=1.2, zorder=2)
    ax.set_xlabel("cost per run (USD: model tokens + tool calls + paged human hours, one seed)")
    ax.set_ylabel(LEAD_LABELS.get(metric, metric))
    ax.set_title(
        f"Cost against {metric.replace('_', ' ')}, {result.scenario}: {ci_text(result)}\n"
        "circled arms are on the Pareto front",
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.margins(x=0.15, y=0.15)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), framealpha=0.9)
    return save_png(fig, path)


# -- retries that failed again, and what a run costs -------------------------------------


def failed_retries_chart(result: CompareResult, path: Path) -> Path | None:
    """Failed retries per run by the fault kind they failed with (stacked), wasted retries per run marked."""
    n = max(1, len(result.seeds))
    kinds = sorted({k for a in result.arms for k in a.breakdowns.get("failed_retries_by_kind", {})})
    if not kinds and not any(a.metrics.get("wasted_retries") for a in result.arms):
        return None
    fig = Figure(figsize=(max(8.0, slot_inches(result) * len(result.arms) + 4.0), 4.8), layout="constrained")
    ax = fig.subplots()
    xs = list(range(len(result.arms)))
    bottoms = [0.0] * len(result.arms)
    for i, kind in enumerate(kinds):
        heights = [a.breakdowns.get("failed_retries_by_kind", {}).get(kind, 0) / n for a in result.arms]
        colour, _, hatch = palette.category(i)
        ax.bar(xs, heights, bottom=bottoms, color=colour, hatch=hatch, edgecolor="black", linewidth=0.4,
               label=kind.replace("_", " "))  # fmt: skip
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    wasted = [a.metrics.get("wasted_retries") for a in result.arms]
    ax.scatter([x for x, w in zip(xs, wasted) if w is not None], [w for w in wasted if w is not None], marker="D",
               s=40, color="black", zorder=3)  # fmt: skip
    for x, total in zip(xs, bottoms):
        ax.annotate(f"{total:.1f}", (x, total), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
    ax.set_xticks(xs, [arm_label(a, "\non ") for a in result.arms], fontsize=8)
    ax.set_ylabel(f"retries per run (mean of {len(result.seeds)} seeds)")
    ax.set_title(f"Retries that failed again, by the fault they met, {result.scenario}", fontsize=10)
    handles, _ = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], marker="D", color="black", linestyle="none", label="wasted retries (truth)"))
    ax.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), framealpha=0.9)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.margins(y=0.12)
    return save_png(fig, path)


#: The parts of ``cost_usd``, with their panel titles.
COST_PARTS = (
    ("token_cost_usd", "model tokens"),
    ("tool_call_cost_usd", "tool calls"),
    ("human_cost_usd", "paged humans' handling hours"),
    ("silent_failure_cost_usd", "silent failures"),
    ("undone_task_cost_usd", "tasks left undone"),
    ("refused_call_cost_usd", "refused requests"),
)


def cost_split_chart(result: CompareResult, path: Path) -> Path | None:
    """The cost per run split into its parts (tokens, tool calls, paged humans, and the outcomes priced: silent
    failures, undone tasks, refused requests), one panel (and scale) each."""
    if not any(a.metrics.get(COST_PARTS[0][0]) is not None for a in result.arms):
        return None  # results written before the split was recorded
    parts = [p for p in COST_PARTS if any(a.metrics.get(p[0]) is not None for a in result.arms)]
    # One row per arm, its name once on the left of each row of panels: side by side, panels of arm names
    # would collide.  Three panels a row (results that predate the outcome prices have one row).
    rows = (len(parts) + 2) // 3
    fig = Figure(figsize=(13, rows * (1.9 + 0.42 * len(result.arms))), layout="constrained")
    axes = fig.subplots(rows, 3, sharey=True, squeeze=False).flat
    for ax, (metric, title) in zip(axes, parts):
        bar_with_ci(ax, result, metric, 1.0, digits=2, horizontal=True)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("USD per run", fontsize=8)
        ax.set_xlim(left=0)
        ax.tick_params(axis="x", labelsize=8)
    fig.legend(handles=errors_handles(result), loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(f"What a run costs, {result.scenario}: {ci_text(result)} (each panel on its own scale)", fontsize=10)
    return save_png(fig, path)
