"""Failed retries and wasted retries on hand-built timelines: each definition, counted exactly.

* ``failed_retries``: a retry whose dispatch failed again (what happened);
* ``wasted_retries``: a retry dispatched while the true cause of the previous failure
  still held (judged at the dispatch, against the fault's truth, never the hint).

The worlds follow tests/sim/conftest.py: every call pays a 0.1 s round trip, a 429 fails
0.1 s after it, steps last exactly their ``mean_s``.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from fleetchaos.policies import BlindRetry
from fleetchaos.sim import _rng
from fleetchaos.sim.calls import CallModel
from fleetchaos.sim.config import DAY_S, WorldSpec
from fleetchaos.sim.faults import build_plan
from fleetchaos.sim.observation import Action, GiveUp, Observation, Retry, TaskHistory
from fleetchaos.sim.plan import LastFailure
from fleetchaos.sim.state import DailyQuota, NodeState, SharedCapacity, TokenBucket
from fleetchaos.sim.template import compile_template
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.waste import failed_retry_reason


@dataclasses.dataclass(frozen=True)
class FixedDelay:
    """Retry the failed step after a fixed delay per task (``delays[task_id]``, else ``default_s``), whatever it saw."""

    delays: tuple[tuple[int, float], ...] = ()
    default_s: float = 10.0
    max_retries: int = 3
    name: str = "fixed-delay"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        if history.retries >= self.max_retries:
            return GiveUp()
        return Retry(dict(self.delays).get(history.task_id, self.default_s))


def _three_on_one_token(sim):
    """Three tasks at t=0 on three workers, one API call of 1 s each, one API token per 10 s (burst 1)."""
    return sim.scenario(
        {"job": [sim.step("call", 1.0)]},
        arrivals=[(0.0, "job"), (0.0, "job"), (0.0, "job")],
        workers=3,
        api_rate_per_s=0.1,
        api_burst=1,
    )


def test_obedient_waiters_wake_together_and_all_but_one_fail_again(sim):
    """Tasks 1 and 2, refused at t=0 (token due at 10.0), both come back at 10.2: when they are dispatched
    the bucket holds a token (not wasted), but task 1 takes it and task 2 is refused again (failed)."""
    # t=0    task 0 takes the only token -> 1.1 ; tasks 1 and 2 are refused (token due at 10.0) -> 0.2
    # t=10.2 tasks 1 and 2 are dispatched, the bucket holds 1 token: neither is wasted;
    #        task 1 takes it -> success 11.3 ; task 2 is refused (token due 20.2) -> 10.4: a failed retry
    # t=20.4 task 2: a token again -> success 21.5
    r = sim.run(_three_on_one_token(sim), FixedDelay(), "structured")
    by_id = {rec.id: rec for rec in r.output.records}
    assert [by_id[i].claim for i in range(3)] == ["success"] * 3
    assert [by_id[i].retries for i in range(3)] == [0, 1, 2]
    assert [by_id[i].end_s for i in range(3)] == pytest.approx([1.1, 11.3, 21.5])
    assert [by_id[i].fault_hits for i in range(3)] == [{}, {"rate_limit": 1}, {"rate_limit": 2}]
    assert by_id[2].failed_retries == 1
    assert by_id[2].failed_retry_kinds == {"rate_limit": 1}
    assert by_id[2].failed_retry_reasons == {"same fault, after its retry-after instant": 1}
    assert r.metrics["wasted_retries"] == 0.0 and r.metrics["failed_retries"] == 1.0
    assert r.breakdowns["failed_retries_by_kind"] == {"rate_limit": 1}


def test_a_retry_after_the_hinted_instant_is_wasted_while_the_bucket_is_still_empty(sim):
    """Task 2 waits 10.5 s (past the 10.0 s the refusal named) but task 1 took the token at 10.2: at 10.7 the
    bucket holds 0.05 token, so the truth calls the retry wasted, where the hint would have called it fine."""
    # t=10.2 task 1 takes the token -> 11.3
    # t=10.7 task 2: 0.05 token -> wasted; refused (token due 20.2) -> 10.9: failed, after its retry-after instant
    # t=21.4 task 2: a full token -> success 22.5
    r = sim.run(_three_on_one_token(sim), FixedDelay(delays=((2, 10.5),)), "structured")
    rec = next(x for x in r.output.records if x.id == 2)
    assert rec.claim == "success" and rec.retries == 2 and rec.end_s == pytest.approx(22.5)
    assert (rec.wasted_retries, rec.wasted_reasons) == (1, {"API token bucket still empty": 1})
    assert rec.failed_retries == 1
    assert rec.failed_retry_reasons == {"same fault, after its retry-after instant": 1}


def test_a_retry_can_be_wasted_at_its_dispatch_and_still_go_through(sim):
    """Restarts from a 5 s step without the API: judged at dispatch the bucket is empty both times (wasted 2),
    but the second restart reaches the API after a token is due and succeeds (failed 1)."""
    # t=0    both tasks run prep (no API) -> 5.1; task 0 takes the token; task 1 refused, token due 15.1 -> 5.3
    # t=5.3  retry 1: bucket 0.02 -> wasted; prep -> 10.4 : 0.53 tokens -> refused -> 10.6: failed
    # t=10.6 retry 2: bucket 0.55 -> wasted; prep -> 15.7 : 1.0 token -> call -> 16.8 success
    scn = sim.scenario(
        {"job": [sim.step("prep", 5.0, uses_api=False), sim.step("call", 1.0)]},
        arrivals=[(0.0, "job"), (0.0, "job")],
        workers=2,
        api_rate_per_s=0.1,
        api_burst=1,
    )
    r = sim.run(scn, BlindRetry(max_retries=3), "generic")
    rec = next(x for x in r.output.records if x.id == 1)
    assert rec.claim == "success" and rec.retries == 2
    assert rec.end_s == pytest.approx(16.8)
    assert rec.fault_hits == {"rate_limit": 2}
    assert (rec.wasted_retries, rec.wasted_reasons) == (2, {"API token bucket still empty": 2})
    assert rec.failed_retries == 1
    assert rec.failed_retry_reasons == {"same fault, before its retry-after instant": 1}


def test_timeouts_are_judged_by_the_retried_calls_own_draws(sim):
    """A timeout rule certain in [0, 12): the retry at 5 s times out again (wasted, failed); the one at 10 s
    does too; the one at 15 s, outside the window, goes through."""
    scn = sim.scenario(
        {"job": [sim.step("call", 1.0)]},
        faults=[
            {
                "kind": "timeout",
                "probability": 1.0,
                "timeout_s": 5.0,
                "committed_probability": 0.0,
                "windows": [{"start_s": 0, "duration_s": 12}],
            }
        ],
    )
    r = sim.run(scn, BlindRetry(max_retries=3), "generic")
    rec = r.rec
    assert rec.claim == "success" and rec.retries == 3 and rec.end_s == pytest.approx(16.1)
    assert rec.fault_hits == {"timeout": 3}
    assert (rec.wasted_retries, rec.wasted_reasons) == (2, {"timed out again": 2})
    assert (rec.failed_retries, rec.failed_retry_reasons) == (2, {"same fault again": 2})


class _ShowsEveryDispatchFailed:
    """A format that shows every dispatch as failed, a completed one too (a strict or broken format may)."""

    name = "shows-every-dispatch-failed"
    partial_batch = "failed"
    misread_setting = "generic"
    misread_factor = 1.0
    failure_flag = True

    def render(self, report: AttemptReport) -> Observation:
        return Observation(ok=False, status="failed", worker=report.worker)


def test_a_completed_dispatch_shown_as_failed_leaves_no_failure_to_judge(sim):
    """Every dispatch completes but is shown failed, so the policy retries: its retries neither failed again
    nor met a cause that still held (the judge used to stop the run on a failure kind of None)."""
    r = sim.run(sim.scenario({"job": [sim.step("call", 1.0)]}), BlindRetry(max_retries=2), _ShowsEveryDispatchFailed())
    rec = r.rec
    assert rec.claim == "failed" and rec.retries == 2
    assert rec.commits == [[3]]  # each of the three dispatches took effect
    assert (rec.failed_retries, rec.wasted_retries) == (0, 0)
    assert [obs.ok for _, obs in r.rendered] == [False] * 3 and all(rep.completed for rep, _ in r.rendered)


def test_failed_retry_reasons_by_hand():
    """The four reasons: another kind; the same kind without a hint; with a hint, before or after its instant."""
    hinted = LastFailure("rate_limit", 10.0, 0, (0,))
    assert failed_retry_reason(hinted, 9.0, "network_blip") == "a different fault"
    assert failed_retry_reason(hinted, 9.0, "rate_limit") == "same fault, before its retry-after instant"
    assert failed_retry_reason(hinted, 10.0, "rate_limit") == "same fault, after its retry-after instant"
    assert failed_retry_reason(LastFailure("disk_full", None, 0, (0,)), 3.0, "disk_full") == "same fault again"


# -- the judge's side-effect-free reads agree with the per-call decision --------------------


def _calls(faults, call_timeout_s=None):
    spec = WorldSpec.model_validate(
        {
            "duration_s": DAY_S,
            "fleet": {"workers": 1, "network_latency": {"mean_s": 0.5, "cv": 0.8}, "call_timeout_s": call_timeout_s},
            "workload": {
                "templates": [{"name": "t", "steps": [{"tool": "fetch", "duration": {"mean_s": 5, "cv": 0.9}}]}]
            },
            "faults": list(faults),
        }
    )
    plan = build_plan(spec, seed=3)
    node = NodeState(0, [], [], spec.fleet.credential_lifetime_s, [])
    shared = SharedCapacity(TokenBucket(1e6, 1e9, []), DailyQuota(0))
    return CallModel(plan, shared, 3, spec.fleet), node, compile_template(0, spec.workload.templates[0], plan)


def test_transient_and_slow_call_reads_match_what_decide_does():
    """On 400 keyed calls, the judge's reads name the fault decide() meets at the transient and timeout stages."""
    faults = [
        {"kind": "network_blip", "probability": 0.3, "windows": [{"start_s": 100, "duration_s": 400}]},
        {"kind": "timeout", "probability": 0.2, "timeout_s": 30.0},
        {"kind": "latency_spike", "factor": 4.0, "windows": [{"start_s": 200, "duration_s": 200}]},
    ]
    calls, node, tpl = _calls(faults, call_timeout_s=9.0)
    rules = calls.rules_for(node, tpl, 0)
    step = tpl.steps[0]
    rng = random.Random(7)
    met = set()
    for i in range(400):
        now = rng.uniform(0, 600)
        key = _rng.call_key(_rng.step_key(_rng.task_key(_rng.run_key(3), i), 0, 1), 0)
        fault = calls.decide(node, step, rules, 0, 0, key, now, {}, {})[0]
        read = calls.transient_fault(node, rules, key, now) or calls.slow_call(node, step, key, now)
        assert (fault.name if fault else None) == (read.name if read else None), (i, now)
        met.add(fault.name if fault else None)
    assert met == {None, "network_blip", "timeout", "latency_spike"}  # every branch was exercised


def test_with_blips_only_a_retry_is_wasted_exactly_when_it_meets_the_blip_again(sim):
    """With network blips the only fault (and no timeout, no rate limit), a retry's own draws decide it:
    it fails exactly when it meets a blip again, and that is also exactly when its cause still held.
    So every failed retry is wasted and no successful one is, retry by retry: the counts are equal,
    and below the number of retries (some retries succeed).  Judging a retry with the failed
    execution's draws instead would count every retry of a blip as wasted."""
    scenario = sim.scenario(
        {"job": [sim.step("call", 1.0)]},
        arrivals=[(10.0 * i, "job") for i in range(300)],
        faults=[{"kind": "network_blip", "probability": 0.5}],
        workers=4,
    )
    out = sim.run(scenario, FixedDelay(default_s=1.0, max_retries=6), "structured")
    retries, failed, wasted = (out.metrics[m] for m in ("retries", "failed_retries", "wasted_retries"))
    assert 0 < failed < retries
    assert wasted == failed
