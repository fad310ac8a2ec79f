"""A scenario's tuned: block: data only, the world it was tuned on, and the default scenario's block kept current."""

from __future__ import annotations

import pytest
import yaml

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.tuning import recorded_options
from fleetchaos.errors import ScenarioError
from fleetchaos.scenario.load import load_scenario, parse_scenario
from fleetchaos.scenario.params import apply_params
from fleetchaos.scenario.tuned import world_fingerprint

BLOCK = {
    "command": "fleetchaos tune --scenario w --errors generic,structured",
    "train_seeds": [1000001, 1000002],
    "world": "0123456789abcdef",
    "policies": {"generic": "backoff(base_s=0.5)", "structured": "structured"},
    "references": ["blind-retry/generic"],
}


def _world(**tuned) -> str:
    doc = {"name": "w", "fleet": {"workers": 2}, "workload": {"tasks_per_day": 50},
           "faults": [{"kind": "network_blip", "probability": 0.1}], "tuned": {**BLOCK, **tuned}}  # fmt: skip
    return yaml.safe_dump(doc)


def test_a_tuned_block_is_read_with_its_reference_arms():
    spec = parse_scenario(_world(), "w.yaml")
    assert spec.tuned is not None
    assert spec.tuned.policies == {"generic": "backoff(base_s=0.5)", "structured": "structured"}
    assert spec.tuned.reference_arms() == [("blind-retry", "generic")]


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"policies": {"generic": "mypkg.policies:Mine"}}, "built-in policies only"),
        ({"policies": {"generic": "os:system"}}, "built-in policies only"),
        ({"policies": {"bare": "backoff"}}, "unknown error format 'bare'"),
        ({"references": ["blind-retry"]}, "is not POLICY/ERRORS"),
        ({"references": ["blind-retry/generic", "blind-retry/generic"]}, "named twice"),
        ({"world": "not-a-digest"}, "tuned.world"),
        ({"train_seeds": []}, "tuned.train_seeds"),
    ],
)
def test_a_tuned_block_names_built_ins_only_and_says_what_is_wrong(change, needle):
    """Nothing in a scenario file becomes code: an import path is refused, as are unknown formats and bad arms."""
    with pytest.raises(ScenarioError, match=needle):
        parse_scenario(_world(**change), "w.yaml")


def test_the_world_fingerprint_follows_what_runs_read_and_nothing_else():
    spec = parse_scenario(_world(), "w.yaml")
    mark = world_fingerprint(spec)
    same, _ = apply_params(spec, [("fleet.partial_batch", "failed")], source="w")  # its default, written out
    assert world_fingerprint(same) == mark
    renamed = parse_scenario(_world().replace("name: w", "name: other\ndescription: words"), "w.yaml")
    assert world_fingerprint(renamed) == mark  # name, description and the block itself are not the world
    changed, _ = apply_params(spec, [("fleet.checkpoints", True)], source="w")
    assert world_fingerprint(changed) != mark
    # Two fault rules at their defaults still differ by kind.
    a = parse_scenario(_world().replace("probability: 0.1", "probability: 0.02"), "w.yaml")
    b = parse_scenario(_world().replace("kind: network_blip\n    probability: 0.1", "kind: timeout"), "w.yaml")
    assert world_fingerprint(a) != world_fingerprint(b)


def test_the_default_scenarios_block_was_tuned_on_the_default_world():
    """Editing default.yaml's world leaves its shipped policies tuned for another world: run the command again."""
    spec = load_scenario("default")
    assert spec.tuned is not None, "default.yaml ships best against best for make demo"
    assert spec.tuned.world == world_fingerprint(spec), (
        f"scenarios/default.yaml changed since its tuned: block was made: run `{spec.tuned.command}` and paste "
        "the block it prints (tests/sweep/test_shipped_tuning.py checks it)"
    )
    options = recorded_options(spec.tuned.command)
    assert options is not None, spec.tuned.command
    first = options.first_train_seed
    assert spec.tuned.train_seeds == list(range(first, first + options.train_seeds))
    assert set(spec.tuned.policies) == {"generic", "status", "raw", "structured"}
    text = catalogue.path("default").read_text()
    assert spec.tuned.command in text  # the provenance is in the file, beside the policies
