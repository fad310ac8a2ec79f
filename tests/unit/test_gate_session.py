"""The gate session the CLI and the plugin share: baseline first, runs as they arrive, the gate at the end."""

from __future__ import annotations

import pytest

from fleetchaos.errors import UserError
from fleetchaos.gates.history import open_store
from fleetchaos.gates.session import COMMAND, SUITE, GateSession
from fleetchaos.results.models import RunResult
from fleetchaos.scenario.load import load_scenario


def run(scenario: str, policy: str, seed: int, recovery: float) -> RunResult:
    """A finished run with the gated metrics (both recovery rates and the success rate set to ``recovery``)."""
    return RunResult(scenario=scenario, policy=policy, errors="generic", seed=seed, breakdowns={}, fault_schedule=[],
                     replay=f"fleetchaos run --seed {seed}",
                     metrics={"success_rate": recovery, "common_recovery_rate": recovery, "recovery_rate": recovery,
                              "silent_failure_rate": 0.1, "wasted_retries": 3.0})  # fmt: skip


@pytest.fixture
def stored(tmp_path):
    """A history holding group #1 ('main'): backoff on generic errors, seeds 1-3, recovery 0.5 each."""
    path = tmp_path / "h.db"
    with open_store(path) as store:
        gid = store.new_group("compare", "s", label="main")
        for seed in (1, 2, 3):
            store.add_run(gid, run("s", "backoff", seed, 0.5))
        store.finish_group(gid)
    return path


def test_the_baseline_is_resolved_before_anything_is_stored(stored):
    """An unknown group is refused at construction: no group is opened in the history."""
    with pytest.raises(UserError, match="no run group 'nightly'"):
        GateSession(COMMAND, baseline_ref="nightly", history_path=stored, store=True)
    with open_store(stored, create=False) as store:
        assert len(store.groups()) == 1


def test_a_command_stores_each_run_and_gates_the_group_at_the_end(stored):
    """Runs are stored as they arrive; the gate prints one line per check and returns exit 1 on a regression."""
    session = GateSession(COMMAND, baseline_ref="main", fail_on=["recovery_rate:-2%"], history_path=stored, store=True)
    session.start("compare", load_scenario("default"), {"seeds": [1, 2, 3]})
    for seed, value in ((1, 0.5), (2, 0.4), (3, 0.5)):
        session.add(run("s", "backoff", seed, value))
    session.finish("complete")
    lines: list[str] = []
    assert session.gate(lines.append) == 1
    assert lines[0].startswith("REGRESSION recovery_rate for backoff on generic: 0.466667 against 0.5 in baseline #1")
    assert lines[-1] == "1 regression(s) against baseline #1 (evidence mode weak): exit 1"
    with open_store(stored, create=False) as store:
        (newest, _) = store.groups()
        assert (newest.status, newest.runs, newest.meta["seeds"]) == ("complete", 3, [1, 2, 3])


def test_a_baseline_alone_reports_in_the_cli_and_gates_in_the_plugin(stored):
    """Without thresholds the command only compares; the suite gates at the registry's default thresholds."""
    worse = [run("s", "backoff", seed, 0.4) for seed in (1, 2, 3)]
    command = GateSession(COMMAND, baseline_ref="main", history_path=stored)
    assert [c.failed for c in command.check(worse)] == [False, False, False, False]
    assert command.check(worse)[0].line().startswith("compared success_rate")
    suite = GateSession(SUITE, baseline_ref="main", history_path=stored)
    assert [c.rule.metric for c in suite.check(worse)] == [
        "success_rate", "common_recovery_rate", "silent_failure_rate", "wasted_retries",
    ]  # fmt: skip
    assert [c.failed for c in suite.check(worse)] == [True, True, False, False]


def test_arms_match_by_scenario_in_the_plugin_and_by_arm_in_the_cli(stored):
    """The plugin judges only the baseline's arm of the same scenario; the CLI compares a command's lone arm with the group's."""
    other_scenario = [run("t", "backoff", seed, 0.1) for seed in (1, 2, 3)]
    assert GateSession(SUITE, baseline_ref="main", history_path=stored).check(other_scenario) == []
    checks = GateSession(COMMAND, baseline_ref="main", fail_on=["recovery_rate:-2%"], history_path=stored).check(
        other_scenario
    )
    assert checks[0].failed and checks[0].baseline_arm == "backoff on generic"


def test_without_a_baseline_nothing_is_kept_for_a_gate(tmp_path):
    """No baseline: the gate passes at once and finished runs are counted, not kept."""
    session = GateSession(COMMAND, history_path=tmp_path / "h.db")
    session.add(run("s", "backoff", 1, 0.5))
    assert session.finished == 1 and session.check() == [] and session.gate(print) == 0
    with pytest.raises(UserError, match="--fail-on needs --baseline REF"):
        GateSession(COMMAND, fail_on=["recovery_rate:-2%"])
