"""assert_rate judges a figure by its interval; ScenarioResult gives each figure its interval."""

from __future__ import annotations

import math

import pytest

from fleetchaos.errors import UserError
from fleetchaos.gates.assertions import Estimate, RateAssertionError, assert_rate
from fleetchaos.results.models import RunResult
from fleetchaos.results.stats import mean_ci, rate_ci, wilson
from fleetchaos.testing.suite import ScenarioResult, resolve_seeds


def est(value, low, high, **kw) -> Estimate:
    """An estimate of recovery_rate over seeds 1..3 with replay commands."""
    seeds = kw.pop("seeds", (1, 2, 3))
    return Estimate(
        "recovery_rate",
        value,
        low,
        high,
        method=kw.pop("method", "Student-t across 3 seeds"),
        seeds=seeds,
        per_seed=kw.pop("per_seed", (0.5, 0.4, 0.6)),
        replay=tuple(f"fleetchaos run --scenario s --policy p --errors e --seed {s}" for s in seeds),
        label="scenario s, policy p, errors e",
        **kw,
    )


def weak_passes(check) -> list[str]:
    """The lines of the passes on weak evidence ``check()`` reports."""
    from fleetchaos.gates.assertions import WEAK_EVIDENCE

    seen: list = []
    WEAK_EVIDENCE.append(seen.append)
    try:
        check()
    finally:
        WEAK_EVIDENCE.remove(seen.append)
    return [w.line() for w in seen]


def test_the_mean_decides_and_a_straddling_interval_is_weak_evidence():
    """Mean 0.5 in [0.4, 0.6]: at_least 0.45 passes on weak evidence, at_least 0.55 fails (the mean is below)."""
    e = est(0.5, 0.4, 0.6)
    assert weak_passes(lambda: assert_rate(e, at_least=0.45)) == [
        "recovery_rate at_least 0.45 passed on weak evidence: 0.5 (95% CI 0.4..0.6, Student-t across 3 seeds) "
        "(scenario s, policy p, errors e); the mean meets the bound but the interval does not rule out missing it: "
        "add seeds to decide it"
    ]
    assert weak_passes(lambda: assert_rate(e, at_least=0.4, at_most=0.6)) == []  # both ends touching: decisive
    with pytest.raises(RateAssertionError) as info:
        assert_rate(e, at_least=0.55)
    assert str(info.value).splitlines()[0] == (
        "recovery_rate at_least 0.55 failed: its mean 0.5 is below the bound "
        "(evidence weak: the interval straddles the bound; more seeds would decide it)"
    )
    with pytest.raises(RateAssertionError, match="at_most 0.45 failed: its mean 0.5 is above the bound"):
        assert_rate(e, at_most=0.45)


def test_decisive_evidence_fails_a_pass_whose_interval_straddles_the_bound():
    """evidence='decisive': the mean meets at_least 0.45, the interval does not: a failure saying why."""
    with pytest.raises(RateAssertionError) as info:
        assert_rate(est(0.5, 0.4, 0.6), at_least=0.45, evidence="decisive")
    assert str(info.value).splitlines()[0] == (
        "recovery_rate at_least 0.45 failed: its mean 0.5 meets the bound (evidence weak: the interval straddles "
        "the bound; more seeds would decide it; evidence: decisive asks for a pass on decisive evidence)"
    )
    assert_rate(est(0.5, 0.4, 0.6), at_least=0.4, evidence="decisive")  # the whole interval meets it
    with pytest.raises(TypeError, match="evidence must be one of 'weak', 'decisive', got 'strong'"):
        assert_rate(est(0.5, 0.4, 0.6), at_least=0.4, evidence="strong")


def test_at_least_fails_when_the_whole_interval_is_below():
    """The message gives the figure, the interval, the seeds, per-seed values and the worst seed's replay."""
    with pytest.raises(RateAssertionError) as info:
        assert_rate(est(0.5, 0.4, 0.6), at_least=0.7)
    text = str(info.value)
    assert text.splitlines()[0] == (
        "recovery_rate at_least 0.7 failed: its mean 0.5 is below the bound "
        "(evidence decisive: the whole interval misses the bound)"
    )
    assert "figure: recovery_rate = 0.5 (95% CI 0.4..0.6, Student-t across 3 seeds)" in text
    assert "run: scenario s, policy p, errors e" in text
    assert "seeds: 1, 2, 3" in text and "per seed: 0.5, 0.4, 0.6" in text
    assert "replay the worst seed (2): fleetchaos run --scenario s --policy p --errors e --seed 2" in text


def test_at_most_fails_when_the_whole_interval_is_above_and_replays_the_highest_seed():
    """For an upper bound the worst seed is the one with the highest value."""
    with pytest.raises(RateAssertionError) as info:
        assert_rate(est(0.5, 0.4, 0.6), at_most=0.3)
    assert "at_most 0.3 failed: its mean 0.5 is above the bound (evidence decisive" in str(info.value)
    assert "replay the worst seed (3):" in str(info.value)


def test_without_an_interval_the_value_decides_on_weak_evidence():
    """A figure with no interval (one seed of a count) passes or fails on its value, and says the evidence is weak."""
    one = est(12.0, None, None, seeds=(4,), per_seed=(12.0,), method="one seed (4)")
    assert len(weak_passes(lambda: assert_rate(one, at_most=12))) == 1
    with pytest.raises(RateAssertionError) as info:
        assert_rate(one, at_most=11)
    assert "its mean 12 is above the bound (evidence weak: no confidence interval" in str(info.value)
    assert "replay the only seed: fleetchaos run --scenario s --policy p --errors e --seed 4" in str(info.value)


def test_an_undefined_figure_fails_rather_than_passing_silently():
    """A rate with no data in any seed cannot be judged, so the gate fails and says why."""
    with pytest.raises(RateAssertionError, match="recovery_rate is undefined, so the gate cannot be judged"):
        assert_rate(est(None, None, None, per_seed=(None, None, None), method="undefined in all 3 seeds"), at_least=0.1)


def test_a_bare_number_is_an_exact_figure():
    """Plain numbers are compared as exact values: decisive either way."""
    assert weak_passes(lambda: assert_rate(0.8, at_least=0.7)) == []
    with pytest.raises(
        RateAssertionError, match="value at_least 0.9 failed: its mean 0.8 is below the bound .evidence decisive"
    ):
        assert_rate(0.8, at_least=0.9)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "give at_least=, at_most=, or both"),
        ({"at_least": math.nan}, "at_least must be a finite number, got nan"),
        ({"at_most": True}, "at_most must be a finite number, got True"),
        ({"at_least": "0.5"}, "at_least must be a finite number, got '0.5'"),
    ],
)
def test_bounds_must_be_finite_numbers(kwargs, message):
    """A missing, NaN, boolean or text bound is a TypeError naming it."""
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        assert_rate(est(0.5, 0.4, 0.6), **kwargs)


def test_estimate_describes_itself_and_converts_to_float():
    """describe() gives value, interval and method; float() the value (undefined raises)."""
    e = est(0.123456, 0.1, 0.15)
    assert e.describe() == "0.1235 (95% CI 0.1..0.15, Student-t across 3 seeds)"
    assert float(e) == 0.123456
    with pytest.raises(ValueError, match="recovery_rate is undefined"):
        float(est(None, None, None))


def run(seed: int, **metrics) -> RunResult:
    """A run result with the given metrics and task counts derived from them."""
    counts = metrics.pop("counts", None)
    breakdowns = {"task_counts": counts} if counts is not None else {}
    return RunResult(
        scenario="s",
        policy="p",
        errors="e",
        seed=seed,
        metrics=metrics,
        breakdowns=breakdowns,
        fault_schedule=[],
        replay=f"fleetchaos run --scenario s --policy p --errors e --seed {seed}",
    )


def result(*runs: RunResult) -> ScenarioResult:
    """A ScenarioResult over the given runs."""
    return ScenarioResult("s", "s", "p", "e", tuple(r.seed for r in runs), runs)


def test_a_figure_across_seeds_is_the_student_t_interval_of_the_per_seed_values():
    """With two or more seeds the value and interval are mean_ci of the per-seed values."""
    r = result(run(1, wasted_retries=3.0), run(2, wasted_retries=5.0), run(3, wasted_retries=10.0))
    mean, low, high = mean_ci([3.0, 5.0, 10.0])
    e = r.wasted_retries
    assert (e.value, e.low, e.high) == (mean, max(0.0, low), high)
    assert e.method == "Student-t across 3 seeds"
    assert e.replay == r.replay and e.seeds == (1, 2, 3)


def test_a_rate_interval_is_kept_inside_0_and_1():
    """A t-interval that would run past 1 (or below 0) is clipped to the range of a proportion."""
    e = result(run(1, recovery_rate=1.0), run(2, recovery_rate=0.6)).recovery_rate
    assert e.high == 1.0 and e.low == 0.0


def test_a_rate_with_its_task_counts_gets_the_logit_interval():
    """1/40 and 7/88 on two seeds: the Student-t interval would run below zero; the logit one stays above it."""
    r = result(
        run(1, silent_failure_rate=1 / 40, counts={"silent_failures": 1, "tasks": 40}),
        run(2, silent_failure_rate=7 / 88, counts={"silent_failures": 7, "tasks": 88}),
    )
    e = r.silent_failure_rate
    assert (e.value, e.low, e.high) == rate_ci([1 / 40, 7 / 88], [40, 88])
    assert 0.0 < e.low < e.value < e.high < 1.0
    assert e.method == "t-interval on the logit scale across 2 seeds"


def test_one_seed_gives_a_proportion_its_wilson_interval_and_a_count_none():
    """With one seed a rate gets the Wilson interval of that run's tasks; a count has no interval."""
    r = result(
        run(
            7,
            recovery_rate=0.75,
            faulted_tasks=40.0,
            wasted_retries=2.0,
            counts={"recovered": 30, "faulted": 40, "tasks": 100},
        )
    )
    e = r.recovery_rate
    assert (e.low, e.high) == wilson(30, 40)
    assert e.method == "Wilson over 40 tasks of seed 7"
    w = r.wasted_retries
    assert (w.value, w.low, w.high) == (2.0, None, None)


def test_wilson_counts_fall_back_to_the_rate_times_its_denominator():
    """Runs without a task_counts breakdown get their counts from rate x denominator metric."""
    e = result(run(1, silent_failure_rate=0.05, tasks=200.0)).silent_failure_rate
    assert (e.low, e.high) == wilson(10, 200)


def test_undefined_seeds_are_left_out_and_all_undefined_is_none():
    """Seeds where a rate is undefined are skipped; with none left the value is None."""
    r = result(run(1, recovery_rate=None), run(2, recovery_rate=0.5), run(3, recovery_rate=0.7))
    assert r.recovery_rate.value == pytest.approx(0.6)
    assert "1 seed(s) undefined" in r.recovery_rate.method
    assert result(run(1, recovery_rate=None), run(2, recovery_rate=None)).recovery_rate.value is None


def test_pooled_rate_is_the_wilson_interval_over_every_seeds_tasks():
    """pooled() sums successes and trials across seeds."""
    r = result(
        run(1, recovery_rate=0.5, counts={"recovered": 5, "faulted": 10, "tasks": 50}),
        run(2, recovery_rate=0.9, counts={"recovered": 27, "faulted": 30, "tasks": 60}),
    )
    p = r.pooled("recovery_rate")
    assert p.value == 32 / 40 and (p.low, p.high) == wilson(32, 40)
    with pytest.raises(KeyError, match="not a proportion"):
        r.pooled("wasted_retries")


def test_an_unknown_metric_names_the_known_ones():
    """Asking for a metric the runs do not report is a KeyError listing those they do."""
    with pytest.raises(KeyError, match="unknown metric 'recovery' \\(known: recovery_rate\\)"):
        result(run(1, recovery_rate=0.5)).metric("recovery")


@pytest.mark.parametrize(
    "seeds, first, expected",
    [
        (None, None, [1, 2, 3, 4, 5]),
        (3, None, [1, 2, 3]),
        ([4, 9], None, [4, 9]),
        (2, 40, [40, 41]),
        ([1, 7, 9], 0, [0, 1, 2]),
    ],
)
def test_seeds_are_a_count_or_a_list_and_the_first_seed_option_moves_them(seeds, first, expected):
    """A count means 1..n; --fleetchaos-seed N gives as many consecutive seeds from N."""
    assert resolve_seeds(seeds, first) == expected


@pytest.mark.parametrize(
    "seeds, message",
    [
        (0, "between 1 and 10000, got 0"),
        ([], "at least one seed"),
        ([1, 1], "listed twice"),
        ([-1], "between 0 and 2\\*\\*63-1.*got -1"),
        ([1, 2**64 + 1], "got 18446744073709551617"),
        (True, "got True"),
        ("5", "every seed must be a whole number"),
    ],
)
def test_invalid_seeds_are_user_errors(seeds, message):
    """Bad seed arguments raise UserError naming the value."""
    with pytest.raises(UserError, match=message):
        resolve_seeds(seeds)
