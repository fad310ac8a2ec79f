"""How figures read in report tables: numbers, percentages, intervals, differences and counts."""

from __future__ import annotations

from collections.abc import Iterable

from fleetchaos.reports.naming import policy_label
from fleetchaos.results.models import ArmResult, Proportion
from fleetchaos.results.registry import is_rate


def num(value: float | None, digits: int = 2) -> str:
    """A number with thousands separators and ``digits`` decimals; ``-`` for None."""
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def pct(value: float | None, digits: int = 1) -> str:
    """A proportion as a percentage with ``digits`` decimals; ``-`` for None."""
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def interval(lo: float | None, hi: float | None, percent: bool, digits: int = 1) -> str:
    """`` [low, high]`` (in percent for a rate); empty without an interval."""
    if lo is None or hi is None:
        return ""
    if percent:
        return f" [{100 * lo:.{digits}f}, {100 * hi:.{digits}f}]"
    return f" [{lo:,.{digits}f}, {hi:,.{digits}f}]"


def metric_cell(arm: ArmResult, metric: str, digits: int = 1) -> str:
    """An arm's mean of ``metric`` with its interval, as the registry says to show it."""
    value = arm.metrics.get(metric)
    lo, hi = (arm.ci.get(metric) or [None, None])[:2]
    if is_rate(metric):
        return pct(value, digits) + interval(lo, hi, True, digits)
    return num(value, digits) + interval(lo, hi, False, digits)


def sorted_keys(keys: Iterable[str]) -> list[str]:
    """Keys in numeric order when they are all numbers (worker indices), else in text order."""
    keys = list(keys)
    if keys and all(k.isdigit() for k in keys):
        return sorted(keys, key=int)
    return sorted(keys)


def counts(d: dict[str, int], limit: int = 12) -> str:
    """``key: n`` pairs, most frequent first, at most ``limit`` of them (the rest summed); ``none`` when empty."""
    if not d:
        return "none"
    items = sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{k}: {v}" for k, v in items[:limit])
    if len(items) > limit:
        text += f", and {len(items) - limit} more ({sum(v for _, v in items[limit:])})"
    return text


def diff(metric: str, value: float | None) -> str:
    """A signed paired difference (percentage points for a rate); ``-`` for None."""
    if value is None:
        return "-"
    return f"{100 * value:+.2f} pp" if is_rate(metric) else f"{value:+,.3f}"


def diff_ci(metric: str, ci: list[float | None]) -> str:
    """The interval of a paired difference (percentage points for a rate); ``-`` without one."""
    lo, hi = ([*ci, None, None])[:2]
    if lo is None or hi is None:
        return "-"
    if is_rate(metric):
        return f"[{100 * lo:+.2f}, {100 * hi:+.2f}] pp"
    return f"[{lo:+,.3f}, {hi:+,.3f}]"


def proportion(p: Proportion | None) -> str:
    """A pooled proportion with its Wilson interval and its counts; ``-`` when undefined."""
    if p is None or p.rate is None:
        return "-"
    if p.low is None or p.high is None:  # a results file may carry a rate without its interval
        return f"{100 * p.rate:.1f}% ({p.successes}/{p.trials})"
    return f"{100 * p.rate:.1f}% [{100 * p.low:.1f}, {100 * p.high:.1f}] ({p.successes}/{p.trials})"


def arm_label(arm: ArmResult, sep: str = " on ") -> str:
    """How an arm is named in charts and tables: the policy's own name, then its error format."""
    return f"{policy_label(arm)}{sep}{arm.errors}"


def kind_recovery(arm: ArmResult) -> dict[str, tuple[int, int]]:
    """(recovered, faulted) tasks per kind of first fault, pooled over seeds."""
    faulted = arm.breakdowns.get("faulted_tasks_by_first_fault", {})
    recovered = arm.breakdowns.get("recovered_tasks_by_first_fault", {})
    return {k: (recovered.get(k, 0), n) for k, n in faulted.items()}
