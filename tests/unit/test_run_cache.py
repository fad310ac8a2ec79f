"""The run cache: served results are byte for byte a fresh run's; damage, other code and kills are misses, never wrong."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fleetchaos.runs import cache_key
from fleetchaos.runs.cache import CacheUnavailableError, Need, RunCache, using_cache
from fleetchaos.runs.cache_key import module_digest, run_key, scenario_digest, source_digest
from fleetchaos.runs.runner import compare, run_one
from fleetchaos.scenario.load import load_scenario

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def world(small):
    return load_scenario(small)


def _json(result) -> str:
    return result.model_dump_json()


def test_a_hit_is_byte_identical_to_a_fresh_run_rows_and_csv_included(world, tmp_path):
    fresh = run_one(world, "structured", "structured", 3, keep_tasks=True, task_csv=True)
    cache = RunCache(tmp_path)
    with using_cache(cache):
        made = run_one(world, "structured", "structured", 3, keep_tasks=True, task_csv=True)
    assert (cache.hits, cache.misses, cache.stored) == (0, 1, 1)
    with using_cache(cache):
        served = run_one(world, "structured", "structured", 3, keep_tasks=True, task_csv=True)
        plain = run_one(world, "structured", "structured", 3)  # the entry holds more than asked: served without rows
    assert cache.hits == 2
    assert _json(served) == _json(made) == _json(fresh)
    assert served.tasks == fresh.tasks and served.tasks and served.tasks_csv == fresh.tasks_csv
    assert _json(plain) == _json(run_one(world, "structured", "structured", 3)) and plain.tasks_csv is None


def test_an_entry_without_rows_is_a_miss_for_a_run_that_needs_them(world, tmp_path):
    cache = RunCache(tmp_path)
    with using_cache(cache):
        run_one(world, "backoff", "generic", 2)
        with_rows = run_one(world, "backoff", "generic", 2, keep_tasks=True)
        again = run_one(world, "backoff", "generic", 2, keep_tasks=True)
    assert (cache.hits, cache.misses) == (1, 2)
    assert with_rows.tasks and again.tasks == with_rows.tasks


def test_a_comparison_from_the_cache_equals_one_made_afresh(world, tmp_path):
    fresh = compare(world, [1, 2], policies=("blind-retry", "structured"), scenario_ref="small", trace=True)
    cache = RunCache(tmp_path)
    with using_cache(cache):
        first = compare(world, [1, 2], policies=("blind-retry", "structured"), scenario_ref="small", trace=True)
        second = compare(world, [1, 2], policies=("blind-retry", "structured"), scenario_ref="small", trace=True)
    assert _json(first) == _json(second) == _json(fresh)
    assert cache.hits == cache.misses == 8 + 2  # 2 policies x 2 formats x 2 seeds, and the 2 traced runs


def test_other_code_is_never_served(world, tmp_path, monkeypatch):
    cache = RunCache(tmp_path)
    with using_cache(cache):
        run_one(world, "structured", "structured", 1)
    monkeypatch.setattr(cache_key, "code_digest", lambda: "another version of the simulation")
    other = RunCache(tmp_path)
    with using_cache(other):
        run_one(world, "structured", "structured", 1)
    assert (other.hits, other.misses) == (0, 1)
    assert other.stats().other_code == 1


def test_a_change_to_any_simulation_source_file_changes_the_code_digest(tmp_path):
    import fleetchaos.sim

    package = Path(fleetchaos.sim.__file__).parent
    copy = tmp_path / "sim"
    import shutil

    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_digest([copy])
    assert before == source_digest([package])
    world_py = copy / "world.py"
    world_py.write_text(world_py.read_text() + "\n# one more line\n")
    assert source_digest([copy]) != before
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "x.py").write_text("ignored")  # compiled caches are not source
    world_py.write_text(world_py.read_text().removesuffix("\n# one more line\n"))
    assert source_digest([copy]) == before


def test_a_damaged_entry_is_a_miss_deleted_and_made_again(world, tmp_path):
    cache = RunCache(tmp_path)
    with using_cache(cache):
        made = run_one(world, "structured", "generic", 4)
    db = sqlite3.connect(cache.path)
    (body,) = db.execute("SELECT body FROM runs").fetchone()
    flipped = bytes([body[0]]) + bytes([body[1] ^ 0xFF]) + body[2:]
    db.execute("UPDATE runs SET body = ?", (flipped,))
    db.commit()
    db.close()
    again = RunCache(tmp_path)
    with using_cache(again):
        remade = run_one(world, "structured", "generic", 4)
    assert (again.hits, again.misses) == (0, 1)
    assert _json(remade) == _json(made)
    # A body whose checksum matches but whose content is not a result (a forged or buggy entry) is a miss too.
    db = sqlite3.connect(again.path)
    db.execute(
        "UPDATE runs SET body = ?, checksum = ?", (b"garbage", __import__("hashlib").sha256(b"garbage").hexdigest())
    )
    db.commit()
    db.close()
    last = RunCache(tmp_path)
    assert last.get_many({k: Need() for (k,) in sqlite3.connect(last.path).execute("SELECT key FROM runs")}) == {}


def test_a_file_that_is_not_a_run_cache_is_refused_untouched(tmp_path):
    target = tmp_path / "runs.sqlite"
    target.write_bytes(b"my thesis, not a database" * 100)
    with pytest.raises(CacheUnavailableError, match="runs.sqlite"):
        RunCache(tmp_path)
    assert target.read_bytes() == b"my thesis, not a database" * 100
    other = tmp_path / "other"
    other.mkdir()
    db = sqlite3.connect(other / "runs.sqlite")
    db.execute("CREATE TABLE mine (x)")
    db.commit()
    db.close()
    with pytest.raises(CacheUnavailableError, match="not a fleetchaos run cache"):
        RunCache(other)


def test_nothing_is_created_until_a_result_is_stored(world, tmp_path):
    folder = tmp_path / "cache"
    cache = RunCache(folder)
    assert cache.get_many({"k": Need()}) == {}
    assert not folder.exists()


def test_the_store_is_bounded_least_recently_used_first(world, tmp_path):
    cache = RunCache(tmp_path)
    with using_cache(cache):
        for seed in (1, 2, 3):
            run_one(world, "backoff", "generic", seed)
            cache.flush()
        run_one(world, "backoff", "generic", 1)  # seed 1 used again: seed 2 is now the least recently used
    size = cache.stats().bytes
    removed, _ = cache.prune(max_bytes=size - 1)
    assert removed == 1
    keys = {k for (k,) in sqlite3.connect(cache.path).execute("SELECT key FROM runs")}
    key2 = run_key(scenario_digest(world), "backoff", "generic", 2, scenario_ref=None)
    assert key2 not in keys and len(keys) == 2


def test_a_user_policy_enters_the_key_by_its_source(tmp_path, monkeypatch, world):
    package = tmp_path / "teampol"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("DELAY = 1.0\n")
    (package / "mine.py").write_text(
        textwrap.dedent(
            """
            from fleetchaos.sim.observation import GiveUp

            class Mine:
                name = "mine"

                def decide(self, observation, history):
                    return GiveUp("mine")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    digest = scenario_digest(world)
    first = run_key(digest, "teampol.mine:Mine", "structured", 1, scenario_ref=None)
    assert first is not None and first == run_key(digest, "teampol.mine:Mine", "structured", 1, scenario_ref=None)
    (package / "helpers.py").write_text("DELAY = 2.0\n")  # a module the policy may import: its package is digested
    assert run_key(digest, "teampol.mine:Mine", "structured", 1, scenario_ref=None) != first
    # A module that cannot be imported, or an entry point that is not installed, is not cached.
    assert run_key(digest, "nosuchpkg.x:Y", "structured", 1, scenario_ref=None) is None
    assert run_key(digest, "not-installed-anywhere", "structured", 1, scenario_ref=None) is None
    assert module_digest("fleetchaos_no_such_module") is None


_WRITER = """
import sys
from fleetchaos.results.models import RunResult
from fleetchaos.runs.cache import RunCache
result = RunResult.model_validate_json(open(sys.argv[2]).read())
cache = RunCache(sys.argv[1])
n = 0
while True:
    for i in range(8):
        cache.put(f"{sys.argv[3]}-{n}-{i}", result)
    cache.flush()
    n += 1
    if n == 3:
        print("writing", flush=True)
"""


def test_kill_9_during_writes_leaves_every_entry_whole(world, tmp_path):
    result = run_one(world, "structured", "structured", 1)
    source = tmp_path / "result.json"
    source.write_text(_json(result))
    folder = tmp_path / "cache"
    for attempt in range(3):  # killed at three different moments of its writes
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(folder), str(source), str(attempt)], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "writing"  # progress, not a clock: it is mid-write now
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
    cache = RunCache(folder)
    db = sqlite3.connect(cache.path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    keys = [k for (k,) in db.execute("SELECT key FROM runs")]
    db.close()
    assert len(keys) >= 3 * 3 * 8
    served = cache.get_many({k: Need() for k in keys})
    assert len(served) == len(keys)
    assert {_json(r) for r in served.values()} == {_json(result)}
