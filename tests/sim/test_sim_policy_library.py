"""The policy library's driver features, in tiny hand-checkable worlds.

Layered retries multiply, remediation agents repair (or not), escalations page a human,
rollbacks compensate, dead letters park, idempotency keys deduplicate, and shared
controls (budgets, breakers) act across tasks.  Every figure is computed by hand from
the constants documented in tests/sim/conftest.py: a round trip is 0.1 s, a network
blip fails after 1.0 s more, an expired key after 0.3 s more.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fleetchaos.policies import AwsRetryQuota, BlindRetry, CircuitBreaker
from fleetchaos.policies.controls import Controlled
from fleetchaos.policies.presets import LayeredBackoff
from fleetchaos.sim.observation import DeadLetter, Escalate, GiveUp, Remediate, Retry, Rollback
from fleetchaos.sim.transport import TransportRetry

APPROX = dict(abs=1e-6)


@dataclass(frozen=True)
class Script:
    """Answers the n-th decision of a task with ``actions[n]`` (the last one repeats)."""

    actions: tuple
    name: str = "script"
    idempotency_keys: bool = False

    def decide(self, observation, history):
        return self.actions[min(history.retries, len(self.actions) - 1)]


def always_blips(sim, tool="dep"):
    return [{"kind": "network_blip", "probability": 1.0, "tools": [tool]}]


# -- layered retries -----------------------------------------------------------------


@pytest.mark.parametrize("transport_attempts, agent_retries", [(3, 3), (2, 4), (4, 1)])
def test_layered_retries_multiply_on_a_dependency_that_always_fails(sim, transport_attempts, agent_retries):
    """Calls = transport attempts x agent dispatches: the product is measured, not assumed."""
    policy = LayeredBackoff(
        max_retries=agent_retries,
        base_s=0.0,
        transport=TransportRetry(attempts=transport_attempts, base_s=0.0, jitter="none"),
    )
    r = sim.run(sim.scenario({"job": [sim.step("dep", 1.0)]}, faults=always_blips(sim)), policy, "generic")
    dispatches = agent_retries + 1
    assert r.rec.calls == transport_attempts * dispatches
    assert r.rec.transport_retries == (transport_attempts - 1) * dispatches
    assert r.rec.fault_hits == {"network_blip": transport_attempts * dispatches}
    assert r.rec.claim == "failed"
    # every try fails after 0.1 + 1.0 s; no waits
    assert r.rec.end_s == pytest.approx(1.1 * transport_attempts * dispatches, **APPROX)
    assert r.metrics["retry_amplification"] == pytest.approx(transport_attempts * dispatches)
    assert r.metrics["transport_amplification"] == pytest.approx(transport_attempts)
    assert r.metrics["agent_amplification"] == pytest.approx(dispatches)


def test_transport_waits_lengthen_the_call(sim):
    """Without jitter the transport waits base, 2*base between tries: 3 tries of 1.1 s plus 0.5 + 1.0 s."""
    policy = LayeredBackoff(max_retries=0, transport=TransportRetry(attempts=3, base_s=0.5, jitter="none"))
    r = sim.run(sim.scenario({"job": [sim.step("dep", 1.0)]}, faults=always_blips(sim)), policy, "generic")
    assert r.rec.calls == 3
    assert r.rec.end_s == pytest.approx(3 * 1.1 + 0.5 + 1.0, **APPROX)


def test_transport_recovers_a_blip_the_agent_never_sees(sim):
    """A blip window [0, 2): try 1 fails at 1.1 s, try 2 (after 1.0 s) starts at 2.1 and succeeds: the policy is never asked."""
    faults = [
        {"kind": "network_blip", "probability": 1.0, "tools": ["dep"], "windows": [{"start_s": 0, "duration_s": 2}]}
    ]
    recorder = sim.Recorder(LayeredBackoff(transport=TransportRetry(attempts=3, base_s=1.0, jitter="none")))
    r = sim.run(sim.scenario({"job": [sim.step("dep", 1.0)]}, faults=faults), recorder, "generic")
    assert recorder.log == []
    assert r.rec.claim == "success" and r.out.recovered
    assert r.rec.calls == 2 and r.rec.transport_retries == 1
    assert r.rec.end_s == pytest.approx(1.1 + 1.0 + 1.1, **APPROX)


def test_a_transport_retry_ahead_in_time_leaves_the_rest_of_the_step_at_its_own_instant(sim):
    """A blip window [0, 2) and a 2-item step at t=0.  Item 0's first try fails and its
    transport retry runs at 2.1 s, after the window; item 1 still starts at 0 s, inside it,
    and must meet the blip too (looking ahead once moved the window's pointer past it)."""
    faults = [
        {"kind": "network_blip", "probability": 1.0, "tools": ["dep"], "windows": [{"start_s": 0, "duration_s": 2}]}
    ]
    policy = LayeredBackoff(max_retries=0, transport=TransportRetry(attempts=2, base_s=1.0, jitter="none"))
    r = sim.run(sim.scenario({"job": [sim.step("dep", 1.0, fan_out=2)]}, faults=faults), policy, "generic")
    assert r.rec.fault_hits == {"network_blip": 2}  # both first tries, at 0 s
    assert r.rec.calls == 4 and r.rec.transport_retries == 2 and r.rec.claim == "success"


def test_transport_layer_leaves_application_errors_to_the_agent(sim):
    """An expired key is not a transport failure: one call per dispatch."""
    faults = [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}]
    policy = LayeredBackoff(max_retries=2, base_s=0.0, transport=TransportRetry(attempts=5))
    r = sim.run(sim.scenario({"job": [sim.step("plan", 1.0)]}, faults=faults), policy, "generic")
    assert r.rec.calls == 3 and r.rec.transport_retries == 0


# -- remediation agents ----------------------------------------------------------------


def _remediation_fleet(success_probability: float) -> dict:
    return {
        "remediation": {
            "duration": {"mean_s": 300, "cv": 0},
            "success_probability": success_probability,
            "tokens": 1000,
        }
    }


def test_remediation_repairs_expired_credentials(sim):
    """Fails at 0.4 s; the agent works 300 s and refreshes the key; the retry succeeds at 300.4 + 10.1."""
    faults = [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}]
    scenario = sim.scenario({"job": [sim.step("plan", 10, tokens=0)]}, faults=faults, **_remediation_fleet(1.0))
    r = sim.run(scenario, Script((Remediate(), GiveUp())), "structured")
    assert r.rec.claim == "success" and r.out.recovered
    assert (r.rec.remediations, r.rec.remediations_failed) == (1, 0)
    assert r.rec.remediation_s == pytest.approx(300.0)
    assert r.rec.tokens == 1000
    assert r.rec.end_s == pytest.approx(0.4 + 300 + 10.1, **APPROX)


def test_a_failed_remediation_repairs_nothing(sim):
    faults = [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}]
    scenario = sim.scenario({"job": [sim.step("plan", 10)]}, faults=faults, **_remediation_fleet(0.0))
    r = sim.run(scenario, Script((Remediate(), GiveUp())), "structured")
    assert r.rec.claim == "failed"
    assert (r.rec.remediations, r.rec.remediations_failed) == (1, 1)
    assert r.rec.calls == 2


def test_remediation_installs_a_missing_tool_on_that_worker(sim):
    faults = [{"kind": "missing_dependency", "probability": 1.0, "tools": ["build"]}]
    scenario = sim.scenario({"job": [sim.step("build", 5)]}, faults=faults, **_remediation_fleet(1.0))
    r = sim.run(scenario, Script((Remediate(), GiveUp())), "structured")
    assert r.rec.claim == "success" and r.rec.remediations_failed == 0
    assert r.rec.wasted_retries == 0  # the retry after the install found the cause gone


def test_remediation_frees_a_fault_filled_disk_but_not_the_fault_schedule(sim):
    faults = [{"kind": "disk_full", "events": [{"worker": 0, "at_s": 0}], "cleanup_after_s": 5000}]
    scenario = sim.scenario({"job": [sim.step("write", 5, disk_mb=10)]}, faults=faults, **_remediation_fleet(1.0))
    r = sim.run(scenario, Script((Remediate(), GiveUp())), "structured")
    assert r.rec.claim == "success" and r.rec.remediations_failed == 0
    assert r.output.plan.disk_full[0] == [(0.0, 5000.0)]  # the injected fault is reported as injected


def test_remediation_cannot_repair_invalid_input(sim):
    faults = [{"kind": "validation_error", "probability": 1.0, "tools": ["plan"]}]
    scenario = sim.scenario({"job": [sim.step("plan", 5)]}, faults=faults, **_remediation_fleet(1.0))
    r = sim.run(scenario, Script((Remediate(), GiveUp())), "structured")
    assert r.rec.claim == "failed" and r.rec.remediations_failed == 1


# -- escalation, dead letters, rollback, idempotency ----------------------------------------


def test_escalation_pages_a_human_whose_handling_hours_are_charged(sim):
    faults = [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}]
    scenario = sim.scenario(
        {"job": [sim.step("plan", 10)]},
        faults=faults,
        page_handling={"mean_s": 5400, "cv": 0},
        usd_per_human_hour=100.0,
    )
    r = sim.run(scenario, Script((Escalate("help"),)), "structured")
    assert r.rec.claim == "escalated"
    assert r.rec.pages == 1 and r.rec.human_s == pytest.approx(5400.0)
    assert r.metrics["human_cost_usd"] == pytest.approx(150.0)  # 1.5 h of handling at $100
    assert r.metrics["undone_task_cost_usd"] == 0.0  # an escalated task is the human's: its page is its cost
    assert r.rec.end_s == pytest.approx(0.4, **APPROX)  # the claim is reported at the page


def test_dead_letter_parks_the_task_with_its_own_claim(sim):
    faults = [{"kind": "validation_error", "probability": 1.0, "tools": ["plan"]}]
    r = sim.run(
        sim.scenario({"job": [sim.step("plan", 5)]}, faults=faults), Script((DeadLetter("poison"),)), "structured"
    )
    assert r.rec.claim == "dead_lettered"
    assert r.breakdowns["claims"] == {"dead_lettered": 1}
    assert not r.out.silent_failure


def test_rollback_compensates_committed_items_so_nothing_is_half_done(sim):
    """write (2 items, append) commits at 1.1 s; check fails at 1.1 + 0.6; one compensating round trip per step."""
    faults = [{"kind": "validation_error", "probability": 1.0, "tools": ["check"]}]
    templates = {"job": [sim.step("write", 1.0, fan_out=2, side_effect="append"), sim.step("check", 0.5)]}
    kept = sim.run(sim.scenario(templates, faults=faults), Script((GiveUp(),)), "structured")
    assert kept.rec.truth == "partial"
    r = sim.run(sim.scenario(templates, faults=faults), Script((Rollback(),)), "structured")
    assert r.rec.truth == "none" and r.rec.claim == "failed" and r.rec.rolled_back
    assert r.rec.compensations == 2 and r.rec.calls == 3 + 2
    assert r.rec.end_s == pytest.approx(1.1 + 0.6 + 0.1, **APPROX)


@pytest.mark.parametrize("keys, duplicates, deduplicated", [(False, 1, 0), (True, 0, 1)])
def test_idempotency_keys_stop_a_timed_out_post_from_posting_twice(sim, keys, duplicates, deduplicated):
    """The first post times out at 2 s having committed; the retry commits again unless it carries a key."""
    faults = [
        {
            "kind": "timeout",
            "probability": 1.0,
            "committed_probability": 1.0,
            "timeout_s": 2.0,
            "tools": ["post"],
            "windows": [{"start_s": 0, "duration_s": 1}],
        }
    ]
    scenario = sim.scenario({"job": [sim.step("post", 1.0, side_effect="append")]}, faults=faults)
    r = sim.run(scenario, Script((Retry(), GiveUp()), idempotency_keys=keys), "structured")
    assert r.rec.claim == "success"
    assert r.rec.duplicate_side_effects == duplicates
    assert r.rec.deduplicated == deduplicated


# -- shared controls across tasks --------------------------------------------------------


def test_aws_retry_quota_refuses_retries_once_the_bucket_is_empty(sim):
    """A bucket of 10 pays two retries of 5; the third retry is refused and the task given up."""
    faults = [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}]
    policy = Controlled(BlindRetry(max_retries=10), budget=AwsRetryQuota(initial=10, retry_cost=5))
    r = sim.run(sim.scenario({"job": [sim.step("plan", 1)]}, faults=faults), policy, "structured")
    assert r.rec.calls == 3 and r.rec.retries == 2 and r.rec.claim == "failed"


def test_circuit_breaker_moves_traffic_off_a_failing_worker(sim):
    """Worker 0's key is revoked.  Task 0 fails there twice (breaker opens), its retry is rerouted to worker 1;
    task 2, proposed to worker 0 by round robin, is sent to worker 1 while the breaker is open."""
    faults = [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}]
    scenario = sim.scenario(
        {"job": [sim.step("plan", 1)]}, arrivals=[(0, "job"), (0, "job"), (10, "job")], faults=faults, workers=2
    )
    policy = Controlled(BlindRetry(max_retries=5), breaker=CircuitBreaker(failure_threshold=2, cooldown_s=1000))
    r = sim.run(scenario, policy, "structured")
    t0, t1, t2 = r.records
    assert t0.claim == "success" and t0.calls == 3 and t0.reroutes == 1 and t0.worker == 1
    assert t1.claim == "success" and t1.calls == 1
    assert t2.claim == "success" and t2.calls == 1 and t2.worker == 1


class _BrokenHooks:
    name = "broken-hooks"

    def new_shared_state(self):
        return {}

    def observe(self, observation, shared, now_s, task_id):
        raise RuntimeError("observe broke")

    def choose_worker(self, proposed, workers, shared, now_s):
        return "nowhere"

    def decide(self, observation, history):
        return GiveUp()


def test_broken_hooks_are_policy_errors_not_crashes(sim):
    r = sim.run(
        sim.scenario({"job": [sim.step("plan", 1)]}, arrivals=[(0, "job"), (1, "job")]), _BrokenHooks(), "generic"
    )
    assert all(rec.claim == "success" for rec in r.records)
    assert all("choose_worker() failed" in rec.policy_error for rec in r.records)


class _NoSharedState:
    name = "no-shared-state"

    def new_shared_state(self):
        raise ValueError("cannot build")

    def decide(self, observation, history):
        return Retry()


def test_a_policy_whose_shared_state_cannot_be_built_gives_up_tasks_with_the_reason(sim):
    faults = [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}]
    r = sim.run(sim.scenario({"job": [sim.step("plan", 1)]}, faults=faults), _NoSharedState(), "generic")
    assert r.rec.claim == "failed"
    assert r.rec.policy_error == "policy raised ValueError in new_shared_state(): cannot build"


# -- the push-contention study ------------------------------------------------------------


def _contention(policy: str, workers: int, seed: int) -> dict:
    from fleetchaos.runs.runner import run_one
    from fleetchaos.scenario.load import load_scenario
    from fleetchaos.scenario.params import apply_params

    scenario, params = apply_params(
        load_scenario("push_contention"), [("fleet.workers", workers)], source="push_contention"
    )
    return run_one(scenario, policy, "structured", seed, params=params).metrics


def test_push_contention_jitter_clears_a_thundering_herd_that_lockstep_backoff_feeds():
    """100 workers push to one branch at once.  The jittered variants get every push in; exponential backoff
    without jitter keeps the losers in lockstep: far more calls, a far later finish, and at the variants'
    time scale (base 10 s) some pushes still colliding when their hour is up."""
    seeds = (1, 2, 3)
    runs = {
        p: [_contention(p, 100, s) for s in seeds]
        for p in ("backoff-none", "backoff-full-jitter", "backoff-decorrelated-jitter")
    }
    for policy, ms in runs.items():
        for metrics in ms:
            assert metrics["tasks"] == 100 and metrics["duplicate_side_effects"] == 0  # a rejected push commits nothing
            assert metrics["success_rate"] == 1.0 or policy == "backoff-none"
    assert all(m["success_rate"] < 1.0 for m in runs["backoff-none"])
    mean = {p: {k: sum(m[k] for m in ms) / len(ms) for k in ("tool_calls", "makespan_s")} for p, ms in runs.items()}
    for jittered in ("backoff-full-jitter", "backoff-decorrelated-jitter"):
        assert mean[jittered]["tool_calls"] < 0.75 * mean["backoff-none"]["tool_calls"]
        assert mean[jittered]["makespan_s"] < 0.5 * mean["backoff-none"]["makespan_s"]


def test_push_contention_scales_with_the_fleet():
    """A per-worker burst: 10 workers make 10 tasks, 200 make 200; contention grows faster than the fleet."""
    small, large = _contention("backoff-full-jitter", 10, 1), _contention("backoff-full-jitter", 200, 1)
    assert (small["tasks"], large["tasks"]) == (10, 200)
    assert large["tool_calls"] / large["tasks"] > small["tool_calls"] / small["tasks"]


def test_paging_and_giving_up_cost_the_work_they_leave_not_the_wait(sim):
    """With the default prices a page (its handling time, mean 30 min at $120/h) and a task given up ($60) cost
    the same: neither is ten times the other, and no setting of how long the human takes to look changes either."""
    faults = [{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}]
    scenario = sim.scenario({"job": [sim.step("plan", 10)]}, faults=faults, page_handling={"mean_s": 1800, "cv": 0})
    paged = sim.run(scenario, Script((Escalate("help"),)), "structured").metrics
    given_up = sim.run(scenario, Script((GiveUp(),)), "structured").metrics
    assert paged["human_cost_usd"] == pytest.approx(60.0) and paged["undone_task_cost_usd"] == 0.0
    assert given_up["undone_task_cost_usd"] == 60.0 and given_up["human_cost_usd"] == 0.0
    assert 0.1 < paged["cost_usd"] / given_up["cost_usd"] < 10
    assert "human_response" not in type(scenario.fleet).model_fields  # the wait for the human is no setting
