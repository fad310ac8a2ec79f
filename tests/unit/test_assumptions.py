"""No class constant decides an outcome: every format, cost and admission setting the world reads is a
scenario setting with a documented default, a reason and a range (docs/assumptions.md).

The world's code is read with ``ast``: each attribute it reads off an error format, off the
fleet's settings and off a provider's spec is listed here, so a new one fails these tests
until it is classified (and, when it decides an outcome, added to
``fleetchaos.scenario.assumptions.ASSUMPTIONS`` with its reason and range).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fleetchaos.scenario.assumptions import ASSUMPTIONS, GROUPS, concrete, field_of, headline_value, model_default
from fleetchaos.scenario.assumptions_doc import render
from fleetchaos.scenario.fields import FIELD_NOTES
from fleetchaos.scenario.load import load_scenario
from fleetchaos.scenario.params import apply_params
from fleetchaos.sim.config import FleetSpec
from fleetchaos.sim.formats.registry import builtin_formats
from fleetchaos.sim.provider_spec import ProviderSpec

ROOT = Path(__file__).resolve().parents[2]
PATHS = {a.path for a in ASSUMPTIONS}

#: Everything the world reads off an error format, and what decides it.  An attribute a
#: scenario setting decides names the setting; the others are what the format shows (its
#: rendering, whether it carries a flag a guardrail can check) or plumbing.
FORMAT_READS = {
    "partial_batch": "fleet.partial_batch",  # None on a format without an envelope: the scenario decides
    "misread_setting": "fleet.misread_factor",  # the setting its misread factor is read from
    "misread_factor": "fleet.misread_factor",  # the default of that setting (a format's own for a plug-in)
    "failure_flag": None,  # what it shows: a machine-readable failure field a guardrail checks, or none
    "render": None,  # what it shows
    "plain_success": None,  # a mark that its success is the bare "ok" (skips building a report)
    "for_run": None,  # binds the run's planted secrets
    "name": None,  # what it is called (the registry finds it by it)
}

#: Every fleet setting the world, the dispatcher, a call, real-code mode and the metrics read,
#: classified: True when it is an assumption that decides an outcome (then it is in
#: ASSUMPTIONS, with its reason and range), False when it describes the fleet a scenario
#: models (its size, its capacity, its faults' targets: documented in docs/scenarios.md).
FLEET_READS = {
    # costs
    "usd_per_1k_tokens": True,
    "usd_per_tool_call": True,
    "usd_per_human_hour": True,
    "usd_per_silent_failure": True,
    "usd_per_undone_task": True,
    "usd_per_refused_call": True,
    "page_handling": True,
    # what a failure reveals and how partial work is reported
    "misread_probability": True,
    "misread_factor": True,
    "partial_batch": True,
    "checkpoints": True,
    "cut_call_committed_probability": True,
    # provider and client
    "call_timeout_s": True,
    "late_reply_s": True,
    "providers": True,
    "model": True,
    # the fleet as the scenario describes it
    "orchestrators": False,
    "workers": False,
    "tool_slots": False,
    "overrides": False,
    "disk_mb": False,
    "credential_lifetime_s": False,
    "credential_refresh_s": False,
    "network_latency": False,
    "api_rate_per_s": False,
    "api_burst": False,
    "api_reject_cost": False,
    "dispatch": False,
    "heartbeat_timeout_s": False,
    "remediation": False,
    "max_actions_per_task": False,
    "apis": False,
}

#: What a provider's spec sets that its capacity model does not decide: its identity and its route.
PROVIDER_IDENTITY = {"name", "tools"}

WORLD_MODULES = (
    "simulated_fleet/world.py",
    "simulated_fleet/assembly.py",
    "simulated_fleet/dispatch.py",
    "simulated_fleet/calls.py",
    "simulated_fleet/misread.py",
    "simulated_fleet/envelope_errors.py",
    "simulated_fleet/formats/_base.py",
    "simulated_fleet/formats/registry.py",
    "harness/results/metrics.py",
    "harness/real/runtime.py",
)


def _tree(relative: str) -> ast.Module:
    return ast.parse((ROOT / relative).read_text(encoding="utf-8"))


def _is_format(node: ast.expr) -> bool:
    """``errors``, ``fmt`` or ``self.errors``: the run's error format."""
    if isinstance(node, ast.Name):
        return node.id in ("errors", "fmt")
    return isinstance(node, ast.Attribute) and node.attr in ("errors", "fmt")


def _is_fleet(node: ast.expr) -> bool:
    """``fleet``, ``spec.fleet`` or ``self.spec.fleet`` (``self.fleet`` in the metrics)."""
    if isinstance(node, ast.Name):
        return node.id == "fleet"
    return isinstance(node, ast.Attribute) and node.attr == "fleet"


def _reads(relative: str, owner) -> set[str]:
    """Attributes read off what ``owner`` recognises: ``x.attr`` and ``getattr(x, "attr", ...)``."""
    found = set()
    for node in ast.walk(_tree(relative)):
        if isinstance(node, ast.Attribute) and owner(node.value):
            found.add(node.attr)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
        ):
            target = node.args[0]
            # getattr(getattr(error_format, "render", None), "plain_success", False): read off the format's render
            if owner(target) or (
                isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "getattr"
                and owner(target.args[0])
            ):  # fmt: skip
                found.add(node.args[1].value)
    return found


def test_the_world_reads_nothing_off_a_format_that_is_not_classified():
    """Every attribute the world reads off an error format is in FORMAT_READS (and the scan sees the known ones)."""
    read = set().union(*(_reads(m, _is_format) for m in WORLD_MODULES))
    assert read - set(FORMAT_READS) == set(), "classify it in FORMAT_READS: a setting, or what the format shows"
    assert {"partial_batch", "misread_setting", "failure_flag", "render", "for_run"} <= read


@pytest.mark.parametrize("name", sorted(builtin_formats()))
def test_every_format_reads_its_outcome_deciding_settings_from_the_scenario(name):
    """A format without an envelope leaves partial batches to fleet.partial_batch; every format that reports a
    failure is misread with a fleet.misread_factor setting; each is an assumption with its reason and range."""
    fmt = builtin_formats()[name]
    choices = FleetSpec.model_fields["partial_batch"].annotation.__args__
    assert fmt.partial_batch is None or fmt.partial_batch in choices, name
    if fmt.partial_batch is None:
        assert "fleet.partial_batch" in PATHS
    if fmt.misread_setting is None:
        assert fmt.misread_factor == 0.0, f"{name}: only a format that reports no failure may have no setting"
    else:
        assert f"fleet.misread_factor.{fmt.misread_setting}" in PATHS, name


def test_every_fleet_setting_the_world_reads_is_classified_and_documented():
    """Costs, misreading, partial work, checkpoints, timeouts and providers are assumptions (in ASSUMPTIONS); the
    rest describe the fleet; every one is a FleetSpec field with a default and a description in docs/scenarios.md."""
    read = set().union(*(_reads(m, _is_fleet) for m in WORLD_MODULES))
    assert read - set(FLEET_READS) == set(), "classify it in FLEET_READS (an assumption goes into ASSUMPTIONS)"
    assert {"usd_per_silent_failure", "page_handling", "partial_batch", "checkpoints", "call_timeout_s"} <= read
    for name in sorted(read):
        field = FleetSpec.model_fields[name]
        assert not field.is_required(), name
        assert field.description or FIELD_NOTES.get(f"FleetSpec.{name}"), f"fleet.{name} has no description"
        if FLEET_READS[name]:
            assert any(p == f"fleet.{name}" or p.startswith((f"fleet.{name}.", f"fleet.{name}[")) for p in PATHS), (
                f"fleet.{name} decides outcomes: add it to ASSUMPTIONS with its reason and range"
            )
    scenarios_md = (ROOT / "docs/scenarios.md").read_text(encoding="utf-8")
    assert all(f"| `{name}` |" in scenarios_md for name in read)


def test_every_admission_setting_a_provider_reads_is_an_assumption():
    """Everything the capacity model reads off a provider's spec (but its name and route) is in ASSUMPTIONS."""
    read = _reads("simulated_fleet/capacity.py", lambda n: isinstance(n, ast.Name) and n.id == "spec")
    assert {"servers", "max_in_flight", "admission", "overload_status", "reject_cost_s", "slowdown"} <= read
    assert read <= set(ProviderSpec.model_fields)
    for name in sorted(read - PROVIDER_IDENTITY):
        assert f"fleet.providers[].{name}" in PATHS, f"fleet.providers[].{name} is an assumption: add it"
        assert not ProviderSpec.model_fields[name].is_required() and ProviderSpec.model_fields[name].description


@pytest.mark.parametrize("assumption", ASSUMPTIONS, ids=[a.path for a in ASSUMPTIONS])
def test_each_assumption_is_a_documented_field_with_its_default_in_its_range(assumption):
    """The path names a field with a default and a description; the default (or the headline's value) is among the
    values of its range; its reason is written out; its group is known."""
    where = field_of(assumption)
    assert where is not None and where.field is not None, f"{assumption.path} names no scenario field"
    assert not where.field.is_required() or "." in assumption.path  # page_handling.mean_s: its parent has the default
    assert where.field.description or FIELD_NOTES.get(f"{where.model.__name__}.{where.field_name}")
    assert assumption.group in GROUPS and len(assumption.reason) > 40 and assumption.decides
    assert model_default(assumption) in assumption.values or headline_value(assumption) in assumption.values


#: The fallback model's settings: a block default.yaml leaves out.
FALLBACK_PATHS = {a.path for a in ASSUMPTIONS if a.path.startswith("fleet.model.fallback.")}
MCP_PATHS = {a.path for a in ASSUMPTIONS if a.path.startswith("faults[mcp_")}


def test_every_value_of_every_range_is_a_valid_param_on_the_default_scenario():
    """sweep and robustness can vary each assumption over its whole range on the headline's scenario."""
    scenario = load_scenario("default")
    paths = {a.path: path for a, path, _ in concrete(scenario)}
    # default.yaml has a provider and a wrong_envelope rule: every assumption applies, but the fallback model's and
    # the MCP faults', which apply where a scenario declares them (refusal_loop, mcp_flap: checked below)
    assert set(paths) == PATHS - FALLBACK_PATHS - MCP_PATHS and FALLBACK_PATHS and MCP_PATHS
    for assumption in ASSUMPTIONS:
        for value in assumption.values if assumption.path in paths else ():
            apply_params(scenario, [(paths[assumption.path], value)], source="scenarios/default.yaml")
    for name, only in (("refusal_loop", FALLBACK_PATHS), ("mcp_flap", MCP_PATHS)):
        declaring = load_scenario(name)
        declared = {a.path: path for a, path, _ in concrete(declaring)}
        assert set(declared) >= only
        for assumption in ASSUMPTIONS:
            for value in assumption.values if assumption.path in only else ():
                apply_params(declaring, [(declared[assumption.path], value)], source=f"scenarios/{name}.yaml")


def test_concrete_paths_follow_the_scenarios_lists():
    """One path per provider and per wrong_envelope rule, with the scenario's own values; none where the list is empty."""
    scenario = load_scenario("default")
    found = [(a.path, path, value) for a, path, value in concrete(scenario)]
    assert ("fleet.providers[].servers", "fleet.providers[0].servers", 2) in found
    assert ("faults[wrong_envelope].misclassify", "faults[5].misclassify", 0.05) in found
    assert ("fleet.partial_batch", "fleet.partial_batch", "failed") in found
    bare = {a.path for a, _, _ in concrete(load_scenario("flaky_network"))}
    assert "fleet.providers[].servers" not in bare and "faults[wrong_envelope].misclassify" not in bare


def test_docs_assumptions_md_is_the_registry():
    """docs/assumptions.md is exactly render() (regenerate: fleetchaos schema assumptions > docs/assumptions.md)."""
    assert (ROOT / "docs/assumptions.md").read_text(encoding="utf-8") == render()


#: Module-level numbers in the world's modules that decide no outcome, and why.
NOT_ASSUMPTIONS = {
    "NO_CLIENT": "a marker: a call whose client gave up has no patience left to count",
    "OPEN_LOOP_IDS": "where the ids of open-loop tasks beside closed-loop clients start",
}


@pytest.mark.parametrize(
    "relative",
    [
        "simulated_fleet/world.py",
        "simulated_fleet/dispatch.py",
        "simulated_fleet/calls.py",
        "simulated_fleet/capacity.py",
        "simulated_fleet/waste.py",
        "simulated_fleet/formats/_base.py",
        "simulated_fleet/formats/registry.py",
        "simulated_fleet/formats/generic.py",
        "simulated_fleet/formats/status.py",
        "simulated_fleet/formats/raw.py",
        "simulated_fleet/formats/suppressed.py",
        "harness/results/metrics.py",
    ],
)
def test_no_module_level_number_decides_an_outcome(relative):
    """A number in the world's modules is a scenario setting, not a constant (SLOW_CALL_COMMITTED_P became
    fleet.cut_call_committed_probability); the few that decide nothing are listed with why."""
    found = []
    for node in _tree(relative).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper() and target.id.lstrip("_") == target.id:
                numeric = isinstance(value, ast.Constant) and isinstance(value.value, (int, float))
                numeric = numeric or isinstance(value, (ast.UnaryOp, ast.BinOp, ast.Attribute))
                if numeric and target.id not in NOT_ASSUMPTIONS:
                    found.append(target.id)
    assert not found, f"{relative}: {found} decide outcomes? make them scenario settings (or list them with why)"
