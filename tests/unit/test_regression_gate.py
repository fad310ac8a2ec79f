"""Regression-gate specs and checks: units, directions, thresholds, evidence and arm matching, by hand."""

from __future__ import annotations

import math
import re

import pytest

from fleetchaos.errors import UserError
from fleetchaos.gates.fail_on import parse_fail_on, parse_fail_ons
from fleetchaos.gates.regression import check, worsening
from fleetchaos.results.models import RunResult


def result(policy: str, errors: str, seed: int, **metrics: float | None) -> RunResult:
    """A stored-looking run with only the metrics a test needs."""
    return RunResult(scenario="s", policy=policy, errors=errors, seed=seed, metrics=metrics, breakdowns={},
                     fault_schedule=[], replay="")  # fmt: skip


@pytest.mark.parametrize(
    "spec, metric, threshold, relative",
    [
        ("recovery_rate:-2%", "recovery_rate", 0.02, True),
        ("recovery_rate:2%", "recovery_rate", 0.02, True),
        ("recovery_rate:-2pp", "recovery_rate", 0.02, False),
        ("success_rate:0.5PP", "success_rate", 0.005, False),
        ("success_rate:0", "success_rate", 0.0, False),
        ("wasted_retries:+10%", "wasted_retries", 0.10, True),
        ("wasted_retries:+5", "wasted_retries", 5.0, False),
        (" cost_usd : 5 ", "cost_usd", 5.0, False),
        ("silent_failure_rate:.5%", "silent_failure_rate", 0.005, True),
    ],
)
def test_spec_forms(spec, metric, threshold, relative):
    """Relative (%) and absolute thresholds (pp for a rate, the metric's unit otherwise), with or without the sign."""
    rule = parse_fail_on(spec)
    assert (rule.metric, rule.relative) == (metric, relative)
    assert rule.threshold == pytest.approx(threshold, rel=1e-12)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("recovery_rate", "expected METRIC:THRESHOLD"),
        ("recovery_rate:abc", "expected METRIC:THRESHOLD"),
        ("recovry_rate:2%", "did you mean 'recovery_rate'?"),
        ("recovery_rate:+2%", "write recovery_rate:-2%"),
        ("wasted_retries:-10%", "write wasted_retries:+10%"),
        ("tasks:5%", "no better direction"),
        ("success_rate:-2", "a bare number on a rate is ambiguous"),
        ("recovery_rate:-0.02", "write recovery_rate:-0.02pp for 0.02 percentage points, or recovery_rate:-0.02%"),
        ("wasted_retries:+5pp", "'pp' (percentage points) is a unit of rates"),
        ("success_rate:-150pp", "could never fail"),
    ],
    ids=[
        "no-threshold",
        "not-a-number",
        "typo",
        "wrong-sign-higher",
        "wrong-sign-lower",
        "directionless",
        "bare-number-on-a-rate",
        "bare-fraction-on-a-rate",
        "pp-on-a-count",
        "more-than-100pp",
    ],
)
def test_bad_specs_are_user_errors(spec, message):
    """A malformed spec, an unknown metric, a wrong sign, a directionless metric or an ambiguous unit is refused."""
    with pytest.raises(UserError, match=re.escape(message)):
        parse_fail_on(spec)


def test_several_specs_in_one_option():
    """Specs may be comma-separated inside one --fail-on."""
    rules = parse_fail_ons(["recovery_rate:-2%,wasted_retries:+5", "cost_usd:1"])
    assert [r.metric for r in rules] == ["recovery_rate", "wasted_retries", "cost_usd"]


def test_worsening_in_each_direction():
    """A fall is worse for recovery, a rise for wasted retries; relative to the baseline, infinite from zero."""
    rec = parse_fail_on("recovery_rate:-2%")
    assert worsening(rec, 0.78, 0.80) == pytest.approx(0.025)
    assert worsening(rec, 0.82, 0.80) == pytest.approx(-0.025)
    wasted = parse_fail_on("wasted_retries:+10%")
    assert worsening(wasted, 111, 100) == pytest.approx(0.11)
    assert worsening(wasted, 1, 0) == math.inf
    assert worsening(wasted, 0, 0) == 0.0
    assert worsening(parse_fail_on("recovery_rate:-2pp"), 0.77, 0.80) == pytest.approx(0.03)


def test_relative_recovery_threshold_fails_only_beyond_it():
    """Baseline 0.80: 0.78 is 2.5% worse (fails at -2%), 0.79 is 1.25% worse (passes)."""
    rule = parse_fail_on("recovery_rate:-2%")
    base = [result("p", "e", 1, recovery_rate=0.80)]
    assert check([rule], [result("p", "e", 1, recovery_rate=0.78)], base, "#1")[0].failed
    ok = check([rule], [result("p", "e", 1, recovery_rate=0.79)], base, "#1")[0]
    assert not ok.failed and ok.line().startswith("ok recovery_rate for p on e")


def test_regression_line_names_metric_values_change_and_allowance():
    """The one-line reason names the metric, the arm, both values, the change and the threshold."""
    rule = parse_fail_on("wasted_retries:+10%")
    c = check([rule], [result("p", "e", 1, wasted_retries=111.0)], [result("p", "e", 1, wasted_retries=100.0)], "#4")[0]
    assert c.failed
    assert c.line() == (
        "REGRESSION wasted_retries for p on e: 111 against 100 in baseline #4 (p on e), "
        "change +11 (+11.00%), allowed +10% over 1 seed; evidence weak: no confidence interval (one seed, or means alone)"
    )


def test_improvements_never_fail_and_a_missing_figure_fails():
    """A better value passes whatever the threshold; a figure the baseline has and the new run lost is a regression."""
    rule = parse_fail_on("recovery_rate:-0%")
    assert not check([rule], [result("p", "e", 1, recovery_rate=0.9)], [result("p", "e", 1, recovery_rate=0.5)], "#1")[
        0
    ].failed
    c = check([rule], [result("p", "e", 1, recovery_rate=None)], [result("p", "e", 1, recovery_rate=0.5)], "#1")[0]
    assert c.failed and c.state == "missing" and c.worst_seed == 1
    assert c.line() == (
        "REGRESSION recovery_rate for p on e: no value in this run on seed(s) 1, where the baseline has one (0.5): "
        "a missing figure fails the gate"
    )


def test_means_over_the_seeds_both_groups_ran():
    """Baseline seeds 1-3 and current seeds 2-4 are compared on seeds 2 and 3 only (the same faults)."""
    rule = parse_fail_on("recovery_rate:-5pp")
    base = [result("p", "e", s, recovery_rate=v) for s, v in ((1, 0.1), (2, 0.8), (3, 0.8))]
    cur = [result("p", "e", s, recovery_rate=v) for s, v in ((2, 0.8), (3, 0.8), (4, 0.0))]
    c = check([rule], cur, base, "#1")[0]
    assert (c.current, c.baseline, c.seeds, c.failed) == (0.8, 0.8, 2, False)
    assert c.line().endswith("; seed(s) 4 not in the baseline, not paired")  # named, never left out silently


def test_single_arms_compare_whatever_their_names():
    """One arm against a one-arm baseline is compared even when policy and format differ."""
    rule = parse_fail_on("recovery_rate:-2%")
    c = check([rule], [result("blind-retry", "generic", 1, recovery_rate=0.3)],
              [result("structured", "structured", 1, recovery_rate=0.9)], "#1")[0]  # fmt: skip
    assert c.failed and c.baseline_arm == "structured on structured"


def test_arms_match_by_name_and_no_common_arm_is_an_error():
    """With several arms, arms match by policy and format; none in common is a user error."""
    rule = parse_fail_on("recovery_rate:-2%")
    base = [result("a", "x", 1, recovery_rate=0.5), result("b", "x", 1, recovery_rate=0.9)]
    cur = [result("b", "x", 1, recovery_rate=0.9), result("c", "x", 1, recovery_rate=0.1)]
    checks = check([rule], cur, base, "#1")
    assert [c.arm for c in checks] == ["b on x"] and not checks[0].failed
    with pytest.raises(UserError, match="no arm in common"):
        check([rule], [result("c", "x", 1, recovery_rate=0.1), result("d", "x", 1, recovery_rate=0.1)], base, "#1")


def test_every_seed_nine_percent_worse_fails_however_wide_the_seeds_spread():
    """Each seed 9% worse on recovery fails -2%: pairs cancel the spread between seeds that hid it from an interval."""
    base_values = {1: 0.20, 2: 0.90, 3: 0.45, 4: 0.70, 5: 0.30}
    base = [result("p", "e", s, recovery_rate=v) for s, v in base_values.items()]
    cur = [result("p", "e", s, recovery_rate=v * 0.91) for s, v in base_values.items()]
    c = check([parse_fail_on("recovery_rate:-2%")], cur, base, "#1")[0]
    assert c.failed and c.seeds == 5 and c.paired_seeds == (1, 2, 3, 4, 5)
    assert c.current == pytest.approx(0.91 * c.baseline)
    assert not check([parse_fail_on("recovery_rate:-10%")], cur, base, "#1")[0].failed


def test_only_seeds_where_both_have_a_value_are_paired():
    """A seed the baseline has no value on (an empty denominator) leaves both sides' means, not just one."""
    rule = parse_fail_on("recovery_rate:-5pp")
    base = [result("p", "e", 1, recovery_rate=None), result("p", "e", 2, recovery_rate=0.8)]
    cur = [result("p", "e", 1, recovery_rate=0.1), result("p", "e", 2, recovery_rate=0.8)]
    c = check([rule], cur, base, "#1")[0]
    # Unpaired means would compare 0.45 with 0.8 and call it a regression of 0.35.
    assert (c.current, c.baseline, c.seeds, c.paired_seeds, c.failed) == (0.8, 0.8, 1, (2,), False)


def test_no_value_on_either_side_fails_when_asked_and_is_noted_for_a_default_gate():
    """A figure neither side has: an explicit gate cannot be judged (fails); the registry's default gate says so."""
    from fleetchaos.gates.fail_on import default_rules

    base, cur = [result("p", "e", 1, common_recovery_rate=None)], [result("p", "e", 1, common_recovery_rate=None)]
    (asked,) = check([parse_fail_on("common_recovery_rate:-2%")], cur, base, "#1")
    assert asked.failed and asked.line() == (
        "REGRESSION common_recovery_rate for p on e: no value on either side on any of 1 seed(s) (stored values on 1 "
        "seed(s), both computed over the same 1 arm): the figure cannot be judged; gate on a figure this scenario "
        "defines: a missing figure fails the gate"
    )
    default = next(r for r in default_rules(informative=False) if r.metric == "common_recovery_rate")
    (noted,) = check([default], cur, base, "#1")
    assert not noted.failed and noted.line().startswith("not judged common_recovery_rate for p on e: no value")


def test_the_worst_seed_is_the_one_that_got_most_worse():
    """The check names the paired seed with the largest worsening (what a failure message replays)."""
    rule = parse_fail_on("wasted_retries:+10%")
    base = [result("p", "e", s, wasted_retries=10.0) for s in (1, 2, 3)]
    cur = [result("p", "e", 1, wasted_retries=11.0), result("p", "e", 2, wasted_retries=30.0),
           result("p", "e", 3, wasted_retries=9.0)]  # fmt: skip
    c = check([rule], cur, base, "#1")[0]
    assert c.failed and c.worst_seed == 2


def test_a_baseline_of_means_is_compared_by_means_and_says_so():
    """A baseline that kept only means (an old results file, on the same seeds) is compared by means, weakly."""
    from fleetchaos.gates.regression import Arm, arm_of, judge

    rule = parse_fail_on("recovery_rate:-2%")
    cur = arm_of("p on e", [result("p", "e", s, recovery_rate=v) for s, v in ((1, 0.75), (2, 0.65))])
    c = judge(rule, cur, Arm("p on e", means={"recovery_rate": 0.9}, seeds=(1, 2)), "old.json")
    assert c.failed and c.paired_seeds == () and c.evidence == "weak"
    assert c.line().endswith("over 2 seeds; evidence weak: no confidence interval (one seed, or means alone); "
                             "the baseline kept only means over its seeds")  # fmt: skip


def test_default_rules_report_or_gate_the_registry_gated_metrics():
    """Without thresholds: informative rules never fail (the CLI); default ones gate at 2% (the plugin)."""
    from fleetchaos.gates.fail_on import default_rules
    from fleetchaos.results.registry import GATED_METRICS

    informative = default_rules(informative=True)
    assert [r.metric for r in informative] == list(GATED_METRICS) and all(r.informative for r in informative)
    gating = default_rules(informative=False)
    assert [r.metric for r in gating] == [
        "success_rate",
        "common_recovery_rate",
        "silent_failure_rate",
        "wasted_retries",
    ]
    assert [r.allowed() for r in gating] == ["-2%", "-2%", "+2%", "+2%"]
    same = {"silent_failure_rate": 0.0, "wasted_retries": 1.0}
    base = [result("p", "e", 1, success_rate=0.9, common_recovery_rate=0.5, **same)]
    cur = [result("p", "e", 1, success_rate=0.9, common_recovery_rate=0.1, **same)]
    assert [c.failed for c in check(informative, cur, base, "#1")] == [False, False, False, False]
    assert [c.failed for c in check(gating, cur, base, "#1")] == [False, True, False, False]


def test_option_names_in_messages_follow_the_front_end():
    """The plugin's specs are refused naming --fleetchaos-fail-on, the CLI's naming --fail-on."""
    with pytest.raises(UserError, match=re.escape("--fleetchaos-fail-on 'recovery_rate:+2%'")):
        parse_fail_on("recovery_rate:+2%", "--fleetchaos-fail-on")
    with pytest.raises(UserError, match=re.escape("--fail-on 'nope:2%': unknown metric")):
        parse_fail_on("nope:2%")


def _sets(faulted: set[int], succeeded: set[int]) -> dict[str, str]:
    from fleetchaos.results.common_set import encode

    def bits(ids: set[int]) -> bytes:
        return sum(1 << i for i in ids).to_bytes(8, "little")

    return {"faulted": encode(bits(faulted)), "succeeded": encode(bits(succeeded))}


def test_common_recovery_is_judged_on_the_union_of_both_runs_faulted_tasks():
    """Each side 100% on its own faulted tasks; on the union {0,1,2,3} the new run saves 2 of 4: a regression."""
    rule = parse_fail_on("common_recovery_rate:-2%")
    base = result("p", "e", 1, common_recovery_rate=1.0)
    base.task_sets = _sets({0, 1, 2, 3}, {0, 1, 2, 3, 4, 5})
    cur = result("p", "e", 1, common_recovery_rate=1.0)
    cur.task_sets = _sets({0, 1}, {0, 1, 4, 5})  # tasks 2 and 3 met no fault here, and never finished
    (found,) = check([rule], [cur], [base], "#1")
    assert (found.current, found.baseline, found.failed) == (0.5, 1.0, True)
    assert "recomputed on the tasks faulted in the arms both ran, on 1 seed(s)" in found.line()
    # a baseline that kept no task sets, computed over the same single arm: each side's stored value
    base.task_sets = {}
    (stored,) = check([rule], [cur], [base], "#1")
    assert (stored.current, stored.baseline, stored.failed) == (1.0, 1.0, False)
    assert "stored values on 1 seed(s), both computed over the same 1 arm" in stored.line()
    # another metric is never recomputed from the sets
    (other,) = check([parse_fail_on("success_rate:-2%")], [result("p", "e", 1, success_rate=0.5)],
                     [result("p", "e", 1, success_rate=0.5)], "#1")  # fmt: skip
    assert not other.failed and other.note == ""


def test_common_recovery_over_other_arms_without_task_sets_is_not_comparable():
    """A baseline computed over two arms, kept without task sets, against one arm: refused, never a false regression."""
    from fleetchaos.gates.regression import Arm, arm_of, judge

    rule = parse_fail_on("common_recovery_rate:-2%")
    two = frozenset({("p", "e"), ("q", "e")})
    base = Arm("p on e", {1: {"common_recovery_rate": 0.9}}, seeds=(1,), arm_set=two)
    cur = arm_of("p on e", [result("p", "e", 1, common_recovery_rate=0.6)], frozenset({("p", "e")}))
    c = judge(rule, cur, base, "x.json")
    assert c.failed and c.state == "not comparable" and c.current is None
    assert "the baseline's was computed over 2 arms (p on e, q on e), this run's over 1 arm (p on e)" in c.line()


def test_common_recovery_is_recomputed_on_the_arms_both_sides_ran():
    """Six arms against one: the common set is the union over the shared arm only, on both sides."""
    rule = parse_fail_on("common_recovery_rate:-2%")
    base = [result("p", "e", 1, common_recovery_rate=0.5), result("q", "e", 1, common_recovery_rate=0.1)]
    base[0].task_sets = _sets({0, 1}, {0, 1, 5})
    base[1].task_sets = _sets({0, 1, 2, 3}, {5})  # q's faults widen the baseline's own common set to 4 tasks
    cur = result("p", "e", 1, common_recovery_rate=1.0)
    cur.task_sets = _sets({0, 1}, {0, 1, 5})
    (found,) = check([rule], [cur], base, "#1")
    assert (found.current, found.baseline, found.failed, found.evidence) == (1.0, 1.0, False, "weak")
