"""Terminal tables (rich) for runs and comparisons."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fleetchaos.escaping import rich_text
from fleetchaos.reports.fitting import figure_column, fit_table, left_out_note
from fleetchaos.reports.naming import policy_labels
from fleetchaos.results.models import CompareResult, RunResult
from fleetchaos.results.registry import REGISTRY, is_rate, lead_metrics


def display_kind(metric: str) -> str:
    """How a metric is shown: ``pct`` for the registry's rates, ``num`` for the rest."""
    return "pct" if is_rate(metric) else "num"


#: Metrics shown in the wide comparison table (``--wide``) and the report's "More figures",
#: with their headers and formats (:func:`display_kind`).
COLUMNS: tuple[tuple[str, str, str], ...] = tuple(
    (metric, header, display_kind(metric))
    for metric, header in (
        ("success_rate", "success"),
        ("common_recovery_rate", "recovery, common set"),
        ("recovery_rate", "own-set rec."),
        ("silent_failure_rate", "silent fail"),
        ("failed_retries", "failed retries"),
        ("wasted_retries", "wasted retries"),
        ("faulted_tasks", "faulted"),
        ("tool_calls", "tool calls"),
        ("redone_steps", "redone steps"),
        ("duplicate_side_effects", "dup effects"),
        ("escalations", "escalations"),
        ("mean_steps_to_recovery", "steps to rec."),
    )
)

#: The default terminal table's figures after the lead metrics: narrow enough for 100 columns.  A
#: narrower terminal leaves them out from the right, so silent failures and the cost per run (an arm
#: can lead on success at hundreds of times the cost) come first: 80 columns still show both.
NARROW: tuple[tuple[str, str], ...] = (
    ("silent_failure_rate", "silent"),
    ("cost_usd", "cost/run"),
    ("failed_retries", "failed"),
    ("wasted_retries", "wasted"),
)

#: Short headers of the lead metrics in the default terminal table.
LEAD_HEADERS = {"success_rate": "success", "common_recovery_rate": "common rec.", "goodput_per_day": "goodput/day"}


#: Each metric's short header in terminal tables; a metric not named here is headed by its own name.
HEADERS: dict[str, str] = {**{m: h for m, h, _ in COLUMNS}, **dict(NARROW), **LEAD_HEADERS}


def header(metric: str) -> str:
    """A metric's header in a terminal table (``--columns`` may name any metric of the registry)."""
    return HEADERS.get(metric, metric)


def is_count(metric: str) -> bool:
    """A total per run other than money (tasks, retries, calls...): terminal tables print it as a whole number."""
    known = REGISTRY.get(metric)
    return known is not None and known.denominator.startswith("none") and known.unit != "USD"


def fmt(value: float | None, kind: str) -> str:
    """A metric value for display."""
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if kind == "pct" else f"{value:,.1f}"


def count_text(value: float | None) -> str:
    """A count, or a mean of counts over seeds: an integer (one decimal only for a fraction below 10)."""
    if value is None:
        return "-"
    if float(value).is_integer() or abs(value) >= 10:
        return f"{value:,.0f}"
    return f"{value:.1f}"


def rate_interval(value: float | None, ci: list[float | None]) -> str:
    """``97.0% 93-99``: a rate with its interval in whole percent (intervals of rates are not symmetric)."""
    if value is None:
        return "-"
    lo, hi = ([*ci, None, None])[:2]
    text = f"{100 * value:.1f}%"
    if lo is None or hi is None:
        return text
    digits = 1 if hi < 0.1 else 0  # whole percent, but tenths for a small rate
    return f"{text} {100 * lo:.{digits}f}-{100 * hi:.{digits}f}"


def fmt_ci(ci: list[float | None], kind: str) -> str:
    """A count's confidence interval for display, as its half-width (a count's Student-t interval is symmetric)."""
    lo, hi = ci
    if lo is None or hi is None:
        return ""
    half = (hi - lo) / 2.0
    return f" ±{100 * half:.1f}" if kind == "pct" else f" ±{half:,.1f}"


def with_interval(value: float | None, ci: list[float | None], kind: str) -> str:
    """A value with its interval: ``[low, high]`` in percent for a rate (not symmetric), ``±half-width`` otherwise."""
    text = fmt(value, kind)
    if kind != "pct" or value is None:
        return text + fmt_ci(ci, kind) if value is not None else text
    lo, hi = ([*ci, None, None])[:2]
    return text if lo is None or hi is None else f"{text} [{100 * lo:.1f}, {100 * hi:.1f}]"


def count_interval(value: float | None, ci: list[float | None]) -> str:
    """A count with its interval's half-width, both whole numbers as :func:`count_text` writes them: ``73 ±25``."""
    if value is None:
        return "-"
    lo, hi = ([*ci, None, None])[:2]
    text = count_text(value)
    return text if lo is None or hi is None else f"{text} ±{count_text((hi - lo) / 2.0)}"


def _cell(arm, metric: str) -> str:
    if is_rate(metric):
        return rate_interval(arm.metrics.get(metric), arm.ci.get(metric, [None, None]))
    if REGISTRY[metric].unit == "USD":
        value = arm.metrics.get(metric)
        return "-" if value is None else f"${value:,.0f}"
    if is_count(metric):
        return count_text(arm.metrics.get(metric))
    return fmt(arm.metrics.get(metric), "num")


def policy_error_tasks(metrics: dict, breakdowns: dict, runs: int = 1) -> int:
    """Tasks of one arm (all seeds) that a policy error ended.

    Counted from the ``policy_errors_by_message`` breakdown; results written before it
    existed fall back to the ``policy_errors`` metric (a mean per seed) times ``runs``.
    """
    by_message = breakdowns.get("policy_errors_by_message")
    if by_message:
        return sum(by_message.values())
    return round((metrics.get("policy_errors") or 0.0) * runs)


def policy_error_lines(result: CompareResult | RunResult, limit: int = 80) -> list[str]:
    """Short lines naming the arms whose policy misbehaved, for under a terminal table; [] when none did.

    One line per arm: the task count and its most frequent message, cut to ``limit`` characters.
    """
    if isinstance(result, CompareResult):
        arms = [(a.policy, a.errors, a.metrics, a.breakdowns, len(result.seeds)) for a in result.arms]
    else:
        arms = [(result.policy, result.errors, result.metrics, result.breakdowns, 1)]
    lines = []
    for policy, errors, metrics, breakdowns, runs in arms:
        tasks = policy_error_tasks(metrics, breakdowns, runs)
        if not tasks:
            continue
        messages = breakdowns.get("policy_errors_by_message") or {}
        top = min(messages.items(), key=lambda kv: (-kv[1], kv[0]))[0] if messages else ""
        if len(top) > limit:
            top = top[: limit - 1] + "…"
        more = f" (+{len(messages) - 1} other message{'s' if len(messages) > 2 else ''})" if len(messages) > 1 else ""
        lines.append(
            f"  {policy} on {errors}: {tasks} task{'s' if tasks != 1 else ''}" + (f", {top}{more}" if top else "")
        )
    if lines:
        lines.insert(0, "policy errors (each task given up, the run went on; --report names every message):")
    return lines


def compare_table(
    result: CompareResult, *, wide: bool = False, columns: tuple[str, ...] | None = None, width: int | None = None
) -> Table:
    """One row per arm, named by the policy's own name: the lead metrics with their intervals, then silent
    failures, the cost per run, and failed and wasted retries (100 columns); ``wide`` shows every column of
    :data:`COLUMNS`, ``columns`` the metrics named, in that order.  Arms with policy errors are named below it.

    ``width``: the columns the table must fit in (a terminal's).  Rather than break a figure or a
    header word across lines, figures are left out from the right (the first two always stay) and
    the caption names them.
    """
    leads = lead_metrics(result.closed_loop)
    if columns is not None:
        shown = [(m, header(m)) for m in columns]
    elif wide:
        shown = [(m, LEAD_HEADERS.get(m, h)) for m, h, _ in COLUMNS] + [("cost_usd", "cost/run")]
        if result.closed_loop:
            shown.insert(0, ("goodput_per_day", LEAD_HEADERS["goodput_per_day"]))
    else:
        shown = [(m, LEAD_HEADERS[m]) for m in leads] + list(NARROW)
    user_columns = columns is not None

    def build(figures: list[tuple[str, str]], left_out: list[str], compact: bool) -> Table:
        return _compare_table(result, figures, left_out, width, wide=wide, user_columns=user_columns, compact=compact)

    return fit_table(build, shown, width)


def _compare_table(
    result: CompareResult,
    shown: list[tuple[str, str]],
    left_out: list[str],
    width: int | None,
    *,
    wide: bool,
    user_columns: bool,
    compact: bool,
) -> Table:
    pct = round(result.confidence * 100)
    broken = policy_error_lines(result)
    names = {m for m, _ in shown}
    notes = []
    if "common_recovery_rate" in names:
        notes.append("common rec.: recovery on the tasks faulted in any arm")
    if names & {"failed_retries", "wasted_retries"}:
        notes.append("failed / wasted: retries per run that failed again / sent while the cause still held")
    narrowed = left_out_note(left_out, width)
    if narrowed is not None:
        notes.append(narrowed)
    if not user_columns:
        if not wide:
            notes.append("more figures: --wide")
        elif "recovery_rate" in names:
            notes.append("own-set rec.: on the arm's own faulted tasks (secondary)")
    table = Table(
        title=Text(f"{result.scenario}: {len(result.seeds)} seeds, mean per seed, rates with their {pct}% interval"),
        header_style="bold",
        # A broken policy's figures measure the bug, not a strategy: say so where the figures are read.
        caption=Text("\n".join([*broken, *notes])) if broken or notes else None,  # Text: messages are not markup
        caption_justify="left",
        caption_style="yellow" if broken else "dim",
        # A caption wraps at the table's width: wide enough for the policy-error lines, within the terminal.
        min_width=min(max(map(len, broken), default=0), width or 100_000) or None,
    )
    # In a terminal narrower than the table the figures wrap (at their space, else folded, never cut) before
    # the names do: names are what users type.
    table.add_column("policy", no_wrap=True, overflow="fold")
    table.add_column("errors", no_wrap=True, overflow="fold")
    cells = [[_cell(arm, metric) for metric, _ in shown] for arm in result.arms]
    for i, (_, title) in enumerate(shown):
        figure_column(table, title, [row[i] for row in cells], compact=compact)
    for arm, label, row in zip(result.arms, policy_labels(result.arms), cells, strict=True):
        # Text: a policy's name is the user's, never rich markup
        table.add_row(Text(label), Text(arm.errors), *row)
    return table


def run_table(result: RunResult, columns: tuple[str, ...] | None = None) -> Table:
    """Every metric of one run (``columns``: the metrics named, in that order); policy errors named below it."""
    broken = policy_error_lines(result)
    title = f"{result.scenario}: {result.policy} on {result.errors} errors, seed {result.seed}"
    table = Table(
        title=rich_text(title),
        caption=Text("\n".join(broken)) if broken else None,  # Text: messages are not markup
        caption_justify="left",
        caption_style="yellow",
        min_width=max([len(title), *map(len, broken)]),  # title and caption wrap at the table's width
    )
    table.add_column("metric", overflow="fold")
    table.add_column("value", justify="right", overflow="fold")
    rows = result.metrics.items() if columns is None else [(m, result.metrics.get(m)) for m in columns]
    for key, value in rows:
        table.add_row(key, count_text(value) if is_count(key) else fmt(value, display_kind(key)))
    return table
