"""Statistics across seeds: means with Student-t intervals, and Wilson intervals.

Each seed is one independent replication of the whole simulated day, so a metric's
per-seed values are the sample; the interval is for the mean over seeds.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from scipy.stats import t as student_t

DEFAULT_CONFIDENCE = 0.95


def mean_ci(values: list[float], confidence: float = DEFAULT_CONFIDENCE) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high) of the mean of ``values``; the interval is None with fewer than 2 values.

    ``None`` entries (a rate with an empty denominator in some seed) are left out.
    """
    xs = [v for v in values if v is not None]
    n = len(xs)
    if n == 0:
        return None, None, None
    mean = sum(xs) / n
    if n < 2:
        return mean, None, None
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    half = float(student_t.ppf(0.5 + confidence / 2.0, n - 1)) * math.sqrt(var / n)
    return mean, mean - half, mean + half


def wilson(successes: int, trials: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a proportion of independent trials."""
    if trials <= 0:
        raise ValueError("wilson interval needs at least one trial")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high
