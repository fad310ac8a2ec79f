"""fleetchaos harness: scenarios, policies, runs, the oracle, metrics and statistics.

Public names are loaded lazily so that importing a light module (the result models,
the pytest plugin) does not pull in SimPy or matplotlib, and ``@fleetchaos.tool`` in a
production module costs a few standard-library imports (real-code mode, docs/real-code.md).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ArmResult": "fleetchaos.results.models",
    "Backoff": "fleetchaos.policies.builtins",
    "Bindings": "fleetchaos.real.bindings",
    "BlindRetry": "fleetchaos.policies.builtins",
    "CompareResult": "fleetchaos.results.models",
    "Estimate": "fleetchaos.gates.assertions",
    "RateAssertionError": "fleetchaos.gates.assertions",
    "Route": "fleetchaos.real.bindings",
    "RunResult": "fleetchaos.results.models",
    "Runtime": "fleetchaos.real.runtime",
    "Scenario": "fleetchaos.scenario.load",
    "ScenarioError": "fleetchaos.errors",
    "ScenarioResult": "fleetchaos.testing.suite",
    "StructuredDecisionTree": "fleetchaos.policies.builtins",
    "SweepResult": "fleetchaos.results.models",
    "SweepSpec": "fleetchaos.runs.sweep",
    "UserError": "fleetchaos.errors",
    "assert_rate": "fleetchaos.gates.assertions",
    "check_contract": "fleetchaos.real.contract",
    "compare": "fleetchaos.runs.runner",
    "get_policy": "fleetchaos.policies.registry",
    "load_scenario": "fleetchaos.scenario.load",
    "mean_ci": "fleetchaos.results.stats",
    "open_executor": "fleetchaos.runs.executors",
    "open_store": "fleetchaos.gates.history",
    "paired_difference": "fleetchaos.results.stats",
    "parity": "fleetchaos.real.parity_check",
    "plan_sweep": "fleetchaos.runs.sweep",
    "run_one": "fleetchaos.runs.runner",
    "run_real": "fleetchaos.real.run",
    "run_scenario": "fleetchaos.testing.suite",
    "run_sweep": "fleetchaos.runs.sweep",
    "tool": "fleetchaos.real.decorator",
    "verdict": "fleetchaos.results.stats",
    "wilson": "fleetchaos.results.stats",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - a sorted list, checked by tests


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
