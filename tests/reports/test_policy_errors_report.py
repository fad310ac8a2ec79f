"""Broken user policies are contained and named: the report and the terminal say which arm misbehaved and how.

End to end through the real CLI: three deliberately broken policies (one raises, one returns
None, one never gives up) run by import path next to a working one.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
import yaml
from click.testing import CliRunner

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.reports.blocks import to_markdown
from fleetchaos.reports.policy_errors import POLICY_ERROR_MESSAGES, policy_error_blocks

#: Importable from the test's working directory (the CLI appends it to sys.path for ``module:Name``).
BROKEN = "fc_broken_report_policies"

BROKEN_SOURCE = textwrap.dedent(
    '''
    """Three deliberately broken policies."""
    from dataclasses import dataclass

    from fleetchaos.sim.observation import Retry


    @dataclass(frozen=True)
    class Raises:
        name: str = "raises"

        def decide(self, observation, history):
            raise RuntimeError("broken on purpose")


    @dataclass(frozen=True)
    class ReturnsNone:
        name: str = "returns-none"

        def decide(self, observation, history):
            return None


    @dataclass(frozen=True)
    class NeverGivesUp:
        name: str = "never-gives-up"

        def decide(self, observation, history):
            return Retry()
    '''
)

ARMS = ("structured", f"{BROKEN}:Raises", f"{BROKEN}:ReturnsNone", f"{BROKEN}:NeverGivesUp")


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working directory holding the broken policies and a small scenario that makes every one misbehave.

    Misreads (and the model's other readings) are off and a validation error fails some steps on every execution, so a
    policy that always retries meets failures that never clear and reaches the action cap.
    """
    (tmp_path / f"{BROKEN}.py").write_text(BROKEN_SOURCE)
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"] = "broken-policies"
    doc["workload"]["tasks_per_day"] = 100
    doc["fleet"]["misread_probability"] = 0
    # ... and the model does what its policy says (fleet.model: no giving up early, no retry past a stop)
    doc["fleet"]["model"] = {"give_up_probability": 0, "retry_permanent_probability": 0, "notice_silent_probability": 0}
    doc["faults"].append({"kind": "validation_error", "probability": 0.05})
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the CLI appends the working directory: undo it afterwards
    monkeypatch.delitem(sys.modules, BROKEN, raising=False)
    return tmp_path


def _without_common_set(arm: dict) -> dict:
    """An arm's results without the figures of the comparison's common set (which the other arms widen)."""
    arm = json.loads(json.dumps(arm))
    for part in ("metrics", "ci", "per_seed", "pooled"):
        arm[part].pop("common_recovery_rate", None)
    for key in ("common_set", "common_recovered"):
        arm["breakdowns"]["task_counts"].pop(key, None)
    return arm


def _compare(policies: tuple[str, ...], report: str):
    args = ["compare", "--scenario", "small.yaml", "--seeds", "2", "--jobs", "1", "--errors", "generic",
            "--policies", ",".join(policies), "--report", report, "--no-history"]  # fmt: skip
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_broken_policies_are_contained_and_named_in_the_report(workdir):
    """Every arm runs (exit 0); the working arm's results are untouched; the report and terminal name each problem."""
    mixed = _compare(ARMS, "mixed")
    assert mixed.exit_code == 0, mixed.output
    alone = _compare(("structured",), "alone")
    assert alone.exit_code == 0, alone.output

    doc = json.loads((workdir / "mixed" / "results.json").read_text())
    arms = {a["policy"]: a for a in doc["arms"]}
    assert list(arms) == list(ARMS)
    for name, arm in arms.items():
        assert len(arm["per_seed"]["tasks"]) == 2 and arm["metrics"]["tasks"] > 0, name
    # The broken arms beside it change nothing in the working arm: same faults, same decisions, same bytes,
    # but for recovery on the common set, whose set is every task faulted in any arm (wider with more arms).
    reference = json.loads((workdir / "alone" / "results.json").read_text())["arms"][0]
    assert (
        arms["structured"]["pooled"]["common_recovery_rate"]["trials"]
        > reference["pooled"]["common_recovery_rate"]["trials"]
    )
    assert json.dumps(_without_common_set(arms["structured"])) == json.dumps(_without_common_set(reference))
    assert arms["structured"]["metrics"]["policy_errors"] == 0
    assert arms["structured"]["breakdowns"]["policy_errors_by_message"] == {}

    expected = {
        "Raises": ("raised an exception", "policy raised RuntimeError: broken on purpose"),
        "ReturnsNone": ("returned an invalid action", "policy returned an invalid action: expected an action"),
    }
    # A policy that never gives up is stopped by the orchestrator's action cap: a limit with its own reason.
    never = arms[f"{BROKEN}:NeverGivesUp"]
    assert never["metrics"]["policy_errors"] == 0
    assert never["breakdowns"]["tasks_stopped_by_limit"]["action_cap"] > 0
    summary = (workdir / "mixed" / "summary.md").read_text()
    page = (workdir / "mixed" / "report.html").read_text()
    assert "## Policy errors" in summary and "<h2>Policy errors</h2>" in page
    for cls, (problem, message) in expected.items():
        arm = arms[f"{BROKEN}:{cls}"]
        by_message = arm["breakdowns"]["policy_errors_by_message"]
        assert len(by_message) == 1 and next(iter(by_message)).startswith(message), by_message
        tasks = sum(by_message.values())
        assert tasks == round(arm["metrics"]["policy_errors"] * 2) > 0
        heading = f"{BROKEN}:{cls} on generic: {tasks} tasks ended by a policy error"
        for text in (summary, page):
            assert heading in text and problem in text and message in text
    for text in (summary, page):  # the words a reader searches for
        assert "raised" in text and "invalid action" in text
    assert "structured on generic: " not in summary.split("## Policy errors")[1].split("\n## ")[0]
    assert "Policy errors" not in (workdir / "alone" / "summary.md").read_text()

    # The terminal names the broken arms in a few lines under the table, and only when there are any.
    lines = [line.strip() for line in mixed.stdout.splitlines()]
    start = lines.index("policy errors (each task given up, the run went on; --report names every message):")
    named = lines[start + 1 : start + 3]
    assert [line.split(" on generic:")[0] for line in named] == list(ARMS[1:3])
    assert "policy errors" not in alone.stdout


def test_run_report_names_a_broken_policy(workdir):
    """A single run of a broken policy: exit 0, its report and its table name the problem."""
    result = CliRunner().invoke(main, ["run", "--scenario", "small.yaml", "--policy", f"{BROKEN}:Raises",
                                       "--errors", "structured", "--report", "one", "--no-history"],
                                catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"{BROKEN}:Raises on structured:" in result.stdout and "policy raised RuntimeError" in result.stdout
    summary = (workdir / "one" / "summary.md").read_text()
    assert (
        "## Policy errors" in summary
        and "| raised an exception | policy raised RuntimeError: broken on purpose |" in summary
    )


def test_policy_error_section_lists_the_most_frequent_messages_first_and_sums_the_rest():
    """Messages that vary per task do not flood the report: the first ones by count, then one row for the rest."""
    messages = {f"policy raised KeyError: {i}": 1 for i in range(POLICY_ERROR_MESSAGES + 5)}
    messages["action cap reached: more than 100 actions for one task"] = 7
    text = to_markdown(
        policy_error_blocks(
            [("mine:P", "generic", {"policy_errors": 16.0}, {"policy_errors_by_message": messages})], runs=2
        )
    )
    rows = [line for line in text.splitlines() if line.startswith("| ") and "problem" not in line]
    assert (
        rows[0]
        == "| never gave up: hit the action cap for one task | action cap reached: more than 100 actions for one task | 7 |"
    )
    assert len(rows) == POLICY_ERROR_MESSAGES + 1
    assert rows[-1] == "|  | and 6 more distinct messages | 6 |"
    assert "mine:P on generic: 32 tasks ended by a policy error" in text


def test_policy_error_section_for_results_without_messages():
    """Results from before the breakdown existed still get the section, from the metric, and say how to see messages."""
    blocks = policy_error_blocks(
        [("old:P", "generic", {"policy_errors": 1.5}, {}), ("ok", "generic", {"policy_errors": 0.0}, {})], runs=2
    )
    text = to_markdown(blocks)
    assert "old:P on generic: 3 tasks ended by a policy error" in text and "were not recorded" in text
    assert "ok on generic" not in text
    assert (
        policy_error_blocks([("ok", "generic", {"policy_errors": 0.0}, {"policy_errors_by_message": {}})], runs=3) == []
    )
