"""The field-ablation report: a table, a chart and the JSON document, from the ablation dict.

Reads only the plain document :func:`fleetchaos.runs.ablation.ablation_document` builds (no
SimPy, no result models).  The chart uses matplotlib's object API on the Agg canvas and
writes byte-stable PNGs (no Software metadata).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from fleetchaos.escaping import markdown_cell
from fleetchaos.files import write_text
from fleetchaos.reports import palette
from fleetchaos.reports.tables import count_text, is_count
from fleetchaos.results.registry import is_rate

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: (metric, axis label) of the chart's panels and the table's columns.
PANELS = (
    ("common_recovery_rate", "recovery on the common set"),
    ("success_rate", "success rate"),
    ("wasted_retries", "wasted retries per run"),
    ("silent_failure_rate", "silent-failure rate"),
)


#: The unit of each panel's axis: what a rate is a percentage of, what a count counts.
UNITS = {
    "common_recovery_rate": "% of the tasks faulted in any step",
    "success_rate": "% of tasks",
    "wasted_retries": "retries per run",
    "silent_failure_rate": "% of tasks",
}

#: The panels' metrics that are rates: shown as percentages (their gains in percentage points), as `compare` does.
RATES = frozenset({"common_recovery_rate", "success_rate", "silent_failure_rate"})
#: The bar colour, and the colour of the mark a bar of height zero gets so it stays visible.
BAR_COLOUR = palette.BLUE
ZERO_MARK_COLOUR = palette.BLACK


def _fmt(value, ci, rate: bool = False, gain: bool = False, count: bool = False) -> str:
    if value is None:
        return "n/a"
    lo, hi = ci if ci else (None, None)
    if rate:
        sign = "+" if gain else ""
        text = f"{100 * value:{sign}.1f}{' pp' if gain else '%'}"
        return text if lo is None or hi is None else f"{text} [{100 * lo:{sign}.1f}, {100 * hi:{sign}.1f}]"
    if count:  # a count reads as a whole number, as in every terminal table
        text = count_text(value)
        return text if lo is None or hi is None else f"{text} [{count_text(lo)}, {count_text(hi)}]"
    if lo is None or hi is None:
        return f"{value:,.1f}"
    return f"{value:,.1f} [{lo:,.1f}, {hi:,.1f}]"


def _is_rate(metric: str) -> bool:
    return metric in RATES or is_rate(metric)


def ablation_table(doc: dict, columns: tuple[str, ...] | None = None) -> str:
    """The ablation as a Markdown table: each step's headline metrics (or ``columns``) with intervals, and its gain.

    Rates read in percent, their gains in percentage points, counts as whole numbers.
    """
    conf = round(100 * doc.get("confidence", 0.95))
    labels = dict(PANELS)
    shown = list(PANELS) if columns is None else [(m, labels.get(m, m)) for m in columns]
    lines = [
        f"Field ablation on `{markdown_cell(doc['scenario'])}` ({len(doc['seeds'])} seeds, "
        f"policy `{markdown_cell(doc.get('policy', '?'))}`, "
        f"{conf}% intervals; gain = paired difference from the previous step)",
        "",
        "| step | format | " + " | ".join(label for _, label in shown) + " | recovery gain |",
        "|---|---|" + "---|" * len(shown) + "---|",
    ]
    for i, step in enumerate(doc["steps"]):
        cells = [_fmt(step["metrics"].get(m), step["ci"].get(m), rate=_is_rate(m), count=is_count(m)) for m, _ in shown]
        gain = step.get("gain", {}).get("common_recovery_rate")
        gain_text = _fmt(gain["mean"], gain["ci"], rate=True, gain=True) if gain else "-"
        lines.append(f"| {i} | `{step['format']}` | " + " | ".join(cells) + f" | {gain_text} |")
    return "\n".join(lines) + "\n"


def step_label(index: int, fmt: str) -> str:
    """A step's tick label: its number over its field, broken at an underscore when long (``+retry_`` / ``recommended``)."""
    name = fmt.replace("ablation:", "")
    if len(name) > 13 and "_" in name:
        cut = min((i for i, c in enumerate(name) if c == "_"), key=lambda i: abs(i - len(name) / 2))
        name = name[: cut + 1] + "\n" + name[cut + 1 :]
    return f"{index}\n{name}"


def _value_text(value: float, rate: bool) -> str:
    return f"{value:.1f}%" if rate else count_text(value)


def _panel(ax, steps: list[dict], metric: str, label: str) -> None:
    """One panel: a bar per step with its interval and value; a zero bar gets a mark, an undefined one "n/a"."""
    from fleetchaos.reports.charts import UNDEFINED, keep_bar_slots

    rate = _is_rate(metric)
    scale = 100.0 if rate else 1.0
    xs = list(range(len(steps)))
    # A step whose mean is undefined (None: recovery with no faulted task) gets no bar, and "n/a".
    drawn = [(x, s, s["metrics"][metric] * scale) for x, s in zip(xs, steps) if s["metrics"].get(metric) is not None]
    errs_lo, errs_hi = [], []
    for _, s, v in drawn:
        lo, hi = s["ci"].get(metric) or [None, None]
        errs_lo.append(max(0.0, v - lo * scale) if lo is not None else 0.0)
        errs_hi.append(max(0.0, hi * scale - v) if hi is not None else 0.0)
    if drawn:
        ax.bar([x for x, _, _ in drawn], [v for _, _, v in drawn], color=BAR_COLOUR, yerr=[errs_lo, errs_hi],
               capsize=3, error_kw={"linewidth": 0.8})  # fmt: skip
    zeros = [x for x, _, v in drawn if v == 0.0]
    if zeros:  # a bar of height zero draws nothing: mark its slot so a measured zero reads as one
        ax.hlines([0.0] * len(zeros), [x - 0.4 for x in zeros], [x + 0.4 for x in zeros], colors=ZERO_MARK_COLOUR,
                  linewidth=3, zorder=3, clip_on=False, gid="zero-bar")  # fmt: skip  # not half hidden under the axis
    if len(drawn) < len(xs):
        keep_bar_slots(ax, len(xs))
    tops = {x: v + h for (x, _, v), h in zip(drawn, errs_hi)}
    for x, s, v in drawn:
        gain = (s.get("gain") or {}).get(metric) if rate else None
        text = _value_text(v, rate)
        if gain and gain.get("mean") is not None:
            text += f"\n{100 * gain['mean']:+.1f} pp"
        ax.annotate(text, (x, tops[x]), textcoords="offset points", xytext=(0, 3), ha="center", va="bottom",
                    fontsize=7)  # fmt: skip
    for x in sorted(set(xs) - set(tops)):
        ax.annotate(UNDEFINED, (x, 0.0), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
    ax.set_xticks(xs, [step_label(i, s["format"]) for i, s in enumerate(steps)], fontsize=8)
    ax.set_title(label, fontsize=10)
    ax.set_ylabel(UNITS.get(metric, "%" if rate else metric), fontsize=9)
    top = max(tops.values(), default=0.0)
    ax.set_ylim(0.0, max(top * 1.25, 100.0 * 0.05 if rate else 1.0))  # room for the value labels above the bars
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.tick_params(axis="y", labelsize=8)


def ablation_figure(doc: dict) -> Figure:
    """The ablation's :class:`~matplotlib.figure.Figure`: four panels (recovery on the common set, success, wasted
    retries, silent failures), a bar per step with its interval and value label, rates in percent with the gain over
    the previous step in percentage points."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    steps = doc["steps"]
    fig = Figure(figsize=(12, 8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 2)
    for ax, (metric, label) in zip(axes.flat, PANELS):
        _panel(ax, steps, metric, label)
    pct = round(100 * doc.get("confidence", 0.95))
    fig.suptitle(
        f"field ablation: {doc['scenario']} ({len(doc['seeds'])} seeds, policy {doc.get('policy', '?')}); "
        f"mean per seed with {pct}% interval; pp: gain over the previous step, paired by seed",
        fontsize=10,
    )
    return fig


def ablation_chart(doc: dict, path: Path) -> Path:
    """Write :func:`ablation_figure` as a PNG (no metadata: the same document gives the same bytes)."""
    from fleetchaos.reports.charts import save_png

    return save_png(ablation_figure(doc), path, dpi=100)


def write_ablation_report(doc: dict, out_dir: Path) -> list[Path]:
    """Write ablation.json, ablation.md and ablation.png into ``out_dir``; the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = write_text(out_dir / "ablation.json", json.dumps(doc, indent=2, sort_keys=True) + "\n")
    md_path = write_text(
        out_dir / "ablation.md", f"# Field ablation\n\n{ablation_table(doc)}\n![ablation](ablation.png)\n"
    )
    from fleetchaos.reports.charts import plain_text

    with plain_text():
        png_path = ablation_chart(doc, out_dir / "ablation.png")
    return [json_path, md_path, png_path]
