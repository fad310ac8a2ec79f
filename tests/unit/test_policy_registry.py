"""The policy registry: built-ins, entry points of installed packages, descriptions, and the docs cookbook.

Installed packages are simulated with ``*.dist-info`` folders on ``sys.path`` (what pip writes),
so ``importlib.metadata`` discovers their entry points exactly as it would after an install.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
import types
from pathlib import Path

import fake_site
import pytest

from fleetchaos.policies import (
    BUILT_IN,
    DRIVER_ATTRIBUTES,
    ENTRY_POINT,
    ENTRY_POINT_GROUP,
    IMPORT_PATH,
    POLICIES,
    PolicyLookupError,
    StructuredDecisionTree,
    describe_policy,
    get_policy,
    list_policies,
    policy_entry_points,
    policy_names,
    suggest,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "policies.md"

POLICY_MODULE = '''
from dataclasses import dataclass

from fleetchaos.sim.observation import Escalate


@dataclass(frozen=True)
class Mine:
    """Escalate every failure at once.

    A second paragraph with details.
    """

    reason: str = "not mine to fix"
    guardrail: bool = True
    name: str = "mine"

    def decide(self, observation, history):
        return Escalate(self.reason)

    def observe(self, observation, shared, now_s):
        pass


class NeedsArgs:
    name = "needs-args"

    def __init__(self, x):
        self.x = x

    def decide(self, observation, history):
        return Escalate()


NOT_A_POLICY = 42
'''


def install(site: Path, dist: str, entries: dict[str, str], modules: dict[str, str] | None = None) -> None:
    """Write what installing package ``dist`` would, registering ``entries`` in this registry's group."""
    fake_site.install(site, dist, ENTRY_POINT_GROUP, entries, modules)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A fresh site folder on sys.path; modules it adds are forgotten afterwards."""
    yield from fake_site.site_folder(tmp_path, monkeypatch, "fc_ep_")


@pytest.fixture
def installed(site):
    """One package, fc-demo, registering a good policy, broken ones, and one shadowed by a built-in."""
    install(
        site,
        "fc_demo",
        {
            "mine": "fc_ep_policies:Mine",
            "missing-module": "fc_ep_no_such_module:Policy",
            "missing-attr": "fc_ep_policies:Nope",
            "needs-args": "fc_ep_policies:NeedsArgs",
            "not-a-policy": "fc_ep_policies:NOT_A_POLICY",
            "structured": "fc_ep_policies:Mine",
        },
        {"fc_ep_policies": POLICY_MODULE},
    )
    return site


# -- discovery and lookup ------------------------------------------------------------------


def test_entry_points_are_discovered_without_importing_them(installed):
    """Listing names reads metadata only: the registering module is imported when its policy is asked for."""
    assert set(policy_entry_points()) == {
        "mine",
        "missing-module",
        "missing-attr",
        "needs-args",
        "not-a-policy",
        "structured",
    }
    names = policy_names()
    assert names[: len(POLICIES)] == list(POLICIES) and "mine" in names and names.count("structured") == 1
    assert "fc_ep_policies" not in sys.modules
    policy = get_policy("mine")
    assert type(policy).__name__ == "Mine" and policy.decide(None, None).reason == "not mine to fix"
    assert "fc_ep_policies" in sys.modules


def test_built_in_names_win_over_entry_points(installed):
    """An entry point named like a built-in is never loaded for that name."""
    assert isinstance(get_policy("structured"), StructuredDecisionTree)
    assert "fc_ep_policies" not in sys.modules


@pytest.mark.parametrize(
    "name, fragments",
    [
        ("missing-module", ["cannot load it (ModuleNotFoundError: No module named 'fc_ep_no_such_module')"]),
        ("missing-attr", ["cannot load it (AttributeError"]),
        ("needs-args", ["fc_ep_policies:NeedsArgs() failed (TypeError", "must build with no arguments"]),
        ("not-a-policy", ["fc_ep_policies:NOT_A_POLICY has no decide(observation, history) method"]),
    ],
)
def test_broken_entry_point_is_one_clear_lookup_error(installed, name, fragments):
    """Each way an entry point can be broken names the policy, the entry point, the package, what failed and the fix."""
    with pytest.raises(PolicyLookupError) as info:
        get_policy(name)
    message = str(info.value)
    assert message.startswith(f"policy {name!r} (entry point {name} = ")
    assert "of package fc_demo" in message
    assert f'[project.entry-points."{ENTRY_POINT_GROUP}"]' in message and "reinstall" in message
    for fragment in fragments:
        assert fragment in message
    assert "\n" not in message


def test_a_name_two_packages_register_is_refused(installed):
    """Two installed packages registering one name: refused, naming both, instead of picking by install order."""
    install(installed, "fc_other", {"mine": "fc_ep_policies:Mine"})
    with pytest.raises(PolicyLookupError) as info:
        get_policy("mine")
    message = str(info.value)
    assert "registered as an entry point by several installed packages" in message
    assert "fc_demo (fc_ep_policies:Mine)" in message and "fc_other (fc_ep_policies:Mine)" in message


def test_unknown_name_lists_built_ins_and_entry_points(installed):
    """An unknown name lists the built-ins, the installed entry points and the import-path form."""
    with pytest.raises(PolicyLookupError) as info:
        get_policy("mien")
    message = str(info.value)
    assert ", ".join(sorted(POLICIES)) in message
    assert "an installed entry point (mine, missing-attr, missing-module, needs-args, not-a-policy)" in message
    assert "mypkg.policies:MyPolicy" in message
    assert suggest("mien") == "mine" and suggest("structurd") == "structured" and suggest("zzzzzz") is None


def test_no_entry_points_installed_keeps_the_plain_message(monkeypatch):
    """Without installed entry points the message does not mention them."""
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: ())
    with pytest.raises(PolicyLookupError) as info:
        get_policy("nope")
    assert "entry point" not in str(info.value)
    assert policy_names() == list(POLICIES)


# -- descriptions --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(POLICIES))
def test_every_built_in_describes_itself(name):
    """Every built-in (presets included) has a description, its origin and its parameters with their values."""
    info = describe_policy(name)
    policy = POLICIES[name]()
    assert info.source == BUILT_IN and info.origin.endswith(type(policy).__qualname__)
    assert info.description and "\n" not in info.description
    if dataclasses.is_dataclass(policy):
        fields = [f.name for f in dataclasses.fields(policy) if f.name != "name"]
        assert list(info.parameters) == fields
        assert all(info.parameters[f] == getattr(policy, f) for f in fields)


def test_description_of_an_entry_point(installed):
    """An entry point's description: source, package, first paragraph, details, parameters and driver attributes."""
    info = describe_policy("mine")
    assert info.source == ENTRY_POINT and info.origin == "fc_ep_policies:Mine (package fc_demo)"
    assert info.description == "Escalate every failure at once."
    assert info.details == "A second paragraph with details."
    assert info.parameters == {"reason": "not mine to fix", "guardrail": True}
    assert info.driver_attributes == {"guardrail": True, "observe": "method fc_ep_policies:Mine.observe"}
    assert info.to_dict()["parameters"] == {"reason": "not mine to fix", "guardrail": True}


def test_description_of_a_blocks_recipe():
    """A fleetchaos.policies.blocks.Policy shows its flattened recipe, and its parts as parameters (as reprs in JSON)."""
    info = describe_policy("fleetchaos.policies.blocks:Policy")
    assert info.source == IMPORT_PATH and info.origin == "fleetchaos.policies.blocks:Policy"
    assert info.recipe.startswith("Policy(name='composed', retry=retry_always(), stop=stop_after_attempt(4)")
    assert info.to_dict()["parameters"]["stop"] == "stop_after_attempt(4)"


def test_list_goes_on_past_broken_entry_points(installed):
    """The list holds every built-in, then every entry point: broken ones with their error, shadowed ones flagged."""
    infos = {i.name if i.source == BUILT_IN else f"ep:{i.name}": i for i in list_policies()}
    assert [n for n in infos if not n.startswith("ep:")] == list(POLICIES)
    assert infos["ep:mine"].error is None and infos["ep:mine"].description == "Escalate every failure at once."
    assert "ModuleNotFoundError" in infos["ep:missing-module"].error
    assert infos["ep:structured"].shadowed == "the built-in 'structured' wins over this entry point"


def test_driver_attributes_follow_the_recovery_policy_protocol():
    """Every optional attribute the RecoveryPolicy docstring documents is one `policies show` reports."""
    from fleetchaos.sim.observation import RecoveryPolicy

    documented = re.findall(r"^\s*\* ``(\w+)", RecoveryPolicy.__doc__ or "", flags=re.M)
    assert set(documented) <= set(DRIVER_ATTRIBUTES), set(documented) - set(DRIVER_ATTRIBUTES)


# -- the docs cookbook ---------------------------------------------------------------------


def cookbook_policy() -> str:
    """The first Python block of docs/policies.md's "Write your own policy" section."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("\n## Write your own policy\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def test_cookbook_policy_is_short_and_runs(tmp_path, monkeypatch):
    """The custom policy in the docs is under 20 lines, builds with no arguments and runs through a simulation."""
    import yaml

    import fleetchaos.catalogue as catalogue
    from fleetchaos.results.metrics import compute
    from fleetchaos.scenario.load import load_scenario
    from fleetchaos.sim.formats import get_format
    from fleetchaos.sim.world import World

    code = cookbook_policy()
    assert len(code.strip().splitlines()) < 20, code
    module = types.ModuleType("fc_cookbook")  # as a reader's own module would be
    monkeypatch.setitem(sys.modules, module.__name__, module)
    # dont_inherit: the block must work as a file of its own, without this file's __future__ imports.
    exec(compile(code, str(DOCS), "exec", dont_inherit=True), module.__dict__)
    classes = [v for v in vars(module).values() if isinstance(v, type) and callable(getattr(v, "decide", None))
               and v.__module__ == "fc_cookbook"]  # fmt: skip
    assert len(classes) == 1, classes
    policy = classes[0]()
    assert dataclasses.is_dataclass(policy) and isinstance(policy.name, str)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.name = "changed"  # type: ignore[misc]

    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["workload"]["tasks_per_day"] = 100
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(doc))
    spec = load_scenario(str(tmp_path / "small.yaml"))
    output = World(spec, policy, get_format("structured"), 1).run()
    metrics, _, _ = compute(output.records, spec.fleet, duration_s=output.duration_s)
    assert metrics["tasks"] > 0 and metrics["faulted_tasks"] > 0
    assert metrics["policy_errors"] == 0, [r.policy_error for r in output.records if r.policy_error]


def test_recipes_do_not_depend_on_string_hashing():
    """Results record each policy's recipe; it must read the same in every process.

    A frozenset's repr follows string hashing, which Python salts per process (the
    transport layer's ``on`` once made ``layered-transport``'s results differ between
    two runs of the same seed).
    """
    import os
    import subprocess

    script = (
        "from fleetchaos.policies.registry import POLICIES, get_policy\n"
        "from fleetchaos.runs.runner import policy_recipe\n"
        "for name in sorted(POLICIES): print(name, policy_recipe(get_policy(name)))\n"
    )
    outputs = []
    for hash_seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
        outputs.append(done.stdout)
    assert "layered-transport" in outputs[0]
    assert outputs[0] == outputs[1] == outputs[2]
