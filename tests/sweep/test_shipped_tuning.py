"""The tuned policies the catalogue ships are what their recorded command chooses, run again from scratch.

scenarios/default.yaml's ``tuned:`` block names each format's best policy and the
``fleetchaos tune`` command that chose it.  This test runs that command's search again (the
same options, parsed from the recorded command; racing, on the recorded training seeds) and
checks each shipped policy is the winner, or, if the code has drifted since, that its mean
over every training seed lies inside the winner's interval there.  Slow: four searches of the
default world (about 420 runs).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.tune_job import tune_spec
from fleetchaos.cli.tuning import recorded_options
from fleetchaos.results.stats import mean_ci
from fleetchaos.runs.executors import open_executor
from fleetchaos.runs.runner import run_one
from fleetchaos.runs.tune import best_trial, search_many
from fleetchaos.scenario.load import load_scenario
from fleetchaos.scenario.tuned import world_fingerprint

SHIPPING = [name for name in catalogue.names() if load_scenario(name).tuned is not None]


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPING)
def test_the_shipped_policies_are_the_recorded_commands_winners(name):
    spec = load_scenario(name)
    tuned = spec.tuned
    assert tuned is not None and tuned.world == world_fingerprint(spec)
    opts = recorded_options(tuned.command)
    assert opts is not None, tuned.command
    base = tune_spec(spec, name, "generic", (), list(range(1, 11)), opts)
    assert list(base.train_seeds) == tuned.train_seeds
    specs = [replace(base, errors=errors) for errors in tuned.policies]
    executor = open_executor(None, None)
    try:
        trials = search_many(specs, executor=executor)
    finally:
        executor.shutdown()
    problems = []
    for one, found in zip(specs, trials):
        winner = best_trial(one, found)
        shipped = tuned.policies[one.errors]
        if winner.policy == shipped:
            continue
        values = [run_one(spec, shipped, one.errors, seed).metrics[one.objective] for seed in one.train_seeds]
        mean = sum(values) / len(values)
        low, high = mean_ci([v for v in winner.per_seed if v is not None])[1:]
        if not (low <= mean <= high):
            problems.append(f"{one.errors}: shipped {shipped} ({mean:.4f}) outside {winner.policy}'s [{low}, {high}]")
    assert not problems, "\n".join(problems) + f"\nrun `{tuned.command}` and paste its tuned: block"
