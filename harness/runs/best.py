"""Best against best: ``compare --tune`` and ``best`` arms, each format's policy tuned on training seeds.

``best`` in a comparison's policies stands for the policy tuned on each of its error
formats (:mod:`fleetchaos.runs.tune`, training seeds only, disjoint from the comparison's
seeds).  Each tuned policy then runs on every format of the comparison, so the result has
"best policy per format" arms and "same policy on both formats" arms side by side.
:func:`tuning_record` says which arm is which and splits the gap between the best arms into
the part the format makes (same policy, other format) and the part the policy makes (same
format, other policy), each a paired difference over the comparison's seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace

from fleetchaos.errors import UserError
from fleetchaos.results.models import CompareResult, RunResult, rounded
from fleetchaos.results.studies import ArmRole, Gap, TuningRecord
from fleetchaos.runs.tune import TuneSpec, best_trial, check_tune, search

__all__ = ["BEST", "expand_best", "gaps", "tune_each", "tuning_record", "with_aliases"]

#: The policy name that stands for "the policy tuned on this format".
BEST = "best"


def tune_each(
    base: TuneSpec,
    errors: tuple[str, ...],
    seeds: list[int],
    *,
    executor: Executor,
    on_result: Callable[[str, RunResult], None] | None = None,
) -> dict[str, str]:
    """The best spec for each error format of ``errors``, searched on ``base``'s training seeds (none of them in ``seeds``)."""
    shared = sorted(set(base.train_seeds) & set(seeds))
    if shared:
        raise UserError(
            f"--tune: the comparison's seeds include training seeds ({', '.join(map(str, shared[:5]))}); "
            "a tuned policy must be judged on seeds its search never ran: choose other --seeds/--first-seed"
        )
    best = {}
    for each in errors:
        spec = replace(base, errors=each, holdout_seeds=tuple(seeds))
        families = check_tune(spec)
        best[each] = best_trial(spec, search(spec, executor=executor, on_result=on_result, families=families)).policy
    return best


def expand_best(policies: tuple[str, ...], best: dict[str, str]) -> tuple[str, ...]:
    """``policies`` with ``best`` replaced by each format's tuned spec (in format order, each once)."""
    out: list[str] = []
    for policy in policies:
        for name in best.values() if policy == BEST else (policy,):
            if name not in out:
                out.append(name)
    return tuple(out)


def with_aliases(result: CompareResult, best: dict[str, str]) -> CompareResult:
    """``result`` with each tuned arm's alias set (``best-for-FORMAT``, ``best-for-A+B`` when one spec won on several)."""
    arms = []
    for arm in result.arms:
        tuned_for = [e for e, p in best.items() if p == arm.policy]
        arms.append(arm.model_copy(update={"alias": f"best-for-{'+'.join(tuned_for)}"}) if tuned_for else arm)
    return result.model_copy(update={"arms": arms})


def tuning_record(result: CompareResult, base: TuneSpec, best: dict[str, str]) -> TuningRecord:
    """What the tuning chose, each arm's role, and the gap split between format and policy."""
    roles = []
    for arm in result.arms:
        tuned_for = next((f for f, p in best.items() if p == arm.policy), "")
        if not tuned_for:
            continue
        role = (
            f"best for {arm.errors}" if best.get(arm.errors) == arm.policy else f"same policy as best for {tuned_for}"
        )
        roles.append(
            ArmRole(
                policy=arm.policy,
                errors=arm.errors,
                role=role,
                tuned_for=arm.errors if role.startswith("best") else tuned_for,
            )
        )
    return TuningRecord(
        objective=base.objective,
        search=base.search,
        trials=base.trials,
        train_seeds=list(base.train_seeds),
        best=best,
        roles=roles,
        gaps=gaps(result, best, base.objective),
    )


def gaps(result: CompareResult, best: dict[str, str], metric: str) -> list[Gap]:
    """For the first format against each other one: the best-vs-best gap, the same-policy gaps, the policy gaps."""
    from fleetchaos.results.stats import paired_difference

    tuned = list(best)
    out = []
    first = tuned[0]
    for other in tuned[1:]:
        a, b = best[first], best[other]
        rows = [("best per format", (b, other), (a, first))]
        for policy in dict.fromkeys((a, b)):
            rows.append((f"same policy: {policy}", (policy, other), (policy, first)))
        if a != b:
            rows.append((f"policy on {first}", (b, first), (a, first)))
            rows.append((f"policy on {other}", (b, other), (a, other)))
        for label, (p, e), (rp, re) in rows:
            arm, ref = result.arm(p, e), result.arm(rp, re)
            diff = paired_difference(arm.per_seed.get(metric, []), ref.per_seed.get(metric, []), result.confidence)
            out.append(
                Gap(
                    label=label,
                    policy=p,
                    errors=e,
                    reference_policy=rp,
                    reference_errors=re,
                    metric=metric,
                    n=diff.n,
                    mean_difference=rounded(diff.mean),
                    ci=[rounded(diff.low), rounded(diff.high)],
                )
            )
    return out
