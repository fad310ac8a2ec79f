"""The fleet timeline of one traced run: one lane per worker, spans of trouble shaded, dispatches, faults and actions.

The same rules as :mod:`fleetchaos.reports.charts` (matplotlib's object API on Agg, no PNG
metadata, the palette's colours), whose helpers this chart uses.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from fleetchaos.reports import palette
from fleetchaos.reports.charts import save_png
from fleetchaos.results.models import Timeline

__all__ = ["ACTION_STYLE", "MAX_LANES", "SHADES", "timeline_chart"]

#: Most worker lanes a timeline draws; beyond it, the busiest lanes are kept.
MAX_LANES = 30


def _hours(seconds: float) -> float:
    return seconds / 3600.0


def _busy_lanes(t: Timeline) -> list[int]:
    if t.workers <= MAX_LANES:
        return list(range(t.workers))
    score = [0] * t.workers
    for _, w, *_ in t.faults:
        score[w] += 1
    for _, w, *_ in t.actions:
        score[w] += 3
    for w, spans in enumerate(t.disk_full):
        score[w] += 5 * len(spans)
    for w, times in enumerate(t.key_expiries):
        score[w] += 5 * len(times)
    busiest = sorted(range(t.workers), key=lambda w: (-score[w], w))[:MAX_LANES]
    return sorted(busiest)


def _x_end(t: Timeline) -> float:
    last = [t.duration_s]
    last += [d[0] for d in t.dispatches[-1:]]
    last += [a[0] for a in t.actions]
    last += [f[0] for f in t.faults]
    return min(t.end_s, max(last) * 1.02) if t.end_s else max(last)


def _key_expired_spans(t: Timeline, worker: int, end: float) -> list[tuple[float, float]]:
    """From each key expiry on a worker to the next credential refresh there (or the end)."""
    refreshes = sorted(a[0] for a in t.actions if a[1] == worker and a[3] == "RefreshCredentials")
    spans = []
    for start in t.key_expiries[worker] if worker < len(t.key_expiries) else []:
        after = [r for r in refreshes if r >= start]
        spans.append((start, after[0] if after else end))
    return spans


#: How the timeline shades a span of trouble: (colour, opacity, hatch, legend label).  Pale shades run
#: together for a colour-vision deficiency, so each but the fleet-wide rate cut has its own hatch too.
SHADES = {
    "rate": (palette.SKY_BLUE, 0.2, "", "API rate cut (fleet-wide)"),
    "disk": (palette.ORANGE, 0.35, "//", "disk full"),
    "key": (palette.REDDISH_PURPLE, 0.35, "\\\\", "API key expired (until a refresh)"),
    "crash": (palette.BLACK, 0.3, "xx", "worker crashed"),
    "partition": (palette.YELLOW, 0.5, "..", "network partition"),
}

#: How each kept action is drawn: (label, marker, colour, size).
ACTION_STYLE = {
    "Reroute": ("reroute (left this worker)", ">", palette.SKY_BLUE, 30),
    "RefreshCredentials": ("credential refresh", "o", palette.BLUISH_GREEN, 26),
    "UseAlternative": ("alternative source", "D", palette.ORANGE, 22),
    "Escalate": ("escalation to a human", "X", palette.VERMILLION, 60),
    "GiveUp": ("gave up", "v", palette.BLACK, 30),
}


def timeline_chart(t: Timeline, path: Path) -> Path:
    """One lane per worker over the simulated day: fault windows shaded, dispatches, retries, faults and recovery actions."""
    lanes = _busy_lanes(t)
    row = {w: i for i, w in enumerate(lanes)}
    end = _x_end(t)
    fig = Figure(figsize=(13, max(4.0, 0.42 * len(lanes) + 2.6)), layout="constrained")
    ax = fig.subplots()
    h = 0.8

    def shade(kind: str, spans: list[tuple[float, float]], y: float, height: float) -> None:
        colour, alpha, hatch, _ = SHADES[kind]
        ax.broken_barh([(_hours(a), _hours(b - a)) for a, b in spans], (y, height), facecolors=to_rgba(colour, alpha),
                       edgecolors=colour, hatch=hatch, linewidth=0)  # fmt: skip

    for start, stop, _factor in t.rate_windows:
        shade("rate", [(start, stop)], -0.7, len(lanes) + 0.4)
    for start, stop, cut in t.partitions:
        for w in lanes if cut is None else [w for w in cut if w in row]:
            shade("partition", [(start, stop)], row[w] - h / 2, h)
    for w in lanes:
        y = row[w] - h / 2
        if w < len(t.disk_full) and t.disk_full[w]:
            shade("disk", t.disk_full[w], y, h)
        spans = _key_expired_spans(t, w, end)
        if spans:
            shade("key", spans, y, h)
            ax.scatter(
                [_hours(a) for a, _ in spans],
                [row[w]] * len(spans),
                marker="|",
                s=160,
                color=palette.REDDISH_PURPLE,
                linewidths=1.5,
                zorder=4,
            )
        if w < len(t.crashes) and t.crashes[w]:
            shade("crash", t.crashes[w], y, h)
    first = [(d[0], d[1]) for d in t.dispatches if d[3] == 1 and d[1] in row]
    again = [(d[0], d[1]) for d in t.dispatches if d[3] > 1 and d[1] in row]
    ax.scatter(
        [_hours(x) for x, _ in first],
        [row[w] + 0.18 for _, w in first],
        marker="|",
        s=22,
        color=palette.GREY,
        linewidths=0.7,
        zorder=3,
    )
    ax.scatter(
        [_hours(x) for x, _ in again],
        [row[w] + 0.18 for _, w in again],
        marker="|",
        s=40,
        color=palette.BLUE,
        linewidths=1.0,
        zorder=3,
    )
    faults = [(f[0], f[1]) for f in t.faults if f[1] in row]
    ax.scatter(
        [_hours(x) for x, _ in faults],
        [row[w] - 0.2 for _, w in faults],
        marker=".",
        s=14,
        color=palette.VERMILLION,
        zorder=3,
    )
    present = {
        "rate": bool(t.rate_windows),
        "disk": any(t.disk_full[w] for w in lanes if w < len(t.disk_full)),
        "key": any(t.key_expiries[w] for w in lanes if w < len(t.key_expiries)),
        "crash": any(t.crashes[w] for w in lanes if w < len(t.crashes)),
        "partition": bool(t.partitions),
    }
    handles = [
        Patch(facecolor=to_rgba(colour, alpha), edgecolor=colour, hatch=hatch, linewidth=0, label=label)
        for kind, (colour, alpha, hatch, label) in SHADES.items()
        if present[kind]
    ] + [
        Line2D([], [], color=palette.GREY, marker="|", linestyle="none", markersize=8, label="first dispatch"),
        Line2D([], [], color=palette.BLUE, marker="|", linestyle="none", markersize=9, label="retry dispatch"),
        Line2D([], [], color=palette.VERMILLION, marker=".", linestyle="none", markersize=8, label="faulted call"),
    ]
    for action, (label, marker, colour, size) in ACTION_STYLE.items():
        points = [(a[0], a[1]) for a in t.actions if a[3] == action and a[1] in row]
        if not points:
            continue
        ax.scatter([_hours(x) for x, _ in points], [row[w] for _, w in points], marker=marker, s=size, color=colour,
                   edgecolors="black", linewidths=0.4, zorder=5)  # fmt: skip
        handles.append(Line2D([], [], color=colour, marker=marker, linestyle="none", markeredgecolor="black",
                              markeredgewidth=0.4, markersize=7, label=f"{label} ({len(points)})"))  # fmt: skip
    if end > t.duration_s:
        ax.axvline(_hours(t.duration_s), color="#333333", linestyle="--", linewidth=0.8)
        ax.annotate("arrivals stop", (_hours(t.duration_s), -0.7), xytext=(-3, -3), textcoords="offset points",
                    fontsize=7, va="top", ha="right")  # fmt: skip
    ax.set_yticks(range(len(lanes)), [f"worker {w}" for w in lanes], fontsize=8)
    ax.set_ylim(-0.7, len(lanes) - 0.3)
    ax.invert_yaxis()
    ax.set_xlim(0, _hours(end))
    ax.set_xlabel("simulated time (hours)")
    ax.grid(axis="x", alpha=0.3)
    shown = "" if len(lanes) == t.workers else f"; the {len(lanes)} busiest of {t.workers} workers"
    ax.set_title(f"Fleet timeline ({t.label}): {t.policy} on {t.errors} errors, seed {t.seed}{shown}", fontsize=10)
    fig.legend(handles=handles, loc="outside lower center", ncol=5, fontsize=8, frameon=False)
    return save_png(fig, path)
