"""The run history and regression gate from the command line: storing, listing, baselines, --fail-on, exit codes."""

from __future__ import annotations

import json

import pytest

from fleetchaos.gates.history import open_store


@pytest.fixture
def baseline(cli, small, tmp_path) -> str:
    """A stored baseline: the structured policy on structured errors, 5 seeds, labelled 'good'."""
    history = str(tmp_path / "h.db")
    result = cli("compare", "--scenario", small, "--seeds", "5", "--jobs", "1", "--policies", "structured",
                 "--errors", "structured", "--label", "good", "--history", history)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return history


def test_compare_stores_every_run_in_one_group(cli, small, tmp_path):
    """compare appends one group holding a run per arm and seed, marked complete, to the default history file."""
    result = cli("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--policies", "backoff,structured")
    assert result.exit_code == 0
    with open_store(tmp_path / "fleetchaos-out" / "history.db", create=False) as store:
        (group,) = store.groups()
        assert (group.kind, group.scenario, group.status, group.runs) == ("compare", "small", "complete", 8)
        assert group.meta["seeds"] == [1, 2] and group.meta["policies"] == ["backoff", "structured"]
        assert len(group.meta["scenario_hash"]) == 16
        runs = store.runs(group.id)
        assert {(r.policy, r.errors, r.seed) for r in runs} == {
            (p, e, s) for p in ("backoff", "structured") for e in ("generic", "structured") for s in (1, 2)
        }


def test_no_history_writes_nothing(cli, small, tmp_path):
    """--no-history leaves no history file behind."""
    assert cli("run", "--scenario", small, "--no-history").exit_code == 0
    assert not (tmp_path / "fleetchaos-out").exists()


def test_worse_policy_fails_the_gate_with_one_line_per_regression(cli, small, baseline):
    """Blind retries on generic errors against the structured baseline: exit 1, a REGRESSION line per failed metric."""
    result = cli("compare", "--scenario", small, "--seeds", "5", "--jobs", "1", "--policies", "blind-retry",
                 "--errors", "generic", "--history", baseline, "--baseline", "good",
                 "--fail-on", "recovery_rate:-2%", "--fail-on", "silent_failure_rate:+1pp")  # fmt: skip
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("REGRESSION")]
    assert len(lines) == 2
    assert lines[0].startswith("REGRESSION recovery_rate for blind-retry on generic: ")
    assert "in baseline #1 (structured on structured)" in lines[0] and "allowed -2% over 5 seeds" in lines[0]
    assert lines[1].startswith("REGRESSION silent_failure_rate for blind-retry on generic")
    assert "2 regression(s) against baseline #1 (evidence mode weak): exit 1" in result.stderr


def test_single_run_gated_against_a_stored_comparison(cli, small, baseline):
    """A single run of a worse policy on a seed the baseline ran fails the gate too."""
    result = cli("run", "--scenario", small, "--policy", "blind-retry", "--errors", "generic", "--seed", "3",
                 "--history", baseline, "--baseline", "latest", "--fail-on", "wasted_retries:+10%")  # fmt: skip
    assert result.exit_code == 1
    assert "REGRESSION wasted_retries for blind-retry on generic" in result.stderr
    assert "over 1 seed" in result.stderr


def test_same_policy_passes_the_gate(cli, small, baseline):
    """The baseline's own arm on the same seeds passes: exit 0 and an 'ok' line."""
    result = cli("compare", "--scenario", small, "--seeds", "5", "--jobs", "1", "--policies", "structured",
                 "--errors", "structured", "--history", baseline, "--baseline", "#1", "--fail-on", "recovery_rate:-2%")  # fmt: skip
    assert result.exit_code == 0
    assert "ok recovery_rate for structured on structured" in result.stderr
    assert "change +0" in result.stderr


def test_baseline_without_fail_on_only_reports_changes(cli, small, baseline):
    """--baseline alone prints the headline changes and never fails."""
    result = cli("run", "--scenario", small, "--policy", "blind-retry", "--errors", "generic", "--history", baseline,
                 "--baseline", "good")  # fmt: skip
    assert result.exit_code == 0
    assert "compared success_rate for blind-retry on generic" in result.stderr
    assert "compared common_recovery_rate for blind-retry on generic" in result.stderr


def test_history_lists_groups_and_runs(cli, small, baseline):
    """fleetchaos history lists stored groups; with a reference it lists that group's runs."""
    listing = cli("history", "--history", baseline)
    assert listing.exit_code == 0 and "#1" in listing.stdout and "good" in listing.stdout
    doc = json.loads(cli("history", "good", "--history", baseline, "--json").stdout)
    assert doc["group"] == 1 and [r["seed"] for r in doc["runs"]] == [1, 2, 3, 4, 5]
    assert all("recovery_rate" in r["metrics"] for r in doc["runs"])
    groups = json.loads(cli("history", "--history", baseline, "--json").stdout)["groups"]
    assert groups[0]["label"] == "good" and groups[0]["runs"] == 5


@pytest.fixture
def bad_files(tmp_path):
    """A malformed JSON file, a JSON file of the wrong shape, and a file that is not a database."""
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"hello": "world"}))
    (tmp_path / "junk.db").write_text("not a database " * 20)
    return tmp_path


@pytest.mark.parametrize(
    "args, message",
    [
        (("report", "missing.json", "-o", "out"), "missing.json: no such file"),
        (("report", "garbage.json", "-o", "out"), "garbage.json: not JSON (line 1, column 2"),
        (("report", "other.json", "-o", "out"), "other.json: not a fleetchaos run result"),
        (("run", "--baseline", "1", "--fail-on", "recovery_rate:+2%"), "write recovery_rate:-2%"),
        (("run", "--baseline", "1", "--fail-on", "recovery_rate"), "expected METRIC:THRESHOLD"),
        (("run", "--fail-on", "recovery_rate:-2%"), "--fail-on needs --baseline REF"),
        (("run", "--baseline", "nightly"), "nightly: no such file or folder, and no run history at"),
        (("history", "--history", "junk.db"), "junk.db: not a fleetchaos history"),
        (("run", "--label", "7"), "a label cannot be a number"),
    ],
    ids=[
        "missing-results",
        "malformed-json",
        "wrong-shape",
        "gate-sign",
        "gate-form",
        "gate-no-baseline",
        "no-history-file",
        "not-a-database",
        "numeric-label",
    ],
)
def test_user_mistakes_exit_2_with_one_message(cli, bad_files, args, message):
    """Bad results files, gate specs, baselines and history files give exit 2 and one message, never a traceback."""
    result = cli(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_unknown_baseline_names_the_known_groups(cli, small, baseline):
    """An unknown --baseline is refused before anything runs, listing the stored groups."""
    result = cli("run", "--scenario", small, "--history", baseline, "--baseline", "nightly")
    assert result.exit_code == 2
    assert "no run group 'nightly'" in result.stderr and "#1 (good)" in result.stderr
    with open_store(baseline, create=False) as store:
        assert len(store.groups()) == 1  # nothing was run or stored


@pytest.fixture
def cli(history_cli):
    """The CLI in a temporary working directory (see tests/conftest.py)."""
    return history_cli
