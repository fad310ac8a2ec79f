"""fleetchaos: chaos and fault injection for fleets of LLM agents.

A small public API, loaded lazily: importing ``fleetchaos`` loads no SimPy, matplotlib,
SciPy, hypothesis or Faker; each name imports its module on first use.  docs/api.md lists
every name with one line each; everything else is public in its subpackage
(:mod:`fleetchaos.policies` for the built-in policies, building blocks, controls and
presets, :mod:`fleetchaos.results.stats` for the statistics, :mod:`fleetchaos.gates` for
the run history and gates, :mod:`fleetchaos.testing.strategies` for hypothesis strategies).

* scenarios: :class:`Scenario`, :func:`load_scenario`, :class:`ScenarioError` and its base
  :class:`UserError`;
* running: :func:`run_one`, :func:`compare`, :class:`SweepSpec` and :func:`run_sweep`; the
  commands as jobs, with the command line's options as fields (:class:`CompareJob`,
  :class:`SweepJob`, :class:`TuneJob`, :class:`RobustnessJob`);
* the policy interface: :class:`RecoveryPolicy`, :class:`Observation`, :class:`TaskHistory`,
  :class:`Action` and the nine action types (:class:`Retry`, :class:`Reroute`,
  :class:`RefreshCredentials`, :class:`UseAlternative`, :class:`Remediate`, :class:`Escalate`,
  :class:`Rollback`, :class:`DeadLetter`, :class:`GiveUp`); :func:`get_policy` names a policy;
* results: :class:`RunResult`, :class:`ArmResult`, :class:`CompareResult`, :class:`SweepResult`;
* suites: :func:`run_scenario` and its :class:`ScenarioResult`, :func:`assert_rate` judging an
  :class:`Estimate` (:class:`RateAssertionError` when it fails);
* real-code mode (docs/real-code.md): :func:`tool`, :class:`Bindings`, :class:`Route`,
  :class:`Runtime`, :func:`run_real`, :func:`check_contract`, :func:`parity`.  ``@fleetchaos.tool``
  in a production module costs a few standard-library imports.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

#: The public names, by the module that defines them.
_OWN: dict[str, tuple[str, ...]] = {
    "fleetchaos.cli.compare_job": ("CompareJob",),
    "fleetchaos.cli.robustness_job": ("RobustnessJob",),
    "fleetchaos.cli.sweep_job": ("SweepJob",),
    "fleetchaos.cli.tune_job": ("TuneJob",),
    "fleetchaos.errors": ("ScenarioError", "UserError"),
    "fleetchaos.gates.assertions": ("Estimate", "RateAssertionError", "assert_rate"),
    "fleetchaos.policies.registry": ("get_policy",),
    "fleetchaos.real.bindings": ("Bindings", "Route"),
    "fleetchaos.real.contract": ("check_contract",),
    "fleetchaos.real.decorator": ("tool",),
    "fleetchaos.real.parity_check": ("parity",),
    "fleetchaos.real.run": ("run_real",),
    "fleetchaos.real.runtime": ("Runtime",),
    "fleetchaos.results.models": ("ArmResult", "CompareResult", "RunResult", "SweepResult"),
    "fleetchaos.runs.runner": ("compare", "run_one"),
    "fleetchaos.runs.sweep": ("SweepSpec", "run_sweep"),
    "fleetchaos.scenario.load": ("Scenario", "load_scenario"),
    "fleetchaos.sim.observation": (
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
    "fleetchaos.testing.suite": ("ScenarioResult", "run_scenario"),
}

_EXPORTS: dict[str, str] = {name: module for module, names in _OWN.items() for name in names}


def _ruff_order(name: str) -> tuple[int, list[int | str]]:
    """The order ruff keeps a literal ``__all__`` in: CONSTANTS, then Classes, then the rest, numbers naturally."""
    kind = 0 if len(name) > 1 and name.upper() == name else 1 if name[:1].isupper() else 2
    return kind, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


__all__ = sorted(_EXPORTS, key=_ruff_order)  # noqa: PLE0605 - computed, checked by test_structure


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module 'fleetchaos' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
