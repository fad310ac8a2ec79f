"""Every replay command fleetchaos prints replays (issue 28): run as printed, it exits 0 and reproduces the figures.

The commands are collected from what users read: ``run``'s ``replay:`` line, a run report's and a
comparison report's pages (the traced best and worst arms), the runs of ``history export``, and
the pytest plugin's failure messages and ``fleetchaos replay`` section.  Each is run as printed
(in the folder it was printed in, its ``PYTHONPATH=`` prefix applied), with ``--json --no-history``
added to read its figures, which must equal the figures of the run it names.
``common_recovery_rate`` is left out of the comparison: in a comparison it is computed on the
tasks faulted in any arm (docs/metrics.md), which a run alone cannot know.

The fast test covers a gated example scenario (whose gates a one-seed replay must not judge), a
catalogue scenario with a ``--param`` value, and the plugin; the slow one every catalogue scenario
and every example suite scenario.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.results.models import CompareResult, RunResult

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
JUNK = shutil.ignore_patterns(".hypothesis", ".pytest_cache", "__pycache__", "fleetchaos-out")

#: A replay command as printed: an optional PYTHONPATH prefix, then `fleetchaos run ...` up to a quote or a line end.
COMMAND = re.compile(r"(?:PYTHONPATH=\S+ )?fleetchaos run --scenario [^`\n]+")

#: Figures a run alone cannot reproduce: a comparison computes them across its arms.
ACROSS_ARMS = {"common_recovery_rate"}


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def commands_in(text: str) -> list[str]:
    """Every concrete replay command in ``text`` (a report's template, `--scenario NAME ...`, is not one)."""
    found = [c.strip().rstrip(".;,") for c in COMMAND.findall(text)]
    return [c for c in dict.fromkeys(found) if "--scenario NAME" not in c]


def replayed(command: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> RunResult:
    """Run ``command`` as printed, from ``folder``: it must exit 0; its run's result."""
    argv = shlex.split(command)
    with monkeypatch.context() as m:
        m.chdir(folder)
        if argv[0].startswith("PYTHONPATH="):
            m.setenv("PYTHONPATH", argv.pop(0).split("=", 1)[1])
            m.syspath_prepend(str(folder / os.environ["PYTHONPATH"]))
        assert argv[:2] == ["fleetchaos", "run"], command
        out = cli(*argv[1:], "--json", "--no-history")
    assert out.exit_code == 0, f"{command}: exit {out.exit_code}\n{out.stderr}"
    return RunResult.model_validate_json(out.stdout)


def same_figures(replay: RunResult, metrics: dict[str, float | None], command: str) -> None:
    got = {k: v for k, v in replay.metrics.items() if k not in ACROSS_ARMS}
    want = {k: v for k, v in metrics.items() if k not in ACROSS_ARMS}
    assert got == want, command


def arm_figures(result: CompareResult, policy: str, errors: str, seed: int) -> dict[str, float | None]:
    """One run's figures as a comparison's results keep them."""
    arm = result.arm(policy, errors)
    i = result.seeds.index(seed)
    return {name: values[i] for name, values in arm.per_seed.items()}


def check_compare_report(folder: Path, scenario: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """`compare --report` and `run --report`: every replay their pages and `run` print reproduces its run."""
    report = folder / "out" / "compare"
    with monkeypatch.context() as m:
        m.chdir(folder)
        out = cli("compare", "--scenario", scenario, *args, "--report", str(report), "--no-history", "--quiet")
    assert out.exit_code in (0, 1), out.stderr  # 1: the scenario's own gates judged the comparison
    result = CompareResult.model_validate_json((report / "results.json").read_text())
    commands = commands_in((report / "summary.md").read_text()) + [t.replay for t in result.timelines]
    assert commands, "the comparison report names the replay of its traced runs"
    for command in dict.fromkeys(commands):
        run = replayed(command, folder, monkeypatch)
        same_figures(run, arm_figures(result, run.policy, run.errors, run.seed), command)
    one = result.arms[-1]
    with monkeypatch.context() as m:
        m.chdir(folder)
        single = cli("run", "--scenario", scenario, *_params(args), "--policy", one.policy, "--errors", one.errors,
                     "--seed", str(result.seeds[-1]), "--report", str(folder / "out" / "run"), "--no-history")  # fmt: skip
    assert single.exit_code in (0, 1), single.stderr
    printed = commands_in(single.stdout) + commands_in((folder / "out" / "run" / "summary.md").read_text())
    assert len(printed) == 2 and len(set(printed)) == 1, printed  # the replay: line and the report say the same
    reference = RunResult.model_validate_json((folder / "out" / "run" / "results.json").read_text())
    same_figures(replayed(printed[0], folder, monkeypatch), reference.metrics, printed[0])
    return len(set(commands)) + 1


def _params(args: list[str]) -> list[str]:
    return [x for i, x in enumerate(args) if x == "--param" or (i and args[i - 1] == "--param")]


@pytest.fixture
def suite_copy(tmp_path) -> Path:
    """A copy of examples/suite (its local team policy is named by an import path from that folder)."""
    folder = tmp_path / "suite"
    shutil.copytree(EXAMPLES / "suite", folder, ignore=JUNK)
    return folder


def test_a_gated_scenarios_replays_reproduce_their_runs_and_judge_no_gate(suite_copy, monkeypatch):
    """The busy hour carries expect: gates judged over seeds: its replays reproduce one run each, exit 0."""
    n = check_compare_report(suite_copy, "chaos/busy_hour.yaml",
                             ["--seeds", "2", "--jobs", "1", "--policies", "team_policy:TeamPolicy,blind-retry",
                              "--errors", "structured"], monkeypatch)  # fmt: skip
    assert n >= 2


def test_a_catalogue_scenario_with_a_param_replays_with_it(tmp_path, monkeypatch):
    """A --param value reaches every replay, so the replay meets the faults the run met."""
    check_compare_report(tmp_path, "flaky_network", ["--seeds", "1", "--jobs", "1", "--policies",
                         "backoff,structured", "--errors", "generic,structured", "--param",
                         "faults[0].probability=0.2"], monkeypatch)  # fmt: skip


def test_an_exported_groups_replays_reproduce_its_runs(tmp_path, monkeypatch):
    """Each run of `history export` carries its replay: run, it reproduces the stored figures."""
    monkeypatch.chdir(tmp_path)
    assert cli("compare", "--scenario", "disk_full_worker", "--seeds", "2", "--jobs", "1", "--policies",
               "blind-retry,structured", "--errors", "structured", "--label", "x", "--quiet").exit_code == 0  # fmt: skip
    doc = json.loads(cli("history", "export", "x").stdout)
    for run in doc["runs"]:
        stored = RunResult.model_validate(run)
        same_figures(replayed(stored.replay, tmp_path, monkeypatch), stored.metrics, stored.replay)


GATED_TEST = """
import pytest

@pytest.mark.fleetchaos(scenario="gated.yaml", seeds=2, policy="blind-retry", errors="generic")
def test_blind(fleetchaos_result):
    pass
"""


def test_the_plugins_replays_reproduce_the_failing_runs(chaos_dir, monkeypatch):
    """A test failing its scenario's gate prints the replay of the worst seed and of every seed: each reproduces it."""
    small = (chaos_dir.path / "small.yaml").read_text()
    chaos_dir.makefile(".yaml", gated=small.rstrip("\n") + "\nexpect:\n  - {metric: success_rate, at_least: 0.9}\n")
    chaos_dir.makepyfile(test_gated=GATED_TEST)
    result = chaos_dir.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    commands = commands_in(result.stdout.str())
    assert len(commands) == 2 and all(c.endswith(" --no-expect") for c in commands), commands
    from fleetchaos.testing.suite import run_scenario

    expected = run_scenario(str(chaos_dir.path / "gated.yaml"), policy="blind-retry", errors="generic", seeds=2)
    for command in commands:
        run = replayed(command, chaos_dir.path, monkeypatch)
        same_figures(run, expected.runs[expected.seeds.index(run.seed)].metrics, command)


def _catalogue() -> list[str]:
    return sorted(catalogue.names())


@pytest.mark.slow
@pytest.mark.parametrize("scenario", _catalogue())
def test_every_catalogue_scenarios_replays_reproduce_their_runs(scenario, tmp_path, monkeypatch):
    """Every catalogue scenario: the report's and run's replays reproduce their runs (on four arms every scenario
    has, so without the gates a scenario keeps for its own arms: a gated scenario's replays are checked above)."""
    check_compare_report(tmp_path, scenario, ["--seeds", "1", "--jobs", "1", "--policies", "blind-retry,structured",
                         "--errors", "generic,structured", "--no-expect"], monkeypatch)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["busy_hour.yaml", "key_rotation.yaml", "production_day.yaml"])
def test_every_example_suite_scenarios_replays_reproduce_their_runs(scenario, suite_copy, monkeypatch):
    """The example suite's scenarios with its own policy: every replay reproduces its run."""
    check_compare_report(suite_copy, f"chaos/{scenario}", ["--seeds", "2", "--jobs", "1", "--policies",
                         "team_policy:TeamPolicy,structured", "--errors", "generic,structured"], monkeypatch)  # fmt: skip
