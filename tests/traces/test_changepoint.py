"""Change-point detection finds a planted window of elevated failures and none in a steady rate."""

from __future__ import annotations

import numpy as np

from fleetchaos.calibrate.changepoint import find_windows


def _calls(seed: int, rate_in: float, n: int = 20_000, base: float = 0.02):
    rng = np.random.default_rng(seed)
    times = np.sort(rng.uniform(0, 86_400, n))
    inside = (times >= 36_000) & (times < 50_400)
    p = np.where(inside, rate_in, base)
    return times, rng.random(n) < p


def test_a_planted_window_is_found_where_it_is():
    """A 4-hour stretch at 30% failures in a day at 2% is found to within five one-minute bins (about 70 calls) at each edge."""
    times, failed = _calls(1, 0.30)
    windows, baseline = find_windows(times, failed, 0.0, 86_400, 60.0)
    assert len(windows) == 1
    assert abs(windows[0].start_s - 36_000) <= 300 and abs(windows[0].end_s - 50_400) <= 300
    assert abs(windows[0].rate - 0.30) < 0.03
    assert abs(baseline - 0.02) < 0.005


def test_a_steady_rate_has_no_window():
    """Twenty days at a steady 2% give no window at all (no false alarms from chance clusters)."""
    for seed in range(20):
        times, failed = _calls(100 + seed, 0.02)
        windows, _ = find_windows(times, failed, 0.0, 86_400, 60.0)
        assert windows == [], seed
