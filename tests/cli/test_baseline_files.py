"""--baseline on run and compare takes the results.json a CI commits (or its report folder), as the plugin does."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import fleetchaos.runs.runner as runner
from fleetchaos.gates import baseline_docs as baseline_module
from fleetchaos.gates.history import open_store


@pytest.fixture
def cli(history_cli):
    """The CLI in a temporary working directory (see tests/conftest.py)."""
    return history_cli


@pytest.fixture
def results_file(cli, small, tmp_path) -> str:
    """The results.json of structured and backoff on structured errors, seeds 1-3, as `compare --json` prints it."""
    result = cli("compare", "--scenario", small, "--seeds", "3", "--jobs", "1", "--policies", "structured,backoff",
                 "--errors", "structured", "--no-history", "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    folder = tmp_path / "committed"
    folder.mkdir()
    (folder / "results.json").write_text(result.stdout)
    return str(folder / "results.json")


@pytest.fixture
def no_runs(monkeypatch):
    """Fail the test if any simulated run starts."""

    def refuse(*args, **kwargs):
        raise AssertionError("a run started")

    monkeypatch.setattr(runner, "run_one", refuse)


def test_a_results_file_or_its_folder_gates_a_comparison(cli, small, results_file):
    """The same arm passes against the file and the folder; an arm the baseline lacks is new: noted, or with
    --fail-on-new a failure."""
    same = cli("compare", "--scenario", small, "--seeds", "3", "--jobs", "1", "--policies", "structured", "--errors",
               "structured", "--baseline", results_file, "--fail-on", "recovery_rate:-2%")  # fmt: skip
    assert same.exit_code == 0, same.stderr
    assert "ok recovery_rate for structured on structured" in same.stderr and "over 3 seeds" in same.stderr
    assert f"in baseline {results_file} (structured on structured)" in same.stderr
    folder = str(Path(results_file).parent)
    worse = cli("run", "--scenario", small, "--policy", "blind-retry", "--errors", "structured", "--seed", "2",
                "--baseline", folder, "--fail-on", "recovery_rate:-2%")  # fmt: skip
    assert worse.exit_code == 2  # one arm against a baseline of two: no arm in common, found before the run
    assert "no arm in common" in worse.stderr
    args = ("compare", "--scenario", small, "--seeds", "3", "--jobs", "1", "--policies", "structured,blind-retry",
            "--errors", "structured", "--baseline", folder, "--fail-on", "recovery_rate:-2%")  # fmt: skip
    new = cli(*args)
    assert new.exit_code == 0, new.stderr
    assert "note new arm: blind-retry on structured: no such arm in baseline" in new.stderr  # listed, not skipped
    assert "ok recovery_rate for structured on structured" in new.stderr
    asked = cli(*args, "--fail-on-new")
    assert asked.exit_code == 1, asked.stderr
    assert "FAILED new arm: blind-retry on structured: no such arm in baseline" in asked.stderr


def test_a_regression_against_a_results_file_exits_1(cli, small, results_file, tmp_path):
    """Blind retries on generic errors against a one-arm results file: paired seed by seed, exit 1 on the regression."""
    doc = json.loads((tmp_path / "committed" / "results.json").read_text())
    doc["arms"] = [a for a in doc["arms"] if a["policy"] == "structured"]
    one_arm = tmp_path / "one_arm.json"
    one_arm.write_text(json.dumps(doc))
    result = cli("compare", "--scenario", small, "--seeds", "3", "--jobs", "1", "--policies", "blind-retry",
                 "--errors", "generic", "--baseline", str(one_arm), "--fail-on", "recovery_rate:-2%")  # fmt: skip
    assert result.exit_code == 1, result.stderr
    assert "REGRESSION recovery_rate for blind-retry on generic" in result.stderr and "over 3 seeds" in result.stderr


def test_no_arm_in_common_is_found_before_anything_runs(cli, small, results_file, no_runs, tmp_path):
    """Arms the baseline does not have at all: exit 2 naming both sides, no run started, no group stored."""
    history = tmp_path / "h.db"
    for args in (
        ("compare", "--seeds", "3", "--jobs", "1", "--policies", "blind-retry", "--errors", "generic,raw"),
        ("run", "--policy", "blind-retry", "--errors", "generic"),
    ):
        result = cli(*args, "--scenario", small, "--baseline", results_file, "--history", str(history))
        assert result.exit_code == 2, result.stderr
        assert "no arm in common" in result.stderr and "nothing was run" in result.stderr
        assert "the baseline has: backoff on structured, structured on structured" in result.stderr
    if history.exists():
        with open_store(history, create=False, readonly=True) as store:
            assert store.groups() == []


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        ('{"hello": 1}', "not a fleetchaos results document"),
        ('{"format": "fleetchaos-history-export", "version": 9, "group": {}, "runs": []}', "of version 9"),
        ('{"format": "fleetchaos-history-export", "version": 1, "group": {}, "runs": 3}', "needs 'group'"),
        ('{"a": 1, "a": 2}', "not a results file"),
    ],
    ids=["not-json", "wrong-shape", "newer-export", "bad-export", "repeated-key"],
)
def test_a_corrupt_baseline_file_is_exit_2_before_anything_runs(cli, small, no_runs, tmp_path, content, message):
    """A baseline file that cannot be read as results: one message naming it, exit 2, no run."""
    path = tmp_path / "baseline.json"
    path.write_text(content)
    result = cli("compare", "--scenario", small, "--seeds", "2", "--baseline", str(path), "--no-history")
    assert result.exit_code == 2
    assert str(path) in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_baseline_file_is_read_with_a_size_limit(cli, small, no_runs, monkeypatch, tmp_path):
    """A file over the limit is refused before it is read whole."""
    monkeypatch.setattr(baseline_module, "MAX_BASELINE_BYTES", 1000)
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"scenario": "s", "arms": [], "pad": "x" * 5000}))
    result = cli("run", "--scenario", small, "--baseline", str(path), "--no-history")
    assert result.exit_code == 2 and "huge.json" in result.stderr and "Traceback" not in result.stderr


def test_an_export_of_an_unfinished_group_is_refused_unless_allowed(cli, small, tmp_path):
    """An exported group that was interrupted is a partial baseline: refused, or with the permission, said."""
    history = tmp_path / "h.db"
    assert cli("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--policies", "structured",
               "--errors", "structured", "--history", str(history)).exit_code == 0  # fmt: skip
    db = sqlite3.connect(history)
    db.execute("UPDATE groups SET status = 'interrupted'")
    db.commit()
    db.close()
    out = tmp_path / "partial.json"
    assert cli("history", "export", "1", "-o", str(out), "--history", str(history)).exit_code == 0
    args = ("run", "--scenario", small, "--policy", "structured", "--errors", "structured", "--no-history",
            "--baseline", str(out))  # fmt: skip
    refused = cli(*args)
    assert refused.exit_code == 2 and "the exported group is interrupted" in refused.stderr
    assert "--allow-partial-baseline" in refused.stderr
    allowed = cli(*args, "--allow-partial-baseline")
    assert allowed.exit_code == 0, allowed.stderr
    assert "note partial baseline" in allowed.stderr
