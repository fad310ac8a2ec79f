"""``fleetchaos run`` and ``compare`` judge the scenario's expect: gates: exit 0 when all pass, 1 when one fails,
2 for a gate the command cannot judge (issue 20).

The scenario is one busy hour on three workers (~65 tasks, about a second a run).  On seed 1
structured errors and policy finish ~98% of the tasks; blind retries on generic errors ~50%:
the gates' bounds sit far from both, so they pass and fail as declared.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main

HOUR = """\
name: busy-hour
duration_s: 3600
fleet: {orchestrators: 1, workers: 3, api_rate_per_s: 5, api_burst: 50}
workload: {tasks_per_day: 1500, diurnal_amplitude: 0}
faults:
  - {kind: network_blip, probability: 0.1}
  - {kind: expired_key, events: [{worker: 0, at_s: 600}]}
  - {kind: disk_full, events: [{worker: 1, at_s: 900}], cleanup_after_s: 1200}
"""

#: Nine in ten tasks done on every arm, and no more than 1% silent failures on structured errors.
GATES = """\
expect:
  - {metric: success_rate, at_least: 0.9}
  - {metric: silent_failure_rate, at_most: 0.01, arm: "*/structured"}
"""

#: A policy that raises on every decision: its tasks end as policy errors, none as a silent failure.
RAISES = """
class Raises:
    name = "raises"

    def decide(self, observation, history):
        raise RuntimeError("broken on purpose")
"""


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """The CLI in a folder holding hour.yaml (with GATES) and plain.yaml (without), history kept there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLEETCHAOS_HISTORY", str(tmp_path / "history.db"))
    (tmp_path / "hour.yaml").write_text(HOUR + GATES)
    (tmp_path / "plain.yaml").write_text(HOUR)
    (tmp_path / "raising_policy.py").write_text(RAISES)

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return invoke


def _verdicts(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("ok expect", "FAILED expect"))]


def test_run_passes_its_gates_exit_0_and_records_them(cli):
    """structured on structured meets both gates: two ok lines, exit 0, and the verdicts in the JSON."""
    out = cli("run", "--scenario", "hour.yaml", "--json")
    assert out.exit_code == 0, out.stderr
    assert [v.split(" for ")[0] for v in _verdicts(out.stderr)] == [
        "ok expect[0] success_rate at_least 0.9",
        "ok expect[1] silent_failure_rate at_most 0.01",
    ]
    assert "all 2 expect verdict(s) passed" in out.stderr and "(scenario hour.yaml)" in out.stderr
    records = json.loads(out.stdout)["expectations"]
    assert [(r["gate"], r["policy"], r["errors"], r["passed"]) for r in records] == [
        (0, "structured", "structured", True),
        (1, "structured", "structured", True),
    ]
    assert records[0]["value"] == json.loads(out.stdout)["metrics"]["success_rate"] >= 0.9


def test_run_fails_a_gate_exit_1(cli):
    """blind retries finish about six tasks in ten: the success gate fails, exit 1, whatever the other gate says."""
    out = cli("run", "--scenario", "hour.yaml", "--policy", "blind-retry", "--errors", "structured")
    assert out.exit_code == 1, out.stderr
    first, second = _verdicts(out.stderr)
    assert first.startswith("FAILED expect[0] success_rate at_least 0.9 for blind-retry on structured: 0.")
    assert "(mean over 1 seed, 95% interval " in first and "; evidence decisive: the whole interval misses" in first
    assert second.startswith(("ok expect[1] silent_failure_rate", "FAILED expect[1] silent_failure_rate"))
    failed = 1 + second.startswith("FAILED")
    assert f"{failed} of 2 expect verdict(s) failed (scenario hour.yaml): exit 1" in out.stderr


def test_compare_judges_the_arms_each_gate_names_and_the_best_arm_by_default(cli, tmp_path):
    """A gate naming no arm judges the arm leading the headline, not the deliberately weak reference arms; a gate
    naming arms judges each of them; the results record every verdict and the exit code follows them."""
    out = cli("compare", "--scenario", "hour.yaml", "--seeds", "2", "--jobs", "1", "--policies",
              "blind-retry,structured", "--errors", "generic,structured", "--json")  # fmt: skip
    records = json.loads(out.stdout)["expectations"]
    verdicts = {(r["gate"], r["policy"], r["errors"]): r["passed"] for r in records}
    assert verdicts == {
        (0, "structured", "structured"): True,  # the best arm meets nine in ten
        (1, "blind-retry", "structured"): verdicts[(1, "blind-retry", "structured")],
        (1, "structured", "structured"): True,
    }
    assert out.exit_code == (0 if all(verdicts.values()) else 1), out.stderr
    assert records[0]["note"].startswith("the headline's best arm; mean over 2 seeds")
    assert len(_verdicts(out.stderr)) == len(records) == 3
    (tmp_path / "ours.yaml").write_text(HOUR + "arms: [blind-retry/generic]\n" + GATES)
    ours = cli("compare", "--scenario", "ours.yaml", "--seeds", "2", "--jobs", "1", "--policies",
               "blind-retry,structured", "--errors", "generic,structured", "--json")  # fmt: skip
    assert ours.exit_code == 1, ours.stderr  # the scenario's own arm: blind retries finish about half the tasks
    gate0 = [(r["policy"], r["errors"], r["passed"]) for r in json.loads(ours.stdout)["expectations"] if r["gate"] == 0]
    assert gate0 == [("blind-retry", "generic", False)]
    only_good = cli("compare", "--scenario", "hour.yaml", "--seeds", "2", "--jobs", "1", "--policies", "structured",
                    "--errors", "structured")  # fmt: skip
    assert only_good.exit_code == 0, only_good.stderr
    assert "all 2 expect verdict(s) passed" in only_good.stderr


def test_compare_refuses_a_gate_whose_arms_do_not_run_and_run_names_it(cli, tmp_path):
    """compare cannot leave a gate unjudged: exit 2 before anything runs, naming how to run the arm; run judges
    the gates for its arm and names the others (never refused with advice it cannot follow); --no-expect skips."""
    compare = cli("compare", "--scenario", "hour.yaml", "--seeds", "1", "--errors", "generic", "--no-history")
    assert compare.exit_code == 2
    message = " ".join(compare.stderr.split("error: ", 1)[1].split())  # the console may wrap it
    assert message == (
        "hour.yaml: expect[1].arm '*/structured' names */structured, which this command does not run "
        "(arms: blind-retry/generic, backoff/generic, structured/generic); run it too (add its policy to --policies "
        "and its format to --errors), or pass --no-expect to run without the scenario's gates"
    )
    assert not (tmp_path / "history.db").exists()
    out = cli("run", "--scenario", "hour.yaml", "--errors", "generic", "--json")
    (record,) = json.loads(out.stdout)["expectations"]
    assert (record["gate"], record["errors"]) == (0, "generic")
    assert out.exit_code == (0 if record["passed"] else 1), out.stderr
    assert (
        "note: expect[1] of hour.yaml judges */structured, not this run's arm (structured on generic): not judged here"
        in out.stderr
    )
    skipped = cli("run", "--scenario", "hour.yaml", "--errors", "generic", "--no-expect", "--json")
    assert skipped.exit_code == 0, skipped.stderr
    assert "expect" not in skipped.stderr and "expectations" not in json.loads(skipped.stdout)
    (tmp_path / "other.yaml").write_text(HOUR + "arms: [backoff/*]\n" + GATES.replace(', arm: "*/structured"', ""))
    none = cli("run", "--scenario", "other.yaml", "--no-history")
    assert none.exit_code == 0, none.stderr
    assert "no expect: gate of other.yaml applies to this run's arm" in none.stderr


def test_a_mistake_in_a_gate_exits_2_with_its_message(cli, tmp_path):
    """A validation error in expect: stops run and compare with the loader's one-line message, no traceback."""
    (tmp_path / "bad.yaml").write_text(HOUR + "expect:\n  - {metric: success_rat, at_least: 90}\n")
    for command in ("run", "compare"):
        out = cli(command, "--scenario", "bad.yaml")
        assert out.exit_code == 2
        assert "bad.yaml: expect[0].metric: unknown metric 'success_rat'" in out.stderr
        assert "did you mean 'success_rate'?" in " ".join(out.stderr.split())
        assert "Traceback" not in out.output + out.stderr


def test_a_policy_that_errored_never_passes_a_gate(cli, tmp_path):
    """A policy raising on every decision leaves no silent failure, so the silent-failure gate's figure holds; the
    gate still fails, naming the policy errors, unless --allow-policy-errors."""
    (tmp_path / "silent.yaml").write_text(HOUR + "expect:\n  - {metric: silent_failure_rate, at_most: 0.01}\n")
    out = cli("run", "--scenario", "silent.yaml", "--policy", "raising_policy:Raises", "--json")
    assert out.exit_code == 1, out.stderr
    (record,) = json.loads(out.stdout)["expectations"]
    assert record["value"] == 0 and record["passed"] is False
    assert "the policy errored on" in record["note"] and "--allow-policy-errors" in record["note"]
    allowed = cli("run", "--scenario", "silent.yaml", "--policy", "raising_policy:Raises", "--allow-policy-errors")
    assert allowed.exit_code == 0, allowed.stderr


def test_expect_and_the_baseline_gate_compose(cli, tmp_path):
    """The exit code is 1 when either gate fails and 0 only when both pass; both sets of lines are printed."""
    assert cli("run", "--scenario", "plain.yaml", "--label", "base").exit_code == 0
    same = cli("run", "--scenario", "hour.yaml", "--baseline", "base", "--fail-on", "success_rate:-2%")
    assert same.exit_code == 0, same.stderr
    assert "ok success_rate for structured on structured" in same.stderr and "all 2 expect" in same.stderr
    (tmp_path / "strict.yaml").write_text(HOUR + "expect:\n  - {metric: success_rate, at_least: 0.999}\n")
    strict = cli("run", "--scenario", "strict.yaml", "--baseline", "base", "--fail-on", "success_rate:-2%")
    assert strict.exit_code == 1
    assert "ok success_rate for structured on structured" in strict.stderr  # the baseline gate passed
    assert "1 of 1 expect verdict(s) failed" in strict.stderr
    other = cli("run", "--scenario", "hour.yaml", "--policy", "structured", "--errors", "structured", "--seed", "2",
                "--baseline", "base", "--fail-on", "success_rate:-0%")  # fmt: skip
    # seed 2 against seed 1: no pair met the same faults, so the gate refuses before the run
    assert other.exit_code == 2 and "other seeds: baseline #1 (structured on structured) ran seeds 1" in " ".join(
        other.stderr.split()
    )


def test_results_without_gates_keep_their_shape(cli):
    """A scenario without expect: writes no expectations key and prints no verdict line (its bytes are unchanged)."""
    out = cli("run", "--scenario", "plain.yaml", "--json", "--no-history")
    assert out.exit_code == 0
    assert "expectations" not in json.loads(out.stdout) and "expect" not in out.stderr


def test_the_reports_have_the_acceptance_criteria(cli):
    """The verdicts a command records reach its report pages: a run's and a comparison's (rendered without charts)."""
    from fleetchaos.reports import compare_markdown
    from fleetchaos.reports.blocks import to_markdown
    from fleetchaos.reports.run_report import run_blocks
    from fleetchaos.results.models import CompareResult, RunResult

    run = cli("run", "--scenario", "hour.yaml", "--json", "--no-history")
    page = to_markdown(run_blocks(RunResult.model_validate_json(run.stdout), {}, None))
    assert "## Acceptance criteria" in page and "All 2 verdicts passed." in page
    compare = cli("compare", "--scenario", "hour.yaml", "--seeds", "2", "--jobs", "1", "--policies",
                  "blind-retry,structured", "--errors", "structured", "--json", "--no-history")  # fmt: skip
    page = compare_markdown(CompareResult.model_validate_json(compare.stdout))
    assert "## Acceptance criteria" in page and "| expect\\[0\\] | structured on structured | success_rate |" in page
    assert "| expect\\[1\\] | blind-retry on structured | silent_failure_rate |" in page


def test_no_group_is_stored_for_a_refused_command(cli, tmp_path):
    """The refusal comes before the history is opened: an existing store gains no group."""
    assert cli("run", "--scenario", "plain.yaml").exit_code == 0
    assert cli("compare", "--scenario", "hour.yaml", "--errors", "generic", "--seeds", "1").exit_code == 2
    with sqlite3.connect(tmp_path / "history.db") as db:
        assert db.execute("SELECT COUNT(*) FROM groups").fetchone() == (1,)


@pytest.mark.parametrize(
    "command",
    [
        ("sweep", "--param", "faults[0].probability=0,0.1", "--policies", "structured", "--no-history"),
        ("ablation", "--policy", "structured"),
    ],
)
def test_a_study_says_it_does_not_judge_the_gates(cli, command):
    """sweep and ablation name the gates they leave unjudged on stderr, and say which command judges them;
    a scenario without gates gets no such line."""
    name, *rest = command
    with_gates = cli(name, "--scenario", "hour.yaml", *rest, "--seeds", "1", "--jobs", "1")
    assert with_gates.exit_code == 0, with_gates.output
    assert f"hour.yaml has 2 expect: gates, which `{name}` does not judge" in with_gates.stderr
    assert "fleetchaos compare --scenario hour.yaml" in with_gates.stderr
    plain = cli(name, "--scenario", "plain.yaml", *rest, "--seeds", "1", "--jobs", "1")
    assert plain.exit_code == 0, plain.output
    assert "expect: gate" not in plain.stderr
