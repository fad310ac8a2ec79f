"""fleetchaos harness: scenarios, policies, runs, the oracle, metrics and statistics.

Public names are loaded lazily so that importing a light module (the result models,
the future pytest plugin) does not pull in SimPy or matplotlib.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ArmResult": "harness.results",
    "Backoff": "harness.policies",
    "BlindRetry": "harness.policies",
    "CompareResult": "harness.results",
    "Estimate": "harness.assertions",
    "RateAssertionError": "harness.assertions",
    "RunResult": "harness.results",
    "Scenario": "harness.scenario",
    "ScenarioError": "harness.errors",
    "ScenarioResult": "harness.suite",
    "StructuredDecisionTree": "harness.policies",
    "SweepResult": "harness.results",
    "SweepSpec": "harness.sweep",
    "UserError": "harness.errors",
    "assert_rate": "harness.assertions",
    "compare": "harness.runner",
    "get_policy": "harness.policies",
    "load_scenario": "harness.scenario",
    "mean_ci": "harness.stats",
    "open_executor": "harness.executors",
    "open_store": "harness.history",
    "paired_difference": "harness.stats",
    "plan_sweep": "harness.sweep",
    "run_one": "harness.runner",
    "run_scenario": "harness.suite",
    "run_sweep": "harness.sweep",
    "verdict": "harness.stats",
    "wilson": "harness.stats",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
