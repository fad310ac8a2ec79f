"""Robustness: vary the main assumptions of a scenario one at a time and see where the ordering of arms flips.

Each varied assumption is a dotted scenario path with a declared range of values.  At
every value, every other assumption stays at the scenario's own, and every arm runs on
the same seeds; the arm ahead on the metric is the leader, and a flip is a place where
the leader changes between two neighbouring values.  The paired difference (second arm
minus first, per seed) and its interval say whether each side of a flip is clear.

The declared ranges (:func:`default_ranges`, used unless ``--param`` ranges are given):

* every fault's rate (its ``probability``, ``per_day`` or ``per_worker_per_day``) at 0,
  0.5, 1, 2 and 4 times the scenario's value (probabilities at most 1): the fault mix;
* ``fleet.misread_probability`` at 0, 0.5, 1, 2 and 4 times its value (at most 1): how
  often an orchestrator reads a failure as a success;
* ``workload.tasks_per_day`` at 0.5, 1 and 2 times its value: load;
* ``fleet.api_reject_cost`` at 0, 0.5 and 1: whether a refused (429) request still costs
  a token of the shared bucket.

The ranges are the plausible spread of each assumption around the scenario's setting,
not values picked to produce a flip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.results.models import ArmResult, RunResult, rounded
from fleetchaos.results.registry import direction
from fleetchaos.results.studies import Flip, RobustnessPoint, RobustnessResult
from fleetchaos.scenario.load import Scenario

__all__ = [
    "LOAD_MULTIPLIERS",
    "RATE_FIELDS",
    "RATE_MULTIPLIERS",
    "REJECT_COSTS",
    "arm_label",
    "default_ranges",
    "describe_path",
    "find_flips",
    "leading_arms",
    "robustness",
]

#: Multipliers of a fault's rate and of the misread probability.
RATE_MULTIPLIERS = (0.0, 0.5, 1.0, 2.0, 4.0)
#: Multipliers of the workload's tasks per day.
LOAD_MULTIPLIERS = (0.5, 1.0, 2.0)
#: Tokens a refused request costs.
REJECT_COSTS = (0.0, 0.5, 1.0)
#: The field that sets how often a fault happens, by precedence.
RATE_FIELDS = ("probability", "per_day", "per_worker_per_day")


def arm_label(policy: str, errors: str) -> str:
    """``policy on errors``."""
    return f"{policy} on {errors}"


def _scaled(value: float, multipliers: Sequence[float], cap: float | None) -> list[float]:
    out: list[float] = []
    for m in multipliers:
        v = float(f"{value * m:.6g}")
        if cap is not None:
            v = min(v, cap)
        if v not in out:
            out.append(v)
    return out


def describe_path(scenario: Scenario, path: str) -> str:
    """What a varied path is, in words: ``network_blip rate (probability)``, ``load``; empty if unknown."""
    import re

    match = re.fullmatch(r"faults\[(\d+)\]\.(\w+)", path)
    if match and int(match.group(1)) < len(scenario.faults):
        kind = scenario.faults[int(match.group(1))].kind
        field = match.group(2)
        return f"{kind} rate" if field in RATE_FIELDS else f"{kind} {field}"
    return {
        "fleet.misread_probability": "misread probability",
        "workload.tasks_per_day": "load (tasks per day)",
        "fleet.api_reject_cost": "tokens a refused request costs",
    }.get(path, "")


def default_ranges(scenario: Scenario) -> dict[str, list[Any]]:
    """The declared range of each main assumption of ``scenario`` (those it sets to something that can vary)."""
    doc = scenario.model_dump(mode="json")
    ranges: dict[str, list[Any]] = {}
    for i, fault in enumerate(doc.get("faults") or []):
        for name in RATE_FIELDS:
            value = fault.get(name)
            if isinstance(value, (int, float)) and value > 0:
                cap = 1.0 if name == "probability" else 100.0
                ranges[f"faults[{i}].{name}"] = _scaled(float(value), RATE_MULTIPLIERS, cap)
                break
    fleet = doc.get("fleet") or {}
    misread = fleet.get("misread_probability")
    if isinstance(misread, (int, float)) and misread > 0:
        ranges["fleet.misread_probability"] = _scaled(float(misread), RATE_MULTIPLIERS, 1.0)
    workload = doc.get("workload") or {}
    per_day = workload.get("tasks_per_day")
    if isinstance(per_day, (int, float)) and per_day > 0 and not workload.get("arrivals"):
        ranges["workload.tasks_per_day"] = _scaled(float(per_day), LOAD_MULTIPLIERS, None)
    if "api_reject_cost" in fleet:
        ranges["fleet.api_reject_cost"] = list(REJECT_COSTS)
    return ranges


def robustness(
    scenario: Scenario,
    arms: Sequence[tuple[str, str]],
    seeds: list[int],
    ranges: dict[str, list[Any]],
    *,
    executor: Executor,
    metric: str = "success_rate",
    confidence: float = 0.95,
    scenario_ref: str | None = None,
    on_result: Callable[[RunResult], None] | None = None,
) -> RobustnessResult:
    """Every arm at every value of every range (one assumption varied at a time), and the flips between them."""
    from fleetchaos.runs.runner import aggregate, run_jobs, versions
    from fleetchaos.runs.sweep import scenario_source
    from fleetchaos.runs.variant import RunJob, Variant
    from fleetchaos.scenario.params import apply_params

    if len(arms) < 2:
        raise UserError("--arms: give at least two arms (POLICY:ERRORS,POLICY:ERRORS) to order")
    better = direction(metric)
    if better is None:
        raise UserError(f"--metric {metric}: neither higher nor lower is better for it; choose e.g. success_rate")
    if not ranges:
        raise UserError("nothing to vary: the scenario sets no fault rate, misread probability or load; give --param")
    source = scenario_source(scenario_ref or scenario.name)
    variants = [Variant(scenario, scenario_ref)]
    labels: list[tuple[str, Any]] = [("", None)]
    validated: dict[str, list[Any]] = {}
    for path, values in ranges.items():
        for value in values:
            varied, canonical = apply_params(scenario, [(path, value)], source=source)
            variants.append(Variant(varied, scenario_ref, canonical))
            validated.setdefault(path, []).append(canonical[0][1])
            labels.append((path, canonical[0][1]))
    jobs = [RunJob(v, p, e, s) for v in range(len(variants)) for p, e in arms for s in seeds]
    results = run_jobs(variants, jobs, executor=executor, on_result=(lambda _i, r: on_result(r)) if on_result else None)
    per_variant = len(arms) * len(seeds)
    points = []
    for v, (path, value) in enumerate(labels):
        chunk = results[v * per_variant : (v + 1) * per_variant]
        arm_results = [
            aggregate(p, e, chunk[i * len(seeds) : (i + 1) * len(seeds)], confidence) for i, (p, e) in enumerate(arms)
        ]
        points.append(_point(path, value, arm_results, metric, better, confidence))
    baseline, varied_points = points[0], points[1:]
    return RobustnessResult(
        scenario=scenario.name,
        metric=metric,
        higher_is_better=better,
        arms=[arm_label(p, e) for p, e in arms],
        seeds=list(seeds),
        confidence=confidence,
        baseline_leader=baseline.leader,
        varied=validated,
        described={p: d for p in validated if (d := describe_path(scenario, p))},
        points=varied_points,
        flips=find_flips(varied_points, metric),
        versions=versions(),
    )


def leading_arms(arms: Sequence[ArmResult], metric: str) -> list[tuple[str, str]]:
    """The two arms ahead on ``metric`` (best first), as (policy, errors): the ordering a flip analysis tests."""
    better = direction(metric)
    have = [(value, a) for a in arms if (value := a.metrics.get(metric)) is not None]
    ordered = sorted(have, key=lambda pair: float(pair[0]) * (-1.0 if better else 1.0))
    return [(a.policy, a.errors) for _, a in ordered[:2]]


def _point(
    path: str, value: Any, arms: list[ArmResult], metric: str, better: bool, confidence: float
) -> RobustnessPoint:
    from fleetchaos.results.stats import paired_difference

    means = [(a.metrics.get(metric), arm_label(a.policy, a.errors)) for a in arms]
    known = sorted(((m, label) for m, label in means if m is not None), key=lambda x: -x[0] if better else x[0])
    leader = "tie"
    if known and (len(known) == 1 or known[0][0] != known[1][0]):
        leader = known[0][1]
    diff = paired_difference(arms[1].per_seed.get(metric, []), arms[0].per_seed.get(metric, []), confidence)
    return RobustnessPoint(
        parameter=path,
        value=value,
        arms=arms,
        difference=rounded(diff.mean),
        ci=[rounded(diff.low), rounded(diff.high)],
        leader=leader,
    )


def find_flips(points: list[RobustnessPoint], metric: str) -> list[Flip]:
    """Where the leader changes between neighbouring values of each parameter (ties skipped over)."""
    flips = []
    last: dict[str, RobustnessPoint] = {}
    for point in points:
        if point.leader == "tie":
            continue
        before = last.get(point.parameter)
        if before is not None and before.leader != point.leader:
            flips.append(
                Flip(
                    parameter=point.parameter,
                    metric=metric,
                    ahead=before.leader,
                    behind=point.leader,
                    holds_at=before.value,
                    flips_at=point.value,
                )
            )
        last[point.parameter] = point
    return flips
