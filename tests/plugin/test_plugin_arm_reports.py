"""``--fleetchaos-report DIR``: one report folder per arm, however many tests share it."""

from __future__ import annotations

import json

SHARED = """
import pytest

from fleetchaos import load_scenario

ARM = pytest.mark.fleetchaos(scenario="small.yaml", seeds=2)


@ARM
def test_one(fleetchaos_result):
    pass


@ARM
def test_two(fleetchaos_result):
    pass


@ARM
def test_three(fleetchaos):
    fleetchaos.run()


@pytest.mark.fleetchaos(scenario="small.yaml", seeds=[3])
def test_other_seeds(fleetchaos_result):
    pass


@pytest.mark.fleetchaos(scenario="small.yaml", seeds=[1], policy="blind-retry", errors="generic")
def test_other_arm(fleetchaos_result):
    pass


def test_same_name_other_world(fleetchaos):
    small = load_scenario("small.yaml")
    fleetchaos.run(small.model_copy(update={"duration_s": 1800.0}), seeds=[1, 2])
"""

#: Counts the report writes of the session (the plugin imports the writers when it writes).
COUNTING_CONFTEST = """
import json
from pathlib import Path

import fleetchaos.reports as reports

WRITES = []
_compare, _run = reports.write_compare_report, reports.write_run_report


def _count(writer, kind):
    def wrapped(result, out_dir, **kwargs):
        WRITES.append([kind, Path(out_dir).name])
        return writer(result, out_dir, **kwargs)
    return wrapped


def pytest_configure(config):
    reports.write_compare_report = _count(_compare, "compare")
    reports.write_run_report = _count(_run, "run")


def pytest_unconfigure(config):
    reports.write_compare_report, reports.write_run_report = _compare, _run
    Path("writes.json").write_text(json.dumps(WRITES))
"""


def test_tests_sharing_an_arm_share_one_report(chaos_dir):
    """Three tests on one arm write one folder, once; other seeds, another arm, another world get their own."""
    chaos_dir.makeconftest(COUNTING_CONFTEST)
    chaos_dir.makepyfile(test_pt_shared=SHARED)
    result = chaos_dir.runpytest("--fleetchaos-report", "out")
    result.assert_outcomes(passed=6)
    out = chaos_dir.path / "out"
    folders = sorted(p.name for p in out.iterdir())
    (digest,) = [f.rpartition(".")[2] for f in folders if f.count(".") == 3 and "seeds" not in f]
    assert len(digest) == 16  # the scenario's content digest: same name, another world
    assert folders == sorted(
        [
            "small.blind-retry.generic",
            "small.structured.structured",
            "small.structured.structured.seeds-3",
            f"small.structured.structured.{digest}",
        ]
    )
    shared = json.loads((out / "small.structured.structured" / "results.json").read_text())
    assert shared["seeds"] == [1, 2] and shared["scenario"] == "small"
    assert json.loads((out / "small.structured.structured.seeds-3" / "results.json").read_text())["seed"] == 3
    other = json.loads((out / f"small.structured.structured.{digest}" / "results.json").read_text())
    assert other["arms"][0]["metrics"]["tasks"] < shared["arms"][0]["metrics"]["tasks"]  # half the hour
    writes = json.loads((chaos_dir.path / "writes.json").read_text())
    assert writes.count(["compare", "small.structured.structured"]) == 1  # once for three tests
    assert sorted(name for kind, name in writes if kind == "compare") == [
        "small.structured.structured",
        f"small.structured.structured.{digest}",
    ]
    assert writes.count(["run", "small.blind-retry.generic"]) == 1
    result.stdout.fnmatch_lines(["reports written to *out"])


def test_one_seed_arm_shared_by_two_tests_is_one_run_report(chaos_dir):
    """Two tests on a one-seed arm: one folder, that run's report, and no folder per test."""
    chaos_dir.makepyfile(
        test_pt_rows="""
        import pytest

        @pytest.mark.fleetchaos(scenario="small.yaml", seeds=1)
        def test_a(fleetchaos):
            fleetchaos.run()

        @pytest.mark.fleetchaos(scenario="small.yaml", seeds=1)
        def test_b(fleetchaos_result):
            pass
        """
    )
    result = chaos_dir.runpytest("--fleetchaos-report", "out")
    result.assert_outcomes(passed=2)
    out = chaos_dir.path / "out"
    assert [p.name for p in out.iterdir()] == ["small.structured.structured"]
    run = json.loads((out / "small.structured.structured" / "results.json").read_text())
    assert run["seed"] == 1  # one seed: the folder is that run's report
    assert not list(out.glob("test_pt_rows*"))
