"""Report charts with matplotlib's object API on the Agg backend.

No pyplot state: every chart builds its own :class:`~matplotlib.figure.Figure`.  PNGs
are written without a timestamp or software tag, and nothing here draws at random, so
the same result gives the same bytes.  Every chart function takes a result model and a
path, writes one PNG and returns the path (or None when the result holds nothing to
draw, for instance a comparison without a traced run).

Colours follow the error format everywhere (vermillion generic, blue structured); line
styles and markers follow the policy.  Every colour comes from :mod:`fleetchaos.reports.palette`
(readable with a colour-vision deficiency), and chart text is never parsed as mathtext, so
tick labels on a log axis are plain numbers (:func:`plain_log_ticks`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, TypeVar

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from fleetchaos.files import atomic_write
from fleetchaos.reports import palette
from fleetchaos.reports.cells import arm_label, kind_recovery
from fleetchaos.results.models import CompareResult, Timeline
from fleetchaos.results.stats import spikes

PALETTE = {"generic": palette.VERMILLION, "structured": palette.BLUE}
#: Further error formats' colours, by first appearance (categories that stay apart from the two above).
EXTRA_COLOURS = (palette.ORANGE, palette.BLUISH_GREEN, palette.REDDISH_PURPLE, palette.SKY_BLUE, palette.YELLOW)
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
PNG_METADATA = {"Software": None}
DPI = 110


@contextmanager
def plain_text() -> Iterator[None]:
    """Draw charts whose text is never parsed as mathtext: a ``$`` in a scenario or policy name stays a ``$``."""
    with rc_context({"text.parse_math": False}):
        yield


#: Where :func:`save_png` writes, and so what it returns: a path or a binary file object.
PngTarget = TypeVar("PngTarget", Path, BinaryIO)


def save_png(fig: Figure, path: PngTarget, dpi: float = DPI) -> PngTarget:
    """Write ``fig`` as PNG to ``path`` (atomically, never through a symlink) or into a binary file object.

    A chart drawn in a worker (:mod:`fleetchaos.reports.drawing`) is rendered into memory
    and written by the command's own process.  Log axes get plain tick labels
    (:func:`plain_log_ticks`).  A figure with a layout engine is laid out here first
    (:func:`lay_out`), so it is drawn once instead of twice.
    """
    FigureCanvasAgg(fig)
    plain_log_ticks(fig)
    lay_out(fig, dpi)
    if not isinstance(path, (str, Path)):
        fig.savefig(path, format="png", dpi=dpi, metadata=PNG_METADATA)
        return path
    with atomic_write(path, "wb") as fh:  # never a half-written PNG, never through a symlink
        fig.savefig(fh, format="png", dpi=dpi, metadata=PNG_METADATA)
    return path


def plain_number(value: float) -> str:
    """A tick value as people write it: ``10``, ``1,000``, ``0.5``."""
    return f"{value:,.0f}" if value >= 1 and float(value).is_integer() else f"{value:,g}"


def plain_log_ticks(fig: Figure) -> None:
    """Plain tick labels on every log axis of ``fig``.

    matplotlib labels a log axis ``$\\mathdefault{10^{2}}$``, text meant for its mathtext
    parser; with mathtext off (:func:`plain_text`) that text would be printed as it is.
    Decades read ``10``, ``100``, ``1,000``; on an axis spanning less than a decade, the
    2s and 5s between them are labelled too.
    """
    from matplotlib.ticker import FuncFormatter

    for ax in fig.get_axes():
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log":
                continue

            def minor(value: float, _pos: int | None, axis=axis) -> str:
                low, high = sorted(axis.get_view_interval())
                if value <= 0 or low <= 0 or high / low > 10.0:
                    return ""
                mantissa = round(value / 10 ** math.floor(math.log10(value)), 6)
                return plain_number(value) if mantissa in (2.0, 5.0) else ""

            axis.set_major_formatter(FuncFormatter(lambda value, _pos: plain_number(value)))
            axis.set_minor_formatter(FuncFormatter(minor))


def lay_out(fig: Figure, dpi: float) -> None:
    """Run ``fig``'s layout engine (constrained layout) at ``dpi``, then switch the engine off.

    ``savefig`` on a figure with a layout engine draws it twice: once through a renderer
    that paints nothing, only to run the layout, and once for the pixels (the first costs
    about a tenth of a chart's time).  The layout needs only the engine, at the resolution
    the PNG is saved at, so it runs alone here, and ``savefig`` then draws the figure once.
    The PNG bytes are the same (tests/reports/test_chart_layout.py compares the two ways,
    chart by chart).
    """
    engine = fig.get_layout_engine()
    if engine is None:
        return
    fig.set_dpi(dpi)  # savefig draws at this resolution; the layout measures text in its pixels
    engine.execute(fig)
    fig.set_layout_engine(None)


def _labels(result: CompareResult) -> list[str]:
    return [arm_label(a, "\non ") for a in result.arms]


def slot_inches(result: CompareResult, fontsize: float = 8) -> float:
    """The width a bar needs for its arm's label (the widest line of ``policy`` over ``on errors``), in inches."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    measure, prop = TextToPath(), FontProperties(size=fontsize)
    lines = [line for label in _labels(result) for line in label.split("\n")]
    widest = max((measure.get_text_width_height_descent(line, prop, ismath=False)[0] for line in lines), default=0.0)
    return widest / 72.0 + 0.2  # points to inches, and a gap between neighbours


def errors_colour(result: CompareResult, errors: str) -> str:
    """The colour of an error format (fixed for the built-ins, then by first appearance)."""
    if errors in PALETTE:
        return PALETTE[errors]
    others = [e for e in dict.fromkeys(a.errors for a in result.arms) if e not in PALETTE]
    return EXTRA_COLOURS[others.index(errors) % len(EXTRA_COLOURS)]


def policy_index(result: CompareResult, policy: str) -> int:
    return list(dict.fromkeys(a.policy for a in result.arms)).index(policy)


def _hours(seconds: float) -> float:
    return seconds / 3600.0


# -- bars per arm ------------------------------------------------------------------------


#: The label of an arm whose mean is undefined (None: e.g. recovery_rate with no faulted task); it gets no bar.
UNDEFINED = "n/a"


def keep_bar_slots(ax: Axes, n: int, width: float = 0.8) -> None:
    """Hold the x range of ``n`` bars at 0..n-1 as if every one were drawn (matplotlib's default 5% margin).

    Called when some bar is left out (an undefined mean), so its slot and ``n/a`` label stay in view.
    """
    lo, hi = -width / 2, n - 1 + width / 2
    pad = 0.05 * (hi - lo)
    ax.set_xlim(lo - pad, hi + pad)


def bar_with_ci(
    ax: Axes, result: CompareResult, metric: str, scale: float, digits: int = 1, *, horizontal: bool = False
) -> None:
    """One bar per arm with its interval and value; an arm whose mean is None gets no bar and reads ``n/a``.

    ``horizontal``: the bars run left to right, one arm a row (top down), its name on one line.
    """
    labels = _labels(result) if not horizontal else [arm_label(a) for a in result.arms]
    xs, means, lows, highs, colours = [], [], [], [], []
    for x, arm in enumerate(result.arms):
        mean = arm.metrics.get(metric)
        if mean is None:
            continue
        lo, hi = arm.ci.get(metric, [None, None])
        m = mean * scale
        xs.append(x)
        means.append(m)
        lows.append(0.0 if lo is None else max(0.0, m - lo * scale))
        highs.append(0.0 if hi is None else max(0.0, hi * scale - m))
        colours.append(errors_colour(result, arm.errors))
    if xs and horizontal:
        ax.barh(
            xs, means, xerr=[lows, highs], color=colours, capsize=4, edgecolor="black", linewidth=0.5, ecolor="black"
        )
    elif xs:
        ax.bar(
            xs, means, yerr=[lows, highs], color=colours, capsize=4, edgecolor="black", linewidth=0.5, ecolor="black"
        )
    values = {x: (f"{m:.{digits}f}", m + h) for x, m, h in zip(xs, means, highs)}
    if horizontal:
        ax.set_yticks(list(range(len(labels))), labels, fontsize=8)
        ax.set_ylim(len(labels) - 0.5, -0.5)  # the first arm on top
        ax.grid(axis="x", alpha=0.3)
        for row in range(len(labels)):
            text, end = values.get(row, (UNDEFINED, 0.0))
            ax.annotate(text, (end, row), textcoords="offset points", xytext=(3, 0), va="center", fontsize=7)
        ax.margins(x=0.25)
    else:
        if len(xs) < len(labels):
            keep_bar_slots(ax, len(labels))
        ax.set_xticks(list(range(len(labels))), labels, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        for slot in range(len(labels)):
            text, top = values.get(slot, (UNDEFINED, 0.0))
            ax.annotate(text, (slot, top), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
        ax.margins(y=0.12)
    ax.set_axisbelow(True)


def errors_handles(result: CompareResult) -> list[Patch]:
    formats = list(dict.fromkeys(a.errors for a in result.arms))
    return [
        Patch(facecolor=errors_colour(result, e), edgecolor="black", linewidth=0.5, label=f"{e} errors")
        for e in formats
    ]


def ci_text(result: CompareResult) -> str:
    pct = round(result.confidence * 100)
    n = len(result.seeds)
    if n < 2:
        return f"{n} seed{'' if n == 1 else 's'}, no interval"
    return f"mean of {n} seeds, {pct}% CI"


# -- recovery by fault kind --------------------------------------------------------------


def heatmap_chart(result: CompareResult, path: Path) -> Path | None:
    """Recovery rate by arm (rows) and kind of the task's first fault (columns), pooled over seeds."""
    per_arm = [kind_recovery(a) for a in result.arms]
    kinds = sorted({k for d in per_arm for k in d})
    if not kinds:
        return None
    import numpy as np

    grid = np.full((len(result.arms), len(kinds)), np.nan)
    for r, d in enumerate(per_arm):
        for c, kind in enumerate(kinds):
            rec, n = d.get(kind, (0, 0))
            if n:
                grid[r, c] = 100.0 * rec / n
    width = max(7.5, 1.25 * len(kinds) + 3.5)
    height = max(3.0, 0.55 * len(result.arms) + 2.2)
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots()
    masked = np.ma.masked_invalid(grid)
    from matplotlib import colormaps

    cmap = colormaps[palette.SEQUENTIAL].with_extremes(bad="#dddddd")
    image = ax.imshow(masked, cmap=cmap, vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(kinds)), [k.replace("_", "\n") for k in kinds], fontsize=8)  # a word a line: no overlap
    ax.set_yticks(range(len(result.arms)), [arm_label(a) for a in result.arms], fontsize=8)
    for r, d in enumerate(per_arm):
        for c, kind in enumerate(kinds):
            rec, n = d.get(kind, (0, 0))
            text = "no tasks" if not n else f"{100.0 * rec / n:.0f}%\nn={n}"
            value = grid[r, c]
            dark = not math.isnan(value) and _luminance(cmap(value / 100.0)) < 0.18  # white text reads better on it
            ax.text(c, r, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label("recovery rate (%)", fontsize=8)
    ax.set_xlabel("kind of the task's first fault")
    ax.set_title(
        f"Recovery by policy and fault kind, {result.scenario}: tasks pooled over {len(result.seeds)} seeds (n = faulted tasks)",
        fontsize=10,
    )
    return save_png(fig, path)


def _luminance(rgba: tuple[float, ...]) -> float:
    """The relative luminance of an sRGB colour (0 black, 1 white), as WCAG computes it."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


# -- time to recovery --------------------------------------------------------------------


def ecdf_chart(result: CompareResult, path: Path) -> Path | None:
    """ECDF of time to recovery per arm (recovered tasks pooled over seeds), log time axis."""
    fig = Figure(figsize=(8.5, 5), layout="constrained")
    ax = fig.subplots()
    drawn = False
    for arm in result.arms:
        xs = [x for x in arm.samples.get("time_to_recovery_s", []) if x > 0]
        if not xs:
            continue
        n = len(xs)
        ys = [(i + 1) / n for i in range(n)]
        total = arm.breakdowns.get("task_counts", {}).get("recovered", n)
        style = LINESTYLES[policy_index(result, arm.policy) % len(LINESTYLES)]
        label = f"{arm_label(arm)} (n={total})"
        ax.step(
            xs, ys, where="post", color=errors_colour(result, arm.errors), linestyle=style, linewidth=1.6, label=label
        )
        drawn = True
    if not drawn:
        return None
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("time from first fault to completion (simulated seconds, log scale)")
    ax.set_ylabel("fraction of recovered tasks recovered by then")
    ax.set_title(f"Time to recovery, {result.scenario}: recovered tasks pooled over {len(result.seeds)} seeds")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right", framealpha=0.9)
    return save_png(fig, path)


# -- error codes of a traced run --------------------------------------------------------


def bin_width_s(duration_s: float) -> float:
    """The width of an error-code bin: about 96 bins over the horizon, rounded to whole minutes."""
    return max(60.0, round(duration_s / 96.0 / 60.0) * 60.0)


def error_code_series(t: Timeline, width_s: float) -> tuple[list[float], dict[str, list[int]]]:
    """(bin starts in seconds, error code -> faulted calls per bin) over the traced run."""
    end = max([t.duration_s] + [f[0] for f in t.faults])
    bins = math.floor(end / width_s) + 1
    counts: dict[str, list[int]] = {}
    for time_s, _, _, code, _ in t.faults:
        counts.setdefault(code, [0] * bins)[int(time_s // width_s)] += 1
    return [i * width_s for i in range(bins)], dict(sorted(counts.items()))


#: The spike rule of the error-code chart (:func:`fleetchaos.results.stats.spikes`): a bin at least
#: SPIKE_MIN_COUNT and above the mean + SPIKE_SD standard deviations of its code's series.
SPIKE_SD = 3.0
SPIKE_MIN_COUNT = 5


def error_codes_chart(timelines: list[Timeline], path: Path) -> Path | None:
    """Faulted calls per error code over time for each traced run, spikes marked."""
    if not timelines or not any(t.faults for t in timelines):
        return None
    width = bin_width_s(max(t.duration_s for t in timelines))
    codes = sorted({f[3] for t in timelines for f in t.faults})
    style = {c: palette.category(i) for i, c in enumerate(codes)}
    colour = {c: style[c][0] for c in codes}
    fig = Figure(figsize=(12, 1.2 + 3.0 * len(timelines)), layout="constrained")
    axes = fig.subplots(len(timelines), 1, sharex=True, squeeze=False)[:, 0]
    for ax, t in zip(axes, timelines):
        starts, series = error_code_series(t, width)
        hours = [_hours(s) for s in starts] + [_hours(starts[-1] + width)]
        top = max([1] + [max(c) for c in series.values()])
        for code, counts in series.items():
            ax.stairs(counts, hours, color=colour[code], linestyle=style[code][1], linewidth=1.4, label=code)
            marks = spikes(counts, k=SPIKE_SD, min_count=SPIKE_MIN_COUNT)
            ax.scatter([_hours(starts[i] + width / 2) for i in marks], [counts[i] + 0.05 * top for i in marks], marker="v",
                       s=40, color=colour[code], edgecolors="black", linewidths=0.6, zorder=4)  # fmt: skip
        ax.set_ylabel(f"faulted calls\nper {width / 60:.0f} min")
        ax.set_title(f"{t.label}: {t.policy} on {t.errors} errors, seed {t.seed}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.set_ylim(0, top * 1.15)
        ax.set_xlim(0, hours[-1])
        if t.duration_s < hours[-1] * 3600:
            ax.axvline(_hours(t.duration_s), color="#333333", linestyle="--", linewidth=0.8)
    axes[-1].set_xlabel("simulated time (hours)")
    handles = [
        Line2D([], [], color=colour[c], linestyle=style[c][1], linewidth=1.6, label=c)  # type: ignore[arg-type]  # a style of palette.category: one of matplotlib's names
        for c in codes
    ]
    handles.append(Line2D([], [], color="#555555", marker="v", linestyle="none", markeredgecolor="black",
                          label=f"spike: bin above mean + {SPIKE_SD:g} sd of its code, and at least {SPIKE_MIN_COUNT}"))  # fmt: skip
    handles.append(
        Line2D([], [], color="#333333", linestyle="--", linewidth=0.8, label="arrivals stop (drain follows)")
    )
    fig.legend(handles=handles, loc="outside right center", fontsize=8, frameon=False)
    fig.suptitle("Error codes over time (the structured contract's code of each faulted call)", fontsize=10)
    return save_png(fig, path)


def run_ecdf_chart(times: list[float], label: str, path: Path) -> Path | None:
    """ECDF of time to recovery for one run."""
    xs = sorted(x for x in times if x > 0)
    if not xs:
        return None
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.subplots()
    n = len(xs)
    ax.step(
        xs, [(i + 1) / n for i in range(n)], where="post", color=palette.BLUE, linewidth=1.6, label=f"{label} (n={n})"
    )
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("time from first fault to completion (simulated seconds, log scale)")
    ax.set_ylabel("fraction of recovered tasks recovered by then")
    ax.set_title("Time to recovery")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    return save_png(fig, path)
