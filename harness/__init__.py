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
    "RunResult": "harness.results",
    "Scenario": "harness.scenario",
    "ScenarioError": "harness.errors",
    "StructuredDecisionTree": "harness.policies",
    "UserError": "harness.errors",
    "compare": "harness.runner",
    "get_policy": "harness.policies",
    "load_scenario": "harness.scenario",
    "mean_ci": "harness.stats",
    "run_one": "harness.runner",
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
