"""A gate compares like with like or refuses (issue 28): the reproductions of the issue, from the command line.

The small scenario (the default with about 100 tasks a day, tests/conftest.py) on three seeds.
``common_recovery_rate`` depends on which arms ran: the six arms of a comparison share a common
set of every task faulted in any of them, one arm alone its own faulted tasks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fleetchaos.runs.runner as runner
from fleetchaos.gates.history import open_store

SIX = ("--seeds", "3", "--jobs", "1")
ONE = (*SIX, "--policies", "structured", "--errors", "structured")


@pytest.fixture
def cli(history_cli):
    """The CLI in a temporary working directory (see tests/conftest.py)."""
    return history_cli


@pytest.fixture(scope="module")
def six_arms(small, tmp_path_factory) -> Path:
    """A folder holding the results.json of the six default arms on three seeds, as a report folder holds it."""
    from click.testing import CliRunner

    from fleetchaos.cli.main import main

    folder = tmp_path_factory.mktemp("x")
    out = CliRunner().invoke(main, ["compare", "--scenario", small, *SIX, "--no-history", "--json"])
    assert out.exit_code == 0, out.stderr
    (folder / "results.json").write_text(out.stdout)
    return folder


def _lines(text: str, start: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(start)]


def test_one_arm_against_a_six_arm_comparison_is_no_regression(cli, small, six_arms):
    """The issue's false regression: the same arm, the same seeds, nothing changed: ok, exit 0, on the arm both ran."""
    out = cli("compare", "--scenario", small, *ONE, "--baseline", str(six_arms), "--no-history",
              "--fail-on", "common_recovery_rate:-2%")  # fmt: skip
    assert out.exit_code == 0, out.stderr
    (line,) = _lines(out.stderr, "ok common_recovery_rate for structured on structured")
    assert "change +0 (+0.00%)" in line and "recomputed on the tasks faulted in the arms both ran" in line
    six = json.loads((six_arms / "results.json").read_text())
    stored = next(a for a in six["arms"] if a["policy"] == a["errors"] == "structured")["metrics"]
    assert stored["common_recovery_rate"] != float(line.split(": ")[1].split(" against ")[0])  # another common set


def test_a_baseline_over_other_arms_without_task_sets_is_refused_before_the_runs(cli, small, six_arms, tmp_path,
                                                                                  monkeypatch):  # fmt: skip
    """An older results file keeps no task sets: its common recovery of six arms cannot be compared with one arm's:
    exit 2 naming both arm sets, before any run; the same six arms compare its stored values."""
    doc = json.loads((six_arms / "results.json").read_text())
    for arm in doc["arms"]:
        del arm["task_sets"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    same = cli("compare", "--scenario", small, *SIX, "--baseline", str(old), "--no-history",
               "--fail-on", "common_recovery_rate:-2%")  # fmt: skip
    assert same.exit_code == 0, same.stderr
    assert len(_lines(same.stderr, "ok common_recovery_rate")) == 6
    assert "stored values on 3 seed(s), both computed over the same 6 arms" in same.stderr
    monkeypatch.setattr(runner, "run_one", lambda *a, **k: pytest.fail("a run started"))
    refused = cli("compare", "--scenario", small, *ONE, "--baseline", str(old), "--no-history",
                  "--fail-on", "common_recovery_rate:-2%")  # fmt: skip
    assert refused.exit_code == 2
    message = " ".join(refused.stderr.split())
    assert "not comparable: common_recovery_rate of baseline" in message
    assert "was computed over 6 arm(s), these runs' over 1 (structured on structured)" in message


def test_the_readmes_gate_recipe_passes_with_no_regression(cli, small):
    """A one-arm baseline, then every arm against it: no false failure; the arms it lacks are named as new."""
    assert cli("compare", "--scenario", small, *ONE, "--label", "good", "--quiet").exit_code == 0
    out = cli("compare", "--scenario", small, *SIX, "--baseline", "good", "--fail-on",
              "common_recovery_rate:-2%", "--quiet")  # fmt: skip
    assert out.exit_code == 0, out.stderr
    assert len(_lines(out.stderr, "note new arm: ")) == 5 and len(_lines(out.stderr, "ok common_recovery_rate")) == 1
    asked = cli("compare", "--scenario", small, *SIX, "--baseline", "good", "--fail-on",
                "common_recovery_rate:-2%", "--quiet", "--fail-on-new")  # fmt: skip
    assert asked.exit_code == 1 and len(_lines(asked.stderr, "FAILED new arm: ")) == 5


def test_history_diff_does_not_call_an_identical_arm_better(cli, small, six_arms, tmp_path):
    """The exported one-arm group against the six arms: no difference on every figure, in the table itself;
    against results without task sets, common recovery is 'not comparable', never a difference."""
    assert cli("compare", "--scenario", small, *ONE, "--label", "good", "--quiet").exit_code == 0
    assert cli("history", "export", "good", "-o", "baseline.json").exit_code == 0
    out = cli("history", "diff", "baseline.json", str(six_arms))
    assert out.exit_code == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if "common_recovery_rate" in line]
    assert len(rows) == 1 and "+0.0 pp" in rows[0] and "better" not in out.stdout  # 3 pairs: too few to call it
    doc = json.loads((six_arms / "results.json").read_text())
    for arm in doc["arms"]:
        del arm["task_sets"]
    (tmp_path / "old.json").write_text(json.dumps(doc))
    old = cli("history", "diff", "baseline.json", str(tmp_path / "old.json"))
    (row,) = [line for line in old.stdout.splitlines() if "common_recovery_rate" in line and "│" in line]
    assert "not comparable" in row and "better" not in old.stdout
    assert "common_recovery_rate: not comparable: computed over different arms (A over 1 arm(s), B over 6 arm(s))" in (
        " ".join(old.stdout.split())
    )


def test_a_baseline_of_another_world_is_refused_naming_the_difference(cli, small, six_arms, monkeypatch):
    """--param faults[0].probability=0.1 against a baseline stored at 0.02: exit 2 before any run, naming the field."""
    monkeypatch.setattr(runner, "run_one", lambda *a, **k: pytest.fail("a run started"))
    out = cli("compare", "--scenario", small, *ONE, "--param", "faults[0].probability=0.1",
              "--baseline", str(six_arms), "--no-history", "--fail-on", "success_rate:-2%")  # fmt: skip
    assert out.exit_code == 2
    message = " ".join(out.stderr.split())
    assert "other scenario: baseline" in message and "faults[0].probability: 0.02 in the baseline, 0.1 here" in message
    without = cli("compare", "--scenario", small, *ONE, "--param", "faults[0].probability=0.1",
                  "--baseline", str(six_arms), "--no-history")  # fmt: skip
    assert without.exit_code == 2  # a baseline alone is refused too: its changes would not be the policy's


def test_a_baseline_with_no_seed_in_common_is_refused(cli, small, six_arms):
    """Seeds 4-6 against seeds 1-3 met other faults: exit 2, naming both seed sets."""
    out = cli("compare", "--scenario", small, "--seeds", "3", "--first-seed", "4", "--jobs", "1", "--policies",
              "structured", "--errors", "structured", "--baseline", str(six_arms), "--no-history")  # fmt: skip
    assert out.exit_code == 2
    assert "ran seeds 1-3, this run 4-6: no seed in common" in " ".join(out.stderr.split())


@pytest.mark.parametrize("spec", ["success_rate:-2", "recovery_rate:-0.02", "silent_failure_rate:+1"])
def test_a_bare_number_on_a_rate_is_refused_naming_the_fix(cli, small, six_arms, spec):
    """A bare number on a rate is ambiguous (and -2 could never fail): exit 2 with the two ways to write it."""
    out = cli("compare", "--scenario", small, *ONE, "--baseline", str(six_arms), "--no-history", "--fail-on", spec)
    assert out.exit_code == 2
    name, number = spec.split(":")
    message = " ".join(out.stderr.split())
    assert "a bare number on a rate is ambiguous" in message
    assert f"write {name}:{number}pp" in message and f"or {name}:{number}%" in message


GIVE_UP = """
from fleetchaos.sim.observation import GiveUp

class GiveUpAtOnce:
    name = "give-up"

    def decide(self, observation, history):
        return GiveUp()
"""


def test_a_figure_the_runs_lost_is_a_regression_not_skipped(cli, small, tmp_path):
    """A policy that stops recovering has no time to recovery: --fail-on on it fails (exit 1), never 'skipped'."""
    (tmp_path / "give_up.py").write_text(GIVE_UP)
    assert cli("run", "--scenario", small, "--seed", "1", "--label", "recovers", "--quiet").exit_code == 0
    out = cli("run", "--scenario", small, "--seed", "1", "--policy", "give_up:GiveUpAtOnce", "--baseline", "recovers",
              "--fail-on", "mean_time_to_recovery_s:+10%", "--no-history")  # fmt: skip
    assert out.exit_code == 1, out.stderr
    (line,) = _lines(out.stderr, "REGRESSION mean_time_to_recovery_s")
    assert "no value in this run on seed(s) 1, where the baseline has one" in line
    assert "a missing figure fails the gate" in line and "skipped" not in out.stderr
    assert "policy errors" not in out.stderr  # the policy is sound: the figure itself failed the gate


def test_the_group_of_a_refused_command_is_never_stored(cli, small, six_arms, tmp_path):
    """A refusal comes before the history is opened."""
    history = tmp_path / "h.db"
    out = cli("compare", "--scenario", small, *ONE, "--param", "faults[0].probability=0.1", "--baseline",
              str(six_arms), "--history", str(history))  # fmt: skip
    assert out.exit_code == 2
    if history.exists():
        with open_store(history, create=False, readonly=True) as store:
            assert store.groups() == []
