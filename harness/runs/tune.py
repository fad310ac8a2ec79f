"""Tuning: search policy families and their parameters on training seeds, judge the winner on held-out seeds.

For one scenario and one error format, every family of a search space
(:mod:`fleetchaos.runs.spaces`) is searched: its defaults first, then candidates from a
seeded random search, a grid, or optuna's seeded TPE sampler (``fleetchaos[tune]``).  Each
candidate runs on the training seeds only and is judged by the objective's mean there.
The best candidate overall, and each family's best, then run on the held-out seeds, which
no candidate ever ran on; their figures and intervals come from those seeds alone.

Training seeds default to 1,000,001 onwards and held-out seeds to the seeds ``compare``
uses (the scenario's own, else 1..10), so a comparison of tuned policies is judged on seeds
the search never saw.  Everything is a pure function of the spec: the same spec gives the
same result, whatever the executor.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.names import check_formats, check_metric, check_policies
from fleetchaos.results.models import RunResult
from fleetchaos.results.registry import direction
from fleetchaos.results.studies import TrialRecord, TuneResult
from fleetchaos.runs.spaces import DEFAULT_SPACE, Dimension, SearchSpace
from fleetchaos.scenario.load import Scenario

__all__ = [
    "DEFAULT_OBJECTIVE",
    "DEFAULT_TRAIN_SEEDS",
    "SEARCHES",
    "TuneSpec",
    "best_trial",
    "check_tune",
    "family_candidates",
    "search",
    "search_many",
    "training_runs_planned",
    "tune",
]

DEFAULT_OBJECTIVE = "success_rate"
#: Training seeds: far from the 1..N that comparisons use, so held-out seeds stay unseen.
DEFAULT_TRAIN_SEEDS = tuple(range(1_000_001, 1_000_006))
SEARCHES = ("random", "grid", "tpe")
#: TPE asks this many candidates at a time (fixed, so results do not depend on the executor).
TPE_BATCH = 4
#: The most runs one search may plan (trials x training seeds), a bound on a typo.
MAX_RUNS = 100_000


@dataclass(frozen=True)
class TuneSpec:
    """What to tune: the world, the error format, the space and search, the seeds and the objective."""

    scenario: Scenario
    errors: str
    scenario_ref: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    """``--param`` scenario values already applied to ``scenario`` (labels for replays)."""
    space: SearchSpace = DEFAULT_SPACE
    families: tuple[str, ...] = ()
    """Families to search (policy names of the space); empty: every family of the space."""
    search: str = "random"
    trials: int = 8
    """Candidates per family, its defaults included (random and tpe; a grid has its own size)."""
    grid_points: int = 3
    train_seeds: tuple[int, ...] = DEFAULT_TRAIN_SEEDS
    holdout_seeds: tuple[int, ...] = tuple(range(1, 11))
    objective: str = DEFAULT_OBJECTIVE
    sampler_seed: int = 0
    confidence: float = 0.95
    race: bool = True
    """Stop spending training seeds on candidates already behind (:mod:`fleetchaos.runs.racing`)."""
    space_name: str = field(default="default", compare=False)


def check_tune(spec: TuneSpec) -> tuple[str, ...]:
    """Every mistake in a tuning spec, before anything runs; returns the families to search."""
    check_formats((spec.errors,), "--errors")
    check_metric(spec.objective, "--objective")
    if direction(spec.objective) is None:
        raise UserError(
            f"--objective {spec.objective}: neither higher nor lower is better for it; "
            "choose a metric with a direction, e.g. success_rate"
        )
    if spec.search not in SEARCHES:
        raise UserError(f"--search {spec.search}: use one of {', '.join(SEARCHES)}")
    if spec.search == "tpe":
        try:
            import optuna  # noqa: F401
        except ImportError:
            raise UserError(
                "--search tpe needs optuna: pip install 'fleetchaos[tune]', or use --search random"
            ) from None
    if not spec.train_seeds or not spec.holdout_seeds:
        raise UserError("tune needs at least one training seed and one held-out seed")
    shared = sorted(set(spec.train_seeds) & set(spec.holdout_seeds))
    if shared:
        raise UserError(
            f"training and held-out seeds overlap ({', '.join(map(str, shared[:5]))}); "
            "held-out figures must come from seeds no trial ran on: move --first-train-seed or --first-seed"
        )
    families = spec.families or tuple(spec.space.families)
    unknown = [f for f in families if f not in spec.space.families]
    if unknown:
        raise UserError(
            f"--families: {', '.join(unknown)} not in the search space {spec.space_name} "
            f"(families: {', '.join(spec.space.families)}); add it to a --space file or drop it"
        )
    check_policies(families, "--families")
    for family in families:
        dims = spec.space.family(family)
        for name, dim in dims.items():
            for value in dim.grid(2):  # both ends of the range must be settings the policy accepts
                _spec_of(family, {name: value}, f"--space {spec.space_name}: family {family}, parameter {name}")
    planned = len(families) * _trials_per_family(spec) * len(spec.train_seeds)
    if planned > MAX_RUNS:
        raise UserError(f"this search plans {planned} runs (more than {MAX_RUNS}); lower --trials or --grid-points")
    return tuple(families)


def training_runs_planned(spec: TuneSpec, candidates: int) -> int:
    """The most training runs a search of ``candidates`` makes (for a progress bar)."""
    if not spec.race or spec.search == "tpe":
        return candidates * len(spec.train_seeds)
    from fleetchaos.runs.racing import halving_runs

    return halving_runs(candidates, len(spec.train_seeds))


def _trials_per_family(spec: TuneSpec) -> int:
    if spec.search != "grid":
        return spec.trials
    return max(_grid_size(d, spec.grid_points) for d in spec.space.families.values())


def _grid_size(dims: dict[str, Dimension], points: int) -> int:
    size = 1
    for dim in dims.values():
        size *= len(dim.grid(points))
    return size + 1


def _spec_of(family: str, params: dict[str, Any], where: str = "--space") -> str:
    from fleetchaos.policies.registry import PolicyLookupError, with_params

    try:
        return with_params(family, list(params.items()))
    except PolicyLookupError as exc:
        raise UserError(f"{where}: {exc}") from None


def _rng(spec: TuneSpec, family: str) -> random.Random:
    """The family's own random stream: the same candidates whichever families are searched with it."""
    return random.Random(f"tune:{spec.sampler_seed}:{family}")


def family_candidates(spec: TuneSpec, family: str) -> list[dict[str, Any]]:
    """The parameter sets a random or grid search tries for ``family``: its defaults ({}) first."""
    from itertools import product

    dims = spec.space.family(family)
    if spec.search == "grid":
        names = list(dims)
        return [{}] + [dict(zip(names, combo)) for combo in product(*(dims[n].grid(spec.grid_points) for n in names))]
    rng = _rng(spec, family)
    return [{}] + [{n: d.sample(rng) for n, d in dims.items()} for _ in range(spec.trials - 1)]


Evaluate = Callable[[list[str], Sequence[int], str], list[list[RunResult]]]


def tune(
    spec: TuneSpec, *, executor: Executor, on_result: Callable[[str, RunResult], None] | None = None
) -> TuneResult:
    """Search every family on the training seeds, then run the winners on the held-out seeds.

    ``on_result(phase, run)`` receives each run as it finishes, ``phase`` being ``train``
    or ``holdout``; every training run finishes before the first held-out run starts.
    """
    from fleetchaos.runs.runner import aggregate, versions

    families = check_tune(spec)
    evaluate = _evaluator(spec, executor, on_result)
    trials = search(spec, executor=executor, on_result=on_result, families=families)
    best = best_trial(spec, trials)
    family_best = {f: best_trial(spec, [t for t in trials if t.family == f]) for f in families}
    finalists = [best.policy] + [t.policy for f, t in family_best.items() if f != best.family]
    held = evaluate(finalists, spec.holdout_seeds, "holdout")
    return TuneResult(
        scenario=spec.scenario.name,
        errors=spec.errors,
        objective=spec.objective,
        higher_is_better=bool(direction(spec.objective)),
        search=spec.search,
        sampler_seed=spec.sampler_seed,
        space_version=spec.space.version,
        space={f: {n: d.describe() for n, d in spec.space.family(f).items()} for f in families},
        train_seeds=list(spec.train_seeds),
        holdout_seeds=list(spec.holdout_seeds),
        confidence=spec.confidence,
        trials=trials,
        best=best.policy,
        best_family=best.family,
        holdout=[aggregate(p, spec.errors, runs, spec.confidence) for p, runs in zip(finalists, held)],
        race=spec.race,
        training_runs=sum(len(t.per_seed) for t in trials),
        exhaustive_runs=len(trials) * len(spec.train_seeds),
        params=dict(spec.params),
        versions=versions(),
    )


def search(
    spec: TuneSpec,
    *,
    executor: Executor,
    on_result: Callable[[str, RunResult], None] | None = None,
    families: tuple[str, ...] | None = None,
) -> list[TrialRecord]:
    """Every candidate of every family judged on the training seeds (no held-out seed runs)."""
    families = families if families is not None else check_tune(spec)
    evaluate = _evaluator(spec, executor, on_result)
    trials: list[TrialRecord] = []
    if spec.race and spec.search != "tpe":  # every family's candidates in one race
        return _race(spec, [(f, c) for f in families for c in family_candidates(spec, f)], evaluate)
    for family in families:
        if spec.search == "tpe":
            trials.extend(_tpe_family(spec, family, evaluate))
        else:
            trials.extend(_judge(spec, family, family_candidates(spec, family), evaluate))
    return trials


def search_many(
    specs: Sequence[TuneSpec],
    *,
    executor: Executor,
    on_result: Callable[[str, RunResult], None] | None = None,
) -> list[list[TrialRecord]]:
    """:func:`search` for several specs (worlds and formats) at once: their races step together, seed by seed.

    Each step is one batch of runs over every race still going, so many small searches (a
    sensitivity study re-tunes at every value of every assumption) keep the executor's
    workers busy to the end.  Each spec's trials are what :func:`search` gives it alone (a
    race is a pure function of its values).  A spec that does not race (``--no-race``, TPE)
    is searched on its own.
    """
    from fleetchaos.runs.racing import Race
    from fleetchaos.runs.runner import RunJob, Variant, run_jobs

    out: list[list[TrialRecord] | None] = [None] * len(specs)
    races: dict[int, tuple[Race, list[tuple[str, dict[str, Any]]], list[str]]] = {}
    for i, spec in enumerate(specs):
        families = check_tune(spec)
        if not spec.race or spec.search == "tpe":
            out[i] = search(spec, executor=executor, on_result=on_result, families=families)
            continue
        candidates = [(f, c) for f in families for c in family_candidates(spec, f)]
        policies = [_spec_of(family, params) for family, params in candidates]
        todo = list(dict.fromkeys(policies))
        races[i] = (
            Race(todo, spec.train_seeds, higher_is_better=bool(direction(spec.objective))),
            candidates,
            policies,
        )
    variants: list[Variant] = []
    index: dict[int, int] = {}
    for i in races:
        spec = specs[i]
        key = next((j for j, v in enumerate(variants) if v.scenario is spec.scenario and v.params == spec.params), None)
        if key is None:
            variants.append(Variant(spec.scenario, spec.scenario_ref, spec.params))
            key = len(variants) - 1
        index[i] = key

    def hand_on(_index: int, result: RunResult) -> None:
        if on_result is not None:
            on_result("train", result)

    while any(not one.done for one, _, _ in races.values()):
        batch = [(i, one.todo()) for i, (one, _, _) in races.items() if not one.done]
        jobs = [RunJob(index[i], p, specs[i].errors, races[i][0].seed) for i, todo in batch for p in todo]
        results = iter(run_jobs(variants, jobs, executor=executor, on_result=hand_on) if jobs else [])
        for i, todo in batch:
            races[i][0].record([next(results).metrics.get(specs[i].objective) for _ in todo])
    for i, (one, candidates, policies) in races.items():
        values = one.outcome().values
        records = []
        for policy in dict.fromkeys(policies):
            family, params = candidates[policies.index(policy)]
            per_seed = values[policy]
            seeds = len(per_seed) if len(per_seed) < len(specs[i].train_seeds) else None
            records.append(TrialRecord(family=family, policy=policy, params=params,
                                       objective=_objective_of(per_seed), per_seed=per_seed, seeds=seeds))  # fmt: skip
        out[i] = records
    return [records or [] for records in out]


def _race(
    spec: TuneSpec,
    candidates: list[tuple[str, dict[str, Any]]],
    evaluate: Evaluate,
    known: dict[str, TrialRecord] | None = None,
    incumbent: TrialRecord | None = None,
) -> list[TrialRecord]:
    """Race the candidates not judged before over the training seeds; one record per distinct candidate, in order.

    ``known`` (spec -> record) is updated as in :func:`_judge`; ``incumbent`` (a record judged
    on every training seed) races along without running again.
    """
    from fleetchaos.runs.racing import race

    known = {} if known is None else known
    specs = [_spec_of(family, params) for family, params in candidates]
    todo = [p for p in dict.fromkeys(specs) if p not in known]

    def run_seed(policies: list[str], seed: int) -> list[float | None]:
        return [runs[0].metrics.get(spec.objective) for runs in evaluate(policies, [seed], "train")]

    pool = {incumbent.policy: list(incumbent.per_seed)} if incumbent is not None else None
    outcome = race(todo, spec.train_seeds, run_seed, higher_is_better=bool(direction(spec.objective)), known=pool)
    for policy in todo:
        family, params = candidates[specs.index(policy)]
        per_seed = outcome.values[policy]
        objective = _objective_of(per_seed)
        seeds = len(per_seed) if len(per_seed) < len(spec.train_seeds) else None
        known[policy] = TrialRecord(
            family=family, policy=policy, params=params, objective=objective, per_seed=per_seed, seeds=seeds
        )
    return [known[p] for p in todo]


def best_trial(spec: TuneSpec, trials: list[TrialRecord]) -> TrialRecord:
    """The trial with the best objective; the earliest of equals (a family's defaults before its candidates)."""
    sign = 1.0 if direction(spec.objective) else -1.0

    def rank(trial: TrialRecord) -> tuple[int, float]:
        # A candidate a race stopped early ranks below every one judged on more seeds.
        seeds = len(trial.per_seed) if trial.seeds is None else trial.seeds
        return seeds, float("-inf") if trial.objective is None else sign * trial.objective

    return max(trials, key=rank)  # max keeps the first of equals


def _evaluator(spec: TuneSpec, executor: Executor, on_result: Callable[[str, RunResult], None] | None) -> Evaluate:
    """Runs policies on seeds for this spec's world and format, results grouped per policy in seed order."""
    from fleetchaos.runs.runner import run_jobs
    from fleetchaos.runs.variant import RunJob, Variant

    variant = Variant(spec.scenario, spec.scenario_ref, spec.params)

    def evaluate(policies: list[str], seeds: Sequence[int], phase: str) -> list[list[RunResult]]:
        jobs = [RunJob(0, p, spec.errors, s) for p in policies for s in seeds]

        def hand_on(_index: int, result: RunResult) -> None:
            if on_result is not None:
                on_result(phase, result)

        results = run_jobs([variant], jobs, executor=executor, on_result=hand_on)
        return [results[i * len(seeds) : (i + 1) * len(seeds)] for i in range(len(policies))]

    return evaluate


def _objective(runs: list[RunResult], metric: str) -> tuple[float | None, list[float | None]]:
    per_seed = [r.metrics.get(metric) for r in runs]
    return _objective_of(per_seed), per_seed


def _objective_of(per_seed: list[float | None]) -> float | None:
    from fleetchaos.results.models import rounded

    values = [v for v in per_seed if v is not None]
    return rounded(sum(values) / len(values)) if values else None


def _judge(
    spec: TuneSpec,
    family: str,
    candidates: list[dict[str, Any]],
    evaluate: Evaluate,
    known: dict[str, TrialRecord] | None = None,
) -> list[TrialRecord]:
    """Run each candidate not run before on the training seeds; one record per distinct candidate, in order.

    ``known`` (spec -> record) holds the family's candidates judged already; it is updated.
    """
    known = {} if known is None else known
    specs = [_spec_of(family, params) for params in candidates]
    todo = [p for p in dict.fromkeys(specs) if p not in known]
    for policy, runs in zip(todo, evaluate(todo, spec.train_seeds, "train") if todo else []):
        params = candidates[specs.index(policy)]
        objective, per_seed = _objective(runs, spec.objective)
        known[policy] = TrialRecord(family=family, policy=policy, params=params, objective=objective, per_seed=per_seed)
    return [known[p] for p in todo]


def _tpe_family(spec: TuneSpec, family: str, evaluate: Evaluate) -> list[TrialRecord]:
    """Optuna's TPE sampler, seeded per family, asked :data:`TPE_BATCH` candidates at a time after the defaults.

    A candidate TPE proposes again is told its known objective without running again.
    """
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dims = spec.space.family(family)
    distributions: dict[str, Any] = {}
    for name, dim in dims.items():
        if dim.int_range is not None:
            distributions[name] = IntDistribution(*dim.int_range)
        elif dim.float_range is not None:
            distributions[name] = FloatDistribution(*dim.float_range)
        elif dim.log_range is not None:
            distributions[name] = FloatDistribution(*dim.log_range, log=True)
        else:
            distributions[name] = CategoricalDistribution(list(range(len(dim.choice or ()))))
    seed = int.from_bytes(hashlib.sha256(f"tune:{spec.sampler_seed}:{family}".encode()).digest()[:4], "big")
    study = optuna.create_study(
        direction="maximize" if direction(spec.objective) else "minimize",
        sampler=optuna.samplers.TPESampler(seed=seed),
    )
    known: dict[str, TrialRecord] = {}
    out = _judge(spec, family, [{}], evaluate, known)
    asked_so_far = 1
    while asked_so_far < spec.trials:
        asked = [study.ask(distributions) for _ in range(min(TPE_BATCH, spec.trials - asked_so_far))]
        asked_so_far += len(asked)
        candidates = [{n: _tpe_value(dims[n], t.params[n]) for n in dims} for t in asked]
        if spec.race:  # the batch races the family's incumbent, which runs no seed again
            incumbent = best_trial(spec, list(known.values()))
            out.extend(_race(spec, [(family, c) for c in candidates], evaluate, known, incumbent))
        else:
            out.extend(_judge(spec, family, candidates, evaluate, known))
        for trial, params in zip(asked, candidates):
            record = known[_spec_of(family, params)]
            if record.seeds is not None:  # stopped early: optuna's pruned state, with its partial means
                for step in range(1, record.seeds + 1):
                    partial = _objective_of(record.per_seed[:step])
                    if partial is not None:
                        trial.report(partial, step)
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            elif record.objective is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, record.objective)
    return out


def _tpe_value(dim: Dimension, raw: Any) -> Any:
    if dim.choice is not None:
        value = dim.choice[int(raw)]
        return tuple(value) if isinstance(value, list) else value
    if dim.int_range is not None:
        return int(raw)
    return float(f"{raw:.3g}")
