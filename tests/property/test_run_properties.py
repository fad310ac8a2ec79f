"""Properties of whole runs over small generated worlds (fleetchaos.testing.strategies).

Each property runs a modest number of examples on small fleets and short horizons;
``deadline=None`` because a run's wall time depends on the machine, not on correctness.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetchaos.policies import POLICIES, StructuredDecisionTree
from fleetchaos.runs.runner import run_one
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats.registry import builtin_formats
from fleetchaos.sim.world import World
from fleetchaos.testing.strategies import REPORTED_KINDS, scenarios
from fleetchaos.testing.suite import PROPORTIONS, ScenarioResult

CLAIMS = {"success", "partial", "failed", "escalated", "dead_lettered", "in_flight"}
RATE_METRICS = ("recovery_rate", "silent_failure_rate", "success_rate")

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(0, 2**32)
# Every built-in policy and error format: these properties must hold for all of them.
policies = st.sampled_from(sorted(POLICIES))
formats = st.sampled_from(sorted(builtin_formats()))


@SETTINGS
@given(scenario=scenarios(), policy=policies, errors=formats, seed=seeds)
def test_every_arrival_has_a_record_with_a_final_claim(scenario, policy, errors, seed):
    """A run never loses a task: every arrival in the horizon has one record, ended with a claim or in flight."""
    result = run_one(scenario, policy, errors, seed, keep_tasks=True)
    expected = sorted(
        ((a.at_s, a.template) for a in scenario.workload.arrivals if a.at_s < scenario.duration_s),
        key=lambda pair: pair[0],
    )
    rows = sorted(result.tasks, key=lambda row: row["id"])
    assert [row["id"] for row in rows] == list(range(len(expected)))
    assert result.metrics["tasks"] == len(expected)
    for row, (at_s, template) in zip(rows, expected):
        assert row["template"] == template
        assert abs(row["arrival_s"] - at_s) <= 1e-6
        assert row["claim"] in CLAIMS
        assert (row["end_s"] is None) == (row["claim"] == "in_flight")
    assert sum(result.breakdowns["claims"].values()) == len(expected)


@SETTINGS
@given(scenario=scenarios(), policy=policies, errors=formats, seed=seeds)
def test_the_same_seed_gives_the_same_result(scenario, policy, errors, seed):
    """Two runs of one scenario, arm and seed serialise to the same bytes."""
    first = run_one(scenario, policy, errors, seed, keep_tasks=True)
    second = run_one(scenario, policy, errors, seed, keep_tasks=True)
    assert first.model_dump_json() == second.model_dump_json()


class GuardedStructured(StructuredDecisionTree):
    """The structured decision tree behind a final-answer guardrail that checks the envelope's failure flag."""

    guardrail = True


def _claimed_but_not_done(scenario, policy, seed) -> list[tuple[int, str]]:
    """(task id, truth) of every task claimed successful whose work did not all take effect."""
    output = World(scenario, policy, get_format("structured"), seed).run()
    return [(r.id, r.truth) for r in output.records if r.claim == "success" and r.truth != "full"]


# Kinds that hide or misreport a failure (a tool's false success, a wrong envelope) defeat any guardrail by
# design: these two properties hold for the kinds whose failures are reported as they are.
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(max_tasks=12, kinds=REPORTED_KINDS), seed=seeds)
def test_structured_errors_with_the_guardrail_never_claim_success_for_failed_work(scenario, seed):
    """Structured format, structured policy and a final-answer guardrail: no task is claimed done whose truth is not full."""
    assert _claimed_but_not_done(scenario, GuardedStructured(), seed) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(max_tasks=12, kinds=REPORTED_KINDS), seed=seeds)
def test_structured_decisions_never_claim_success_for_failed_work_when_nothing_is_misread(scenario, seed):
    """With no misreading, the structured policy's own decisions (resume points, reroutes, refreshes) never claim undone work.

    Without a guardrail a misread failure is claimed as success by design (see
    test_found_by_hypothesis.py), so this property fixes ``misread_probability`` at 0.
    """
    fleet = scenario.fleet.model_copy(update={"misread_probability": 0.0})
    assert _claimed_but_not_done(scenario.model_copy(update={"fleet": fleet}), StructuredDecisionTree(), seed) == []


@SETTINGS
@given(scenario=scenarios(), policy=policies, errors=formats, seed=seeds)
def test_rates_and_their_intervals_stay_within_0_and_1(scenario, policy, errors, seed):
    """Every rate of a run, and every interval of a rate across seeds or pooled, lies in [0, 1]."""
    runs = tuple(run_one(scenario, policy, errors, s) for s in (seed, seed + 1))
    for run in runs:
        for name in RATE_METRICS:
            value = run.metrics[name]
            assert value is None or 0.0 <= value <= 1.0, (name, value, run.replay)
    combined = ScenarioResult(scenario.name, "generated", policy, errors, (seed, seed + 1), runs)
    single = ScenarioResult(scenario.name, "generated", policy, errors, (seed,), runs[:1])
    for result in (combined, single):
        for name in PROPORTIONS:
            for est in (result.metric(name), result.pooled(name)):
                for x in (est.value, est.low, est.high):
                    assert x is None or 0.0 <= x <= 1.0, (name, est)
                if est.has_interval:
                    assert est.low <= est.value <= est.high, (name, est)
