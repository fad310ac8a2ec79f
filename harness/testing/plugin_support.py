"""The pytest plugin's plain-data helpers: checks of the marker's arguments and ini options, and summary rows.

Kept apart from :mod:`fleetchaos.testing.pytest_plugin` (the hooks and fixtures).  Light to
import: pytest and the standard library only; a row is plain data, since pytest-xdist
carries it from a worker to the controller.
"""

from __future__ import annotations

from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fleetchaos.testing.suite import ScenarioResult

__all__ = [
    "COLUMNS",
    "MARKER_KEYS",
    "ini_confidence",
    "ini_seeds",
    "marker_problem",
    "row_of",
    "summary_lines",
]

#: Keyword arguments the ``fleetchaos`` marker accepts.
MARKER_KEYS = ("scenario", "seeds", "policy", "errors", "confidence", "allow_policy_errors")

COLUMNS = (
    ("test", "test"),
    ("outcome", "outcome"),
    ("scenario", "scenario"),
    ("policy", "policy"),
    ("errors", "errors"),
    ("seeds", "seeds"),
    ("recovery", "recovery rate"),
    ("silent", "silent failures"),
    ("wasted", "wasted retries"),
    ("policy_errors", "policy errors"),
    ("baseline", "baseline"),
)


def _is_scenario(value: object) -> bool:
    return type(value).__name__ == "Scenario" and hasattr(value, "workload")


def marker_problem(key: str, value: object) -> str | None:
    """What is wrong with one argument of the marker (or of ``fleetchaos.run``), or None.

    Every mistake gets one sentence naming the argument, the value, the rule and the fix,
    so a typo in a suite fails its test with a message, never a traceback.
    """
    if value is None:
        return None
    if key == "scenario":
        if isinstance(value, str) and not value.strip():
            return "scenario='' is empty: give a catalogue name such as 'default' or a path to a .yaml file"
        if not isinstance(value, (str, Path)) and not _is_scenario(value):
            return f"scenario={value!r}: expected a catalogue name, a path to a .yaml/.json file or a Scenario"
    elif key in ("policy", "errors"):
        if not isinstance(value, str) or not value.strip():
            what = (
                "a built-in policy name or an import path pkg.module:Policy" if key == "policy" else "an error format"
            )
            return f"{key}={value!r}: expected {what} (a non-empty string)"
    elif key == "seeds":
        whole = isinstance(value, int) and not isinstance(value, bool)
        listed = isinstance(value, (list, tuple)) and all(isinstance(s, int) and not isinstance(s, bool) for s in value)
        if not (whole or listed):
            return f"seeds={value!r}: expected a count (5) or a list of whole-number seeds ([1, 2, 3])"
    elif key == "confidence":
        if isinstance(value, bool) or not isinstance(value, Real) or not 0.5 <= float(value) < 1.0:
            return f"confidence={value!r}: expected a level in [0.5, 1) such as 0.95"
    elif key == "allow_policy_errors" and not isinstance(value, bool):
        return f"allow_policy_errors={value!r}: expected True or False"
    return None


def ini_seeds(config: pytest.Config) -> int | list[int]:
    """The ini ``fleetchaos_seeds`` (a count or a comma-separated list); a mistake is a usage error."""
    raw = str(config.getini("fleetchaos_seeds")).strip()
    try:
        if "," in raw:
            return [int(s) for s in raw.split(",") if s.strip()]
        return int(raw)
    except ValueError:
        raise pytest.UsageError(
            f"ini fleetchaos_seeds: expected a count or a comma-separated list of seeds, got {raw!r}"
        ) from None


def ini_confidence(config: pytest.Config) -> float:
    """The ini ``fleetchaos_confidence``; a level outside [0.5, 1) is a usage error."""
    raw = str(config.getini("fleetchaos_confidence")).strip()
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0.5 <= value < 1.0:
        raise pytest.UsageError(f"ini fleetchaos_confidence: expected a level in [0.5, 1) such as 0.95, got {raw!r}")
    return value


def _interval(est) -> str:
    from fleetchaos.gates.assertions import fmt_number

    if est.value is None:
        return "n/a"
    if est.has_interval:
        return f"{fmt_number(est.value)} [{fmt_number(est.low)}, {fmt_number(est.high)}]"
    return fmt_number(est.value)


def row_of(result: ScenarioResult, verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """One line of the terminal summary, as plain data (it crosses xdist's wire)."""
    from fleetchaos.gates.assertions import seeds_text

    if not verdicts:
        baseline = "-"
    else:
        bad = [v["metric"] for v in verdicts if v["regressed"]]
        baseline = "regressed: " + ", ".join(bad) if bad else "ok"
    errors, _ = result.policy_errors
    return {
        "scenario": result.scenario,
        "policy": result.policy,
        "errors": result.errors,
        "seeds": seeds_text(result.seeds),
        "recovery": _interval(result.recovery_rate),
        "silent": _interval(result.silent_failure_rate),
        "wasted": _interval(result.wasted_retries),
        "policy_errors": f"{errors} tasks" if errors else "0",
        "baseline": baseline,
        "replays": list(result.replay),
    }


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The summary table as text lines (one header, one line per scenario run)."""
    table = [[h for _, h in COLUMNS]] + [[str(r.get(k, "")) for k, _ in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines
