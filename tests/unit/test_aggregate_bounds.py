"""An arm's intervals stay where its metrics can be: counts, costs and times never below 0."""

from __future__ import annotations

from fleetchaos.results.models import RunResult
from fleetchaos.runs.runner import aggregate


def _run(seed: int, wasted: float) -> RunResult:
    return RunResult(scenario="s", policy="p", errors="e", seed=seed, metrics={"wasted_retries": wasted},
                     breakdowns={}, fault_schedule=[], replay="")  # fmt: skip


def test_a_count_interval_is_cut_at_zero_and_its_upper_end_kept():
    """Three seeds wasting 0, 0 and 10 retries: the t-interval's lower end (below 0) becomes 0, the mean stays 3.33."""
    arm = aggregate("p", "e", [_run(1, 0.0), _run(2, 0.0), _run(3, 10.0)], 0.95)
    low, high = arm.ci["wasted_retries"]
    assert low == 0.0 and high > 10.0
    assert abs(arm.metrics["wasted_retries"] - 10 / 3) < 1e-3
