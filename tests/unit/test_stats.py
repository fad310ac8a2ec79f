"""Student-t means and Wilson intervals against hand-computed values."""

from __future__ import annotations

import math

import pytest

from fleetchaos.results.stats import DEFAULT_CONFIDENCE, mean_ci, rate_ci, wilson

# Quantiles used below (tables / scipy.stats.t.ppf):
T975_DF4 = 2.7764451051977934  # t_{0.975, 4}
T95_DF4 = 2.1318467863266495  # t_{0.95, 4}
T975_DF1 = 12.706204736174694  # t_{0.975, 1}


def test_default_confidence_is_95():
    """The default confidence level is 95%."""
    assert DEFAULT_CONFIDENCE == 0.95


def test_mean_ci_one_to_five():
    """mean_ci([1..5]) is 3 -/+ t_{0.975,4} * sqrt(2.5)/sqrt(5)."""
    # mean 3; sample variance (4+1+0+1+4)/4 = 2.5; standard error sqrt(2.5/5) = sqrt(0.5)
    # half-width 2.7764451 * 0.70710678 = 1.9632432
    mean, lo, hi = mean_ci([1, 2, 3, 4, 5])
    half = T975_DF4 * math.sqrt(0.5)
    assert mean == 3.0
    assert lo == pytest.approx(3.0 - half, rel=1e-12)
    assert hi == pytest.approx(3.0 + half, rel=1e-12)
    assert lo == pytest.approx(1.0367568, abs=1e-6)
    assert hi == pytest.approx(4.9632432, abs=1e-6)


def test_mean_ci_other_confidence():
    """mean_ci at 90% uses t_{0.95,4}: half-width 2.1318468 * sqrt(0.5) = 1.5074433."""
    mean, lo, hi = mean_ci([1, 2, 3, 4, 5], confidence=0.90)
    assert mean == 3.0
    assert lo == pytest.approx(3.0 - T95_DF4 * math.sqrt(0.5), rel=1e-12)
    assert hi == pytest.approx(3.0 + 1.5074433, abs=1e-6)


def test_mean_ci_unsorted_and_shifted_values():
    """mean_ci does not depend on order, and shifting the sample shifts the interval."""
    a = mean_ci([15.0, 11.0, 13.0, 12.0, 14.0])  # [1..5] + 10, shuffled
    assert a[0] == 13.0
    assert a[1] == pytest.approx(11.0367568, abs=1e-6)
    assert a[2] == pytest.approx(14.9632432, abs=1e-6)


def test_mean_ci_two_values():
    """mean_ci([0, 2]): mean 1, sd sqrt(2), se 1, half-width t_{0.975,1} = 12.7062047."""
    mean, lo, hi = mean_ci([0.0, 2.0])
    assert mean == 1.0
    assert lo == pytest.approx(1.0 - T975_DF1, rel=1e-12)
    assert hi == pytest.approx(1.0 + T975_DF1, rel=1e-12)


def test_mean_ci_constant_values_zero_width():
    """A constant sample has a zero-width interval at its value."""
    assert mean_ci([2.0, 2.0, 2.0]) == (2.0, 2.0, 2.0)


def test_mean_ci_single_value_has_no_interval():
    """With one value the mean is returned but the interval bounds are None."""
    assert mean_ci([7.5]) == (7.5, None, None)


def test_mean_ci_empty_is_all_none():
    """With no values the mean and the interval are None."""
    assert mean_ci([]) == (None, None, None)


def test_mean_ci_all_none_is_all_none():
    """A sample of only None entries behaves like an empty sample."""
    assert mean_ci([None, None, None]) == (None, None, None)


def test_mean_ci_skips_none_entries():
    """None entries are left out: [1, None, 3] is the sample [1, 3]."""
    # mean 2; variance ((1)^2 + (1)^2)/1 = 2; se sqrt(2/2) = 1; half = t_{0.975,1}
    mean, lo, hi = mean_ci([1.0, None, 3.0])
    assert mean == 2.0
    assert lo == pytest.approx(2.0 - T975_DF1, rel=1e-12)
    assert hi == pytest.approx(2.0 + T975_DF1, rel=1e-12)


def test_mean_ci_one_value_plus_nones_has_no_interval():
    """One real value among Nones gives a mean and no interval."""
    assert mean_ci([None, 4.0, None]) == (4.0, None, None)


def test_mean_ci_keeps_zero_values():
    """Zero is a value, not a missing entry: [0, 0, 3] has mean 1."""
    mean, lo, hi = mean_ci([0.0, 0.0, 3.0])
    assert mean == 1.0
    assert lo < 1.0 < hi


# ---------------------------------------------------------------------------------------
# Wilson


def test_wilson_half():
    """wilson(5, 10) at 95% is (0.2366, 0.7634), symmetric about 0.5."""
    # z = 1.959964, z^2 = 3.841459; denom = 1 + z^2/10 = 1.3841459
    # centre = (0.5 + z^2/20) / denom = 0.5
    # half = z * sqrt(0.25/10 + z^2/400) / denom = 1.959964 * 0.186021 / 1.384146 = 0.263407
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2365931, abs=1e-6)
    assert hi == pytest.approx(0.7634069, abs=1e-6)
    assert lo + hi == pytest.approx(1.0, abs=1e-12)


def test_wilson_eight_of_ten():
    """wilson(8, 10) at 95% is (0.4902, 0.9433)."""
    # centre = (0.8 + 0.1920729) / 1.3841459 = 0.7167395
    # half = 1.959964 * sqrt(0.016 + 0.0096036) / 1.3841459 = 0.2265770
    lo, hi = wilson(8, 10)
    assert lo == pytest.approx(0.4901625, abs=1e-6)
    assert hi == pytest.approx(0.9433178, abs=1e-6)


def test_wilson_zero_successes():
    """wilson(0, 10): lower bound 0 and upper bound z^2/n / (1 + z^2/n) = 0.2775."""
    # with p = 0, centre = half = (z^2/20)/denom, so upper = 2 * 0.1920729/1.3841459
    lo, hi = wilson(0, 10)
    assert lo == pytest.approx(0.0, abs=1e-12)
    assert hi == pytest.approx(0.2775328, abs=1e-6)


def test_wilson_all_successes():
    """wilson(10, 10) mirrors wilson(0, 10): (0.7225, 1.0)."""
    lo, hi = wilson(10, 10)
    assert lo == pytest.approx(1.0 - 0.2775328, abs=1e-6)
    assert hi == pytest.approx(1.0, abs=1e-12)


def test_wilson_extremes_are_exact():
    """With 0 successes the lower bound is exactly 0; with n successes the upper bound is exactly 1."""
    assert wilson(0, 10)[0] == 0.0
    assert wilson(13, 13)[1] == 1.0


def test_wilson_99_percent_is_wider():
    """wilson(5, 10, 0.99) is (0.1842, 0.8158), wider than the 95% interval."""
    # z = 2.5758293, z^2 = 6.6348966; denom = 1.6634897
    # half = 2.5758293 * sqrt(0.025 + 0.0165872) / 1.6634897 = 0.3157745
    lo, hi = wilson(5, 10, confidence=0.99)
    assert lo == pytest.approx(0.1842255, abs=1e-6)
    assert hi == pytest.approx(0.8157745, abs=1e-6)
    lo95, hi95 = wilson(5, 10)
    assert lo < lo95 and hi > hi95


def test_wilson_bounds_within_unit_interval():
    """Wilson bounds lie in [0, 1] and contain the observed proportion."""
    for n in (1, 2, 7, 50):
        for k in range(n + 1):
            lo, hi = wilson(k, n)
            assert 0.0 <= lo <= k / n <= hi <= 1.0


@pytest.mark.parametrize("trials", [0, -1])
def test_wilson_rejects_no_trials(trials):
    """wilson raises ValueError when there are no trials."""
    with pytest.raises(ValueError, match="at least one trial"):
        wilson(0, trials)


# -- rate_ci: the interval of a mean of per-seed proportions, on the logit scale ----------


def test_rate_ci_two_seeds_never_shows_a_negative_bound():
    """5.3% over two seeds (1/40 and 7/88): the t-interval would reach below zero; the logit one stays inside."""
    values, trials = [1 / 40, 7 / 88], [40, 88]
    mean, low, high = mean_ci(values)
    assert low < 0.0  # the symmetric Student-t interval the report used to print
    mean, low, high = rate_ci(values, trials)
    assert mean == pytest.approx((1 / 40 + 7 / 88) / 2)
    assert 0.0 < low <= mean <= high < 1.0


def test_rate_ci_by_hand():
    """Three seeds: the half-width of the adjusted logits laid around logit(mean), mapped back."""
    values, trials = [0.5, 0.6, 0.7], [10, 10, 10]
    logits = [math.log(((v * 10 + 0.5) / 11) / (1 - (v * 10 + 0.5) / 11)) for v in values]
    centre = sum(logits) / 3
    sd = math.sqrt(sum((x - centre) ** 2 for x in logits) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, 2)
    mean = 0.6
    expected_low = 1 / (1 + math.exp(-(math.log(mean / (1 - mean)) - half)))
    expected_high = 1 / (1 + math.exp(-(math.log(mean / (1 - mean)) + half)))
    got = rate_ci(values, trials)
    assert got == pytest.approx((mean, expected_low, expected_high))


def test_rate_ci_at_zero_and_one_keeps_the_edge_as_its_bound():
    """A mean of exactly 0 (or 1) has 0 (or 1) as its low (or high) bound and a real bound on the other side."""
    mean, low, high = rate_ci([0.0, 0.0, 0.0], [20, 30, 25])
    assert (mean, low) == (0.0, 0.0) and 0.0 < high < 0.05
    mean, low, high = rate_ci([1.0, 1.0], [20, 30])
    assert (mean, high) == (1.0, 1.0) and 0.5 < low < 1.0  # two seeds: t(0.975, 1) = 12.7 makes it wide


def test_rate_ci_without_an_interval():
    """One seed, no value, or an unknown denominator: the mean alone."""
    assert rate_ci([0.4], [10]) == (0.4, None, None)
    assert rate_ci([None, None], [10, 10]) == (None, None, None)
    assert rate_ci([0.4, 0.5], [10, None]) == (0.45, None, None)
    with pytest.raises(ValueError):
        rate_ci([0.4, 0.5], [10])


@pytest.mark.parametrize("seed", range(40))
def test_rate_ci_always_inside_the_unit_interval_and_around_the_mean(seed):
    """Any per-seed counts: 0 <= low <= mean <= high <= 1."""
    import random

    rng = random.Random(seed)
    k = rng.randint(2, 6)
    trials = [rng.randint(1, 200) for _ in range(k)]
    values = [rng.choice([0, n, rng.randint(0, n)]) / n for n in trials]
    mean, low, high = rate_ci(values, trials, rng.choice([0.5, 0.9, 0.95, 0.999]))
    assert 0.0 <= low <= mean <= high <= 1.0
