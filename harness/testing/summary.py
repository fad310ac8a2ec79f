"""The plugin's terminal summary: one row per scenario run, as plain data, and the table they make.

Rows cross pytest-xdist's wire on test reports, so they are plain dicts of strings.  Light to
import: the standard library only (the figures' formatting is imported when a row is made).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleetchaos.testing.suite import ScenarioResult

__all__ = ["COLUMNS", "summary_lines", "summary_row"]


def _interval(est) -> str:
    from fleetchaos.gates.assertions import fmt_number

    if est.value is None:
        return "n/a"
    if est.has_interval:
        return f"{fmt_number(est.value)} [{fmt_number(est.low)}, {fmt_number(est.high)}]"
    return fmt_number(est.value)


def summary_row(result: ScenarioResult, verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """One line of the terminal summary, as plain data (it crosses xdist's wire)."""
    from fleetchaos.gates.assertions import seeds_text

    if not verdicts:
        baseline = "-"
    else:
        bad = [v["metric"] for v in verdicts if v["regressed"]]
        new = any(v["metric"] == "new arm" for v in verdicts)
        baseline = "regressed: " + ", ".join(bad) if bad else ("new arm, not judged" if new else "ok")
    errors, _ = result.policy_errors
    judged = result.expectations
    failed = ", ".join(dict.fromkeys(r.metric for r in judged if not r.passed))
    expect = "-" if not judged else f"failed: {failed}" if failed else f"ok ({len(judged)})"
    return {
        "scenario": result.scenario,
        "policy": result.policy,
        "errors": result.errors,
        "seeds": seeds_text(result.seeds),
        "success": _interval(result.success_rate),
        "recovery": _interval(result.recovery_rate),
        "silent": _interval(result.silent_failure_rate),
        "wasted": _interval(result.wasted_retries),
        "policy_errors": f"{errors} tasks" if errors else "0",
        "baseline": baseline,
        "expect": expect,
        "replays": list(result.replay),
    }


COLUMNS = (
    ("test", "test"),
    ("outcome", "outcome"),
    ("scenario", "scenario"),
    ("policy", "policy"),
    ("errors", "errors"),
    ("seeds", "seeds"),
    ("success", "success rate"),
    ("recovery", "recovery rate"),
    ("silent", "silent failures"),
    ("wasted", "wasted retries"),
    ("policy_errors", "policy errors"),
    ("baseline", "baseline"),
    ("expect", "expect"),
    ("mode", "mode"),
)


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The summary table as text lines (one header, one line per scenario run)."""
    table = [[h for _, h in COLUMNS]] + [[str(r.get(k, "")) for k, _ in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines
