"""Racing tuners: candidates behind stop spending seeds; the winner matches the exhaustive search's on the catalogue."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fleetchaos.results.stats import mean_ci
from fleetchaos.runs.cache import RunCache, using_cache
from fleetchaos.runs.executors import SerialExecutor, open_executor
from fleetchaos.runs.racing import _worse, halving_runs, race
from fleetchaos.runs.spaces import SearchSpace
from fleetchaos.runs.tune import TuneSpec, best_trial, search, tune
from fleetchaos.scenario.load import load_scenario

TABLE = {  # hand-made per-seed objective values (higher is better)
    "a": [0.9, 0.9, 0.9],
    "b": [0.8, 0.99, 0.99],
    "c": [0.5, 1.0, 1.0],
    "d": [0.85, 0.8, 0.8],
    "e": [0.2, 0.2, 0.2],
    "f": [0.1, 0.1, 0.1],
}


def test_a_race_keeps_the_best_third_seed_by_seed_by_hand():
    asked: list[tuple[list[str], int]] = []

    def run_seed(candidates: list[str], seed: int) -> list[float | None]:
        asked.append((list(candidates), seed))
        return [TABLE[c][seed] for c in candidates]

    outcome = race(list(TABLE), [0, 1, 2], run_seed, higher_is_better=True)
    # Seed 0: a 0.9 and d 0.85 are the best third of six; two race on to the last seed.
    assert asked == [(["a", "b", "c", "d", "e", "f"], 0), (["a", "d"], 1), (["a", "d"], 2)]
    assert outcome.values == {
        "a": [0.9, 0.9, 0.9],
        "b": [0.8],
        "c": [0.5],
        "d": [0.85, 0.8, 0.8],
        "e": [0.2],
        "f": [0.1],
    }
    assert outcome.runs == 10 == halving_runs(6, 3)
    # Nine candidates: a third after the first seed, then two.
    assert halving_runs(9, 4) == 9 + 3 + 2 + 2 and halving_runs(62, 5) == 62 + 21 + 7 + 3 + 2
    # Lower is better: f (0.1) and e (0.2) lead; after two seeds e is 0.1 worse on both, a paired
    # difference with no spread, which the paired test finds worse than the incumbent f: f runs alone.
    low = race(list(TABLE), [0, 1, 2], run_seed, higher_is_better=False)
    assert low.values["f"] == [0.1, 0.1, 0.1] and low.values["e"] == [0.2, 0.2]
    assert low.runs == 6 + 2 + 1


def test_ties_at_the_cut_go_to_the_earlier_and_a_known_incumbent_runs_nothing():
    def run_seed(candidates: list[str], seed: int) -> list[float | None]:
        return [1.0 if c in ("x", "y") else 0.5 for c in candidates]

    incumbent = {"best": [1.0, 1.0]}
    outcome = race(["x", "y", "z", "w"], [0, 1], run_seed, higher_is_better=True, known=incumbent)
    # Five in the pool, two kept: the incumbent and x tie with y at 1.0, and come first (the
    # exhaustive search's winner is also the earliest of equals).
    assert outcome.values == {"x": [1.0, 1.0], "y": [1.0], "z": [0.5], "w": [0.5]}
    assert outcome.runs == 5


def test_the_paired_test_by_hand():
    # Differences -0.1, -0.1, -0.11: mean -0.1033, sd 0.00577, one-sided 95% bound -0.1033 + 2.92 * 0.00333 < 0.
    assert _worse([0.8, 0.8, 0.8], [0.9, 0.9, 0.91], 1.0)
    # Differences -0.1 and +0.1: nothing can be said.
    assert not _worse([0.8, 1.0], [0.9, 0.9], 1.0)
    # Lower is better: a candidate consistently above the incumbent is worse.
    assert _worse([0.9, 0.9, 0.91], [0.8, 0.8, 0.8], -1.0)


SPACE = SearchSpace.model_validate(
    {"families": {"backoff": {"max_retries": {"int": [1, 6]}, "base_s": {"log": [0.5, 60]}}, "blind-retry": {}}}
)


def test_a_raced_tune_reports_its_saved_runs_and_judges_the_winner_on_every_seed(small):
    spec = TuneSpec(
        scenario=load_scenario(small), errors="generic", space=SPACE, trials=6, train_seeds=(101, 102, 103),
        holdout_seeds=(1, 2), objective="tool_calls",
    )  # fmt: skip
    phases: list[str] = []
    result = tune(spec, executor=SerialExecutor(), on_result=lambda phase, _run: phases.append(phase))
    assert result.race and result.exhaustive_runs == len(result.trials) * 3
    assert phases.count("train") == result.training_runs < result.exhaustive_runs
    winner = next(t for t in result.trials if t.policy == result.best)
    assert winner.seeds is None and len(winner.per_seed) == 3
    assert all(len(t.per_seed) == (t.seeds or 3) for t in result.trials)
    exhaustive = tune(replace(spec, race=False), executor=SerialExecutor())
    assert exhaustive.training_runs == exhaustive.exhaustive_runs == result.exhaustive_runs


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scenario", "errors"), [("default", "generic"), ("default", "structured"), ("rate_limit_storm", "generic")]
)
def test_racing_picks_the_exhaustive_winner_within_its_interval_with_a_third_of_the_runs(scenario, errors, tmp_path):
    """The default search (8 families, 8 candidates each, 5 training seeds), raced and exhaustive.

    The race runs a subset of the exhaustive search's runs, so the exhaustive search fills
    a run cache the race is then served from: the race costs no simulation of its own.
    """
    spec = TuneSpec(scenario=load_scenario(scenario), errors=errors, scenario_ref=scenario, race=False)
    executor = open_executor(2)
    try:
        with using_cache(RunCache(tmp_path)):
            exhaustive = search(spec, executor=executor)
            raced = search(replace(spec, race=True), executor=executor)
    finally:
        executor.shutdown()
    full = {t.policy: t for t in exhaustive}
    winner, racer = best_trial(spec, exhaustive), best_trial(replace(spec, race=True), raced)
    _, low, high = mean_ci(winner.per_seed, spec.confidence)
    assert low is not None and high is not None
    assert racer.policy == winner.policy or low <= full[racer.policy].objective <= high
    assert racer.per_seed == full[racer.policy].per_seed  # judged on every training seed
    made = sum(len(t.per_seed) for t in raced)
    assert 3 * made <= sum(len(t.per_seed) for t in exhaustive)
