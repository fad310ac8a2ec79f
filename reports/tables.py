"""Terminal tables (rich) for runs and comparisons."""

from __future__ import annotations

from rich.table import Table

from harness.results import CompareResult, RunResult

#: Metrics shown in the comparison table, with their headers and formats.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("recovery_rate", "recovery", "pct"),
    ("silent_failure_rate", "silent fail", "pct"),
    ("wasted_retries", "wasted retries", "num"),
    ("faulted_tasks", "faulted", "num"),
    ("tool_calls", "tool calls", "num"),
    ("redone_steps", "redone steps", "num"),
    ("duplicate_side_effects", "dup effects", "num"),
    ("escalations", "escalations", "num"),
    ("mean_steps_to_recovery", "steps to rec.", "num"),
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


def compare_table(result: CompareResult) -> Table:
    """One row per arm; rates with their confidence intervals."""
    pct = int(round(result.confidence * 100))
    table = Table(
        title=f"{result.scenario}: {len(result.seeds)} seeds, mean per seed ± {pct}% CI half-width",
        header_style="bold",
    )
    table.add_column("policy")
    table.add_column("errors")
    for _, header, _ in COLUMNS:
        table.add_column(header, justify="right")
    for arm in result.arms:
        cells = []
        for key, _, kind in COLUMNS:
            text = fmt(arm.metrics.get(key), kind)
            if key in ("recovery_rate", "silent_failure_rate", "wasted_retries"):
                text += fmt_ci(arm.ci.get(key, [None, None]), kind)
            cells.append(text)
        table.add_row(arm.policy, arm.errors, *cells)
    return table


def run_table(result: RunResult) -> Table:
    """Every metric of one run."""
    table = Table(title=f"{result.scenario}: {result.policy} on {result.errors} errors, seed {result.seed}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result.metrics.items():
        kind = "pct" if key.endswith("_rate") else "num"
        table.add_row(key, fmt(value, kind))
    return table
