"""The root package: a small, lazy public API that a team's policy module and suite can import cheaply."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
import types
from pathlib import Path

import patience
import pytest

import fleetchaos
import fleetchaos.policies

API_DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"

HEAVY = ("simpy", "matplotlib", "scipy", "hypothesis", "faker", "tenacity")

#: The whole public surface of the root, pinned: a name added or dropped is a decision, made here too.
PUBLIC = [
    "Action", "ArmResult", "Bindings", "CompareJob", "CompareResult", "DeadLetter", "Escalate", "Estimate", "GiveUp",
    "Observation", "RateAssertionError", "RecoveryPolicy", "RefreshCredentials", "Remediate", "Reroute", "Retry",
    "RobustnessJob", "Rollback", "Route", "RunResult", "Runtime", "Scenario", "ScenarioError", "ScenarioResult",
    "SweepJob", "SweepResult", "SweepSpec", "TaskHistory", "TuneJob", "UseAlternative", "UserError", "assert_rate", "check_contract", "compare",
    "get_policy", "load_scenario", "parity", "run_one", "run_real", "run_scenario", "run_sweep", "tool",
]  # fmt: skip

#: What a team's policy module uses from fleetchaos.policies: import and touch each, as it would.
EVERYDAY_POLICIES = (
    "Policy", "retry_if_category", "stop_after_attempt", "wait_full_jitter", "StructuredDecisionTree", "BlindRetry",
    "Controlled", "AdaptiveThrottle", "RecoveryMatrix", "from_tenacity", "TenacityPolicy", "exception_for",
)  # fmt: skip


def _loaded_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    out = patience.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cpu_s=60)
    return json.loads(out.stdout)


def test_the_public_surface_is_small_and_pinned():
    """The root offers the entry points, the policy interface, results, suites and real-code mode: nothing else."""
    assert fleetchaos.__all__ == PUBLIC
    assert len(PUBLIC) <= 50
    assert dir(fleetchaos) == PUBLIC


def test_nothing_private_or_a_module_leaks():
    """No name is private, none is a module, and each is the object its defining module documents."""
    for name in fleetchaos.__all__:
        assert not name.startswith("_"), name
        value = getattr(fleetchaos, name)
        assert not isinstance(value, types.ModuleType), name
        module = importlib.import_module(fleetchaos._EXPORTS[name])
        assert value is getattr(module, name), name
        assert name in getattr(module, "__all__", (name,)), f"{name} is not public in {module.__name__}"


def test_every_public_name_is_documented():
    """Each name has a docstring of its own (a type alias aside) and a line in docs/api.md, which lists no other."""
    text = API_DOCS.read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(\w+)` \| \S", text, flags=re.MULTILINE)
    assert sorted(listed) == sorted(fleetchaos.__all__)
    for name in fleetchaos.__all__:
        value = getattr(fleetchaos, name)
        if isinstance(value, types.UnionType):
            continue  # a type alias (Action) has no docstring of its own: docs/api.md says what it is
        own = value.__dict__.get("__doc__") if isinstance(value, type) else value.__doc__
        assert own and own.strip(), f"{name} has no docstring of its own"


def test_every_name_the_api_page_sends_elsewhere_exists():
    """The dotted names docs/api.md gives for what left the root (fleetchaos.results.stats, ...) resolve."""
    text = API_DOCS.read_text(encoding="utf-8")
    dotted = set(re.findall(r"`(fleetchaos(?:\.\w+)+)`", text))
    assert len(dotted) >= 8
    for path in sorted(dotted):
        parts = path.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                target = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attr in parts[cut:]:
                target = getattr(target, attr)
            break


def test_importing_fleetchaos_loads_nothing_heavy():
    """`import fleetchaos` (and reading __all__) loads none of SimPy, matplotlib, SciPy, hypothesis, Faker, tenacity."""
    assert _loaded_after("import fleetchaos; fleetchaos.__all__") == []


def test_the_policy_interface_and_everyday_policies_load_nothing_heavy():
    """The policy interface, results, assert_rate and the policies a team's module uses stay light."""
    heavy = ("compare", "run_one", "run_sweep", "SweepSpec", "run_scenario", "parity")  # they import the simulator
    light = [n for n in PUBLIC if n not in heavy and not n.endswith("Job")]
    code = (
        f"import fleetchaos, fleetchaos.policies\nfor n in {light!r}: getattr(fleetchaos, n)\n"
        f"for n in {EVERYDAY_POLICIES!r}: getattr(fleetchaos.policies, n)"
    )
    assert _loaded_after(code) == []


def test_an_unknown_name_is_an_attribute_error():
    """A misspelt name, or one that lives in a subpackage, raises AttributeError naming it, as a module would."""
    with pytest.raises(AttributeError, match="'no_such_name'"):
        fleetchaos.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="'wilson'"):
        fleetchaos.wilson  # noqa: B018
    assert inspect.ismodule(fleetchaos.policies)  # a subpackage stays reachable by its own name
