"""docs/scenarios.md and the fault catalogue: generated from the models, so they cannot drift."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.errors import UserError
from fleetchaos.scenario.docs import SCHEDULE, SECTIONS, render
from fleetchaos.scenario.fault_catalogue import describe_kind, describe_kinds
from fleetchaos.scenario.fields import parameters, type_name
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.config import FleetSpec
from fleetchaos.sim.fault_specs import FAULT_MODELS, Window
from fleetchaos.sim.kinds import KINDS
from fleetchaos.sim.truth import FAILURES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def test_docs_match_the_models():
    """docs/scenarios.md is exactly what the generator renders (regenerate: fleetchaos schema scenario --markdown)."""
    assert DOCS.read_text(encoding="utf-8") == render(), (
        "docs/scenarios.md is out of date: run `fleetchaos schema scenario --markdown > docs/scenarios.md`"
    )


def test_docs_cover_every_field_and_fault_kind():
    """Every field of every scenario model and every fault kind, with its error code, appears in the docs."""
    text = render()
    for _, model in SECTIONS:
        for name in model.model_fields:
            assert f"| `{name}` |" in text, f"{model.__name__}.{name}"
    for model in SCHEDULE:
        assert f"#### {model.__name__}" in text
    for kind in FAULT_MODELS:
        info = describe_kind(kind)
        assert f"#### {kind}\n" in text
        assert f"`{info.error_code}`" in text and info.effect in text


def test_docs_list_the_catalogue():
    """Each catalogue scenario appears in the docs with its description."""
    import fleetchaos.catalogue as catalogue

    text = render()
    for name in catalogue.names():
        assert f"### `{name}`" in text


def test_every_fault_kind_has_an_effect_and_a_contract():
    """Each kind has one effect sentence and either a failure contract or a reporting code."""
    assert [info.kind for info in describe_kinds()] == list(FAULT_MODELS)
    for info in describe_kinds():
        assert info.effect.endswith(".") and len(info.effect.split()) >= 8
        assert info.error_code.isupper()
        assert info.category in {"transient", "resource", "auth", "validation", "dependency", "fatal", "reporting"}
        assert (info.kind in FAILURES) == (info.recoverable is not None)


def test_effects_name_only_existing_parameters():
    """Parameters an effect sentence names (its own, or fleet.X) exist, so the prose follows renames."""
    from fleetchaos.sim.envelope import AgentToolError

    fleet = set(FleetSpec.model_fields)
    for kind, effect in ((k, r.effect) for k, r in KINDS.items()):
        known = set(FAULT_MODELS[kind].model_fields) | set(AgentToolError.model_fields)
        for name in re.findall(r"\bfleet\.(\w+)", effect):
            assert name in fleet, f"{kind}: fleet.{name}"
        for name in re.findall(r"(?<![.\w])([a-z]+_[a-z_]+)\b", effect):
            assert name in known, f"{kind}: {name} is not a parameter of {kind}"


def test_every_parameter_is_described():
    """Every user-facing field has a description (from the model or the fallback notes)."""
    models = [m for _, m in SECTIONS] + list(SCHEDULE) + list(FAULT_MODELS.values())
    for model in models:
        for p in parameters(model, skip=("kind",)):
            assert p.description, f"{model.__name__}.{p.name} has no description"


def test_parameters_read_types_defaults_and_ranges():
    """Parameters are read from the pydantic fields: type, default, range."""
    timeout = {p.name: p for p in describe_kind("timeout").parameters}
    assert timeout["probability"].type == "number"
    assert timeout["probability"].default == "0.01"
    assert timeout["probability"].allowed == "0 <= value <= 1"
    assert timeout["timeout_s"].allowed == "> 0"
    assert timeout["windows"].type == "list of Window"
    assert list(timeout)[-1] == "swarm"
    window = {p.name: p for p in parameters(Window)}
    assert window["start_s"].default == "required"
    assert type_name(Scenario.model_fields["faults"].annotation) == "list of one of the fault kinds"


def test_unknown_fault_kind_suggests_the_closest():
    """describe_kind() on a typo raises a UserError with a did-you-mean."""
    with pytest.raises(UserError, match="did you mean 'latency_spike'"):
        describe_kind("latency_spik")


def test_cli_faults_list_shows_every_kind():
    """`fleetchaos faults list` prints every kind with its category and error code."""
    result = CliRunner().invoke(main, ["faults", "list"])
    assert result.exit_code == 0
    for info in describe_kinds():
        assert info.kind in result.stdout and info.error_code in result.stdout


def test_cli_faults_list_json():
    """`fleetchaos faults list --json` prints one document: kind, category, code, effect, parameters."""
    result = CliRunner().invoke(main, ["faults", "list", "--json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert [d["kind"] for d in doc] == list(FAULT_MODELS)
    assert {"kind", "category", "error_code", "effect", "parameters"} <= set(doc[0])


def test_cli_faults_show_lists_parameters():
    """`fleetchaos faults show timeout` prints the contract, the effect and each parameter with its default."""
    result = CliRunner().invoke(main, ["faults", "show", "timeout"])
    assert result.exit_code == 0
    for part in ("TOOL_TIMEOUT", "transient", "committed_probability", "timeout_s", "90", "effect on the truth"):
        assert part in result.stdout


def test_cli_faults_show_unknown_kind_exits_2():
    """`fleetchaos faults show` with a typo exits 2 with a did-you-mean."""
    result = CliRunner().invoke(main, ["faults", "show", "disk_ful"])
    assert result.exit_code == 2
    assert "did you mean 'disk_full'" in result.output


def test_cli_schema_markdown_is_the_docs():
    """`fleetchaos schema scenario --markdown` prints the docs text."""
    result = CliRunner().invoke(main, ["schema", "scenario", "--markdown"])
    assert result.exit_code == 0
    assert result.stdout == render()
