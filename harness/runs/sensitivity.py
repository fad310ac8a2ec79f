"""What the answer depends on: best against best as each assumption varies over its plausible range.

The headline of a comparison is best against best (:mod:`fleetchaos.runs.best`): each error
format with its own tuned policy, and the envelope's lead, the best with an envelope minus
the best without one.  This study varies each assumption of the registry
(:mod:`fleetchaos.scenario.assumptions`, and the load) over its documented range, one at a
time with the others at the scenario's values, and at each value:

* tunes each format's best again (:func:`fleetchaos.runs.tune.search_many`: every search of
  the study races at once, on the same training seeds as the scenario's own tuning), because
  the winner can change with the world; a price cannot change a success rate, so prices are
  never re-tuned and are judged on ``cost_usd`` instead; ``retune=False`` keeps the
  scenario's own bests everywhere;
* runs each format's best on the study's seeds and takes the envelope's lead (paired by
  seed), the leading format and its lead over the runner-up.

A setting that cannot reach a format (:func:`reaches`: a misread factor reaches only its
format, ``fleet.partial_batch`` only the formats without an envelope, a ``wrong_envelope``
rate only those with one) leaves that format's runs exactly as they are at the scenario's
own values, so they are taken from there, not made again (a test checks they are equal).

The result names every flip (where the leading format changes between neighbouring values,
and whether the envelope's lead changes sign there) and one tornado bar per setting: the
spread of the envelope's lead over the setting's range.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fleetchaos.errors import UserError
from fleetchaos.results.models import ArmResult, RunResult, rounded
from fleetchaos.results.registry import direction
from fleetchaos.results.studies import SensitivityFlip, SensitivityPoint, SensitivityResult, Setting, TornadoBar
from fleetchaos.runs.best import has_envelope

if TYPE_CHECKING:
    from fleetchaos.runs.tune import TuneSpec
    from fleetchaos.scenario.load import Scenario

__all__ = [
    "COST_METRIC",
    "LOAD",
    "LOAD_MULTIPLIERS",
    "flips_of",
    "plan_settings",
    "point",
    "reaches",
    "sensitivity",
    "tornado_bars",
]

#: The metric a price's setting is judged on (it cannot change a success rate).
COST_METRIC = "cost_usd"
#: The load, varied besides the registry's assumptions (an open-loop scenario's tasks per day).
LOAD = "workload.tasks_per_day"
LOAD_MULTIPLIERS = (0.5, 1.0, 2.0)
#: The figures each point keeps of an arm (the results stay small: a study has hundreds of points).
_KEPT = ("success_rate", "common_recovery_rate", "silent_failure_rate", COST_METRIC)


def reaches(scenario: Scenario, path: str, formats: Sequence[str]) -> list[str]:
    """The formats a setting at ``path`` can change (the others' runs do not depend on it)."""
    from fleetchaos.sim.formats import get_format

    factor = re.fullmatch(r"fleet\.misread_factor\.(\w+)", path)
    if factor:
        return [f for f in formats if getattr(get_format(f), "misread_setting", None) == factor.group(1)]
    if path == "fleet.partial_batch":
        return [f for f in formats if not has_envelope(f)]
    if path == "fleet.model.result_tokens_repeat" and not scenario.fleet.model.result_tokens_sigma:
        return []  # every result costs result_tokens: a call made again returns as many whatever the setting
    fault = re.fullmatch(r"faults\[(\d+)\]\.\w+", path)
    index = int(fault.group(1)) if fault else len(scenario.faults)
    if index < len(scenario.faults) and scenario.faults[index].kind == "wrong_envelope":
        return [f for f in formats if has_envelope(f)]
    return list(formats)


def _ordered(values: Sequence[Any], own: Any) -> list[Any]:
    """The range with the scenario's own value in it: numbers in order, other values with the own first if absent."""
    out = list(values)
    if own not in out:
        out = [own, *out]
    once = list({repr(v): v for v in reversed(out)}.values())[::-1]  # each value once, the first kept (lists too)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in once)
    return sorted(once) if numeric else once


def plan_settings(
    scenario: Scenario,
    formats: Sequence[str],
    *,
    ranges: dict[str, list[Any]] | None = None,
    only: Sequence[str] = (),
) -> list[Setting]:
    """The settings a study varies: every assumption of the registry the scenario has, and the load.

    ``ranges`` (``--param PATH=V1,V2``) replace them with those paths and values; ``only``
    keeps the settings whose path contains one of its words.  Each value is validated by
    :func:`fleetchaos.scenario.params.apply_params`, so a range obeys the scenario's rules.
    """
    from fleetchaos.scenario.assumptions import GROUPS, concrete, settings_document
    from fleetchaos.scenario.params import ParamError, get_path, parse_path

    doc = settings_document(scenario)
    registry = {path: assumption for assumption, path, _ in concrete(scenario)}
    planned: dict[str, list[Any]] = {}
    if ranges:
        planned = dict(ranges)
    else:
        for each, path, _ in concrete(scenario):
            planned[path] = list(each.values)
        per_day = (doc.get("workload") or {}).get("tasks_per_day")
        if scenario.workload.arrivals is None and scenario.workload.clients is None and per_day:
            planned[LOAD] = [float(f"{per_day * m:.6g}") for m in LOAD_MULTIPLIERS]
    if only:
        planned = {p: v for p, v in planned.items() if any(word in p for word in only)}
        if not planned:
            raise UserError(f"--only {','.join(only)}: no assumption's path contains it (see docs/assumptions.md)")
    settings = []
    for path, values in planned.items():
        try:
            own = get_path(doc, parse_path(path))
        except (ParamError, KeyError, IndexError, TypeError):
            raise UserError(f"--param {path}: {scenario.name} has no such setting") from None
        assumption = registry.get(path)
        cost = assumption is not None and assumption.group == GROUPS[4]
        reached = reaches(scenario, path, formats)
        if not reached:
            continue  # a misread factor of a format the study does not compare
        kept, skipped = _within_rules(scenario, path, values, given=bool(ranges))
        settings.append(
            Setting(
                parameter=path,
                described=assumption.decides if assumption is not None else _words(path),
                values=_ordered(kept, own),
                skipped=skipped,
                own=own,
                metric=COST_METRIC if cost else "success_rate",
                retuned=not cost,
                reaches=reached,
            )
        )
    if not settings:
        raise UserError("nothing to vary: no assumption of the registry applies to this scenario; give --param")
    return settings


def _words(path: str) -> str:
    return "the load: tasks per day" if path == LOAD else path


def _within_rules(scenario: Scenario, path: str, values: Sequence[Any], *, given: bool) -> tuple[list[Any], list[str]]:
    """The values the scenario's rules accept, and those refused with the rule that refused them.

    A range the user gave is theirs: a value the rules refuse stops the study (exit 2).  The registry's
    range is written for the default world, so a value this scenario cannot take (a late-reply cut above
    its own call timeout) is left out and said, never a reason to refuse the whole study.
    """
    from fleetchaos.scenario.params import ParamError

    kept, skipped = [], []
    for value in values:
        try:
            kept.append(_validated(scenario, path, value))
        except ParamError as refused:
            if given:
                raise
            skipped.append(f"{value!r} ({'; '.join(refused.rules) or refused})")
    return kept, skipped


def _validated(scenario: Scenario, path: str, value: Any) -> Any:
    from fleetchaos.scenario.params import apply_params

    return apply_params(scenario, [(path, value)], source=scenario.name)[1][0][1]


def _stripped(arm: ArmResult) -> ArmResult:
    """An arm with only the figures a study reads (a study keeps hundreds of them)."""
    return ArmResult(
        policy=arm.policy,
        policy_name=arm.policy_name,
        errors=arm.errors,
        metrics={k: v for k, v in arm.metrics.items() if k in _KEPT},
        ci={k: v for k, v in arm.ci.items() if k in _KEPT},
        per_seed={k: v for k, v in arm.per_seed.items() if k in _KEPT},
        breakdowns={},
    )


def _mean(arm: ArmResult, metric: str, sign: float) -> float:
    value = arm.metrics.get(metric)
    return float("-inf") if value is None else sign * float(value)


def point(
    parameter: str,
    value: Any,
    metric: str,
    arms: Sequence[ArmResult],
    confidence: float,
    retuned: Sequence[str] = (),
) -> SensitivityPoint:
    """Best against best at one value: the envelope's lead on ``metric``, the leading format and its lead.

    The two bests compared are the best with an envelope and the best without one by
    success rate (what each format's tuning chose them for), whatever ``metric`` is.
    """
    from fleetchaos.results.stats import paired_difference

    def paired(a: ArmResult, b: ArmResult) -> tuple[float | None, list[float | None]]:
        diff = paired_difference(a.per_seed.get(metric, []), b.per_seed.get(metric, []), confidence)
        return rounded(diff.mean), [rounded(diff.low), rounded(diff.high)]

    with_env = [a for a in arms if has_envelope(a.errors)]
    without = [a for a in arms if not has_envelope(a.errors)]
    versus: list[str] = []
    difference: float | None = None
    ci: list[float | None] = [None, None]
    if with_env and without:
        top = max(with_env, key=lambda a: _mean(a, "success_rate", 1.0))
        other = max(without, key=lambda a: _mean(a, "success_rate", 1.0))
        versus = [top.errors, other.errors]
        difference, ci = paired(top, other)
    sign = 1.0 if direction(metric) is not False else -1.0
    ranked = sorted(arms, key=lambda a: -_mean(a, metric, sign))
    leader = "tie"
    lead_ci: list[float | None] = [None, None]
    if ranked and ranked[0].metrics.get(metric) is not None:
        if len(ranked) == 1 or ranked[0].metrics.get(metric) != ranked[1].metrics.get(metric):
            leader = ranked[0].errors
        if len(ranked) > 1:
            lead_ci = paired(ranked[0], ranked[1])[1]
    return SensitivityPoint(
        parameter=parameter,
        value=value,
        metric=metric,
        arms=list(arms),
        retuned=list(retuned),
        versus=versus,
        difference=difference,
        ci=ci,
        leader=leader,
        lead_ci=lead_ci,
    )


def flips_of(points: Sequence[SensitivityPoint]) -> list[SensitivityFlip]:
    """Where the leading format changes between neighbouring values of each setting (ties skipped over)."""
    flips = []
    last: dict[str, SensitivityPoint] = {}
    for p in points:
        if p.leader == "tie":
            continue
        before = last.get(p.parameter)
        if before is not None and before.leader != p.leader:
            flips.append(
                SensitivityFlip(
                    parameter=p.parameter,
                    metric=p.metric,
                    ahead=f"best on {before.leader}",
                    behind=f"best on {p.leader}",
                    holds_at=before.value,
                    flips_at=p.value,
                    reverses=has_envelope(before.leader) != has_envelope(p.leader),
                )
            )
        last[p.parameter] = p
    return flips


def tornado_bars(settings: Sequence[Setting], points: Sequence[SensitivityPoint]) -> list[TornadoBar]:
    """One bar per setting: the envelope's lead over its range; success-rate settings first, widest first."""
    bars = []
    for setting in settings:
        mine = {repr(p.value): p.difference for p in points if p.parameter == setting.parameter}
        at = [mine.get(repr(v)) for v in setting.values]
        known = [d for d in at if d is not None]
        least, most = (min(known), max(known)) if known else (None, None)
        bars.append(
            TornadoBar(
                parameter=setting.parameter,
                metric=setting.metric,
                low_value=setting.values[0],
                high_value=setting.values[-1],
                at_low=at[0],
                at_high=at[-1],
                least=least,
                most=most,
                own_value=setting.own,
                at_own=mine.get(repr(setting.own)),
                width=rounded(most - least) if least is not None and most is not None else 0.0,
            )
        )
    return sorted(bars, key=lambda b: (b.metric != "success_rate", b.metric, -b.width))


def sensitivity(
    scenario: Scenario,
    formats: Sequence[str],
    seeds: list[int],
    settings: Sequence[Setting],
    *,
    tuning: TuneSpec,
    best: dict[str, str] | None = None,
    best_source: str = "",
    retune: bool = True,
    executor: Executor,
    confidence: float = 0.95,
    scenario_ref: str | None = None,
    on_result: Callable[[RunResult], None] | None = None,
) -> SensitivityResult:
    """Best against best at the scenario's values and at every value of every setting (see the module's text).

    ``tuning`` is the search every format's best comes from (its ``errors`` and held-out seeds
    are set per search; its training seeds must not be ``seeds``); ``best`` the scenario's own
    bests if already known (shipped, ``best_source`` says how), else they are tuned too.
    """
    from fleetchaos.runs.runner import RunJob, Variant, aggregate, run_jobs, versions
    from fleetchaos.runs.sweep import scenario_source
    from fleetchaos.runs.tune import best_trial, search_many
    from fleetchaos.scenario.params import apply_params

    formats = list(formats)
    if not any(has_envelope(f) for f in formats) or all(has_envelope(f) for f in formats):
        raise UserError(
            "--errors: the study compares the best with an envelope against the best without one; give formats "
            "of both kinds, e.g. generic,status,raw,structured"
        )
    shared = sorted(set(tuning.train_seeds) & set(seeds))
    if shared:
        raise UserError(f"--seeds: the study's seeds include training seeds ({', '.join(map(str, shared[:5]))})")

    def hand_on(_phase: str, run: RunResult) -> None:
        if on_result is not None:
            on_result(run)

    source = scenario_source(scenario_ref or scenario.name)
    varied: dict[tuple[str, str], tuple[Scenario, tuple[tuple[str, Any], ...]]] = {}
    for setting in settings:
        for value in setting.values:
            if value != setting.own:
                world, canonical = apply_params(scenario, [(setting.parameter, value)], source=source)
                varied[(setting.parameter, repr(value))] = (world, canonical)
    # The searches: the scenario's own bests (unless known), then each re-tuned setting's formats at each value.
    searches: list[tuple[tuple[str, str] | None, str, TuneSpec]] = []
    if best is None:
        searches += [(None, f, replace(tuning, errors=f, holdout_seeds=tuple(seeds))) for f in formats]
    if retune:
        for setting in (s for s in settings if s.retuned):
            for value in setting.values:
                key = (setting.parameter, repr(value))
                if key not in varied:
                    continue
                world, canonical = varied[key]
                for f in setting.reaches:
                    spec = replace(tuning, scenario=world, errors=f, params=canonical, holdout_seeds=tuple(seeds),
                                   scenario_ref=scenario_ref)  # fmt: skip
                    searches.append((key, f, spec))
    trials = search_many([s for _, _, s in searches], executor=executor, on_result=hand_on)
    winners = {(key, f): best_trial(spec, t).policy for (key, f, spec), t in zip(searches, trials)}
    own_best = dict(best) if best is not None else {f: winners[(None, f)] for f in formats}
    training = sum(len(t.per_seed) for ts in trials for t in ts)
    # The evaluations: every format's best at the scenario's values, then each reached format at each value.
    variants = [Variant(scenario, scenario_ref)]
    jobs: list[RunJob] = [RunJob(0, own_best[f], f, s) for f in formats for s in seeds]
    arms_of: dict[tuple[str, str], list[tuple[str, str, int]]] = {}
    for setting in settings:
        for value in setting.values:
            key = (setting.parameter, repr(value))
            if key not in varied:
                continue
            world, canonical = varied[key]
            variants.append(Variant(world, scenario_ref, canonical))
            made = []
            for f in setting.reaches:
                policy = winners.get((key, f), own_best[f]) if setting.retuned and retune else own_best[f]
                made.append((policy, f, len(jobs)))
                jobs += [RunJob(len(variants) - 1, policy, f, s) for s in seeds]
            arms_of[key] = made
    results = run_jobs(variants, jobs, executor=executor, on_result=lambda _i, r: on_result(r) if on_result else None)
    n = len(seeds)
    own_arms = {f: _stripped(aggregate(own_best[f], f, results[i * n : (i + 1) * n], confidence))
                for i, f in enumerate(formats)}  # fmt: skip
    baseline = point("", None, "success_rate", [own_arms[f] for f in formats], confidence)
    points = []
    reused = 0
    for setting in settings:
        for value in setting.values:
            key = (setting.parameter, repr(value))
            if key not in varied:
                points.append(point(setting.parameter, value, setting.metric, baseline.arms, confidence))
                continue
            arms = dict(own_arms)
            retuned = []
            for policy, f, start in arms_of[key]:
                arms[f] = _stripped(aggregate(policy, f, results[start : start + n], confidence))
                if (key, f) in winners:
                    retuned.append(f)
            reused += (len(formats) - len(arms_of[key])) * n
            points.append(point(setting.parameter, value, setting.metric, [arms[f] for f in formats], confidence,
                                retuned))  # fmt: skip
    first = tuning.train_seeds
    return SensitivityResult(
        scenario=scenario.name,
        errors=list(formats),
        seeds=list(seeds),
        confidence=confidence,
        retune=retune,
        tuning={
            "train_seeds": list(first),
            "search": tuning.search,
            "trials": tuning.trials,
            "race": tuning.race,
            "space_version": tuning.space.version,
            "own_bests": best_source or "tuned by this study",
            "best": own_best,
        },
        baseline=baseline,
        settings=list(settings),
        points=points,
        flips=flips_of(points),
        bars=tornado_bars(settings, points),
        runs={"training": training, "evaluation": len(jobs), "reused": reused},
        versions=versions(),
    )
