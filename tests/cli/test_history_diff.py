"""history diff, export and prune: two stored groups paired by seed, a group as JSON and back, old groups removed."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import statistics
from pathlib import Path

import pytest

from fleetchaos.gates.history import open_store
from fleetchaos.results.student_t import student_t_quantile

#: A value of the small scenario that changes what its runs meet (the network blips' probability).
CHANGED = "faults[0].probability=0.3"


@pytest.fixture
def cli(history_cli):
    """The CLI in a temporary working directory (see tests/conftest.py)."""
    return history_cli


@pytest.fixture
def two_groups(cli, small, tmp_path) -> str:
    """#1 (label a): structured and blind-retry on generic, seeds 1-3; #2: structured and backoff, seeds 1-4, blips x15."""
    history = str(tmp_path / "h.db")
    common = ("--scenario", small, "--jobs", "1", "--errors", "generic", "--history", history)
    first = cli("compare", *common, "--seeds", "3", "--policies", "structured,blind-retry", "--label", "a")
    assert first.exit_code == 0, first.stderr
    second = cli("compare", *common, "--seeds", "4", "--policies", "structured,backoff", "--param", CHANGED)
    assert second.exit_code == 0, second.stderr
    return history


def _stored(cli, history: str, ref: str) -> dict[tuple[str, str, int], dict]:
    """(policy, errors, seed) -> metrics, as `history REF --json` lists them."""
    doc = json.loads(cli("history", ref, "--history", history, "--json").stdout)
    return {(r["policy"], r["errors"], r["seed"]): r["metrics"] for r in doc["runs"]}


def test_diff_of_two_stored_groups_pairs_by_seed_and_lists_what_is_unpaired(cli, two_groups):
    """The common arm is paired on the common seeds; its difference and interval are the per-seed ones; the rest is listed."""
    result = cli("history", "diff", "a", "2", "--history", two_groups, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    (arm,) = doc["arms"]
    assert (arm["policy"], arm["errors"]) == ("structured", "generic")
    assert arm["paired_seeds"] == [1, 2, 3] and arm["seeds_only_in_a"] == [] and arm["seeds_only_in_b"] == [4]
    assert [(u["side"], u["policy"], u["seeds"]) for u in doc["unpaired"]] == [
        ("A", "blind-retry", [1, 2, 3]),
        ("B", "backoff", [1, 2, 3, 4]),
    ]
    assert [m["metric"] for m in arm["metrics"]] == [
        "success_rate", "common_recovery_rate", "silent_failure_rate", "wasted_retries", "failed_retries",
    ]  # fmt: skip
    a, b = _stored(cli, two_groups, "a"), _stored(cli, two_groups, "2")
    for m in arm["metrics"]:
        if m["metric"] == "common_recovery_rate":
            continue  # recomputed on each pair's union of faulted tasks (checked in tests/unit)
        diffs = [b[("structured", "generic", s)][m["metric"]] - a[("structured", "generic", s)][m["metric"]]
                 for s in (1, 2, 3)]  # fmt: skip
        half = student_t_quantile(0.975, 2) * statistics.stdev(diffs) / 3**0.5
        assert m["pairs"] == 3
        assert m["difference"] == pytest.approx(statistics.mean(diffs), abs=1e-6)
        low, high = max(-1.0, statistics.mean(diffs) - half), statistics.mean(diffs) + half
        if m["unit"] == "proportion":
            high = min(1.0, high)
        assert m["ci"] == pytest.approx([low, high], abs=1e-6)
        assert m["a_mean"] == pytest.approx(
            statistics.mean(a[("structured", "generic", s)][m["metric"]] for s in (1, 2, 3)), abs=1e-6
        )  # results are rounded to 6 decimals
        assert m["verdict"] == "too few seeds"  # three pairs never name a winner
    assert any(m["difference"] != 0 for m in arm["metrics"])  # x15 blips change what the runs meet
    warnings = " ".join(doc["warnings"])
    assert "different parameters" in warnings and "scenario 'small' differs between the sides" in warnings
    text = cli("history", "diff", "a", "2", "--history", two_groups)
    assert "structured on generic" in text.stdout and "B - A" in text.stdout and " pp" in text.stdout
    assert "only in A: blind-retry on generic (seeds 1-3): not compared" in text.stdout
    assert "only in B: backoff on generic (seeds 1-4): not compared" in text.stdout
    assert "structured on generic: seeds only in B: 4 (not paired)" in text.stdout
    assert "warning:" in text.stderr and "different parameters" in text.stderr


def test_export_then_diff_and_baseline_round_trip(cli, two_groups, tmp_path):
    """A group exported to JSON diffs against itself with no change and gates as a --baseline file."""
    out = tmp_path / "exported.json"
    exported = cli("history", "export", "a", "-o", str(out), "--history", two_groups)
    assert exported.exit_code == 0, exported.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == "fleetchaos-history-export" and doc["version"] == 1
    assert doc["group"]["label"] == "a" and doc["group"]["status"] == "complete"
    assert [(r["policy"], r["seed"]) for r in doc["runs"]] == [
        ("structured", 1), ("structured", 2), ("structured", 3), ("blind-retry", 1), ("blind-retry", 2), ("blind-retry", 3),
    ]  # fmt: skip
    assert all(r["tasks"] == [] and "task_sets" in r for r in doc["runs"])
    assert cli("history", "export", "a", "--history", two_groups).stdout == out.read_text()  # stdout: the same bytes
    same = json.loads(cli("history", "diff", str(out), "a", "--history", two_groups, "--json").stdout)
    assert same["warnings"] == [] and same["unpaired"] == []
    assert same["a"]["fingerprints"] == same["b"]["fingerprints"]
    assert {(arm["policy"], m["difference"], m["pairs"]) for arm in same["arms"] for m in arm["metrics"]} == {
        ("structured", 0.0, 3),
        ("blind-retry", 0.0, 3),
    }


def test_an_exported_group_gates_a_comparison(cli, small, two_groups, tmp_path):
    """--baseline EXPORT.json pairs the same arm on the same seeds: unchanged passes; x15 blips is another world,
    refused before anything runs (exit 2, naming the changed field), never judged as a regression or a pass."""
    out = tmp_path / "a.json"
    assert cli("history", "export", "a", "-o", str(out), "--history", two_groups).exit_code == 0
    args = ("compare", "--scenario", small, "--seeds", "3", "--jobs", "1", "--policies", "structured", "--errors",
            "generic", "--no-history", "--baseline", str(out), "--fail-on", "success_rate:-1%")  # fmt: skip
    same = cli(*args)
    assert same.exit_code == 0, same.stderr
    assert "ok success_rate for structured on generic" in same.stderr and "over 3 seeds" in same.stderr
    other = cli(*args, "--param", CHANGED)
    assert other.exit_code == 2, other.stderr
    message = " ".join(other.stderr.split())
    assert (
        "other scenario: baseline" in message and "this run 'small' with --param faults[0].probability=0.3" in message
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_prune_lists_without_removing_then_removes_with_yes(cli, small, tmp_path):
    """A dry run changes no byte; --yes removes the old groups and their runs, never the newest of a label."""
    history = tmp_path / "h.db"
    for label in ("old", None, None):
        args = ("run", "--scenario", small, "--history", str(history)) + (("--label", label) if label else ())
        assert cli(*args).exit_code == 0
    before = _digest(history)
    dry = cli("history", "prune", "--keep", "1", "--history", str(history))
    assert dry.exit_code == 0, dry.stderr
    assert "would remove: 1 group(s), 1 run(s)" in dry.stdout and "#2" in dry.stdout
    assert "kept #1 (small): the newest group labelled 'old'" in dry.stdout
    assert "dry run: nothing was removed" in dry.stderr
    assert _digest(history) == before
    done = cli("history", "prune", "--keep", "1", "--history", str(history), "--yes")
    assert done.exit_code == 0, done.stderr
    assert "removed 1 group(s) and 1 run(s)" in done.stderr
    with open_store(history, create=False, readonly=True) as store:
        assert [g.id for g in store.groups()] == [3, 1]
        assert store.runs(2) == []
    assert cli("history", "prune", "--before", "2000-01-01", "--history", str(history)).stdout.startswith("nothing")


def test_prune_refuses_a_file_that_is_not_a_store_and_needs_a_rule(cli, tmp_path):
    """A foreign SQLite file is refused untouched (exit 2); prune without --keep or --before is a usage error."""
    path = tmp_path / "foreign.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE groups (x)")
    db.commit()
    db.close()
    before = _digest(path)
    result = cli("history", "prune", "--keep", "0", "--yes", "--history", str(path))
    assert result.exit_code == 2 and "not a fleetchaos history" in result.stderr
    assert _digest(path) == before
    result = cli("history", "prune", "--history", str(path))
    assert result.exit_code == 2 and "give --keep N" in result.stderr
    result = cli("history", "prune", "--before", "last week", "--history", str(path))
    assert result.exit_code == 2 and "--before 'last week': not a date" in result.stderr


def test_diff_mistakes_are_one_message(cli, two_groups, tmp_path):
    """A missing file, a bad document, an unknown group or metric: exit 2, one message, no traceback."""
    (tmp_path / "bad.json").write_text('{"hello": 1}')
    for args, message in (
        (("missing.json", "a"), "history diff A missing.json: no such file or folder"),
        (("a", "bad.json"), "bad.json: not a fleetchaos results document"),
        (("a", "nightly"), "no run group 'nightly'"),
        (("a", "2", "--metric", "sucess_rate"), "unknown metric 'sucess_rate'"),
    ):
        result = cli("history", "diff", *args, "--history", two_groups)
        assert result.exit_code == 2, (args, result.stdout)
        assert message in result.stderr and "Traceback" not in result.stderr


def test_the_listing_is_still_the_default(cli, two_groups):
    """`history`, `history REF` and `history show REF` list as before the subcommands existed."""
    listing = cli("history", "--history", two_groups)
    assert listing.exit_code == 0 and "#2" in listing.stdout and "#1" in listing.stdout
    by_label = json.loads(cli("history", "a", "--history", two_groups, "--json").stdout)
    assert by_label == json.loads(cli("history", "show", "a", "--history", two_groups, "--json").stdout)
    assert by_label["group"] == 1
