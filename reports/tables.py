"""Terminal tables (rich) for runs and comparisons."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fleetchaos.escaping import rich_text
from fleetchaos.results.models import CompareResult, RunResult
from fleetchaos.results.registry import HEADLINE_METRICS, is_rate


def display_kind(metric: str) -> str:
    """How a metric is shown: ``pct`` for the registry's rates, ``num`` for the rest."""
    return "pct" if is_rate(metric) else "num"


#: Metrics shown in the comparison table, with their headers and formats (:func:`display_kind`).
COLUMNS: tuple[tuple[str, str, str], ...] = tuple(
    (metric, header, display_kind(metric))
    for metric, header in (
        ("recovery_rate", "recovery"),
        ("silent_failure_rate", "silent fail"),
        ("wasted_retries", "wasted retries"),
        ("faulted_tasks", "faulted"),
        ("tool_calls", "tool calls"),
        ("redone_steps", "redone steps"),
        ("duplicate_side_effects", "dup effects"),
        ("escalations", "escalations"),
        ("mean_steps_to_recovery", "steps to rec."),
    )
)


def fmt(value: float | None, kind: str) -> str:
    """A metric value for display."""
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if kind == "pct" else f"{value:,.1f}"


def fmt_ci(ci: list[float | None], kind: str) -> str:
    """A confidence interval for display, as its half-width (Student-t intervals are symmetric)."""
    lo, hi = ci
    if lo is None or hi is None:
        return ""
    half = (hi - lo) / 2.0
    return f" ±{100 * half:.1f}" if kind == "pct" else f" ±{half:,.1f}"


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


def compare_table(result: CompareResult) -> Table:
    """One row per arm; rates with their confidence intervals; arms with policy errors named below it."""
    pct = round(result.confidence * 100)
    broken = policy_error_lines(result)
    table = Table(
        title=rich_text(f"{result.scenario}: {len(result.seeds)} seeds, mean per seed ± {pct}% CI half-width"),
        header_style="bold",
        # A broken policy's figures measure the bug, not a strategy: say so where the figures are read.
        caption=Text("\n".join(broken)) if broken else None,  # Text: messages are not markup
        caption_justify="left",
        caption_style="yellow",
        min_width=max(map(len, broken), default=None),  # a caption wraps at the table's width
    )
    table.add_column("policy")
    table.add_column("errors")
    for _, header, _ in COLUMNS:
        table.add_column(header, justify="right")
    for arm in result.arms:
        cells = []
        for key, _, kind in COLUMNS:
            text = fmt(arm.metrics.get(key), kind)
            if key in HEADLINE_METRICS:
                text += fmt_ci(arm.ci.get(key, [None, None]), kind)
            cells.append(text)
        table.add_row(rich_text(arm.policy), rich_text(arm.errors), *cells)
    return table


def run_table(result: RunResult) -> Table:
    """Every metric of one run; policy errors named below it."""
    broken = policy_error_lines(result)
    table = Table(
        title=rich_text(f"{result.scenario}: {result.policy} on {result.errors} errors, seed {result.seed}"),
        caption=Text("\n".join(broken)) if broken else None,  # Text: messages are not markup
        caption_justify="left",
        caption_style="yellow",
        min_width=max(map(len, broken), default=None),  # a caption wraps at the table's width
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result.metrics.items():
        table.add_row(key, fmt(value, display_kind(key)))
    return table
