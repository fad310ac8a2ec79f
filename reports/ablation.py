"""The field-ablation report: a table, a chart and the JSON document, from the ablation dict.

Reads only the plain document :func:`fleetchaos.runs.ablation.ablation_document` builds (no
SimPy, no result models).  The chart uses matplotlib's object API on the Agg canvas and
writes byte-stable PNGs (no Software metadata).
"""

from __future__ import annotations

import json
from pathlib import Path

from fleetchaos.escaping import markdown_cell
from fleetchaos.files import atomic_write, write_text
from fleetchaos.reports.tables import count_text, is_count
from fleetchaos.results.registry import is_rate

#: (metric, axis label) of the chart's panels and the table's columns.
PANELS = (
    ("common_recovery_rate", "recovery on the common set"),
    ("success_rate", "success rate"),
    ("wasted_retries", "wasted retries per run"),
    ("silent_failure_rate", "silent-failure rate"),
)


#: The panels' metrics that are rates: shown as percentages (their gains in percentage points), as `compare` does.
RATES = frozenset({"common_recovery_rate", "success_rate", "silent_failure_rate"})


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


def ablation_chart(doc: dict, path: Path) -> Path:
    """Four panels (recovery on the common set, success, wasted retries, silent failures) per step with interval bars."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from fleetchaos.reports.charts import PNG_METADATA, UNDEFINED, keep_bar_slots

    steps = doc["steps"]
    labels = [s["format"].replace("ablation:", "") for s in steps]
    fig = Figure(figsize=(13, 3.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(PANELS))
    for ax, (metric, label) in zip(axes, PANELS):
        xs = list(range(len(steps)))
        # A step whose mean is undefined (None: recovery with no faulted task) gets no bar, and "n/a".
        drawn = [(x, s, s["metrics"][metric]) for x, s in zip(xs, steps) if s["metrics"].get(metric) is not None]
        errs_lo, errs_hi = [], []
        for _, s, v in drawn:
            lo, hi = s["ci"].get(metric) or [None, None]
            errs_lo.append(max(0.0, v - lo) if lo is not None else 0.0)
            errs_hi.append(max(0.0, hi - v) if hi is not None else 0.0)
        if drawn:
            ax.bar(
                [x for x, _, _ in drawn], [v for _, _, v in drawn], color="#4878a8", yerr=[errs_lo, errs_hi], capsize=3
            )
        if len(drawn) < len(xs):
            keep_bar_slots(ax, len(xs))
        for x in sorted(set(xs) - {x for x, _, _ in drawn}):
            ax.annotate(UNDEFINED, (x, 0.0), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
        ax.set_xticks(xs)
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
        ax.set_title(label, fontsize=9)
    fig.suptitle(f"field ablation: {doc['scenario']} ({len(doc['seeds'])} seeds)", fontsize=10)
    fig.tight_layout()
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100, metadata=PNG_METADATA)
    return path


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
