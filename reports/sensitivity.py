"""What the answer depends on, in words and tables: a sensitivity study of best against best.

Read from a :class:`~fleetchaos.results.studies.SensitivityResult`
(:mod:`fleetchaos.runs.sensitivity`): the answer at the scenario's own values, every flip
(where the winning format changes, and whether the envelope's lead changes sign there),
which assumptions move the lead most (the tornado's bars as a table), and what prices do to
the cost.  The terminal (``fleetchaos robustness``, ``compare --robustness``), the study's
own report and the comparison report's section all read these functions.  No matplotlib
here (the chart is :mod:`fleetchaos.reports.tornado`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from fleetchaos.reports.blocks import H1, H2, IMG, TABLE, UL, Block, P, literal, write_pages
from fleetchaos.reports.cells import metric_cell
from fleetchaos.reports.fitting import fit_columns
from fleetchaos.reports.ordering import short_value
from fleetchaos.reports.results_io import dumps
from fleetchaos.reports.studies import seed_range
from fleetchaos.results.registry import is_rate
from fleetchaos.results.studies import SensitivityFlip, SensitivityPoint, SensitivityResult, TornadoBar

__all__ = [
    "CHART",
    "difference",
    "flip_line",
    "rests_on",
    "sensitivity_blocks",
    "study_headline",
    "study_lines",
    "tornado_table",
    "write_sensitivity_report",
]

CHART = "tornado.png"
#: Assumptions named as moving the answer most, at most.
_WIDEST = 3


def difference(metric: str, mean: float | None, ci: list[float | None] | None = None) -> str:
    """``+7.3 pp [+5.6, +9.0]`` for a rate, ``-$290 [-$925, +$343]`` for dollars; ``-`` without a value."""
    if mean is None:
        return "-"
    lo, hi = ([*(ci or []), None, None])[:2]

    def one(x: float) -> str:
        if is_rate(metric):
            return f"{100 * x:+.1f}"
        sign = "-" if x < 0 else "+"
        return f"{sign}${abs(x):,.0f}"

    unit = " pp" if is_rate(metric) else ""
    text = one(mean) + unit
    return text + (f" [{one(lo)}, {one(hi)}]" if lo is not None and hi is not None else "")


def _point(result: SensitivityResult, parameter: str, value: Any) -> SensitivityPoint | None:
    return next((p for p in result.points if p.parameter == parameter and repr(p.value) == repr(value)), None)


def _clear(ci: list[float | None]) -> bool:
    lo, hi = ([*ci, None, None])[:2]
    return lo is not None and hi is not None and (lo > 0 or hi < 0)


def _lead(point: SensitivityPoint | None) -> str:
    if point is None:
        return ""
    noise = "clear" if _clear(point.lead_ci) else "within the noise of the seeds"
    return f"envelope's lead {difference(point.metric, point.difference, point.ci)}; its lead over the next {noise}"


def flip_line(result: SensitivityResult, flip: SensitivityFlip) -> str:
    """One flip in words: who leads on each side, the envelope's lead there, and whether it changes sign."""
    before, after = _point(result, flip.parameter, flip.holds_at), _point(result, flip.parameter, flip.flips_at)
    verb = "is cheapest" if flip.metric != "success_rate" else "leads"
    what = "the envelope's lead changes sign" if flip.reverses else "the envelope's lead keeps its sign"
    return (
        f"{flip.parameter}: {flip.ahead} {verb} at {short_value(flip.holds_at)} ({_lead(before)}), {flip.behind} at "
        f"{short_value(flip.flips_at)} ({_lead(after)}): {what}."
    )


def study_headline(result: SensitivityResult) -> str:
    """What the study varied and how, and the answer at the scenario's own values."""
    base = result.baseline
    how = (
        "each format's best tuned again at every value that can change it "
        f"(racing on training seeds {seed_range(result.tuning.get('train_seeds', []))})"
        if result.retune
        else "each format keeping the scenario's own best (not re-tuned)"
    )
    versus = " minus ".join(f"best on {f}" for f in base.versus) or "-"
    return (
        f"what best against best on {result.scenario} depends on: {len(result.settings)} assumptions, each varied alone "
        f"over its plausible range, {how}; {len(result.seeds)} seeds per value (seeds {seed_range(result.seeds)}). "
        f"At the scenario's own values best on {base.leader} leads, and the envelope's lead ({versus}) is "
        f"{difference(base.metric, base.difference, base.ci)}."
    )


def rests_on(result: SensitivityResult, limit: int = _WIDEST) -> list[TornadoBar]:
    """The success-rate assumptions that move the envelope's lead most (widest bars first)."""
    return [b for b in result.bars if b.metric == "success_rate" and b.width > 0][:limit]


def study_lines(result: SensitivityResult) -> list[str]:
    """The study's verdict, one sentence a line: every flip, then what held, what moves it most and the prices."""
    lines = [flip_line(result, f) for f in result.flips]
    success = [s for s in result.settings if s.metric == "success_rate"]
    flipped = {f.parameter for f in result.flips}
    reversed_ = {f.parameter for f in result.flips if f.reverses}
    base = result.baseline
    held = [s.parameter for s in success if s.parameter not in flipped]
    if held and base.leader != "tie":
        lines.append(
            f"best on {base.leader} leads at every value tried of {len(held)} of {len(success)} success-rate "
            f"assumptions"
            + (
                f"; the envelope's lead changes sign with {', '.join(sorted(reversed_))}"
                if reversed_
                else "; the envelope's lead never changes sign"
            )
            + "."
        )
    noisy = [
        f"{p.parameter} = {short_value(p.value)}"
        for p in result.points
        if p.metric == "success_rate" and p.difference is not None and not _clear(p.ci)
    ]
    if noisy:
        lines.append(f"The envelope's lead is within the noise of the seeds at {'; '.join(noisy)}.")
    widest = rests_on(result)
    if widest:
        parts = [f"{b.parameter} ({difference(b.metric, b.least)} to {difference(b.metric, b.most)})" for b in widest]
        lines.append(f"It moves most with {', '.join(parts)}.")
    costs = [b for b in result.bars if b.metric != "success_rate"]
    if costs:
        lines.append(
            "Prices cannot change a success rate: they are judged on cost_usd (the same two bests, per run): "
            + "; ".join(
                f"{b.parameter} {difference(b.metric, b.least)} to {difference(b.metric, b.most)}" for b in costs
            )
            + "."
        )
    lines += [
        f"{s.parameter}: left out, this scenario's rules refuse {', '.join(s.skipped)}."
        + (" It was not varied here." if len(s.values) < 2 else "")
        for s in result.settings
        if s.skipped
    ]
    return lines


#: The columns of the tornado's table.
_BAR_COLUMNS = ("assumption", "values (* own)", "lead at low end", "lead at high end", "swing", "flips at")


def _bar_rows(result: SensitivityResult) -> list[list[str]]:
    """Each bar: the assumption, its range with its own value, the lead at each end, the swing and the flips."""
    by_parameter: dict[str, list[str]] = {}
    for f in result.flips:
        by_parameter.setdefault(f.parameter, []).append(short_value(f.flips_at) + (" (sign)" if f.reverses else ""))
    values = {s.parameter: s.values for s in result.settings}
    rows = []
    for bar in result.bars:
        low, high = _point(result, bar.parameter, bar.low_value), _point(result, bar.parameter, bar.high_value)
        tried = values.get(bar.parameter, [bar.low_value, bar.high_value])
        rows.append(
            [
                bar.parameter,
                ", ".join(short_value(v) + ("*" if repr(v) == repr(bar.own_value) else "") for v in tried),
                difference(bar.metric, bar.at_low, low.ci if low else None),
                difference(bar.metric, bar.at_high, high.ci if high else None),
                difference(bar.metric, bar.width).lstrip("+"),
                ", ".join(by_parameter.get(bar.parameter, [])) or "-",
            ]
        )
    return rows


def tornado_table(result: SensitivityResult, width: int | None = None) -> Table:
    """The tornado's bars as a table: each assumption's range, the envelope's lead at each end, its swing, its flips.

    ``width``: the columns it must fit in; the flips, the swing, the values, then the high end are left out first.
    """
    table = Table(header_style="bold")
    for column in _BAR_COLUMNS:
        right = column.startswith("lead") or column == "swing"
        table.add_column(column, justify="right" if right else "left", overflow="fold")
    for row in _bar_rows(result):
        table.add_row(*(Text(cell) for cell in row))
    return fit_columns(table, width, ["flips at", "swing", "values (* own)", "lead at high end"])


def _value_rows(result: SensitivityResult) -> list[list[str]]:
    rows = []
    for p in result.points:
        cells = [literal(p.parameter), literal(short_value(p.value)), p.metric]
        by_format = {a.errors: a for a in p.arms}
        cells += [metric_cell(by_format[f], p.metric) if f in by_format else "-" for f in result.errors]
        cells += [difference(p.metric, p.difference, p.ci), p.leader, ", ".join(p.retuned) or "-"]
        rows.append(cells)
    return rows


def _tuned_lines(result: SensitivityResult) -> list[str]:
    """Each value where a format's re-tuned best differs from the scenario's own."""
    own = {a.errors: a.policy for a in result.baseline.arms}
    lines = []
    for p in result.points:
        for arm in p.arms:
            if arm.errors in p.retuned and arm.policy != own.get(arm.errors):
                lines.append(
                    f"{literal(p.parameter)} = {literal(short_value(p.value))}: best on {arm.errors} is `{arm.policy}`"
                )
    return lines


def sensitivity_blocks(
    result: SensitivityResult, chart: str | None, heading: str = "What the answer depends on"
) -> list[Block]:
    """The study as a page section: the verdict, the tornado chart, the bars as a table, every value, the bests."""
    blocks: list[Block] = [
        H2(heading),
        P(literal(study_headline(result))),
        UL([literal(x) for x in study_lines(result)]),
    ]
    if chart is not None:
        blocks.append(IMG(chart, "Tornado chart: the envelope's lead over each assumption's range"))
    blocks.append(TABLE(list(_BAR_COLUMNS), [[literal(c) for c in row] for row in _bar_rows(result)], align_right=2))
    pct = round(result.confidence * 100)
    own = ", ".join(f"{a.errors}: `{a.policy}`" for a in result.baseline.arms)
    blocks += [
        P(
            f"Each format's best at the scenario's own values ({literal(str(result.tuning.get('own_bests', '')))}): {own}."
        ),
        H2("Every value") if heading == "What the answer depends on" else P("Every value:"),
        P(
            f"Each format's best on its own format (mean per seed with its {pct}% interval), the envelope's lead "
            "(paired by seed), the leading format and the formats tuned again at that value."
        ),
        TABLE(
            ["assumption", "value", "metric", *result.errors, "envelope's lead", "leader", "re-tuned"],
            _value_rows(result),
            align_right=3,
        ),
    ]
    tuned = _tuned_lines(result)
    if tuned:
        blocks += [P("Where tuning again chose another policy:"), UL(tuned)]
    runs = result.runs
    if runs:
        blocks.append(
            P(
                f"Runs: {runs.get('training', 0):,} training runs (raced), {runs.get('evaluation', 0):,} evaluation "
                f"runs; {runs.get('reused', 0):,} runs of formats a setting cannot change taken from the scenario's own."
            )
        )
    return blocks


def write_sensitivity_report(result: SensitivityResult, out_dir: Path) -> list[Path]:
    """results.json, tornado.png, summary.md and report.html of a sensitivity study."""
    from fleetchaos.reports.tornado import tornado_chart  # matplotlib: only where a chart is drawn

    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / "results.json"
    results.write_text(dumps(result), encoding="utf-8")
    chart = tornado_chart(result, out_dir / CHART)
    made = {"tornado": chart} if chart is not None else {}
    title = f"fleetchaos robustness: {result.scenario}"
    blocks = [H1(title), *sensitivity_blocks(result, chart.name if chart is not None else None)]
    pages = write_pages(out_dir, blocks, title, made)
    return [results, *made.values(), *pages]
