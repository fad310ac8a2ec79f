"""An arm across its seeds: means with intervals, pooled task-level rates, and paired verdicts against a reference arm."""

from __future__ import annotations

from collections import Counter

from fleetchaos.results.models import SAMPLE_LIMIT, ArmResult, Comparison, Proportion, RunResult, rounded
from fleetchaos.results.registry import METRICS, POOLED_RATES, VERDICT_METRICS, direction, is_rate
from fleetchaos.results.stats import (
    MIN_SEEDS,
    bounded,
    mean_ci,
    paired_difference,
    rate_ci,
    thin_sorted,
    verdict,
    wilson,
)


def aggregate(policy: str, errors: str, runs: list[RunResult], confidence: float) -> ArmResult:
    """Means and confidence intervals across the seeds of one arm."""
    metrics: dict[str, float | None] = {}
    ci: dict[str, list[float | None]] = {}
    per_seed: dict[str, list[float | None]] = {}
    for name in METRICS:
        values = [r.metrics.get(name) for r in runs]
        if name in POOLED_RATES:  # a proportion: its interval stays inside [0, 1]
            trials = [r.breakdowns.get("task_counts", {}).get(POOLED_RATES[name][1]) for r in runs]
            mean, lo, hi = rate_ci(values, trials, confidence)
        else:
            mean, lo, hi = mean_ci(values, confidence)
            if lo is not None and lo < 0.0:  # every metric here is a count, a cost or a time: never below 0
                lo = 0.0
        metrics[name] = rounded(mean)
        ci[name] = [rounded(lo), rounded(hi)]
        per_seed[name] = values
    breakdowns: dict[str, Counter] = {}
    for r in runs:
        for key, counts in r.breakdowns.items():
            breakdowns.setdefault(key, Counter()).update(counts)
    samples: dict[str, list[float]] = {}
    for r in runs:
        for key, drawn in r.samples.items():
            samples.setdefault(key, []).extend(drawn)
    return ArmResult(
        policy=policy,
        errors=errors,
        metrics=metrics,
        ci=ci,
        per_seed=per_seed,
        breakdowns={k: dict(sorted(v.items())) for k, v in sorted(breakdowns.items())},
        pooled=pooled_rates(breakdowns.get("task_counts", {}), confidence),
        recipe=runs[0].recipe if runs else "",
        policy_name=runs[0].policy_name if runs else "",
        samples={k: thin_sorted(v, SAMPLE_LIMIT) for k, v in sorted(samples.items())},
        misread_probability=runs[0].misread_probability if runs else None,
    )


def with_task_sets(arm: ArmResult, runs: list[RunResult]) -> ArmResult:
    """``arm`` with its runs' task sets, seed by seed (when every run kept them): what a later gate recomputes from."""
    if runs and all(r.task_sets for r in runs):
        arm.task_sets = [dict(r.task_sets) for r in runs]
    return arm


def pooled_rates(counts: dict[str, int], confidence: float) -> dict[str, Proportion]:
    """Task-level rates pooled over seeds with Wilson intervals (each task one trial)."""
    out = {}
    for name, (num, den) in POOLED_RATES.items():
        if den not in counts:
            continue
        k, n = int(counts.get(num, 0)), int(counts[den])
        lo, hi = wilson(k, n, confidence) if n else (None, None)
        out[name] = Proportion(
            successes=k, trials=n, rate=rounded(k / n) if n else None, low=rounded(lo), high=rounded(hi)
        )
    return out


def paired_comparisons(
    arms: list[ArmResult],
    confidence: float,
    *,
    reference: int = 0,
    metrics: tuple[str, ...] = VERDICT_METRICS,
    min_seeds: int = MIN_SEEDS,
) -> list[Comparison]:
    """Every arm against ``arms[reference]`` on ``metrics``: paired per-seed differences and verdicts.

    The arms must share their seeds (in the same order), as the arms of one comparison do.
    """
    if len(arms) < 2:
        return []
    ref = arms[reference]
    out = []
    for arm in arms:
        if arm is ref:
            continue
        for name in metrics:
            if name not in arm.per_seed or name not in ref.per_seed:
                continue
            diff = paired_difference(arm.per_seed[name], ref.per_seed[name], confidence)
            if is_rate(name):  # a difference of two proportions lies in [-1, 1], whatever the t-interval says
                diff = bounded(diff, -1.0, 1.0)
            out.append(
                Comparison(
                    policy=arm.policy,
                    errors=arm.errors,
                    reference_policy=ref.policy,
                    reference_errors=ref.errors,
                    metric=name,
                    higher_is_better=direction(name),
                    n=diff.n,
                    mean_difference=rounded(diff.mean),
                    ci=[rounded(diff.low), rounded(diff.high)],
                    verdict=verdict(diff, direction(name), min_seeds),
                )
            )
    return out
