"""Paired differences, verdicts, percentiles, thinning and spike detection against hand-computed values."""

from __future__ import annotations

import math

import pytest

from fleetchaos.results.stats import (
    BETTER,
    INCONCLUSIVE,
    NO_DIFFERENCE,
    NO_DIRECTION,
    TOO_FEW_SEEDS,
    WORSE,
    paired_difference,
    percentile,
    spikes,
    thin_sorted,
    verdict,
)

T975_DF4 = 2.7764451051977934  # t_{0.975, 4}
T975_DF5 = 2.5705818356363146  # t_{0.975, 5}


def test_paired_difference_by_hand():
    """Differences [2, 3, 4, 5, 6]: mean 4, sd sqrt(2.5), half-width t_{0.975,4} * sqrt(0.5) = 1.9632432."""
    d = paired_difference([3, 5, 7, 9, 11], [1, 2, 3, 4, 5])
    assert d.n == 5 and d.differences == (2, 3, 4, 5, 6)
    assert d.mean == 4.0
    assert d.low == pytest.approx(4.0 - T975_DF4 * math.sqrt(0.5), rel=1e-12)
    assert d.high == pytest.approx(5.9632432, abs=1e-6)


def test_paired_difference_drops_seeds_missing_on_either_side():
    """A seed where either arm has no value (an empty denominator) is left out of the pairs."""
    d = paired_difference([1.0, None, 3.0, 4.0], [0.5, 2.0, None, 3.0])
    assert d.n == 2 and d.differences == (0.5, 1.0)
    assert d.mean == 0.75


def test_paired_difference_needs_the_same_seeds():
    """Lists of different lengths cannot be paired."""
    with pytest.raises(ValueError, match="same seeds"):
        paired_difference([1.0, 2.0], [1.0])


def test_verdict_follows_the_metric_direction():
    """An interval above zero is better for a higher-is-better metric and worse for a lower-is-better one."""
    d = paired_difference([3, 5, 7, 9, 11], [1, 2, 3, 4, 5])
    assert verdict(d, True) == BETTER
    assert verdict(d, False) == WORSE
    neg = paired_difference([1, 2, 3, 4, 5], [3, 5, 7, 9, 11])
    assert verdict(neg, True) == WORSE
    assert verdict(neg, False) == BETTER


def test_verdict_inconclusive_when_the_interval_contains_zero():
    """Differences [1, -1, 2, -2, 0] have mean 0: inconclusive in either direction."""
    d = paired_difference([1, -1, 2, -2, 0], [0, 0, 0, 0, 0])
    assert d.mean == 0.0 and d.low < 0 < d.high
    assert verdict(d, True) == INCONCLUSIVE
    assert verdict(d, False) == INCONCLUSIVE


def test_verdict_identical_arms_read_no_difference():
    """Identical per-seed values (every difference exactly 0) read "no difference", neither better nor inconclusive."""
    d = paired_difference([0.3] * 6, [0.3] * 6)
    assert (d.low, d.high) == (0.0, 0.0)
    assert verdict(d, True) == NO_DIFFERENCE
    assert verdict(d, False) == NO_DIFFERENCE
    # one seed that differs is no longer "no difference"
    assert verdict(paired_difference([0.3] * 5 + [0.31], [0.3] * 6), True) == INCONCLUSIVE


def test_constant_nonzero_differences_are_decisive():
    """Every seed 0.5 better: a zero-width interval at 0.5 excludes zero, so the verdict is better."""
    d = paired_difference([1.5] * 5, [1.0] * 5)
    assert (d.mean, d.low, d.high) == (0.5, 0.5, 0.5)
    assert verdict(d, True) == BETTER


def test_too_few_seeds_never_names_a_winner():
    """Four pairs, however clear, give 'too few seeds'; so do fewer and a custom minimum."""
    d = paired_difference([10, 11, 12, 13], [0, 0, 0, 0])
    assert d.low > 0
    assert verdict(d, True) == TOO_FEW_SEEDS
    assert verdict(paired_difference([1.0], [0.0]), True) == TOO_FEW_SEEDS
    assert verdict(d, True, min_seeds=4) == BETTER


def test_directionless_metric_gets_no_verdict():
    """A metric with no better direction (the task count) gets 'no direction'."""
    d = paired_difference([3, 5, 7, 9, 11], [1, 2, 3, 4, 5])
    assert verdict(d, None) == NO_DIRECTION


def test_paired_interval_at_six_seeds():
    """Differences [1..6]: mean 3.5, sd sqrt(3.5), half-width t_{0.975,5} * sqrt(3.5/6)."""
    d = paired_difference([1, 2, 3, 4, 5, 6], [0] * 6)
    half = T975_DF5 * math.sqrt(3.5 / 6)
    assert d.low == pytest.approx(3.5 - half, rel=1e-12)
    assert d.high == pytest.approx(3.5 + half, rel=1e-12)


def test_percentile_linear_interpolation():
    """[1, 2, 3, 4]: p50 = 2.5 (rank 1.5), p95 = 3.85 (rank 2.85), p0 = 1, p100 = 4."""
    xs = [4.0, 1.0, 3.0, 2.0]
    assert percentile(xs, 50) == 2.5
    assert percentile(xs, 95) == pytest.approx(3.85, rel=1e-12)
    assert percentile(xs, 0) == 1.0 and percentile(xs, 100) == 4.0


def test_percentile_edge_cases():
    """An empty sample has no percentile; one value is every percentile; q outside [0, 100] is refused."""
    assert percentile([], 50) is None
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_thin_sorted_keeps_evenly_spaced_order_statistics():
    """101 values thinned to 11 keep every tenth order statistic, minimum and maximum included."""
    xs = list(range(100, -1, -1))
    assert thin_sorted(xs, 11) == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert thin_sorted([5, 1, 3], 10) == [1, 3, 5]


def test_spikes_mark_a_burst_in_a_quiet_series():
    """One bin of 10 among 19 empty bins: mean 0.5, sd 2.18, threshold 7.04; the burst is a spike."""
    counts = [0] * 20
    counts[5] = 10
    assert spikes(counts) == [5]


def test_spikes_ignore_steady_load_and_small_bursts():
    """A constant series has no spike; a burst below the minimum count is not one either."""
    assert spikes([5] * 20) == []
    assert spikes([0] * 19 + [3]) == []
    assert spikes([]) == []
