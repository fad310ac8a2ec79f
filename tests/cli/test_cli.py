"""The fleetchaos command line as a user meets it: output shapes, exit codes, messages."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.scenario.load import load_scenario


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Invoke the CLI with its run history in a temporary folder."""
    monkeypatch.setenv("FLEETCHAOS_HISTORY", str(tmp_path / "history.db"))
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


def test_compare_json_has_the_stable_shape(cli):
    """compare --json prints one document with scenario, seeds and arms carrying metrics and ci."""
    result = cli("compare", "--seeds", "2", "--jobs", "1", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["scenario"] == "default"
    assert doc["seeds"] == [1, 2]
    best = load_scenario("default").tuned.policies  # the default comparison: best against best from its tuned: block
    assert [(a["policy"], a["errors"]) for a in doc["arms"]] == [
        ("blind-retry", "generic"),
        *((best["generic"], e) for e in ("generic", "status", "raw", "structured")),
        *((best[e], e) for e in ("status", "raw", "structured")),
    ]
    for arm in doc["arms"]:
        for key in (
            "recovery_rate",
            "wasted_retries",
            "silent_failure_rate",
            "tasks",
            "faulted_tasks",
            "tool_calls",
            "redone_steps",
            "duplicate_side_effects",
            "escalations",
            "mean_steps_to_recovery",
        ):
            assert key in arm["metrics"]
        assert len(arm["ci"]["recovery_rate"]) == 2


def test_compare_output_does_not_depend_on_job_count(cli):
    """The JSON of a comparison is byte-identical with one process and with two."""
    serial = cli("compare", "--seeds", "2", "--jobs", "1", "--json").stdout
    parallel = cli("compare", "--seeds", "2", "--jobs", "2", "--json").stdout
    assert serial == parallel


def test_compare_other_seeds_give_other_figures(cli):
    """A different seed range gives different figures."""
    a = json.loads(cli("compare", "--seeds", "2", "--jobs", "1", "--json").stdout)
    b = json.loads(cli("compare", "--seeds", "2", "--first-seed", "3", "--jobs", "1", "--json").stdout)
    assert a["arms"][0]["per_seed"] != b["arms"][0]["per_seed"]


def test_run_prints_table_and_replay_command(cli):
    """run prints a metrics table and the command that replays it."""
    result = cli("run", "--seed", "3", "--policy", "backoff", "--errors", "generic")
    assert result.exit_code == 0
    assert "recovery_rate" in result.stdout
    assert "replay: fleetchaos run --scenario default --policy backoff --errors generic --seed 3" in result.stdout


def test_run_report_writes_results_and_task_csv(cli, tmp_path):
    """run --report writes results.json, a per-task CSV and a summary."""
    out = tmp_path / "rep"
    result = cli("run", "--seed", "2", "--report", str(out))
    assert result.exit_code == 0
    assert {"results.json", "tasks.csv", "summary.md", "report.html"} <= {p.name for p in out.iterdir()}
    header = (out / "tasks.csv").read_text().splitlines()[0]
    assert header.startswith("id,template,title,worker")


@pytest.mark.parametrize(
    "args, message",
    [
        (("run", "--policy", "blind-retyr"), "did you mean 'blind-retry'?"),
        (("run", "--errors", "structurd"), "did you mean 'structured'?"),
        (("run", "--scenario", "defualt"), "did you mean 'default'?"),
        (("run", "--scenario", "missing.yaml"), "missing.yaml: no such file"),
        (("run", "--policy", "no_such_module_xyz:Policy"), "cannot import 'no_such_module_xyz'"),
        (("compare", "--policies", ","), "--policies: give at least one policy"),
    ],
    ids=["policy-typo", "format-typo", "scenario-typo", "missing-file", "bad-import", "empty-policies"],
)
def test_user_mistakes_exit_2_with_one_message(cli, args, message):
    """A user's mistake gives exit code 2 and a message naming the fix, never a traceback."""
    result = cli(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_click_usage_errors_exit_2(cli):
    """Unknown options and bad option values are usage errors (exit 2)."""
    assert cli("compare", "--seeds", "zero").exit_code == 2
    assert cli("run", "--frobnicate").exit_code == 2


def test_invalid_scenario_file_names_file_field_and_value(cli, tmp_path):
    """An invalid scenario file gives exit 2 and a message with file, field path and value."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nfaults:\n  - kind: network_blip\n    probability: 1.5\n")
    result = cli("scenarios", "validate", str(bad))
    assert result.exit_code == 2
    assert f"{bad}: faults[0].probability" in result.stderr
    assert "1.5" in result.stderr


def test_validate_and_schema(cli):
    """scenarios validate accepts the catalogue; schema prints JSON Schemas."""
    assert cli("scenarios", "validate", "default").exit_code == 0
    scenario_schema = json.loads(cli("schema", "scenario").stdout)
    assert "faults" in scenario_schema["properties"]
    envelope_schema = json.loads(cli("schema", "envelope").stdout)
    assert "error_code" in envelope_schema["properties"]


def test_scenario_seeds_are_the_default_and_flags_override_them(cli, tmp_path):
    """A scenario's own seeds run when no seed flags are given; --seeds/--first-seed replace them."""
    path = tmp_path / "seeded.yaml"
    path.write_text("name: seeded\nseeds: [3, 5]\nworkload: {tasks_per_day: 50}\n")
    own = json.loads(
        cli("compare", "--scenario", str(path), "--jobs", "1", "--json", "--policies", "structured").stdout
    )
    assert own["seeds"] == [3, 5]
    flagged = json.loads(
        cli(
            "compare",
            "--scenario",
            str(path),
            "--seeds",
            "2",
            "--first-seed",
            "7",
            "--jobs",
            "1",
            "--json",
            "--policies",
            "structured",
        ).stdout
    )
    assert flagged["seeds"] == [7, 8]
