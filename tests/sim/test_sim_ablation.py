"""The field ablation: each field's value comes out of the mechanics, and vanishes where they say so."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.runs.ablation import STEPS, ablation_document, run_ablation
from fleetchaos.scenario.load import load_scenario
from fleetchaos.sim.formats.failure_type import ABLATION_FORMATS

SEEDS = [1, 2, 3, 4]


@pytest.fixture(scope="module")
def default_doc() -> dict:
    """The ablation document of the default scenario on four seeds."""
    return ablation_document(run_ablation(load_scenario("field_ablation"), SEEDS))


def _step(doc: dict, name: str) -> dict:
    return next(s for s in doc["steps"] if s["format"] == name)


def test_ablation_steps_are_in_order_with_compare_metric_names(default_doc):
    """Steps follow the ablation order and carry compare's metric names with intervals."""
    assert [s["format"] for s in default_doc["steps"]] == list(STEPS)
    assert default_doc["seeds"] == SEEDS
    for step in default_doc["steps"]:
        assert (
            {"common_recovery_rate", "success_rate", "wasted_retries", "silent_failure_rate"}
            <= set(step["metrics"])
            == set(step["ci"])
        )


def test_each_field_pays_on_the_default_scenario(default_doc):
    """Type beats generic, partial results cut redone steps, alternatives lift recovery, the retry flag cuts waste."""
    m = {s["format"]: s["metrics"] for s in default_doc["steps"]}
    typed, partial, alts, flag = (m[f] for f in ABLATION_FORMATS)
    assert typed["recovery_rate"] > m["generic"]["recovery_rate"]
    assert partial["redone_steps"] < typed["redone_steps"] and partial["recovery_rate"] > typed["recovery_rate"]
    assert _step(default_doc, "ablation:+alternatives")["gain"]["common_recovery_rate"]["ci"][0] > 0
    assert flag["wasted_retries"] < alts["wasted_retries"]


def test_alternatives_step_is_worthless_without_not_found_or_permanent_faults():
    """With no not-found or permanent faults, + alternatives equals + partial_results on every seed."""
    result = run_ablation(load_scenario("field_ablation_transient"), SEEDS, steps=ABLATION_FORMATS[1:3])
    before, after = result.arms
    for name in ("recovery_rate", "wasted_retries", "silent_failure_rate", "tool_calls"):
        assert after.per_seed[name] == before.per_seed[name], name
    assert before.metrics["faulted_tasks"] > 0


def test_cli_ablation_json_document(tmp_path):
    """`fleetchaos ablation --json --report` prints one document and writes json, md and a PNG."""
    result = CliRunner().invoke(
        main,
        ["ablation", "--scenario", "field_ablation_transient", "--seeds", "2", "--json", "--report", str(tmp_path)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) >= {"scenario", "seeds", "steps"} and doc["scenario"] == "field_ablation_transient"
    assert [s["format"] for s in doc["steps"]] == list(STEPS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ablation.json", "ablation.md", "ablation.png"]


def test_cli_ablation_is_the_same_in_process_and_in_a_process_pool():
    """`ablation --jobs 1` and `--jobs 2` print byte-identical documents (the executor decides nothing)."""
    args = ["ablation", "--scenario", "field_ablation_transient", "--seeds", "2", "--json"]
    serial = CliRunner().invoke(main, [*args, "--jobs", "1"], catch_exceptions=False)
    pooled = CliRunner().invoke(main, [*args, "--jobs", "2"], catch_exceptions=False)
    assert serial.exit_code == pooled.exit_code == 0
    assert serial.stdout == pooled.stdout


def test_schema_drift_is_counted_and_trusting_a_missing_field_costs_redone_work():
    """On a rollout, old workers' failure-type envelopes count as skew and, lacking partial_results, force redone steps."""
    from fleetchaos.policies import get_policy
    from fleetchaos.sim.formats import get_format
    from fleetchaos.sim.world import World

    spec = load_scenario("schema_drift_rollout")
    steady = spec.model_copy(update={"faults": [f for f in spec.faults if f.kind != "schema_drift"]})

    def records(scenario):
        return World(scenario, get_policy("failure-type-router"), get_format("failure-type"), 1).run().records

    drifted, clean = records(spec), records(steady)
    assert sum(r.schema_skews for r in drifted) > 0 == sum(r.schema_skews for r in clean)
    assert sum(r.redone_steps for r in drifted) > sum(r.redone_steps for r in clean)
