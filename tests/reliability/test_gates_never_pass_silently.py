"""Issue 17 items 2, 3, 5 and 6: a gate never passes a run whose policy errored, an arm it did not judge,
a partial baseline or a duplicated seed without saying so."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from reliability_cli import fleetchaos

from fleetchaos.errors import UserError
from fleetchaos.gates.assertions import WEAK_EVIDENCE, Estimate, RateAssertionError, assert_rate
from fleetchaos.gates.history import open_store
from fleetchaos.gates.session import COMMAND, GateSession
from fleetchaos.results.models import RunResult


def _estimate(**kw) -> Estimate:
    base = dict(metric="silent_failure_rate", value=0.0, low=0.0, high=0.0, seeds=(1, 2, 3), per_seed=(0.0, 0.0, 0.0))
    return Estimate(**{**base, **kw})


def test_assert_rate_fails_a_figure_from_runs_whose_policy_errored():
    """A perfect-looking figure from runs whose policy errored fails, naming the errors; allowed, it passes."""
    est = _estimate(policy_errors=12, policy_error="policy raised RuntimeError: policy broke")
    with pytest.raises(RateAssertionError, match="12 task.*policy raised RuntimeError: policy broke"):
        assert_rate(est, at_most=0.0)
    assert_rate(est, at_most=0.0, allow_policy_errors=True)


def test_the_mean_decides_a_weak_pass_is_reported_and_decisive_evidence_fails_it():
    """Mean 0.476 in [0.34, 0.61]: at_least 0.6 fails (the mean is below, however wide the interval); at_least 0.45
    passes on weak evidence and tells the listeners; evidence="decisive" fails it; a decisive pass is quiet."""
    heard = []
    WEAK_EVIDENCE.append(heard.append)
    try:
        straddling = _estimate(metric="recovery_rate", value=0.476, low=0.34, high=0.61)
        with pytest.raises(RateAssertionError, match="its mean 0.476 is below the bound .evidence weak"):
            assert_rate(straddling, at_least=0.6)
        assert_rate(straddling, at_least=0.45)
        assert [w.bound for w in heard] == ["at_least 0.45"] and "passed on weak evidence" in heard[0].line()
        with pytest.raises(RateAssertionError, match="evidence: decisive asks for a pass on decisive evidence"):
            assert_rate(straddling, at_least=0.45, evidence="decisive")
        assert_rate(straddling, at_least=0.3)  # the whole interval is above: decisive
        assert len(heard) == 1
    finally:
        WEAK_EVIDENCE.remove(heard.append)


def _run(policy: str, seed: int, recovery: float, policy_errors: int = 0) -> RunResult:
    return RunResult(
        scenario="s", policy=policy, errors="generic", seed=seed, replay=f"replay {seed}", fault_schedule=[],
        metrics={"recovery_rate": recovery, "silent_failure_rate": 0.0, "wasted_retries": 1.0,
                 "policy_errors": float(policy_errors)},
        breakdowns={"policy_errors_by_message": {"policy raised RuntimeError: x": policy_errors}} if policy_errors else {},
    )  # fmt: skip


@pytest.fixture
def store_path(tmp_path):
    """A history with a complete group (seeds 1-3 of backoff) and, newer, a killed group holding one run."""
    path = tmp_path / "h.db"
    with open_store(path) as store:
        good = store.new_group(
            "compare", "s", meta={"policies": ["backoff"], "errors": ["generic"], "seeds": [1, 2, 3]}
        )
        for seed in (1, 2, 3):
            store.add_run(good, _run("backoff", seed, 0.9))
        store.finish_group(good, "complete")
        killed = store.new_group(
            "compare", "s", meta={"policies": ["backoff"], "errors": ["generic"], "seeds": [1, 2, 3]}
        )
        store.add_run(killed, _run("backoff", 1, 0.0))  # left `running`, as kill -9 leaves it
    return path


def test_latest_is_the_newest_complete_group_and_a_partial_group_is_refused(store_path):
    """`--baseline latest` skips a killed group; naming it is refused unless allowed, and then the gate says what it lacks."""
    session = GateSession(COMMAND, baseline_ref="latest", history_path=store_path)
    assert session.baseline.ref == "#1"
    with pytest.raises(UserError, match=r"group #2 is running \(1 of the 3 runs stored\), not complete"):
        GateSession(COMMAND, baseline_ref="2", history_path=store_path)
    partial = GateSession(COMMAND, baseline_ref="2", history_path=store_path, allow_partial_baseline=True)
    lines = []
    for seed in (1, 2, 3):
        partial.add(_run("backoff", seed, 0.9))
    assert partial.gate(lines.append) == 0
    assert any(
        line.startswith("note partial baseline: baseline #2 is running: it holds 1 of the 3 runs") for line in lines
    )


def test_an_arm_missing_from_the_baseline_is_reported_as_new_and_fails_when_asked(store_path):
    """A new arm is not judged: it is named on its own line (a note), and --fail-on-new makes it a failure."""
    for asked, code in ((False, 0), (True, 1)):
        session = GateSession(COMMAND, baseline_ref="1", history_path=store_path, fail_on_new=asked)
        for seed in (1, 2, 3):
            session.add(_run("backoff", seed, 0.9))
            session.add(_run("structured", seed, 0.1))  # a 100% regression nobody would see
        lines = []
        assert session.gate(lines.append) == code
        assert any("structured on generic: no such arm in baseline #1" in line for line in lines)


def test_policy_errors_fail_the_command_gate_unless_allowed(store_path):
    """A run whose policy errored fails --baseline's gate even when its figures improved; allowed, it passes."""
    for allowed, code in ((False, 1), (True, 0)):
        session = GateSession(COMMAND, baseline_ref="1", history_path=store_path, allow_policy_errors=allowed)
        for seed in (1, 2, 3):
            session.add(_run("backoff", seed, 1.0, policy_errors=5))
        lines = []
        assert session.gate(lines.append) == code
        assert any("15 task(s) given up because the policy errored" in line for line in lines)


def test_the_regression_gate_against_latest_catches_a_full_regression(tmp_path, tiny):
    """Item 3's reproduction: a killed newest group no longer hides a 100% regression from `--baseline latest`."""
    good = fleetchaos("compare", "--scenario", str(tiny), "--policies", "structured", "--errors", "structured",
                      "--seeds", "3", "--jobs", "1", cwd=tmp_path)  # fmt: skip
    assert good.returncode == 0, good.stderr
    with open_store(tmp_path / "history.db") as store:  # a partial group, as a killed command leaves it
        gid = store.new_group(
            "compare", "tiny", meta={"policies": ["structured"], "errors": ["structured"], "seeds": [1]}
        )
        store.add_run(gid, store.runs(1)[0].result)
    bad = fleetchaos("compare", "--scenario", str(tiny), "--policies", "hostile_policies:AlwaysRaises",
                     "--errors", "structured", "--seeds", "3", "--jobs", "1", "--baseline", "latest",
                     "--fail-on", "recovery_rate:-2%", "--no-history", cwd=tmp_path)  # fmt: skip
    assert bad.returncode == 1, bad.stderr
    assert "REGRESSION recovery_rate" in bad.stderr and "baseline #1" in bad.stderr
    assert "FAILED policy errors: hostile_policies:AlwaysRaises on structured" in bad.stderr


@pytest.mark.parametrize("seeds", ["[1, 1, 2]", "[1, 18446744073709551617]"])
def test_repeated_or_oversized_seeds_in_a_scenario_are_refused_before_any_run(tmp_path, seeds):
    """Seeds listed twice or beyond 2**63-1 give exit 2 naming the seed, before anything is stored."""
    (tmp_path / "s.yaml").write_text(f"name: s\nseeds: {seeds}\n")
    out = fleetchaos("compare", "--scenario", "s.yaml", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "s.yaml: seeds: " in out.stderr and not (tmp_path / "history.db").exists()


def test_a_sweep_file_with_a_repeated_seed_is_refused(tmp_path):
    """The sweep file's seeds follow the same rule."""
    (tmp_path / "sweep.yaml").write_text("seeds: [3, 3]\n")
    out = fleetchaos("sweep", "--file", "sweep.yaml", "--no-history", cwd=tmp_path)
    assert out.returncode == 2 and "seed 3 is listed twice" in out.stderr, out.stderr


SUITE = """
import pytest
from fleetchaos import assert_rate

@pytest.mark.fleetchaos(scenario="tiny.yaml", policy="hostile_policies:AlwaysRaises", seeds=2)
def test_gate_on_a_broken_policy(fleetchaos_result):
    assert_rate(fleetchaos_result.silent_failure_rate, at_most=0)

@pytest.mark.fleetchaos(scenario="tiny.yaml", policy="hostile_policies:AlwaysRaises", seeds=2, allow_policy_errors=True)
def test_expected_policy_errors(fleetchaos_result):
    assert_rate(fleetchaos_result.silent_failure_rate, at_most=0, allow_policy_errors=True)

def test_broken_policy_without_assert(fleetchaos):
    fleetchaos.run("tiny.yaml", policy="hostile_policies:AlwaysRaises", seeds=1)

@pytest.mark.fleetchaos(scenario="default", policy="blind-retry", errors="generic", seeds=3)
def test_weak(fleetchaos_result):
    est = fleetchaos_result.recovery_rate
    assert est.low < est.high
    assert_rate(est, at_least=(est.value + est.low) / 2)  # the mean meets it, the interval straddles it: weak
"""


@pytest.fixture
def suite(pytester, tiny, monkeypatch):
    """A pytester suite with the tiny scenario and the hostile policies importable."""
    here = Path(__file__).parent

    monkeypatch.syspath_prepend(str(here))
    monkeypatch.setenv("PYTHONPATH", str(here))
    (pytester.path / "tiny.yaml").write_text(tiny.read_text())
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_the_plugin_fails_runs_whose_policy_errored_and_names_them(suite):
    """Item 2's reproduction: assert_rate(at_most=0) on a policy raising every decision fails, as does a test without a gate."""
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-k", "not weak")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "comes from runs whose policy errored" in out
    assert "a scenario test never passes a run whose policy errored" in out
    assert "policy errors" in out and "Traceback" not in out


def test_weak_evidence_is_in_the_summary_and_the_junit_xml_and_decisive_fails_it(suite):
    """A weak pass is listed under 'passed on weak evidence' and as a junit property; the ini option makes it fail."""
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-k", "weak", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*fleetchaos: passed on weak evidence*", "*test_weak: recovery_rate at_least*"])
    assert 'name="fleetchaos_weak_evidence"' in (suite.path / "junit.xml").read_text()
    suite.makeini("[pytest]\nfleetchaos_evidence = decisive\n")
    decisive = suite.runpytest_subprocess("-p", "no:cacheprovider", "-k", "weak")
    decisive.assert_outcomes(failed=1)
    decisive.stdout.fnmatch_lines(["*evidence: decisive asks for a pass on decisive evidence*"])
    option = suite.runpytest_subprocess("-p", "no:cacheprovider", "-k", "weak", "--fleetchaos-evidence", "weak")
    option.assert_outcomes(passed=1)  # the option replaces the ini


@pytest.mark.parametrize(
    "marker, message",
    [
        ("policy=''", "policy='': expected a built-in policy name"),
        ("errors=123", "errors=123: expected an error format"),
        ("scenario=''", "scenario='' is empty"),
        ("seeds={'a': 1}", "seeds={'a': 1}: expected a count"),
        ("confidence='high'", "confidence='high': expected a level"),
    ],
)
def test_marker_mistakes_are_one_message_and_an_empty_policy_is_refused(pytester, marker, message):
    """A wrong marker argument fails the test with one message; an empty policy name is refused, not replaced."""
    args = {"scenario": "'default'", "seeds": "1"}
    key, value = marker.split("=", 1)
    args[key] = value
    mark = ", ".join(f"{k}={v}" for k, v in args.items())
    pytester.makepyfile(
        f"import pytest\n\n@pytest.mark.fleetchaos({mark})\ndef test_it(fleetchaos_result):\n    pass\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines([f"*@pytest.mark.fleetchaos: {message}*"])
    assert result.ret != 0


def test_the_summary_names_policy_errors_on_history(tmp_path, tiny):
    """`run --json` with a raising policy reports its policy errors, and the history stores them."""
    out = fleetchaos(
        "run", "--scenario", str(tiny), "--policy", "hostile_policies:AlwaysRaises", "--json", cwd=tmp_path
    )
    assert json.loads(out.stdout)["metrics"]["policy_errors"] > 0
    db = sqlite3.connect(tmp_path / "history.db")
    (metrics,) = db.execute("SELECT metrics FROM runs").fetchone()
    assert json.loads(metrics)["policy_errors"] > 0


def test_a_baseline_refused_after_the_best_arms_are_chosen_is_one_line_and_leaves_no_pool(tmp_path):
    """The README's old recipe: a one-arm baseline, then the default best-against-best comparison gated on it.  No
    arm is in common, so it is refused before any run (exit 2), after the pool that chooses the best arms has
    started: the command stops that pool itself, so its one line is all it prints (before, a pool left to the
    interpreter's exit printed an ``OSError: Bad file descriptor`` traceback after it, on Python 3.11)."""
    made = fleetchaos("compare", "--seeds", "1", "--policies", "structured", "--errors", "structured", "--label",
                      "good", "--quiet", "--jobs", "2", cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    for _ in range(3):  # the traceback was a race: it showed on most runs, not all
        out = fleetchaos("compare", "--seeds", "1", "--baseline", "good", "--fail-on", "common_recovery_rate:-2%",
                         "--quiet", "--jobs", "2", cwd=tmp_path)  # fmt: skip
        assert out.returncode == 2
        assert out.stderr.startswith("error: --baseline #1: no arm in common") and len(out.stderr.splitlines()) == 1, (
            out.stderr
        )
