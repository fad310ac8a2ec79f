"""The pytest plugin judges a scenario's expect: gates by the CLI's rule: a missed gate fails its test (issue 20).

``small.yaml`` (tests/plugin/conftest.py) on seeds 1-2: structured on structured finishes ~98% of
its tasks, blind retries on generic errors ~50%; the gates' bounds sit far from both.
"""

from __future__ import annotations

import pytest

from fleetchaos.gates.expect import judge
from fleetchaos.testing.suite import run_scenario

GATES = """\
expect:
  - {metric: success_rate, at_least: 0.9}
  - {metric: wasted_retries, at_most: 1000, statistic: every_seed, arm: "blind-retry/generic"}
"""

TESTS = """
import pytest


@pytest.mark.fleetchaos(scenario="gated.yaml", seeds=2)
def test_structured(fleetchaos_result):
    assert [r.passed for r in fleetchaos_result.expectations] == [True]  # only the gate for every arm applies


@pytest.mark.fleetchaos(scenario="gated.yaml", seeds=2, policy="blind-retry", errors="generic")
def test_blind(fleetchaos_result):
    pass
"""


@pytest.fixture
def gated(chaos_dir: pytest.Pytester) -> pytest.Pytester:
    """The chaos folder with gated.yaml: the small scenario and GATES."""
    small = (chaos_dir.path / "small.yaml").read_text(encoding="utf-8")
    chaos_dir.makefile(".yaml", gated=small.rstrip("\n") + "\n" + GATES)
    chaos_dir.makepyfile(test_gated=TESTS)
    return chaos_dir


def test_a_missed_gate_fails_its_test_and_a_met_one_passes(gated):
    """The arm that misses the success gate fails with the gate's line and the replay of its worst seed; the arm
    that meets it passes; the summary table says which gates failed."""
    result = gated.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*expect?0? of scenario gated.yaml failed:",
            "*FAILED expect?0? success_rate at_least 0.9 for blind-retry on generic: 0.* (mean over 2 seeds, * interval *",
            "*replay the worst seed (?): fleetchaos run --scenario gated.yaml --policy blind-retry --errors generic "
            "--seed ? --no-expect",
        ]
    )
    assert "expect[1]" not in result.stdout.str()  # the wasted-retries gate holds for blind-retry on generic
    result.stdout.fnmatch_lines(
        [
            "test * baseline * expect * mode",
            "test_gated.py::test_blind * FAILED * blind-retry * generic * - * failed: success_rate * sim",
            "test_gated.py::test_structured * passed * structured * structured * - * ok (1) * sim",
        ]
    )


def test_the_plugin_and_the_cli_judge_alike(gated):
    """The suite's verdicts are the CLI rule's on the same arm: the same figure, the same outcome."""
    path = str(gated.path / "gated.yaml")
    suite = run_scenario(path, policy="blind-retry", errors="generic", seeds=2)
    arm = suite.to_compare_result().arms[0]
    cli_rule = judge(suite.expect, [arm], suite.seeds, confidence=suite.confidence)
    assert [(r.gate, r.value, r.passed) for r in suite.expectations] == [(r.gate, r.value, r.passed) for r in cli_rule]
    assert [r.passed for r in cli_rule] == [False, True]


def test_a_scenario_without_gates_adds_nothing(chaos_dir):
    """Without expect: a test passes on its own asserts and the summary's expect column reads '-'."""
    chaos_dir.makepyfile(
        """
        import pytest

        @pytest.mark.fleetchaos(scenario="small.yaml", seeds=1, policy="blind-retry", errors="generic")
        def test_plain(fleetchaos_result):
            assert fleetchaos_result.expectations == []
        """
    )
    result = chaos_dir.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_plain * passed * - * - * sim"])
