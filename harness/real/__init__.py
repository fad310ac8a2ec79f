"""Real-code mode: one scenario file and seed drive faults into a team's real tools and orchestrator.

The environment stays simulated (the fault plan, the keyed draws, a twin of the fleet's
shared state, the ground-truth ledger); the agent is the team's code.  Public names load
lazily: ``import fleetchaos.real`` (and ``@fleetchaos.tool`` in production modules) pulls
in neither SimPy nor the runtime.  docs/real-code.md is the tutorial.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Bindings": "fleetchaos.real.bindings",
    "ContractReport": "fleetchaos.real.contract",
    "Fault": "fleetchaos.real.faults",
    "InjectedConnectionError": "fleetchaos.real.faults",
    "InjectedFault": "fleetchaos.real.faults",
    "InjectedTimeout": "fleetchaos.real.faults",
    "InjectionReport": "fleetchaos.real.injections",
    "NotInjectedError": "fleetchaos.real.injections",
    "ParityReport": "fleetchaos.real.parity_check",
    "RealRun": "fleetchaos.real.run",
    "Route": "fleetchaos.real.bindings",
    "Runtime": "fleetchaos.real.runtime",
    "SIM_ONLY": "fleetchaos.real.runtime",
    "TaskInput": "fleetchaos.real.scope",
    "UnboundCall": "fleetchaos.real.faults",
    "VirtualClock": "fleetchaos.real.clocks",
    "check_contract": "fleetchaos.real.contract",
    "parity": "fleetchaos.real.parity_check",
    "run_real": "fleetchaos.real.run",
    "tool": "fleetchaos.real.decorator",
}

__all__ = [  # noqa: PLE0604 - ruff's order (constants, classes, functions), checked by tests
    "SIM_ONLY",
    *sorted(name for name in _EXPORTS if name != "SIM_ONLY"),
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fleetchaos.real' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
