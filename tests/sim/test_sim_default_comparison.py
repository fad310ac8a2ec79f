"""The headline comparison of the default scenario, as the README's demo runs it."""

from __future__ import annotations

import pytest

from fleetchaos.runs.runner import compare
from fleetchaos.scenario.load import load_scenario

# Ten default days on eight arms (about 7 s of CPU): the demo's own comparison, run in make test-all
# (tests/packaging/test_documented_commands.py compares the README's table with a fresh run there too).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def result():
    return compare(load_scenario("default"), list(range(1, 11)), jobs=1)


def _disjoint(a: list[float], b: list[float]) -> bool:
    return a[1] < b[0] or b[1] < a[0]


def test_structured_beats_blind_retry_on_generic_with_disjoint_intervals(result):
    """Structured policy on structured errors: higher recovery, fewer wasted retries and silent failures, CIs apart."""
    best = result.arm("structured", "structured")
    naive = result.arm("blind-retry", "generic")
    assert best.metrics["recovery_rate"] > naive.metrics["recovery_rate"]
    assert _disjoint(best.ci["recovery_rate"], naive.ci["recovery_rate"])
    assert best.metrics["wasted_retries"] < naive.metrics["wasted_retries"]
    assert _disjoint(best.ci["wasted_retries"], naive.ci["wasted_retries"])
    assert best.metrics["silent_failure_rate"] < naive.metrics["silent_failure_rate"]
    assert _disjoint(best.ci["silent_failure_rate"], naive.ci["silent_failure_rate"])


def test_structured_policy_on_generic_errors_only_has_its_unknown_branch(result):
    """Without envelopes the structured policy cannot reroute, refresh or resume: it escalates instead."""
    blind = result.arm("structured", "generic")
    informed = result.arm("structured", "structured")
    assert blind.metrics["escalations"] > informed.metrics["escalations"]
    assert blind.metrics["recovery_rate"] < informed.metrics["recovery_rate"]
    assert blind.metrics["redone_steps"] > informed.metrics["redone_steps"]


def test_backoff_and_blind_retry_differ_beyond_noise_on_a_headline_metric(result):
    """Same 3 retries, waits on the faults' time scale: backoff differs from blind-retry beyond noise (paired, 10 seeds).

    Judged by the truth, its waits outlast the bucket's rate cuts and full disks more often than immediate retries
    do, but not the provider saturated through the afternoon peak: its retries land in the same hour of overload."""
    from fleetchaos.results.registry import HEADLINE_METRICS
    from fleetchaos.results.stats import paired_difference

    for errors in ("generic", "structured"):
        backoff, blind = result.arm("backoff", errors), result.arm("blind-retry", errors)
        apart = {}
        for metric in HEADLINE_METRICS:
            d = paired_difference(backoff.per_seed[metric], blind.per_seed[metric])
            if d.low is not None and (d.low > 0 or d.high < 0):
                apart[metric] = d.mean
        assert apart, errors
        waited, immediate = backoff.breakdowns["wasted_retries_by_reason"], blind.breakdowns["wasted_retries_by_reason"]
        assert waited["API token bucket still empty"] < immediate["API token bucket still empty"], errors
        assert waited["provider still saturated"] > immediate["provider still saturated"], errors


def test_the_headline_figures_share_their_denominators_and_retries_that_failed_again_are_counted(result):
    """Every arm's common set is the same on each seed; structured on structured errors still fails retries
    (in the loaded default, refusals of the busy provider and 429s after the hinted instant), which the
    truth-judged wasted count no longer hides."""
    sizes = {tuple(a.per_seed["faulted_tasks"]) for a in result.arms}
    assert len(sizes) > 1  # the arms' own faulted tasks differ...
    common = {a.pooled["common_recovery_rate"].trials for a in result.arms}
    assert len(common) == 1  # ...but the common set is one for all
    assert common.pop() >= max(a.pooled["recovery_rate"].trials for a in result.arms)
    best = result.arm("structured", "structured")
    assert best.metrics["failed_retries"] > 10
    by_reason = best.breakdowns["failed_retries_by_reason"]
    # obedient waiters: retries after a 429 go at (or after) the hinted instant and are refused again
    assert by_reason["same fault, after its retry-after instant"] > 10 * by_reason.get(
        "same fault, before its retry-after instant", 0
    )
    by_kind = best.breakdowns["failed_retries_by_kind"]
    assert by_kind["rate_limit"] + by_kind["overloaded"] > sum(by_kind.values()) / 2
    assert best.metrics["wasted_retries"] > 0  # judged against the bucket, not the hint the envelope passes on
    for arm in result.arms:  # rates' intervals stay inside [0, 1] and contain the mean
        for name in ("success_rate", "common_recovery_rate", "recovery_rate", "silent_failure_rate"):
            low, high = arm.ci[name]
            assert 0.0 <= low <= arm.metrics[name] <= high <= 1.0, (arm.policy, arm.errors, name)
