"""The catalogue scenarios of the model's own faults: each expect: gate holds, on decisive evidence, on its own arms.

refusal_loop (refusal, content_filter), malformed_calls (malformed_args, unknown_tool,
duplicate_call_id, empty_turn, truncated_call), stream_cut_storm (stream_cut) and
context_pressure (context_overflow, emergent), and the MCP boundary's mcp_flap (tests/sim/test_sim_mcp_flap.py
breaks each of its gates) each name their arms
(``arms:``) and gate them (``expect:``).  Every gate is judged by the one gate rule on the
arms it applies to, over the seeds below (seed 1 is the catalogue tests' own), and must pass
decisively: each is a worst-seed gate, an exact figure.  The loop's arithmetic is checked
apart from the gates: with nothing but denials in the world, a naive policy's retries are
its three retries of each denied task it did not misread as done, every one wasted in the
denial's own family.
"""

from __future__ import annotations

import pytest

from fleetchaos.scenario.expect import split_arm
from fleetchaos.scenario.load import load_scenario
from fleetchaos.sim.kinds_model import DETERMINISTIC_DENIAL
from fleetchaos.testing.suite import run_scenario

SCENARIOS = ("refusal_loop", "malformed_calls", "stream_cut_storm", "context_pressure", "mcp_flap")
SEEDS = (1, 2)


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_gate_holds_decisively_on_the_scenarios_own_arms(name):
    """Each arm of the scenario's arms: meets every gate that applies to it, decisively; each gate applies to one."""
    scenario = load_scenario(name)
    assert scenario.arms and scenario.expect
    judged: dict[int, list[str]] = {}
    for arm in scenario.arms:
        policy, errors = split_arm(arm)
        result = run_scenario(scenario, policy=policy, errors=errors, seeds=SEEDS)
        for verdict in result.expectations:
            shown = f"{name} expect[{verdict.gate}] {verdict.metric} {verdict.rule} {verdict.bound:g} on {arm}"
            assert verdict.passed, f"{shown}: {verdict.value} (seed {verdict.worst_seed})"
            assert verdict.evidence == "decisive", f"{shown}: {verdict.evidence} evidence"
            judged.setdefault(verdict.gate, []).append(arm)
    assert sorted(judged) == list(range(len(scenario.expect))), f"gates no arm of {scenario.arms} meets: {judged}"


def test_a_naive_policy_retries_each_denial_three_times_and_wastes_every_retry():
    """refusal_loop has no fault but the denials: blind-retry retries each denied task three times (fewer only when
    the model misreads a denial as a success and stops), and every retry is wasted, in the denial's own family."""
    result = run_scenario("refusal_loop", policy="blind-retry", errors="generic", seeds=SEEDS)
    for run in result.runs:
        m = run.metrics
        denied, misreads = m["faulted_tasks"], m["misreads"]
        assert denied and 3 * (denied - misreads) <= m["retries"] <= 3 * denied, m
        assert m["wasted_retries"] == m["retries"] and m["recovered_tasks"] == 0
        assert run.breakdowns["wasted_retries_by_family"] == {DETERMINISTIC_DENIAL: m["retries"]}


def test_malformed_calls_fails_its_repeated_id_gate_when_a_repeated_id_is_denied_on_every_try():
    """The gate that bounds the naive arm's wasted retries names a behaviour: a turn rejected for a repeated call id
    passes when asked again.  Break it (the same turns denied on every try: a length stop at the same rate in the
    repeated id's place) and that gate fails, on the same seeds, while the scenario as shipped passes it."""
    scenario = load_scenario("malformed_calls")
    gate = next(
        i
        for i, g in enumerate(scenario.expect)
        if g.metric == "wasted_retries" and g.at_most is not None and g.arm == "blind-retry/generic"
    )
    doc = scenario.model_dump(mode="json", exclude_none=True)
    repeated = [f for f in doc["faults"] if f["kind"] == "duplicate_call_id"]
    assert len(repeated) == 1
    repeated[0]["kind"] = "truncated_call"  # same schedule and rate, but keyed per task and step: denied again
    broken = type(scenario).model_validate(doc)
    for world, passes in ((scenario, True), (broken, False)):
        result = run_scenario(world, policy="blind-retry", errors="generic", seeds=SEEDS)
        (verdict,) = [v for v in result.expectations if v.gate == gate]
        assert verdict.passed is passes, (world.name, verdict.value)


def _worst(result, metric: str, high: bool) -> float:
    values = [run.metrics[metric] for run in result.runs]
    return max(values) if high else min(values)


def test_context_pressures_gates_fail_once_the_behaviour_they_name_is_broken():
    """Each gate of context_pressure names a behaviour; break it and the gate's rule fails on the same seeds.
    Without the tail (result_tokens_sigma 0) no context passes the window: the naive arm wastes no retry (gate 0)
    and the arm that does not ask again loses nothing (gate 1).  A policy that retries a non-recoverable overflow in
    the structured arm's place wastes its retries (gate 2)."""
    scenario = load_scenario("context_pressure")
    gates = scenario.expect
    doc = scenario.model_dump(mode="json", exclude_none=True)
    doc["fleet"]["model"]["result_tokens_sigma"] = 0.0
    flat = type(scenario).model_validate(doc)
    naive = run_scenario(flat, policy="blind-retry", errors="generic", seeds=SEEDS)
    assert _worst(naive, "wasted_retries", high=False) < gates[0].at_least
    lost = run_scenario(flat, policy="blind-retry(max_retries=0)", errors="generic", seeds=SEEDS)
    assert _worst(lost, "success_rate", high=True) > gates[1].at_most
    retrying = run_scenario(scenario, policy="blind-retry", errors="structured", seeds=SEEDS)
    assert _worst(retrying, "wasted_retries", high=True) > gates[2].at_most


def _broken(scenario, **compaction):
    doc = scenario.model_dump(mode="json", exclude_none=True)
    model = doc["fleet"]["model"]
    model["compaction"] = {**model.get("compaction", {}), **compaction.pop("compaction", {})}
    model.update(compaction)
    return type(scenario).model_validate(doc)


def test_context_pressures_compaction_gates_fail_once_the_behaviour_they_name_is_broken():
    """The compaction arms' gates, each broken on the same seeds.  The compacted answer reported as done
    (compaction.claim success) leaves no partial result (gate 3); a summary never shorter than what it replaces
    (summary_tokens past the window) shrinks nothing, so each retry after a compaction is refused again and wasted
    (gate 4); outputs drawn anew on each fetch let the naive loop's restart fit the compacted context (gate 5)."""
    scenario = load_scenario("context_pressure")
    gates = scenario.expect
    assert [g.arm for g in gates[3:]] == ["structured-llm/structured"] * 2 + ["compact-context/generic"]
    tree = {"policy": "structured-llm", "errors": "structured", "seeds": SEEDS}
    claimed = run_scenario(_broken(scenario, compaction={"claim": "success"}), **tree)
    assert _worst(claimed, "partial_results", high=False) < gates[3].at_least
    same = run_scenario(_broken(scenario, compaction={"summary_tokens": 10**6}), **tree)
    assert _worst(same, "wasted_retries", high=True) > gates[4].at_most
    redrawn = _broken(scenario, result_tokens_repeat="redrawn")
    naive = run_scenario(redrawn, policy="compact-context", errors="generic", seeds=SEEDS)
    assert _worst(naive, "success_rate", high=True) > gates[5].at_most


def test_compaction_trades_overflows_for_partial_results_on_every_seed():
    """Paired by seed, on the structured contract: compacting (structured-llm) meets fewer overflows than asking
    again (blind-retry) and finishes more tasks partial, while neither finishes more tasks in full."""
    seeds = (1, 2, 3, 4, 5)
    compacting = run_scenario("context_pressure", policy="structured-llm", errors="structured", seeds=seeds)
    retrying = run_scenario("context_pressure", policy="blind-retry", errors="structured", seeds=seeds)
    for compacted, retried in zip(compacting.runs, retrying.runs, strict=True):
        assert compacted.seed == retried.seed
        overflows = [run.breakdowns["fault_hits_by_kind"]["context_overflow"] for run in (compacted, retried)]
        assert overflows[0] < overflows[1], (compacted.seed, overflows)
        assert compacted.metrics["partial_results"] > retried.metrics["partial_results"] == 0, compacted.seed
        assert compacted.metrics["success_rate"] == retried.metrics["success_rate"], compacted.seed
