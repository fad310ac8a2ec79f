"""The run cache from the command line: the same bytes warm, cold and without it; concurrent commands; a foreign file left alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """Invoke the CLI with the run cache on, in tmp_path/cache; returns (invoke, folder)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("FLEETCHAOS_CACHE", str(folder))
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str):
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result

    return invoke, folder


def _entries(folder: Path) -> int:
    import sqlite3

    return sqlite3.connect(folder / "runs.sqlite").execute("SELECT COUNT(*) FROM runs").fetchone()[0]


def test_every_study_prints_the_same_bytes_cold_warm_and_without_the_cache(cached, small):
    invoke, folder = cached
    commands = [
        ("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--json", "--no-history"),
        ("run", "--scenario", small, "--seed", "3", "--json", "--no-history"),
        ("sweep", "--scenario", small, "--param", "fleet.workers=5,10", "--policies", "backoff",
         "--errors", "generic", "--seeds", "2", "--jobs", "1", "--json", "--no-history"),
        ("robustness", "--scenario", small, "--param", "fleet.workers=5,10", "--seeds", "2", "--jobs", "1",
         "--arm", "blind-retry", "generic", "--arm", "backoff", "generic", "--json"),
    ]  # fmt: skip
    for args in commands:
        cold = invoke(*args)
        stored = _entries(folder)
        warm = invoke(*args)
        assert _entries(folder) == stored  # nothing new made: every run was served, and it says so
        assert "runs served from" in warm.stderr
        fresh = invoke(*args, "--no-cache")
        assert cold.stdout == warm.stdout == fresh.stdout, args[0]


def test_a_report_folder_is_the_same_from_the_cache(cached, small, tmp_path):
    invoke, _folder = cached
    args = ("compare", "--scenario", small, "--seeds", "1", "--jobs", "1", "--policies", "blind-retry,structured")
    invoke(*args, "--report", str(tmp_path / "cold"))
    invoke(*args, "--report", str(tmp_path / "warm"))
    invoke(*args, "--report", str(tmp_path / "fresh"), "--no-cache")
    for path in sorted((tmp_path / "fresh").iterdir()):
        assert (tmp_path / "warm" / path.name).read_bytes() == path.read_bytes(), path.name
        assert (tmp_path / "cold" / path.name).read_bytes() == path.read_bytes(), path.name


def test_no_cache_writes_nothing_and_a_foreign_file_is_left_untouched(cached, small, tmp_path):
    invoke, folder = cached
    invoke("run", "--scenario", small, "--json", "--no-history", "--no-cache")
    assert not folder.exists()
    folder.mkdir()
    (folder / "runs.sqlite").write_bytes(b"not ours" * 200)
    result = invoke("run", "--scenario", small, "--json", "--no-history")
    assert "runs are made without it" in result.stderr
    assert (folder / "runs.sqlite").read_bytes() == b"not ours" * 200


def test_the_cache_command_shows_prunes_and_clears(cached, small):
    invoke, folder = cached
    invoke("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--json", "--no-history")
    assert "12 entries" in invoke("cache", "stats").stdout
    assert "removed 0 entries" in invoke("cache", "prune").stdout
    assert "removed 12 entries" in invoke("cache", "prune", "--max-size", "0").stdout
    invoke("compare", "--scenario", small, "--seeds", "1", "--jobs", "1", "--json", "--no-history")
    assert "removed 6 entries" in invoke("cache", "clear").stdout
    assert " 0 entries" in invoke("cache", "stats").stdout
    refused = CliRunner().invoke(main, ["cache", "stats", "--dir", str(folder / "none")])
    assert refused.exit_code == 2 and "no run cache here" in refused.output
    refused = CliRunner().invoke(main, ["cache", "prune", "--max-size", "lots"])
    assert refused.exit_code == 2 and "not a size" in refused.output


def test_concurrent_commands_writing_the_same_runs_agree(small, tmp_path):
    """Two commands filling one cache at once both succeed, print what an uncached command prints, and leave it whole."""
    env = {**os.environ, "FLEETCHAOS_CACHE": str(tmp_path / "cache")}
    args = [sys.executable, "-m", "fleetchaos.cli", "compare", "--scenario", small, "--seeds", "2", "--jobs", "1",
            "--json", "--no-history"]  # fmt: skip
    procs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
             for _ in range(3)]  # fmt: skip
    outs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    fresh = subprocess.run([*args, "--no-cache"], env=env, capture_output=True, cwd=tmp_path, check=True).stdout
    assert {out for out, _ in outs} == {fresh}
    assert _entries(tmp_path / "cache") == 12
    warm = subprocess.run(args, env=env, capture_output=True, cwd=tmp_path, check=True).stdout
    assert warm == fresh
