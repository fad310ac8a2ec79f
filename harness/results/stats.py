"""Statistics across seeds: means with Student-t intervals, paired differences and
verdicts, Wilson intervals, percentiles and spike detection.

Each seed is one independent replication of the whole simulated day, so a metric's
per-seed values are the sample; the interval is for the mean over seeds.  Arms of a
comparison face the same faults for a seed, so their per-seed values are paired.

Pure functions of numbers: no SimPy, no SciPy, no result models (``reports`` may import this).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from fleetchaos.results.student_t import student_t_quantile

DEFAULT_CONFIDENCE = 0.95


def mean_ci(
    values: Sequence[float | None], confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float | None, float | None, float | None]:
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
    half = student_t_quantile(0.5 + confidence / 2.0, n - 1) * math.sqrt(var / n)
    return mean, mean - half, mean + half


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _expit(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def rate_ci(
    values: list[float | None], trials: list[int | None], confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high) of the mean of per-seed proportions, with an interval that stays inside [0, 1].

    The spread is measured on the logit scale, where a proportion's sampling error is
    roughly symmetric: each seed's rate ``k/n`` becomes ``logit((k + 0.5) / (n + 1))``
    (the half-count keeps 0% and 100% finite), and the Student-t half-width of those
    logits is laid around ``logit(mean)`` and mapped back.  So the interval is asymmetric
    near 0 and 1, always contains the mean, and never leaves [0, 1]; a mean of exactly 0
    (or 1) keeps 0 (or 1) as its bound.  ``trials[i]`` is seed ``i``'s denominator;
    seeds whose value is None are left out, as in :func:`mean_ci`.
    """
    if len(values) != len(trials):
        raise ValueError(f"rate_ci needs one denominator per value: {len(values)} against {len(trials)}")
    pairs = [(v, n) for v, n in zip(values, trials) if v is not None]
    k = len(pairs)
    if k == 0:
        return None, None, None
    mean = sum(v for v, _ in pairs) / k
    counted = [(v, n) for v, n in pairs if n is not None and n > 0]
    if k < 2 or len(counted) < k:
        return mean, None, None
    logits = [_logit((v * n + 0.5) / (n + 1.0)) for v, n in counted]
    centre_of_logits = sum(logits) / k
    sd = math.sqrt(sum((x - centre_of_logits) ** 2 for x in logits) / (k - 1))
    half = student_t_quantile(0.5 + confidence / 2.0, k - 1) * sd / math.sqrt(k)
    if mean <= 0.0:
        return mean, 0.0, _expit(centre_of_logits + half)
    if mean >= 1.0:
        return mean, _expit(centre_of_logits - half), 1.0
    centre = _logit(mean)
    return mean, min(mean, _expit(centre - half)), max(mean, _expit(centre + half))


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


# ---------------------------------------------------------------------------------------
# Paired comparisons of arms on the same seeds

#: Below this many paired seeds a comparison never names a winner.
MIN_SEEDS = 5

BETTER = "better"
WORSE = "worse"
INCONCLUSIVE = "inconclusive"
NO_DIFFERENCE = "no difference"
TOO_FEW_SEEDS = "too few seeds"
NO_DIRECTION = "no direction"
VERDICTS = (BETTER, WORSE, INCONCLUSIVE, NO_DIFFERENCE, TOO_FEW_SEEDS, NO_DIRECTION)


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Per-seed differences ``arm - reference`` on the seeds where both have a value.

    ``mean`` is their mean and ``low``/``high`` the Student-t interval of that mean
    (None with fewer than two pairs).  ``n`` counts the pairs used.
    """

    n: int
    mean: float | None
    low: float | None
    high: float | None
    differences: tuple[float, ...]


def paired_difference(
    arm: list[float | None], reference: list[float | None], confidence: float = DEFAULT_CONFIDENCE
) -> PairedDifference:
    """Mean and t-interval of ``arm[i] - reference[i]`` over seeds where both are not None.

    Both lists are per-seed values in the same seed order: every arm faces the same faults
    for a seed, so the pairs share their fault realisation and the difference cancels it.
    """
    if len(arm) != len(reference):
        raise ValueError(f"paired values need the same seeds: {len(arm)} against {len(reference)}")
    diffs = tuple(a - r for a, r in zip(arm, reference) if a is not None and r is not None)
    mean, low, high = mean_ci(list(diffs), confidence)
    return PairedDifference(len(diffs), mean, low, high, diffs)


def bounded(diff: PairedDifference, low: float, high: float) -> PairedDifference:
    """``diff`` with its interval cut to [``low``, ``high``], the range the difference can take."""
    if diff.low is None or diff.high is None:
        return diff
    return PairedDifference(diff.n, diff.mean, max(low, diff.low), min(high, diff.high), diff.differences)


def verdict(diff: PairedDifference, higher_is_better: bool | None, min_seeds: int = MIN_SEEDS) -> str:
    """better / worse / inconclusive for an arm against its reference, from a paired difference.

    * ``too few seeds`` when fewer than ``min_seeds`` pairs exist: never a winner;
    * ``no direction`` for a metric where neither higher nor lower is better;
    * ``no difference`` when every paired difference is exactly zero (the arms agree seed by seed);
    * ``better`` or ``worse`` when the whole confidence interval of the mean difference lies
      on one side of zero (which side is good depends on the metric's direction);
    * ``inconclusive`` when the interval contains zero.
    """
    if diff.n < min_seeds or diff.low is None or diff.high is None:
        return TOO_FEW_SEEDS
    if higher_is_better is None:
        return NO_DIRECTION
    if all(d == 0.0 for d in diff.differences):
        return NO_DIFFERENCE
    if diff.low > 0.0:
        return BETTER if higher_is_better else WORSE
    if diff.high < 0.0:
        return WORSE if higher_is_better else BETTER
    return INCONCLUSIVE


# ---------------------------------------------------------------------------------------
# Distributions


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) with linear interpolation between closest ranks.

    This is the Hyndman-Fan type 7 estimator (numpy's default): for sorted ``x`` of length
    ``n`` it interpolates at rank ``(n - 1) * q / 100``.  None for an empty sample.
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    xs = sorted(values)
    if not xs:
        return None
    rank = (len(xs) - 1) * q / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)


def thin_sorted(values: list[float], limit: int) -> list[float]:
    """At most ``limit`` order statistics of ``values``, evenly spaced in rank, sorted.

    With ``len(values) <= limit`` this is just the sorted sample; otherwise the minimum and
    maximum are kept and the ranks between are sampled evenly, so an ECDF drawn from the
    result is exact at each kept point.
    """
    xs = sorted(values)
    n = len(xs)
    if n <= limit:
        return xs
    if limit < 2:
        raise ValueError("thin_sorted needs a limit of at least 2")
    return [xs[round(i * (n - 1) / (limit - 1))] for i in range(limit)]


def spikes(counts: list[int], k: float = 3.0, min_count: int = 5) -> list[int]:
    """Indices of bins whose count stands out: above ``mean + k * sd`` of the series and at least ``min_count``.

    ``mean`` and ``sd`` (population) are over every bin of the series, zeros included, so a
    burst in an otherwise quiet series stands out and a steady high rate does not.
    """
    n = len(counts)
    if n == 0:
        return []
    mean = sum(counts) / n
    sd = math.sqrt(sum((c - mean) ** 2 for c in counts) / n)
    threshold = max(float(min_count), mean + k * sd)
    return [i for i, c in enumerate(counts) if c >= threshold and c > mean]
