"""The root package: a small, lazy public API that a team's policy module and suite can import cheaply."""

from __future__ import annotations

import json
import sys

import patience

import fleetchaos
import fleetchaos.policies

HEAVY = ("simpy", "matplotlib", "scipy", "hypothesis", "faker", "tenacity")

#: What a team's policy module and chaos suite use: import and touch each, as they would.
EVERYDAY = (
    "RecoveryPolicy", "Observation", "TaskHistory", "Retry", "Reroute", "RefreshCredentials", "UseAlternative",
    "Remediate", "Escalate", "Rollback", "DeadLetter", "GiveUp", "Policy", "retry_if_category", "stop_after_attempt",
    "wait_full_jitter", "StructuredDecisionTree", "BlindRetry", "Controlled", "AdaptiveThrottle",
    "TransportRetry", "RecoveryMatrix", "get_policy", "assert_rate", "RunResult", "CompareResult", "from_tenacity",
    "TenacityPolicy", "exception_for",
)  # fmt: skip


def _loaded_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    out = patience.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cpu_s=60)
    return json.loads(out.stdout)


def test_importing_fleetchaos_loads_nothing_heavy():
    """`import fleetchaos` (and reading __all__) loads none of SimPy, matplotlib, SciPy, hypothesis, Faker, tenacity."""
    assert _loaded_after("import fleetchaos; fleetchaos.__all__") == []


def test_the_everyday_names_load_nothing_heavy():
    """The policy interface, built-ins, blocks, controls, transport layers, assert_rate and result models stay light."""
    assert _loaded_after(f"import fleetchaos\nfor n in {EVERYDAY!r}: getattr(fleetchaos, n)") == []


def test_every_public_name_resolves_to_its_defining_module():
    """Each name in __all__ loads, and is the very object of the module it is documented to come from."""
    import importlib

    for name in fleetchaos.__all__:
        value = getattr(fleetchaos, name)
        if name in fleetchaos._SUBMODULES:
            assert value is importlib.import_module(fleetchaos._SUBMODULES[name])
        else:
            assert value is getattr(importlib.import_module(fleetchaos._EXPORTS[name]), name)


def test_the_root_offers_every_policy_name_but_registry_plumbing():
    """A policy, block or control added to fleetchaos.policies is public at the root too; only registry plumbing stays."""
    missing = set(fleetchaos.policies.__all__) - set(fleetchaos.__all__)
    assert missing == set(fleetchaos._POLICY_PLUMBING)
    assert set(EVERYDAY) <= set(fleetchaos.__all__)


def test_strategies_are_reachable_from_the_root():
    """fleetchaos.strategies is the hypothesis strategies module (loaded on first use)."""
    from fleetchaos.testing import strategies

    assert fleetchaos.strategies is strategies
    assert callable(fleetchaos.strategies.scenarios)


def test_an_unknown_name_is_an_attribute_error():
    """A misspelt name raises AttributeError naming it, as a module would."""
    import pytest

    with pytest.raises(AttributeError, match="'no_such_name'"):
        fleetchaos.no_such_name  # noqa: B018
