"""Sweeps: planning, agreement with compare, executor independence, resume, reports and CLI messages."""

from __future__ import annotations

import json
import sqlite3

import pytest

from fleetchaos.results.models import SweepResult
from fleetchaos.runs.executors import LocalProcessExecutor, SerialExecutor
from fleetchaos.runs.runner import compare
from fleetchaos.runs.sweep import SweepSpec, plan_sweep, run_sweep
from fleetchaos.scenario.load import load_scenario

#: A quick sweep: 2 fault rates x 2 policies x 2 formats x 2 seeds = 16 runs.
GRID = ("--param", "faults[0].probability=0,0.3", "--policies", "blind-retry,structured", "--seeds", "2")


def test_plan_orders_jobs_and_canonicalises_the_grid(small):
    """A plan has one job per point, arm and seed, with the grid values as validated."""
    spec = SweepSpec(
        scenarios=[small],
        policies=["structured"],
        errors=["generic"],
        seeds=3,
        params={"faults[0].probability": [0, 0.5], "fleet.workers": [4]},
    )
    plan = plan_sweep(spec)
    assert plan.grid == {"faults[0].probability": [0.0, 0.5], "fleet.workers": [4]}
    assert plan.x == "faults[0].probability"
    assert len(plan.jobs) == len(set(plan.keys)) == 2 * 3
    assert [v.params for v in plan.variants] == [
        (("faults[0].probability", 0.0), ("fleet.workers", 4)),
        (("faults[0].probability", 0.5), ("fleet.workers", 4)),
    ]
    assert plan_sweep(spec).sweep_id == plan.sweep_id  # stable, so a resumed sweep finds its group


def test_sweep_without_params_agrees_with_compare(small):
    """A sweep with no parameters gives compare's figures for every arm."""
    spec = SweepSpec(scenarios=[small], policies=["backoff", "structured"], seeds=2)
    swept = run_sweep(plan_sweep(spec), executor=SerialExecutor())
    compared = compare(load_scenario(small), [1, 2], policies=("backoff", "structured"))
    assert len(swept.entries) == len(compared.arms) == 4
    for entry, arm in zip(swept.entries, compared.arms):
        assert (entry.policy, entry.errors, entry.params) == (arm.policy, arm.errors, {})
        assert (entry.metrics, entry.ci, entry.per_seed) == (arm.metrics, arm.ci, arm.per_seed)


def test_results_are_byte_identical_across_executors(small):
    """Serial, a local process pool and a local Dask cluster give byte-identical sweep and compare JSON."""
    spec = SweepSpec(
        scenarios=[small], policies=["blind-retry", "structured"], seeds=2, params={"faults[0].probability": [0.0, 0.3]}
    )
    scenario = load_scenario(small)

    def both(executor) -> tuple[str, str]:
        sweep = run_sweep(plan_sweep(spec), executor=executor).model_dump_json()
        comp = compare(scenario, [3, 4], executor=executor).model_dump_json()
        return sweep, comp

    serial = both(SerialExecutor())
    with LocalProcessExecutor(2) as pool:
        assert both(pool) == serial
    distributed = pytest.importorskip(
        "distributed", reason="the dask extra is not installed (pip install -e '.[dev,dask]', as `make test` does)"
    )
    from fleetchaos.runs.executors import DaskExecutor

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster:
        dask = DaskExecutor(cluster.scheduler_address)
        try:
            assert dask.workers == 2
            assert both(dask) == serial
        finally:
            dask.shutdown()


def test_cli_sweep_json_is_the_same_with_one_or_two_jobs(cli, small):
    """fleetchaos sweep --json prints the same bytes with --jobs 1 and --jobs 2."""
    one = cli("sweep", "--scenario", small, *GRID, "--jobs", "1", "--json", "--no-history")
    two = cli("sweep", "--scenario", small, *GRID, "--jobs", "2", "--json", "--no-history")
    assert one.exit_code == two.exit_code == 0
    assert one.stdout == two.stdout
    doc = json.loads(one.stdout)
    assert doc["grid"] == {"faults[0].probability": [0.0, 0.3]}
    assert len(doc["entries"]) == 2 * 2 * 2
    assert {"scenario", "params", "policy", "errors", "metrics", "ci", "per_seed"} <= set(doc["entries"][0])


def test_a_swept_run_replays_with_run_param(cli, small):
    """The replay command of a swept run reproduces its figures exactly."""
    spec = SweepSpec(
        scenarios=[small],
        policies=["structured"],
        errors=["generic"],
        seeds=[5],
        params={"faults[0].probability": [0.3]},
    )
    plan = plan_sweep(spec)
    stored = {}
    result = run_sweep(plan, executor=SerialExecutor(), on_result=lambda key, run: stored.setdefault(key, run))
    (run,) = stored.values()
    assert "--param 'faults[0].probability=0.3'" in run.replay
    args = run.replay.replace("'", "").split()[1:]
    replayed = json.loads(cli(*args, "--json").stdout)
    assert replayed["metrics"] == run.metrics
    assert result.entries[0].per_seed["recovery_rate"] == [run.metrics["recovery_rate"]]


def test_interrupted_sweep_resumes_to_the_same_result(cli, small, monkeypatch, tmp_path):
    """Ctrl-C keeps finished runs in the history (exit 130); --resume runs only the rest, same bytes."""
    import fleetchaos.runs.runner as runner

    history = str(tmp_path / "h.db")
    full = cli("sweep", "--scenario", small, *GRID, "--jobs", "1", "--json", "--no-history").stdout
    real = runner.run_one
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_one", flaky)
    stopped = cli("sweep", "--scenario", small, *GRID, "--jobs", "1", "--json", "--history", history)
    assert stopped.exit_code == 130
    assert "interrupted: 5 of 16 runs finished" in stopped.stderr
    assert "--resume" in stopped.stderr
    monkeypatch.setattr(runner, "run_one", real)
    resumed = cli("sweep", "--scenario", small, *GRID, "--jobs", "2", "--json", "--history", history, "--resume")
    assert resumed.exit_code == 0
    assert "5 of 16 runs already stored" in resumed.stderr
    assert resumed.stdout == full
    db = sqlite3.connect(history)
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone() == (16, 16)
    assert db.execute("SELECT kind, status FROM groups").fetchall() == [("sweep", "complete")]


def test_report_draws_byte_stable_curves(cli, small, tmp_path):
    """sweep --report writes results, a summary and a curve chart; writing the same result again gives the same bytes."""
    from fleetchaos.reports.sweep import write_sweep_report

    a, b = tmp_path / "a", tmp_path / "b"
    assert (
        cli(
            "sweep",
            "--scenario",
            small,
            *GRID,
            "--jobs",
            "1",
            "--report",
            str(a),
            "--no-history",
            "--metric",
            "silent_failure_rate",
        ).exit_code
        == 0
    )
    files = {"results.json", "summary.md", "report.html", "curve_silent_failure_rate.png"}
    assert {p.name for p in a.iterdir()} == files
    result = SweepResult.model_validate_json((a / "results.json").read_text())
    write_sweep_report(result, b)
    for name in files:
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (result.metric, result.x) == ("silent_failure_rate", "faults[0].probability")
    # the axis names the swept fault by its kind (faults[0] of the default scenario is a network_blip)
    assert result.scenario_configs["small"]["faults"][0]["kind"] == "network_blip"
    assert "![silent_failure_rate against network_blip probability: one line" in (a / "summary.md").read_text()


def test_sweep_file_and_command_line_combine(cli, small, tmp_path):
    """A sweep file gives the grid; command-line options override its fields."""
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(
        f"scenarios: [{small}]\npolicies: [structured]\nerrors: [structured]\nseeds: [1, 2]\n"
        "params:\n  fleet.workers: [5, 10]\n"
    )
    doc = json.loads(
        cli("sweep", "--file", str(sweep_file), "--seeds", "1", "--json", "--no-history", "--jobs", "1").stdout
    )
    assert doc["seeds"] == [1]
    assert doc["grid"] == {"fleet.workers": [5, 10]}
    assert [(e["policy"], e["errors"]) for e in doc["entries"]] == [("structured", "structured")] * 2


@pytest.mark.parametrize(
    "args, message",
    [
        (("--param", "fleet.wrokers=3"), "did you mean 'workers'?"),
        (("--param", "faults[0].probability=0.1,1.5"), "faults[0].probability: must be <= 1 (got 1.5)"),
        (("--param", "faults[0].probability=0.1,0.10"), "same point once validated"),
        (("--param", "fleet.workers=3", "--param", "fleet.workers=4"), "given twice"),
        (("--metric", "recovry_rate"), "did you mean 'recovery_rate'?"),
        (("--policies", "blind-retyr"), "did you mean 'blind-retry'?"),
        (("--errors", "structurd"), "did you mean 'structured'?"),
        (("--errors", "generic,generic"), "--errors: generic, generic names one twice"),
        (("--scenario", "defualt"), "did you mean 'default'?"),
        (("--x", "fleet.workers"), "--x fleet.workers: not a swept parameter"),
        (("--scheduler", "localhost:8786"), "address as tcp://HOST:PORT"),
        (("--resume", "--no-history"), "--resume reads the run history"),
        (("--file", "missing.yaml"), "--file missing.yaml: no such file"),
    ],
    ids=[
        "unknown-field",
        "invalid-value",
        "duplicate-value",
        "param-twice",
        "metric-typo",
        "policy-typo",
        "format-typo",
        "format-twice",
        "scenario-typo",
        "x-not-swept",
        "bad-scheduler",
        "resume-no-history",
        "missing-file",
    ],
)
def test_sweep_user_mistakes_exit_2_with_one_message(cli, args, message):
    """A mistake in a sweep gives exit 2 and one message naming the fix, before any run starts."""
    result = cli("sweep", "--seeds", "1", "--jobs", "1", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_compare_refuses_an_arm_named_twice(cli, small):
    """A format or policy named twice is one message and exit 2 (it once crashed the paired comparison)."""
    for option, names in (("--errors", "generic,generic,structured"), ("--policies", "backoff,structured,backoff")):
        result = cli("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--no-history", option, names)
        assert result.exit_code == 2, result.output
        assert f"{option}: {names.replace(',', ', ')} names one twice; give each once" in result.stderr


def test_sweep_finds_a_policy_module_in_the_working_directory(cli, small, tmp_path):
    """``module:Policy`` from the working directory works in sweep as it does in run and compare."""
    (tmp_path / "fc_sweep_local_policy.py").write_text(
        "from fleetchaos.sim.observation import GiveUp\n\n"
        "class Quitter:\n"
        "    def decide(self, obs, history):\n"
        "        return GiveUp('failed')\n"
    )
    result = cli(
        "sweep",
        "--scenario",
        small,
        "--policies",
        "fc_sweep_local_policy:Quitter",
        "--errors",
        "structured",
        "--param",
        "fleet.workers=3,4",
        "--seeds",
        "1",
        "--jobs",
        "1",
        "--no-history",
    )
    assert result.exit_code == 0, result.output
    assert "fc_sweep_local_policy:Quitter" in result.stdout


#: Aliases of aliases: nine to the power eight nodes once expanded.
_BOMB = "a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9)
)


@pytest.mark.parametrize(
    "text, message",
    [
        ("policies: [structured\n", "not valid YAML: line 2, column 1"),
        ("", "expected a mapping of fields, but the file is empty; give at least one field"),
        ("- structured\n", "(top level): expected a mapping of fields, got list"),
        (_BOMB, "once aliases are expanded"),
    ],
    ids=["broken-yaml", "empty", "list", "alias"],
)
def test_a_sweep_file_is_read_as_strictly_as_a_scenario(cli, tmp_path, text, message):
    """Sweep files go through the scenario reader: line and column, the same limits, one message, exit 2."""
    bad = tmp_path / "sweep.yaml"
    bad.write_text(text)
    result = cli("sweep", "--file", str(bad))
    assert result.exit_code == 2
    assert f"{bad}: " in result.stderr and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_invalid_sweep_file_names_file_and_field(cli, tmp_path):
    """A sweep file with an unknown field gives exit 2 naming the file and the field."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("policies: [structured]\nparms:\n  fleet.workers: [3]\n")
    result = cli("sweep", "--file", str(bad))
    assert result.exit_code == 2
    assert f"{bad}: parms: unknown field 'parms'" in result.stderr


@pytest.fixture
def cli(history_cli):
    """The CLI in a temporary working directory (see tests/conftest.py)."""
    return history_cli
