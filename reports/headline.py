"""The report's compact headline table: the arm-independent figures, each with its verdict.

One row per arm: the lead metrics (:func:`fleetchaos.results.registry.lead_metrics`: success
rate and recovery on the common set, or goodput per day in a closed loop) with their
intervals and their paired verdict against the reference arm, then own-denominator
recovery (labelled secondary), silent failures, failed and wasted retries, and the cost
per run split into tokens, tool calls and paged humans.
"""

from __future__ import annotations

from fleetchaos.reports.blocks import TABLE, Block, literal
from fleetchaos.reports.cells import metric_cell, num, pct
from fleetchaos.reports.naming import arm_names
from fleetchaos.results.models import ArmResult, CompareResult, Comparison
from fleetchaos.results.registry import is_rate, lead_metrics

__all__ = ["HEADERS", "headline_table", "usd", "verdict_cell"]

#: The column header of each metric the table can show.
HEADERS = {
    "success_rate": "success rate",
    "common_recovery_rate": "recovery, common set",
    "goodput_per_day": "goodput (tasks / day)",
    "recovery_rate": "own-set recovery (secondary)",
}


def verdict_cell(comparison: Comparison | None) -> str:
    """``+9.8 pp [+5.9, +13.8] better``: a paired difference against the reference, its interval and verdict."""
    if comparison is None:
        return "-"
    mean, (lo, hi) = comparison.mean_difference, ([*comparison.ci, None, None])[:2]
    if mean is None:
        return comparison.verdict
    if is_rate(comparison.metric):
        shown = f"{100 * mean:+.1f} pp"
        interval = f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo is not None and hi is not None else ""
    else:
        shown = f"{mean:+,.1f}"
        interval = f" [{lo:+,.1f}, {hi:+,.1f}]" if lo is not None and hi is not None else ""
    return f"{shown}{interval} {comparison.verdict}"


def usd(value: float | None) -> str:
    """Dollars: whole dollars from $100 up, cents below."""
    if value is None:
        return "-"
    return f"${value:,.0f}" if abs(value) >= 100 else f"${value:,.2f}"


def _cost(arm: ArmResult) -> str:
    """``$3,984 = $71 + $3,913``: cost per run, its model part (tokens and tool calls) and what how its tasks
    ended cost (pages, silent failures, undone tasks, refused requests: every part but the model's)."""
    m = arm.metrics
    total, token, tool = m.get("cost_usd"), m.get("token_cost_usd"), m.get("tool_call_cost_usd")
    if total is None or token is None or tool is None:
        return usd(total)
    return f"{usd(total)} = {usd(token + tool)} + {usd(total - token - tool)}"


def _retries(arm: ArmResult) -> str:
    failed, wasted = arm.metrics.get("failed_retries"), arm.metrics.get("wasted_retries")
    return f"{num(failed, 1)} / {num(wasted, 1)}"


def headline_table(result: CompareResult) -> Block:
    """The headline table of a comparison (the reference arm is the first; its verdict cells read ``reference``)."""
    leads = lead_metrics(result.closed_loop)
    secondary = ("success_rate",) if result.closed_loop else ("recovery_rate",)
    found = {(c.policy, c.errors, c.metric): c for c in result.comparisons}
    reference = result.arms[0] if result.arms else None
    headers = ["arm"]
    for metric in leads:
        headers += [HEADERS[metric], "vs reference"]
    headers += [
        ("success rate, own tasks (secondary)" if result.closed_loop else HEADERS["recovery_rate"]),
        "silent failures",
        "failed / wasted retries per run",
        "cost per run = model + how tasks ended",
    ]
    rows = []
    for arm, name in zip(result.arms, arm_names(result.arms)):
        row = [literal(name)]
        for metric in leads:
            row.append(metric_cell(arm, metric))
            is_reference = arm is reference and len(result.arms) > 1
            row.append("reference" if is_reference else verdict_cell(found.get((arm.policy, arm.errors, metric))))
        row += [
            *(pct(arm.metrics.get(m)) for m in secondary),
            pct(arm.metrics.get("silent_failure_rate")),
            _retries(arm),
            _cost(arm),
        ]
        rows.append(row)
    return TABLE(headers, rows, align_right=1)
