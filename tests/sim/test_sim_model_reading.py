"""How the model reads an error: the shapes its settings must give, in direction and monotonicity across seeds.

Never a published figure: each test checks a direction (silent faults recovered less
often than reported ones; the chance of recovering falls with each failed attempt already
in context; a setting moves its figure the way it says) on a world where nothing else
could produce it, on several seeds.
"""

from __future__ import annotations

import pytest

from fleetchaos.policies.builtins import BlindRetry
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.model_spec import ModelSpec
from fleetchaos.sim.reading import ModelReading

SEEDS = (1, 2, 3)
TASKS = 1500
#: The model's reading turned on, inside its plausible ranges (docs/formats.md; the defaults turn it off).
READING = {
    "give_up_probability": 0.02,
    "retry_permanent_probability": 0.05,
    "notice_silent_probability": 0.1,
    "attempt_factor": 1.5,
}
PATIENT = BlindRetry(max_retries=60)  # retries every failure: no cap of its own within the attempts counted below


def _world(sim, kind: str, probability: float, **model):
    """One single-step template, 1500 tasks 20 s apart; ``kind`` hits each call with ``probability``."""
    return sim.scenario(
        {"job": [sim.step("work", 1, tokens=10)]},
        [(20.0 * i, "job") for i in range(TASKS)],
        [{"kind": kind, "probability": probability, "tools": ["work"]}],
        duration_s=20.0 * TASKS + 10,
        misread_probability=0.05,
        model={**READING, **model},
    )


def _recovered(rec) -> bool:
    return rec.claim == "success" and rec.truth == "full"


def test_the_chance_grows_by_the_attempt_factor_and_stops_at_one():
    class Fleet:
        misread_probability = 0.1
        misread_factor = None

        class model:
            give_up_probability = 0.02
            retry_permanent_probability = 0.05
            notice_silent_probability = 0.1
            attempt_factor = 2.0

    reading = ModelReading.build(Fleet, get_format("raw"), run_key=1)  # raw: factor 3
    assert reading.misread_p == pytest.approx(0.3) and reading.give_up_p == pytest.approx(0.06)
    assert [reading.chance(0.06, n) for n in (1, 2, 3)] == pytest.approx([0.06, 0.12, 0.24])
    assert reading.chance(0.3, 4) == 1.0  # 0.3 x 8, at most 1
    assert reading.chance(0.0, 9) == 0.0
    assert reading.notice_silent_p == 0.1  # the same in every format


def test_recovery_falls_with_each_failed_attempt_already_in_context(sim):
    """Blips strike each call independently, so only the reading can make a task that already failed n times
    recover less often than one that failed fewer: P(recovered | at least n failures) falls with n."""
    pooled = {n: [0, 0] for n in (1, 2, 3, 4)}
    for seed in SEEDS:
        r = sim.run(_world(sim, "network_blip", 0.5), PATIENT, "generic", seed=seed)
        by_n = {}
        for n in (1, 2, 3, 4):
            reached = [rec for rec in r.records if rec.fault_hits.get("network_blip", 0) >= n]
            by_n[n] = sum(map(_recovered, reached)) / len(reached)
            pooled[n][0] += sum(map(_recovered, reached))
            pooled[n][1] += len(reached)
        assert by_n[1] > by_n[3], (seed, by_n)  # the direction on every seed
    rates = [pooled[n][0] / pooled[n][1] for n in (1, 2, 3, 4)]
    assert rates == sorted(rates, reverse=True) and rates[0] > rates[3] + 0.05, rates


def test_with_a_flat_attempt_factor_the_fall_is_gone(sim):
    """The same world with attempt_factor 1: a task that failed four times recovers about as often as one that
    failed once (the fall above is the reading's, not the world's)."""
    pooled = {n: [0, 0] for n in (1, 4)}
    for seed in SEEDS:
        r = sim.run(_world(sim, "network_blip", 0.5, attempt_factor=1.0), PATIENT, "generic", seed=seed)
        for n in (1, 4):
            reached = [rec for rec in r.records if rec.fault_hits.get("network_blip", 0) >= n]
            pooled[n][0] += sum(map(_recovered, reached))
            pooled[n][1] += len(reached)
    one, four = (pooled[n][0] / pooled[n][1] for n in (1, 4))
    assert abs(one - four) < 0.05, (one, four)


@pytest.mark.parametrize("errors", ["generic", "structured"])
def test_silent_faults_are_recovered_less_often_than_reported_ones(sim, errors):
    """The same share of calls fails: reported (a blip) or silently (an empty success)."""
    for seed in SEEDS:
        rates = {}
        for kind in ("network_blip", "silent_suppression"):
            records = sim.run(_world(sim, kind, 0.3), "blind-retry", errors, seed=seed).records
            faulted = [rec for rec in records if rec.fault_hits]
            rates[kind] = sum(map(_recovered, faulted)) / len(faulted)
        assert rates["silent_suppression"] < rates["network_blip"], (seed, errors, rates)


def test_noticing_silent_failures_more_often_recovers_more_of_them(sim):
    for seed in SEEDS:
        rates = []
        for p in (0.0, 0.1, 0.5):
            records = sim.run(
                _world(sim, "silent_suppression", 0.3, notice_silent_probability=p), "blind-retry", "generic", seed=seed
            ).records
            faulted = [rec for rec in records if rec.fault_hits]
            rates.append(sum(map(_recovered, faulted)) / len(faulted))
        assert rates[0] == 0.0 < rates[1] < rates[2], (seed, rates)


def test_giving_up_early_lowers_recovery_and_is_counted(sim):
    for seed in SEEDS:
        rates, gave_up = [], []
        for p in (0.0, 0.05, 0.2):
            records = sim.run(
                _world(sim, "network_blip", 0.3, give_up_probability=p), "blind-retry", "generic", seed=seed
            ).records
            faulted = [rec for rec in records if rec.fault_hits]
            rates.append(sum(map(_recovered, faulted)) / len(faulted))
            gave_up.append(sum(rec.model_gave_up for rec in records))
        assert rates[0] > rates[1] > rates[2], (seed, rates)
        assert gave_up[0] == 0 < gave_up[1] < gave_up[2], (seed, gave_up)


def test_the_model_retries_a_permanent_failure_its_policy_stopped_on_and_the_retry_is_wasted(sim):
    """structured gives up on a validation error (not recoverable); with retry_permanent_probability 1 the model
    retries it anyway, and the judge counts the retry wasted: the input is still invalid."""
    scn = _world(sim, "validation_error", 1.0, retry_permanent_probability=1.0, give_up_probability=0.0)
    records = sim.run(scn, "structured", "generic", seed=1).records
    retried = sum(rec.model_retried_permanent for rec in records)
    assert retried > 0
    assert sum(rec.wasted_retries for rec in records) >= retried
    assert not any(map(_recovered, records))


def test_the_default_reading_is_the_misread_only_model(sim):
    """Off by default: with the settings at their defaults no task is given up, retried past a stop or noticed,
    and the run is the one the explicit off-settings give (byte for byte in every record)."""
    defaults = ModelSpec()
    assert (defaults.give_up_probability, defaults.retry_permanent_probability) == (0.0, 0.0)
    assert (defaults.notice_silent_probability, defaults.attempt_factor) == (0.0, 1.0)
    scn = sim.scenario(
        {"job": [sim.step("work", 1, tokens=10)]},
        [(20.0 * i, "job") for i in range(300)],
        [{"kind": "network_blip", "probability": 0.5}, {"kind": "silent_suppression", "probability": 0.2}],
        misread_probability=0.2,
        model={"give_up_probability": 0.0},
    )
    records = sim.run(scn, "blind-retry", "generic", seed=1).records
    assert sum(r.misreads for r in records) > 0
    assert not any(r.model_gave_up or r.model_retried_permanent or r.silent_noticed for r in records)
