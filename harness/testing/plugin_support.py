"""The pytest plugin's plain-data helpers: checks of the marker's arguments and ini options.

Kept apart from :mod:`fleetchaos.testing.pytest_plugin` (the hooks and fixtures); the summary
rows are :mod:`fleetchaos.testing.summary`.  Light to import: pytest and the standard library only.
"""

from __future__ import annotations

from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    pass

__all__ = ["MARKER_KEYS", "ini_confidence", "ini_seeds", "marker_config", "marker_problem"]

#: Keyword arguments the ``fleetchaos`` marker accepts (``bindings``, ``tasks`` and ``clock`` are read by
#: ``fleetchaos_real``).
MARKER_KEYS = (
    "scenario",
    "seeds",
    "policy",
    "errors",
    "confidence",
    "bindings",
    "tasks",
    "clock",
    "allow_policy_errors",
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


def marker_config(node: pytest.Item) -> dict[str, Any]:
    """The test's marker arguments, the closest marker winning key by key."""
    merged: dict[str, Any] = {}
    for mark in reversed(list(node.iter_markers("fleetchaos"))):
        if len(mark.args) > 1:
            pytest.fail(
                f"@pytest.mark.fleetchaos: at most one positional argument (the scenario), got {mark.args!r}",
                pytrace=False,
            )
        unknown = sorted(set(mark.kwargs) - set(MARKER_KEYS))
        if unknown:
            pytest.fail(
                f"@pytest.mark.fleetchaos: unknown argument(s) {', '.join(unknown)} (known: {', '.join(MARKER_KEYS)})",
                pytrace=False,
            )
        if mark.args:
            merged["scenario"] = mark.args[0]
        merged.update(mark.kwargs)
    for key, value in merged.items():
        problem = marker_problem(key, value)
        if problem is not None:
            pytest.fail(f"@pytest.mark.fleetchaos: {problem}", pytrace=False)
    return merged
