"""fleetchaos: chaos and fault injection for fleets of LLM agents.

The public API, loaded lazily: importing ``fleetchaos`` loads no SimPy, matplotlib, SciPy,
hypothesis or Faker; each name imports its module on first use.

* the policy interface: :class:`RecoveryPolicy`, :class:`Observation`, :class:`TaskHistory`
  and the nine action types (``Retry``, ``Reroute``, ``RefreshCredentials``,
  ``UseAlternative``, ``Remediate``, ``Escalate``, ``Rollback``, ``DeadLetter``, ``GiveUp``);
* policies: the built-ins, the building blocks (``retry_if_*``, ``stop_*``, ``wait_*``,
  ``instead_*`` joined into a :class:`Policy`), the retry controls (budgets, throttles,
  circuit breakers, :class:`Controlled`), the presets, :class:`TransportRetry` layers and
  :func:`get_policy`; everything :mod:`fleetchaos.policies` exports but its registry plumbing;
* running: :func:`load_scenario`, :func:`run_one`, :func:`compare`, sweeps and executors;
* results: the result models and statistics;
* suites: :func:`assert_rate`, :func:`run_scenario`, the run history, and
  :mod:`fleetchaos.strategies` (hypothesis strategies for fault schedules and worlds);
* real-code mode (docs/real-code.md): :func:`tool`, :class:`Bindings`, :class:`Route`,
  :class:`Runtime`, :func:`run_real`, :func:`check_contract`, :func:`parity`.  ``@fleetchaos.tool``
  in a production module costs a few standard-library imports.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from fleetchaos import policies as _policies

#: Names of the package's own modules, by the module that defines them.
_OWN: dict[str, tuple[str, ...]] = {
    "fleetchaos.errors": ("ScenarioError", "UserError"),
    "fleetchaos.gates.assertions": ("Estimate", "RateAssertionError", "assert_rate"),
    "fleetchaos.gates.history": ("open_store",),
    "fleetchaos.real.bindings": ("Bindings", "Route"),
    "fleetchaos.real.contract": ("check_contract",),
    "fleetchaos.real.decorator": ("tool",),
    "fleetchaos.real.parity_check": ("parity",),
    "fleetchaos.real.run": ("run_real",),
    "fleetchaos.real.runtime": ("Runtime",),
    "fleetchaos.results.models": ("ArmResult", "CompareResult", "RunResult", "SweepResult"),
    "fleetchaos.results.stats": ("mean_ci", "paired_difference", "verdict", "wilson"),
    "fleetchaos.runs.executors": ("open_executor",),
    "fleetchaos.runs.runner": ("compare", "run_one"),
    "fleetchaos.runs.sweep": ("SweepSpec", "plan_sweep", "run_sweep"),
    "fleetchaos.scenario.load": ("Scenario", "load_scenario", "to_yaml"),
    "fleetchaos.sim.observation": (
        "ACTION_TYPES",
        "Action",
        "DeadLetter",
        "Escalate",
        "GiveUp",
        "Observation",
        "RecoveryPolicy",
        "RefreshCredentials",
        "Remediate",
        "Reroute",
        "Retry",
        "Rollback",
        "TaskHistory",
        "UseAlternative",
    ),
    "fleetchaos.sim.transport": ("TransportRetry",),
    "fleetchaos.testing.suite": ("ScenarioResult", "run_scenario"),
}

#: Registry plumbing of :mod:`fleetchaos.policies` that stays there (names for tools, not for policies).
_POLICY_PLUMBING = frozenset(
    {"BUILT_IN", "DRIVER_ATTRIBUTES", "ENTRY_POINT", "ENTRY_POINT_GROUP", "IMPORT_PATH", "policy_entry_points"}
)

#: Submodules offered as attributes: ``fleetchaos.strategies`` is the hypothesis strategies module.
_SUBMODULES = {"strategies": "fleetchaos.testing.strategies"}

_EXPORTS: dict[str, str] = {
    **{name: module for name, module in _policies._EXPORTS.items() if name not in _POLICY_PLUMBING},
    **{name: module for module, names in _OWN.items() for name in names},
}


def _ruff_order(name: str) -> tuple[int, list[int | str]]:
    """The order ruff keeps a literal ``__all__`` in: CONSTANTS, then Classes, then the rest, numbers naturally."""
    kind = 0 if len(name) > 1 and name.upper() == name else 1 if name[:1].isupper() else 2
    return kind, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


__all__ = sorted([*_EXPORTS, *_SUBMODULES], key=_ruff_order)  # noqa: PLE0605 - computed, checked by test_structure


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        return getattr(importlib.import_module(module), name)
    if name in _SUBMODULES:
        return importlib.import_module(_SUBMODULES[name])
    raise AttributeError(f"module 'fleetchaos' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
