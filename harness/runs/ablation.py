"""Field ablation: what each field of an error envelope buys, one field at a time.

The steps are error formats built from the failure-type envelope with fields added one
at a time (``ablation:failure_type``, ``ablation:+partial_results``,
``ablation:+alternatives``, ``ablation:+retry_recommended``), after a bare ``generic``
baseline.  One policy (the failure-type router by default) runs on every step over the
same seeds, so each step faces the same faults as the one before and the difference
between consecutive steps is a paired one.  Every number comes from
:func:`fleetchaos.runs.runner.compare`: nothing here computes a metric of its own.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

from fleetchaos.results.models import CompareResult, rounded
from fleetchaos.results.stats import DEFAULT_CONFIDENCE, paired_difference
from fleetchaos.runs.runner import compare
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.formats.failure_type import ABLATION_FORMATS

#: The ablation's default scenario (scenarios/field_ablation.yaml).
DEFAULT_SCENARIO = "field_ablation"
DEFAULT_POLICY = "failure-type-router"
#: The steps in ablation order: the bare baseline, then one field added per step.
STEPS: tuple[str, ...] = ("generic", *ABLATION_FORMATS)
#: The metrics the ablation prints and charts: headline metrics of the registry
#: (fleetchaos.results.registry.HEADLINE_METRICS) in the order of the ablation's panels,
#: led by recovery on the tasks faulted in any step (one denominator for every step).
HEADLINE = ("common_recovery_rate", "success_rate", "wasted_retries", "silent_failure_rate")


def run_ablation(
    scenario: Scenario,
    seeds: list[int],
    *,
    policy: str = DEFAULT_POLICY,
    steps: tuple[str, ...] = STEPS,
    jobs: int = 1,
    confidence: float = DEFAULT_CONFIDENCE,
    scenario_ref: str | None = None,
    executor: Executor | None = None,
) -> CompareResult:
    """One policy on every ablation step, all on the same seeds (a compare with one policy)."""
    return compare(
        scenario,
        seeds,
        policies=(policy,),
        errors=steps,
        jobs=jobs,
        confidence=confidence,
        scenario_ref=scenario_ref,
        executor=executor,
    )


def ablation_document(result: CompareResult, policy: str = DEFAULT_POLICY) -> dict:
    """``{"scenario", "seeds", "policy", "confidence", "steps": [{"format", "metrics", "ci", "gain"}]}``.

    ``metrics`` and ``ci`` are the compare arm's (same names); ``gain`` is, per headline
    metric, the paired difference from the previous step across seeds (mean and interval).
    """
    steps = []
    previous = None
    for arm in result.arms:
        gain: dict[str, dict[str, Any]] = {}
        if previous is not None:
            for name in HEADLINE:
                diff = paired_difference(arm.per_seed[name], previous.per_seed[name], result.confidence)
                gain[name] = {"mean": rounded(diff.mean), "ci": [rounded(diff.low), rounded(diff.high)], "n": diff.n}
        steps.append({"format": arm.errors, "metrics": dict(arm.metrics), "ci": dict(arm.ci), "gain": gain})
        previous = arm
    return {
        "scenario": result.scenario,
        "seeds": list(result.seeds),
        "policy": policy,
        "confidence": result.confidence,
        "steps": steps,
    }
