"""Shrinking failing runs (the fleetchaos.testing.shrink package and `fleetchaos shrink`).

The planted failure: a day of ~200 tasks with hundreds of network blips, ambiguous
timeouts, rate-limit cuts, full disks and expired keys, plus one silent-suppression fault
on ``git_push`` during a short window.  Seed 3 sends exactly one task (task 7, a coding
task whose only fault is that suppression) through the window; it ends as a silent
failure.  Shrinking must find that one fault among the hundreds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import patience
import pytest
import yaml
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.errors import UserError
from fleetchaos.policies import get_policy
from fleetchaos.scenario.load import Scenario, load_scenario
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.world import World
from fleetchaos.testing.shrink import CallEvent, ddmin, parse_property, shrink
from fleetchaos.testing.shrink.properties import TaskSilent

PLANTED = {
    "name": "planted",
    "duration_s": 86400,
    "fleet": {"orchestrators": 2, "workers": 10, "tool_slots": 2},
    "workload": {"tasks_per_day": 200},
    "faults": [
        {"kind": "network_blip", "probability": 0.2},
        {"kind": "timeout", "probability": 0.05, "timeout_s": 90},
        {"kind": "rate_limit", "per_day": 2, "window_s": 2700, "capacity_factor": 0.02},
        {"kind": "disk_full", "per_worker_per_day": 0.3, "cleanup_after_s": 14400},
        {"kind": "expired_key", "per_worker_per_day": 0.2},
        {
            "kind": "silent_suppression",
            "probability": 1.0,
            "tools": ["git_push"],
            "windows": [{"start_s": 10000, "duration_s": 3000}],
        },
    ],
}
PLANTED_SEED = 3
PLANTED_TASK = 7

FANOUT = {
    "name": "fanout",
    "duration_s": 43200,
    # partial_batch ok: a generic fan-out tool that says ok with what it gathered, the silent failure shrunk here
    "fleet": {"orchestrators": 2, "workers": 4, "tool_slots": 2, "partial_batch": "ok"},
    "workload": {"tasks_per_day": 150},
    "faults": [
        {"kind": "network_blip", "probability": 0.03},
        {"kind": "timeout", "probability": 0.02, "timeout_s": 60},
    ],
}


def _write(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _pytest(test_file: Path) -> subprocess.CompletedProcess:
    return patience.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file.name)],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        cpu_s=120,
    )


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The planted scenario, its original run's planted fault hit, and the shrink result."""
    scenario = Scenario.model_validate(PLANTED)
    output = World(scenario, get_policy("structured"), get_format("structured"), PLANTED_SEED).run()
    hits = [e for e in output.fault_log if e[4] == PLANTED_TASK]
    result = shrink(scenario, "structured", "structured", PLANTED_SEED, task_silent=PLANTED_TASK)
    return output, hits, result


def test_planted_premise():
    """The planted run has hundreds of fault events, and task 7's only fault is the planted suppression."""
    scenario = Scenario.model_validate(PLANTED)
    output = World(scenario, get_policy("structured"), get_format("structured"), PLANTED_SEED).run()
    assert len(output.fault_log) >= 200
    assert [e[1:3] for e in output.fault_log if e[4] == PLANTED_TASK] == [("silent_suppression", "git_push")]


def test_planted_failure_shrinks_to_the_one_planted_fault(planted):
    """Hundreds of fault events shrink to exactly one: the silent suppression task 7 met."""
    _output, hits, result = planted
    (at_s, kind, tool, worker, _task) = hits[0]
    assert result.original_events >= 200
    assert len(result.events) == 1
    event = result.events[0]
    assert isinstance(event, CallEvent)
    assert (event.kind, event.tool, event.worker, event.at_s) == (kind, tool, worker, at_s)
    assert result.tasks < result.original_tasks and result.duration_s < result.original_duration_s
    assert result.trials <= 100 and not result.budget_exhausted and result.notes == []
    assert result.schedule_lines() == [f"worker {worker}: silent_suppression on git_push at {at_s:.1f} s"]


def test_minimal_scenario_still_fails(planted, tmp_path):
    """The minimal scenario, written to YAML and read back, still has the task end as a silent failure."""
    from fleetchaos.runs.runner import run_one
    from fleetchaos.testing.shrink import scenario_yaml

    _output, _hits, result = planted
    path = tmp_path / "minimal.yaml"
    path.write_text(scenario_yaml(result.scenario), encoding="utf-8")
    run = run_one(load_scenario(str(path)), "structured", "structured", PLANTED_SEED, keep_tasks=True)
    matching = [
        t
        for t in run.tasks
        if t["template"] == result.prop.template and abs(t["arrival_s"] - result.prop.arrival_s) < 1e-3
    ]
    assert matching and matching[0]["silent_failure"]


@pytest.mark.slow  # a shrink search of dozens of runs, then the written test run twice in a subprocess
def test_cli_writes_a_regression_test_that_fails_before_and_passes_after_a_fix(tmp_path):
    """`fleetchaos shrink` writes a test that fails on the bug and passes once the planted fault is gone."""
    scenario = _write(tmp_path / "planted.yaml", PLANTED)
    out = tmp_path / "regress" / "test_planted_regression.py"
    res = CliRunner().invoke(
        main,
        [
            "shrink",
            "--scenario",
            str(scenario),
            "--policy",
            "structured",
            "--errors",
            "structured",
            "--seed",
            str(PLANTED_SEED),
            "--task-silent",
            str(PLANTED_TASK),
            "-o",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["fault_events"]["minimal"] == 1 and summary["fault_events"]["original"] >= 200
    assert summary["schedule"][0].endswith(
        f"silent_suppression on git_push at {summary['scenario']['faults'][0]['windows'][0]['start_s']:.1f} s"
    )
    minimal = out.with_suffix(".yaml")
    assert minimal.exists() and out.exists()
    before = _pytest(out)
    assert before.returncode == 1, before.stdout
    assert "ended as a silent failure" in before.stdout and "fleetchaos run --scenario" in before.stdout
    doc = yaml.safe_load(minimal.read_text())
    doc["faults"] = [
        f for f in doc["faults"] if f["kind"] != "silent_suppression"
    ]  # the fix: the tool stops swallowing
    minimal.write_text(yaml.safe_dump(doc), encoding="utf-8")
    after = _pytest(out)
    assert after.returncode == 0, after.stdout


@pytest.mark.slow  # a shrink search of dozens of runs, then the written test run in a subprocess
def test_metric_property_shrinks_a_generic_partial_fan_out_to_one_blip(tmp_path):
    """silent_failure_rate>0 under the generic format shrinks to one blip on a fan-out step; the structured arm passes."""
    scenario = _write(tmp_path / "fanout.yaml", FANOUT)
    out = tmp_path / "test_fanout_regression.py"
    res = CliRunner().invoke(
        main,
        [
            "shrink",
            "--scenario",
            str(scenario),
            "--policy",
            "blind-retry",
            "--errors",
            "generic",
            "--seed",
            "1",
            "--property",
            "silent_failure_rate>0",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    schedule = res.stdout.split("minimal schedule:\n", 1)[1].strip().splitlines()
    assert len(schedule) == 1 and "network_blip on search" in schedule[0], res.stdout
    assert _pytest(out).returncode == 1
    text = out.read_text()
    fixed = text.replace("POLICY = 'blind-retry'", "POLICY = 'structured'").replace(
        "ERRORS = 'generic'", "ERRORS = 'structured'"
    )
    assert fixed != text
    out.write_text(fixed)
    assert _pytest(out).returncode == 0


def test_shrink_is_deterministic():
    """The same run and property give the same minimal run and the same number of trials."""
    scenario = Scenario.model_validate(FANOUT)
    prop = parse_property("silent_failure_rate>0")
    first = shrink(scenario, "blind-retry", "generic", 1, prop=prop)
    second = shrink(scenario, "blind-retry", "generic", 1, prop=prop)
    assert first.summary() == second.summary()
    assert first.trials == second.trials


def test_a_task_property_that_does_not_hold_on_the_original_run_is_a_user_error():
    """A TaskSilent given as ``prop`` that the original run does not fail is named (it used to raise AttributeError)."""
    scenario = Scenario.model_validate(FANOUT)
    prop = TaskSilent(arrival_s=1e9, template="no-such-template", original_id=0)
    with pytest.raises(UserError, match="on the original run it is not so that the no-such-template task arriving at"):
        shrink(scenario, "blind-retry", "generic", 1, prop=prop)


def test_trial_budget_returns_the_smallest_failing_run_so_far():
    """With a tiny trial budget shrinking stops early and the run it returns still fails."""
    from fleetchaos.testing.shrink.trials import Trials

    scenario = Scenario.model_validate(PLANTED)
    result = shrink(scenario, "structured", "structured", PLANTED_SEED, task_silent=PLANTED_TASK, max_trials=6)
    assert result.budget_exhausted and result.trials == 6
    assert any("trial budget" in n for n in result.notes)
    probe = Trials(result.scenario, "structured", "structured", PLANTED_SEED, result.prop, 1, None, [])
    metrics, outcomes, _ = probe.run(result.scenario)
    assert result.prop.holds(metrics, outcomes)


def test_ddmin_finds_a_one_minimal_subset():
    """ddmin reduces a list to the two items a test needs, deterministically."""
    calls = []

    def test(sub):
        calls.append(tuple(sub))
        return 13 in sub and 71 in sub

    assert ddmin(list(range(100)), test) == [13, 71]
    assert ddmin([1, 2, 3], lambda sub: True) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--property", "recovery_rate<<0.7"], "expected METRIC OP NUMBER"),
        (["--property", "recovry_rate<0.7"], "did you mean 'recovery_rate'"),
        (["--property", "recovery_rate<0.01"], "the original run does not fail it"),
        (["--task-silent", "8"], "task 8 did not end as a silent failure"),
        (["--task-silent", "100000"], "the run has no task 100000"),
        ([], "give exactly one of --task-silent N or --property EXPR"),
        (["--task-silent", "7", "--property", "recovery_rate<0.7"], "give exactly one of"),
    ],
)
def test_user_mistakes_exit_2_with_one_message(tmp_path, args, message):
    """Bad property syntax, a task that was not a silent failure, a property the run does not fail: exit 2."""
    scenario = _write(tmp_path / "planted.yaml", PLANTED)
    res = CliRunner().invoke(
        main,
        [
            "shrink",
            "--scenario",
            str(scenario),
            "--policy",
            "structured",
            "--errors",
            "structured",
            "--seed",
            str(PLANTED_SEED),
            "-o",
            str(tmp_path / "t.py"),
            *args,
        ],
    )
    assert res.exit_code == 2, res.output
    assert message in res.stderr
    assert res.stderr.count("error:") == 1
    assert not (tmp_path / "t.py").exists()
