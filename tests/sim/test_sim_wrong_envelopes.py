"""Imperfect contracts in the world: wrong envelopes change decisions, never what happens, and are judged against the truth."""

from __future__ import annotations

import pytest

from fleetchaos.runs.executors import SerialExecutor
from fleetchaos.runs.runner import compare, run_one
from fleetchaos.runs.sweep import SweepSpec, plan_sweep, run_sweep
from fleetchaos.scenario.load import Scenario, load_scenario


def test_a_permanent_failure_marked_recoverable_is_retried_until_the_same_code_cap(sim):
    """A rejected record shown as transient: retried twice (both wasted), escalated at the cap, every envelope counted."""
    faults = [{"kind": "validation_error", "tools": ["update"], "probability": 1.0}]
    template = {"job": [sim.step("update", 5)]}
    truthful = sim.run(sim.scenario(template, faults=faults), "structured", "structured")
    assert (truthful.rec.claim, truthful.rec.retries, truthful.rec.misreported) == ("escalated", 0, 0)
    wrong = [*faults, {"kind": "wrong_envelope", "mark_recoverable": 1.0}]
    r = sim.run(sim.scenario(template, faults=wrong), "structured", "structured")
    assert (r.rec.claim, r.rec.retries) == ("escalated", 2)
    assert r.rec.wasted_reasons == {"input still invalid": 2}  # judged by the truth: the input stayed invalid
    assert r.rec.misreported == 3 and r.rec.misreported_ways == {"marked_recoverable": 3}
    assert r.metrics["misreported_failures"] == 3.0


def test_a_stale_retry_after_hint_makes_retries_come_too_early(sim):
    """Hints at a tenth of the true wait: the structured tree retries before the true retry-after instant and saves less.

    Judged by the truth, truthful hints waste retries too (30 obedient waiters wake together
    to an empty bucket), so the difference shows in when the failed retries were sent.
    """
    template = {"job": [sim.step("call", 1)]}
    arrivals = [(0.0, "job")] * 30
    truthful = sim.run(sim.scenario(template, arrivals, api_rate_per_s=0.2, api_burst=5), "structured", "structured")
    stale = [{"kind": "wrong_envelope", "wrong_retry_after": 1.0, "retry_after_factor": [0.1, 0.1]}]
    r = sim.run(sim.scenario(template, arrivals, stale, api_rate_per_s=0.2, api_burst=5), "structured", "structured")
    early = "same fault, before its retry-after instant"
    assert truthful.breakdowns["failed_retries_by_reason"].get(early, 0) == 0
    assert r.breakdowns["failed_retries_by_reason"][early] > 10
    assert r.metrics["recovery_rate"] < truthful.metrics["recovery_rate"]


def test_an_omitted_partial_success_makes_completed_work_redone(sim):
    """Without partial_success the structured tree restarts fan-out tasks from step 0: steps redone, calls up."""
    template = {"research": [sim.step("plan", 5), sim.step("search", 10, fan_out=5)]}
    arrivals = [(float(i), "research") for i in range(20)]
    faults = [{"kind": "partial_batch", "tools": ["search"], "probability": 0.5, "failures": 2}]
    truthful = sim.run(sim.scenario(template, arrivals, faults), "structured", "structured")
    omitted = [*faults, {"kind": "wrong_envelope", "omit_partial_success": 1.0}]
    r = sim.run(sim.scenario(template, arrivals, omitted), "structured", "structured")
    assert truthful.metrics["redone_steps"] == 0.0 and r.metrics["redone_steps"] > 5
    assert r.metrics["tool_calls"] > truthful.metrics["tool_calls"]
    assert sum(rec.misreported_ways.get("omitted_partial_success", 0) for rec in r.records) > 5


def test_every_structured_format_meets_the_same_wrong_envelopes(sim):
    """A policy that acts alike on every format sees the same dispatches misreported, task by task, in each contract."""
    template = {"job": [sim.step("plan", 5), sim.step("call", 3)]}
    arrivals = [(float(i), "job") for i in range(60)]
    faults = [
        {"kind": "network_blip", "probability": 0.5},
        {"kind": "wrong_envelope", "misclassify": 0.5, "reported_as": ["disk_full"]},
    ]
    scenario = sim.scenario(template, arrivals, faults)
    per_task = {
        errors: [rec.misreported for rec in sim.run(scenario, "blind-retry", errors).records]
        for errors in ("structured", "tool-envelope", "failure-type")
    }
    assert per_task["structured"] == per_task["tool-envelope"] == per_task["failure-type"]
    assert (
        0
        < sum(per_task["structured"])
        < sum(rec.retries + 1 for rec in sim.run(scenario, "blind-retry", "generic").records)
    )
    assert sum(rec.misreported for rec in sim.run(scenario, "blind-retry", "generic").records) == 0  # no envelope


def _without_wrong_envelopes(scenario: Scenario) -> Scenario:
    doc = scenario.model_dump(mode="json")
    doc["faults"] = [f for f in doc["faults"] if f["kind"] != "wrong_envelope"]
    return Scenario.model_validate(doc)


def test_wrong_envelopes_change_nothing_for_a_policy_that_never_reads_them():
    """backoff on structured envelopes: every figure but misreported_failures and the context the model read is the
    same with or without wrong envelopes (a wrong envelope is a text of another length in the model's context, whether
    or not the policy reads it: the tokens and their cost may differ, nothing else)."""
    imperfect = load_scenario("imperfect_contracts")
    truthful = _without_wrong_envelopes(imperfect)
    a, b = run_one(truthful, "backoff", "structured", 1), run_one(imperfect, "backoff", "structured", 1)
    assert a.metrics["misreported_failures"] == 0.0 < b.metrics["misreported_failures"]
    read = {"tokens", "input_tokens", "token_cost_usd", "cost_usd"}
    for name in a.metrics:
        if name != "misreported_failures" and name not in read:
            assert a.metrics[name] == b.metrics[name], name
    # the tokens the calls emitted are the same: only the context read differs
    assert a.metrics["tokens"] - a.metrics["input_tokens"] == b.metrics["tokens"] - b.metrics["input_tokens"]
    assert a.metrics["cost_usd"] - a.metrics["token_cost_usd"] == pytest.approx(
        b.metrics["cost_usd"] - b.metrics["token_cost_usd"], abs=1e-6
    )
    assert set(b.breakdowns["misreported_failures_by_way"]) <= {
        "misclassified",
        "marked_recoverable",
        "wrong_retry_after",
        "omitted_partial_success",
    }


def test_imperfect_contracts_costs_the_structured_tree_recovery():
    """On the catalogue scenario the structured tree recovers less than with truthful envelopes, on the same seeds."""
    imperfect = load_scenario("imperfect_contracts")
    seeds = [1, 2, 3, 4]
    arms = {"policies": ("structured",), "errors": ("structured",)}
    truthful = compare(_without_wrong_envelopes(imperfect), seeds, **arms).arms[0]
    wrong = compare(imperfect, seeds, **arms).arms[0]
    assert wrong.metrics["recovery_rate"] < truthful.metrics["recovery_rate"]
    assert wrong.metrics["redone_steps"] > truthful.metrics["redone_steps"]
    assert wrong.metrics["misreported_failures"] > 0 == truthful.metrics["misreported_failures"]


def test_a_misclassification_sweep_draws_structured_recovery_falling():
    """Sweeping the misclassification probability 0 -> 0.5 lowers structured recovery on structured envelopes."""
    spec = SweepSpec(
        scenarios=["imperfect_contracts"],
        policies=["structured"],
        errors=["structured"],
        seeds=4,
        params={"faults[6].misclassify": [0.0, 0.25, 0.5]},
    )
    result = run_sweep(plan_sweep(spec), executor=SerialExecutor())
    recovery = [e.metrics["recovery_rate"] for e in result.entries]
    misreported = [e.metrics["misreported_failures"] for e in result.entries]
    assert recovery[0] > recovery[1] > recovery[2]
    assert misreported[0] < misreported[1] < misreported[2]


@pytest.mark.parametrize("errors", ["generic", "raw"])
def test_formats_without_an_envelope_show_no_wrong_envelope(errors):
    """A bare status word or vendor text has no envelope to get wrong: nothing is misreported."""
    result = run_one(load_scenario("imperfect_contracts"), "structured", errors, 1)
    assert result.metrics["misreported_failures"] == 0.0
    assert result.breakdowns["misreported_failures_by_way"] == {}


def test_a_wrong_envelope_names_a_model_side_kind_only_when_asked():
    """A tool's misclassified envelope is drawn among tool-side kinds: the model's own faults join only by name.

    So a model-side kind added to the catalogue leaves every tool failure's envelope draws,
    and the results of a scenario that never meets it, as they were.
    """
    from fleetchaos.sim.envelope_errors import compile_rule
    from fleetchaos.sim.fault_specs import WrongEnvelope
    from fleetchaos.sim.kinds import KINDS

    model_side = {
        "refusal",
        "content_filter",
        "truncated_call",
        "malformed_args",
        "unknown_tool",
        "empty_turn",
        "stream_cut",
    }
    assert model_side <= set(KINDS)
    rule = compile_rule(WrongEnvelope(misclassify=1.0), 0, 3600.0, providers=True)
    assert "rate_limit" in rule.reportable and "overloaded" in rule.reportable
    assert not model_side & set(rule.reportable)
    named = compile_rule(WrongEnvelope(misclassify=1.0, reported_as=["refusal"]), 0, 3600.0)
    assert named.reported_as == ("refusal",)
