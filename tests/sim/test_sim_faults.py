"""One task, one fault: each core fault kind against the built-in policies.

Conventions (see conftest.py): a call lasts RTT (0.1 s) + the step's mean, or
RTT + the fail-fast extra of its fault (blip 1.0, 429 0.1, disk 0.5, key 0.3), or exactly
timeout_s for a timeout.  Jittered delays are read back from the recorded policy
decisions and only their bounds are checked; the arithmetic around them is by hand.
"""

from __future__ import annotations

import pytest

from fleetchaos.policies import Backoff, BlindRetry, get_policy
from fleetchaos.sim.observation import RefreshCredentials, Reroute, Retry

APPROX = dict(abs=1e-9)


def plan_push(sim):
    """plan (10 s, API) -> push (5 s, API, append)."""
    return {"job": [sim.step("plan", 10), sim.step("push", 5, side_effect="append")]}


# --------------------------------------------------------------------------------------
# network_blip
# --------------------------------------------------------------------------------------


def test_blip_blind_retry_lands_after_window_and_recovers(sim):
    """A blip on the first call only: blind-retry's immediate retry falls after the window and recovers, not wasted."""
    scn = sim.scenario(
        plan_push(sim),
        faults=[{"kind": "network_blip", "probability": 1.0, "windows": [{"start_s": 0, "duration_s": 0.5}]}],
    )
    r = sim.run(scn, "blind-retry", "generic")
    # t=0     plan blips: 0.1 + 1.0            -> dispatch ends at 1.1
    # t=1.1   retry (delay 0); 1.1 >= 0.5, outside the window -> no blip
    #         plan 0.1 + 10 -> 11.2 ; push 0.1 + 5 -> 16.3
    # calls = 1 + 2 = 3, retries = 1, blips are never wasted, plan had not committed -> 0 redone
    rec, out = r.rec, r.out
    assert rec.claim == "success" and out.truth == "full"
    assert rec.calls == 3
    assert rec.retries == 1
    assert rec.wasted_retries == 0 and rec.wasted_reasons == {}
    assert rec.redone_steps == 0
    assert rec.duplicate_side_effects == 0
    assert rec.fault_hits == {"network_blip": 1}
    assert rec.end_s == pytest.approx(16.3, **APPROX)
    assert out.recovered and not out.silent_failure and not out.false_alarm
    # step executions: 1 (failed plan) then 2 more (plan, push) -> 3 - 1 = 2
    assert out.steps_to_recovery == 2
    # first fault noted at the failed call's start (t=0) -> 16.3 - 0
    assert out.time_to_recovery_s == pytest.approx(16.3, **APPROX)
    assert r.metrics["recovery_rate"] == 1.0
    assert r.metrics["wasted_retries"] == 0.0
    assert [type(d.action) for d in r.log] == [Retry]
    assert r.log[0].action == Retry()


@pytest.mark.parametrize(
    "window_s, attempts, claim",
    [
        # window [0, 2): attempts at 0 and 1.1 blip, the one at 2.2 is outside -> success
        (2.0, 3, "success"),
        # window [0, 5): attempts at 0, 1.1, 2.2, 3.3 all blip; 3 retries used -> give up
        (5.0, 4, "failed"),
    ],
)
def test_blip_blind_retry_inside_window_blips_again(sim, window_s, attempts, claim):
    """An immediate retry that still falls inside the blip window blips again: wasted and failed, by the truth."""
    scn = sim.scenario(
        plan_push(sim),
        faults=[{"kind": "network_blip", "probability": 1.0, "windows": [{"start_s": 0, "duration_s": window_s}]}],
    )
    r = sim.run(scn, "blind-retry", "generic")
    rec, out = r.rec, r.out
    if claim == "success":
        # t=0 blip -> 1.1 ; t=1.1 (< 2) blip -> 2.2 ; t=2.2 (>= 2) plan -> 12.3, push -> 17.4
        # calls 2 failed plans + plan + push = 4 ; retries 2 ; step executions 4, first fault at 1 -> 3
        assert rec.claim == "success" and out.truth == "full" and out.recovered
        assert rec.calls == 4 and rec.retries == 2
        assert rec.fault_hits == {"network_blip": 2}
        assert rec.end_s == pytest.approx(17.4, **APPROX)
        assert out.steps_to_recovery == 3
    else:
        # 4 dispatches of 1.1 s each, all inside [0, 5): 0, 1.1, 2.2, 3.3 -> ends 4.4, give up
        assert rec.claim == "failed" and out.truth == "none" and not out.recovered
        assert rec.calls == 4 and rec.retries == 3
        assert rec.fault_hits == {"network_blip": 4}
        assert rec.end_s == pytest.approx(4.4, **APPROX)
        assert out.steps_to_recovery is None
    # the retries dispatched inside the window (p = 1 there) meet the blip again: wasted and failed alike
    inside = 1 if claim == "success" else 3
    assert rec.wasted_retries == inside and rec.wasted_reasons == {"blip drawn again": inside}
    assert rec.failed_retries == inside and rec.failed_retry_reasons == {"same fault again": inside}
    assert rec.redone_steps == 0
    assert len(r.log) == attempts - (1 if claim == "success" else 0)


@pytest.mark.parametrize("policy, errors", [("structured", "structured"), ("backoff", "generic")])
def test_blip_backoff_retry_recovers(sim, policy, errors):
    """A policy with backoff waits a jittered delay in [0, base_s) after a blip, then recovers (not wasted)."""
    scn = sim.scenario(
        plan_push(sim),
        faults=[{"kind": "network_blip", "probability": 1.0, "windows": [{"start_s": 0, "duration_s": 0.5}]}],
    )
    r = sim.run(scn, policy, errors)
    # t=0 blip -> 1.1 ; delay d = full jitter in [0, min(cap, base*2**0)) = [0, base_s)
    # t=1.1+d (outside [0, 0.5)) plan -> 11.2+d ; push -> 16.3+d
    [decision] = r.log
    assert isinstance(decision.action, Retry)
    d = decision.action.delay_s
    assert 0.0 <= d < get_policy(policy).base_s
    assert decision.action.resume_from == 0  # the blip was on step 0: nothing to skip
    if errors == "structured":
        env = decision.observation.envelope
        assert env.error_code == "NETWORK_UNREACHABLE"
        assert env.category == "transient" and env.recoverable
        assert env.suggested_action == "retry_with_backoff"
        assert env.retry_after_ms is None
        assert env.partial_success.completed_steps == ()
    else:
        assert decision.observation.envelope is None and decision.observation.status == "failed"
    rec, out = r.rec, r.out
    assert rec.claim == "success" and out.recovered
    assert rec.calls == 3 and rec.retries == 1 and rec.wasted_retries == 0 and rec.redone_steps == 0
    assert rec.end_s == pytest.approx(16.3 + d, **APPROX)
    assert out.steps_to_recovery == 2


# --------------------------------------------------------------------------------------
# timeout (ambiguous)
# --------------------------------------------------------------------------------------


def timeout_on_push(committed: float, timeout_s: float = 30.0) -> list[dict]:
    # push starts at 0.1 + 10 = 10.1: the window [10, 11) covers only that call
    return [
        {
            "kind": "timeout",
            "probability": 1.0,
            "committed_probability": committed,
            "timeout_s": timeout_s,
            "windows": [{"start_s": 10, "duration_s": 1}],
        }
    ]


@pytest.mark.parametrize("committed, duplicates", [(1.0, 1), (0.0, 0)])
def test_timeout_blind_retry_duplicates_committed_append(sim, committed, duplicates):
    """A timed-out push that really committed is pushed again by a restart: one duplicate side effect."""
    scn = sim.scenario(plan_push(sim), faults=timeout_on_push(committed))
    r = sim.run(scn, "blind-retry", "generic")
    # t=0     plan -> 10.1 (commit plan)
    # t=10.1  push hangs for timeout_s = 30 -> 40.1 ; committed with probability `committed`
    # t=40.1  retry from step 0: plan again (already committed -> redone 1) -> 50.2
    # t=50.2  push, outside the window -> 55.3 ; push commits = 1 + committed
    #         (a push that had committed is itself a redone step: redone = 1 + committed)
    rec, out = r.rec, r.out
    assert rec.commits == [[2], [1 + int(committed)]]
    assert rec.duplicate_side_effects == duplicates
    assert out.duplicate_side_effects == duplicates
    assert rec.claim == "success" and out.truth == "full" and out.recovered
    assert rec.calls == 4 and rec.retries == 1
    assert rec.redone_steps == 1 + int(committed)
    assert rec.wasted_retries == 0  # a retry after a timeout is never judged wasted
    assert rec.fault_hits == {"timeout": 1}
    assert rec.end_s == pytest.approx(55.3, **APPROX)
    # step executions 4; the fault was at the 2nd -> 2 after it
    assert out.steps_to_recovery == 2
    # first fault noted at the push's start, 10.1 -> 55.3 - 10.1
    assert out.time_to_recovery_s == pytest.approx(45.2, **APPROX)
    assert r.metrics["duplicate_side_effects"] == float(duplicates)


@pytest.mark.parametrize("committed", [1.0, 0.0])
def test_timeout_structured_resumes_at_push(sim, committed):
    """The structured policy resumes at the timed-out push: no plan redone, but a committed push is still duplicated."""
    scn = sim.scenario(plan_push(sim), faults=timeout_on_push(committed))
    r = sim.run(scn, "structured", "structured")
    [decision] = r.log
    env = decision.observation.envelope
    assert env.error_code == "TOOL_TIMEOUT" and env.category == "transient"
    assert env.context == {"worker": "worker-0", "tool": "push", "outcome": "unknown"}
    assert env.partial_success.completed_steps == ("0:plan",)
    assert isinstance(decision.action, Retry) and decision.action.resume_from == 1
    d = decision.action.delay_s
    assert 0.0 <= d < 2.0
    # t=40.1 failure seen ; t=40.1+d push (outside window) -> 45.2+d
    # the structured envelope cannot say whether the push committed ("outcome": "unknown"):
    # if it did, the resumed push is a redone step and a duplicate side effect.
    rec, out = r.rec, r.out
    assert rec.commits == [[1], [1 + int(committed)]]
    assert rec.duplicate_side_effects == int(committed)
    assert rec.redone_steps == int(committed)
    assert rec.calls == 3 and rec.retries == 1
    assert rec.claim == "success" and out.recovered
    assert rec.end_s == pytest.approx(45.2 + d, **APPROX)


@pytest.mark.parametrize(
    "committed, truth, false_alarm",
    [(1.0, "full", True), (0.0, "partial", False)],
)
def test_timeout_give_up_truth_and_claim(sim, committed, truth, false_alarm):
    """Giving up after an ambiguous timeout: a committed push makes a false alarm; time spent is exactly timeout_s."""
    scn = sim.scenario(plan_push(sim), faults=timeout_on_push(committed, timeout_s=30.0))
    r = sim.run(scn, BlindRetry(max_retries=0), "generic")
    # plan 0 -> 10.1 ; push hangs 30 s -> 40.1 ; give up at once
    rec, out = r.rec, r.out
    assert rec.claim == "failed"
    assert out.truth == truth
    assert out.false_alarm is false_alarm
    assert not out.silent_failure and not out.recovered
    assert rec.calls == 2 and rec.retries == 0
    assert rec.end_s == pytest.approx(10.1 + 30.0, **APPROX)
    assert r.metrics["false_alarms"] == float(false_alarm)
    assert r.metrics["success_rate"] == 0.0


# --------------------------------------------------------------------------------------
# rate_limit
# --------------------------------------------------------------------------------------


def rate_limited(sim, window_s: float = 1000.0):
    """api 1 token/s, burst 1, cut to x0.01 (0.01 token/s) during [0, window_s)."""
    return sim.scenario(
        plan_push(sim),
        faults=[{"kind": "rate_limit", "capacity_factor": 0.01, "windows": [{"start_s": 0, "duration_s": window_s}]}],
        api_rate_per_s=1.0,
        api_burst=1,
    )


def test_rate_limit_blind_retry_before_retry_after_is_wasted(sim):
    """Blind retries sent while the token bucket is still empty are all wasted: the bucket still empty."""
    r = sim.run(rate_limited(sim), "blind-retry", "generic")
    # bucket starts full with 1 token, refills at 0.01/s in the window.
    # t=0     plan takes the token (0 left) -> 10.1
    # t=10.1  push: tokens 0.01*10.1 = 0.101 < 1 -> 429; token at 10.1 + 0.899/0.01 = 100.0
    #         call 0.1 + 0.1 -> 10.3 ; retry-after instant 100.0
    # t=10.3  retry #1 (10.3 < 100 -> wasted): plan (committed -> redone) 429 -> 10.5
    # t=10.5  retry #2 wasted, plan 429 -> 10.7
    # t=10.7  retry #3 wasted, plan 429 -> 10.9 ; give up
    rec, out = r.rec, r.out
    assert rec.calls == 5
    assert rec.retries == 3
    assert rec.wasted_retries == 3
    assert rec.wasted_reasons == {"API token bucket still empty": 3}
    assert rec.failed_retries == 3 and rec.failed_retry_reasons == {"same fault, before its retry-after instant": 3}
    assert rec.redone_steps == 3
    assert rec.fault_hits == {"rate_limit": 4}
    assert rec.claim == "failed" and out.truth == "partial"
    assert not out.silent_failure and not out.false_alarm
    assert rec.end_s == pytest.approx(10.9, **APPROX)
    assert r.breakdowns["wasted_retries_by_reason"] == {"API token bucket still empty": 3}
    assert r.breakdowns["failed_retries_by_kind"] == {"rate_limit": 3}
    assert r.output.plan.describe() == ["fleet: API rate x0.01 from 0s to 1000s"]


def test_rate_limit_backoff_short_delays_still_wasted(sim):
    """Backoff on a second's time scale (delays < 2, 4, 8 s) ends inside a 90 s retry-after: all 3 retries wasted."""
    r = sim.run(rate_limited(sim), sim.Recorder(Backoff(base_s=2.0, cap_s=60.0)), "generic")
    d1, d2, d3 = r.recorder.delays()[:3]
    assert 0 <= d1 < 2 and 0 <= d2 < 4 and 0 <= d3 < 8
    # failures end at 10.3, 10.5+d1, 10.7+d1+d2, 10.9+d1+d2+d3, all < 100 = token instant
    rec = r.rec
    assert rec.wasted_reasons == {"API token bucket still empty": 3}
    assert rec.claim == "failed"
    assert rec.end_s == pytest.approx(10.9 + d1 + d2 + d3, **APPROX)


def test_rate_limit_structured_waits_retry_after(sim):
    """The structured policy waits retry_after_ms (89.7 s by hand) and resumes at push: not wasted, recovered."""
    r = sim.run(rate_limited(sim), "structured", "structured")
    [decision] = r.log
    env = decision.observation.envelope
    # the failure is seen at 10.3; the token comes at 100.0 -> 89.7 s -> 89700 ms
    assert env.error_code == "RATE_LIMITED" and env.suggested_action == "wait_retry_after"
    assert env.retry_after_ms == 89_700
    action = decision.action
    assert isinstance(action, Retry) and action.resume_from == 1
    jitter = action.delay_s - 89.7
    assert 0.0 <= jitter < 2.0
    # t=100+j push: tokens 0.101 + 0.01*(100+j-10.1) = 1 + 0.01j >= 1 -> ok -> 105.1+j
    rec, out = r.rec, r.out
    assert rec.calls == 3 and rec.retries == 1
    assert rec.wasted_retries == 0
    assert rec.redone_steps == 0
    assert rec.fault_hits == {"rate_limit": 1}
    assert rec.claim == "success" and out.recovered
    assert rec.end_s == pytest.approx(105.1 + jitter, abs=1e-6)
    assert out.steps_to_recovery == 1


def test_rate_limit_retry_after_spans_window_edge(sim):
    """Retry-after integrates the refill across the end of the rate-limit window (40.2 s by hand)."""
    r = sim.run(rate_limited(sim, window_s=50.0), "structured", "structured")
    # t=10.1 push: tokens 0.101, need 0.899.  At 0.01/s until 50: +0.399 -> need 0.5 at t=50;
    # then 1/s: +0.5 s -> token at 50.5.  Failure seen at 10.3 -> retry after 40.2 s.
    [decision] = r.log
    assert decision.observation.envelope.retry_after_ms == 40_200
    jitter = decision.action.delay_s - 40.2
    assert 0.0 <= jitter < 2.0
    rec = r.rec
    assert rec.claim == "success" and rec.wasted_retries == 0 and rec.calls == 3
    # push at 50.5+j -> 55.6+j
    assert rec.end_s == pytest.approx(55.6 + jitter, abs=1e-6)


# --------------------------------------------------------------------------------------
# disk_full
# --------------------------------------------------------------------------------------


def disk_world(sim, steps: list[dict], cleanup_after_s: float = 100_000.0):
    return sim.scenario(
        {"job": steps},
        faults=[{"kind": "disk_full", "events": [{"worker": 0, "at_s": 0}], "cleanup_after_s": cleanup_after_s}],
        workers=2,
    )


def plan_edit_push(sim):
    """plan (10 s) -> edit (20 s, writes 10 MB) -> push (5 s, append)."""
    return [sim.step("plan", 10), sim.step("edit", 20, disk_mb=10), sim.step("push", 5, side_effect="append")]


def test_disk_full_blind_retry_wastes_three(sim):
    """Blind retries on the same full disk: 3 wasted 'same full disk', plan redone 3 times, claim failed, truth partial."""
    r = sim.run(disk_world(sim, plan_edit_push(sim)), "blind-retry", "generic")
    # task 0 -> worker 0 (round robin), whose disk is full from t=0 on
    # t=0     plan -> 10.1 ; edit: full disk 0.1 + 0.5 -> 10.7
    # retry x3 from step 0, each: plan (redone) 10.1 + edit fail 0.6 = 10.7 s
    # -> ends 10.7 + 3 * 10.7 = 42.8 ; calls 2 + 3*2 = 8
    rec, out = r.rec, r.out
    assert rec.calls == 8 and rec.retries == 3
    assert rec.wasted_retries == 3 and rec.wasted_reasons == {"same full disk": 3}
    assert rec.redone_steps == 3
    assert rec.fault_hits == {"disk_full": 4}
    assert rec.worker == 0 and rec.reroutes == 0
    assert rec.claim == "failed" and out.truth == "partial"
    assert rec.commits == [[4], [0], [0]]
    assert rec.end_s == pytest.approx(42.8, **APPROX)
    assert r.output.plan.describe() == ["worker 0: disk full from 0s to 100000s"]


def test_disk_full_first_step_truth_none(sim):
    """When the disk step is the first step, blind retries leave nothing done: truth none."""
    steps = [sim.step("edit", 20, disk_mb=10), sim.step("push", 5, side_effect="append")]
    r = sim.run(disk_world(sim, steps), "blind-retry", "generic")
    # 4 dispatches of 0.6 s each -> 2.4 ; nothing ever committed -> no redone steps
    rec, out = r.rec, r.out
    assert rec.calls == 4 and rec.wasted_reasons == {"same full disk": 3}
    assert rec.redone_steps == 0
    assert rec.claim == "failed" and out.truth == "none"
    assert rec.end_s == pytest.approx(2.4, **APPROX)


def test_disk_full_cleared_before_redo(sim):
    """The wasted judgement is made at dispatch: a retry while the disk is still full is wasted even if it later succeeds."""
    r = sim.run(disk_world(sim, plan_edit_push(sim), cleanup_after_s=15.0), "blind-retry", "generic")
    # disk full [0, 15).  edit fails at 10.1 -> 10.7 ; retry at 10.7 (< 15: wasted)
    # plan (redone) -> 20.8 ; edit at 20.8 (disk clean) -> 40.9 ; push -> 46.0
    rec, out = r.rec, r.out
    assert rec.wasted_reasons == {"same full disk": 1}
    assert rec.redone_steps == 1 and rec.calls == 5
    assert rec.claim == "success" and out.recovered
    assert rec.end_s == pytest.approx(46.0, **APPROX)


def test_disk_full_structured_reroutes_and_resumes(sim):
    """The structured policy reroutes to worker 1 and resumes at the failed edit: nothing redone, recovered."""
    r = sim.run(disk_world(sim, plan_edit_push(sim)), "structured", "structured")
    [decision] = r.log
    env = decision.observation.envelope
    assert env.error_code == "DISK_FULL" and env.category == "resource"
    assert env.suggested_action == "reroute_to_healthy_worker"
    assert env.context == {"worker": "worker-0", "tool": "edit"}
    assert env.partial_success.completed_steps == ("0:plan",)
    assert decision.action == Reroute(0.0, 1, ())
    # t=10.7 rerouted (no delay) to worker 1, healthy -> not wasted
    # edit 0.1 + 20 -> 30.8 ; push 0.1 + 5 -> 35.9
    rec, out = r.rec, r.out
    assert rec.worker == 1 and rec.reroutes == 1
    assert rec.calls == 4 and rec.retries == 1
    assert rec.wasted_retries == 0 and rec.redone_steps == 0
    assert rec.commits == [[1], [1], [1]]
    assert rec.claim == "success" and out.recovered
    assert rec.end_s == pytest.approx(35.9, **APPROX)
    # executions: plan, edit(fail) | edit, push -> 4 - 2 = 2
    assert out.steps_to_recovery == 2


# --------------------------------------------------------------------------------------
# expired_key
# --------------------------------------------------------------------------------------


def key_world(sim, steps: dict | None = None, at_s: float = 0.0):
    return sim.scenario(
        steps or plan_push(sim),
        faults=[{"kind": "expired_key", "events": [{"worker": 0, "at_s": at_s}]}],
        credential_refresh_s=20.0,
    )


def test_expired_key_blind_retry_wastes_three(sim):
    """Blind retries with expired credentials: 3 wasted 'credentials still expired', nothing done."""
    r = sim.run(key_world(sim), "blind-retry", "generic")
    # every plan call fails fast: 0.1 + 0.3 = 0.4 ; 4 dispatches -> 1.6
    rec, out = r.rec, r.out
    assert rec.calls == 4 and rec.retries == 3
    assert rec.wasted_retries == 3 and rec.wasted_reasons == {"credentials still expired": 3}
    assert rec.fault_hits == {"expired_key": 4}
    assert rec.redone_steps == 0 and rec.refreshes == 0
    assert rec.claim == "failed" and out.truth == "none"
    assert rec.end_s == pytest.approx(1.6, **APPROX)
    assert r.output.plan.describe() == ["worker 0: API key expires at 0s"]


def test_expired_key_structured_refreshes_then_resumes(sim):
    """The structured policy refreshes credentials (20 s) and retries: recovered, and end_s includes the refresh."""
    r = sim.run(key_world(sim), "structured", "structured")
    [decision] = r.log
    env = decision.observation.envelope
    assert env.error_code == "AUTH_EXPIRED" and env.category == "auth"
    assert decision.action == RefreshCredentials(0, ())
    # t=0 plan fails -> 0.4 ; refresh 20 s -> 20.4 ; plan -> 30.5 ; push -> 35.6
    rec, out = r.rec, r.out
    assert rec.refreshes == 1 and rec.retries == 1
    assert rec.calls == 3 and rec.wasted_retries == 0 and rec.redone_steps == 0
    assert rec.claim == "success" and out.recovered
    assert rec.end_s == pytest.approx(0.4 + 20.0 + 10.1 + 5.1, **APPROX)
    assert out.time_to_recovery_s == pytest.approx(35.6, **APPROX)
    assert out.steps_to_recovery == 2


def test_expired_key_spares_non_api_step_and_resumes(sim):
    """An expired key fails only API steps; the structured policy refreshes and resumes at the API step."""
    steps = {"job": [sim.step("build", 10, uses_api=False), sim.step("push", 5, side_effect="append")]}
    r = sim.run(key_world(sim, steps), "structured", "structured")
    # build (no API) -> 10.1 ; push expired -> 10.5 ; refresh -> 30.5 ; push -> 35.6
    [decision] = r.log
    assert decision.action == RefreshCredentials(1, ())
    rec = r.rec
    assert rec.calls == 3 and rec.redone_steps == 0 and rec.commits == [[1], [1]]
    assert rec.end_s == pytest.approx(35.6, **APPROX)


def test_credential_lifetime_expires_mid_task(sim):
    """Credentials also expire by lifetime (15 s here): the 3rd API step fails; refresh and resume recover it."""
    steps = {"job": [sim.step("a", 10), sim.step("b", 10), sim.step("c", 10)]}
    scn = sim.scenario(steps, credential_lifetime_s=15.0, credential_refresh_s=20.0)
    # a at 0 ok -> 10.1 ; b at 10.1 (< 15) ok -> 20.2 ; c at 20.2 (>= 15) expired: 0.1 + 0.3 -> 20.6
    blind = sim.run(scn, "blind-retry", "generic")
    # restarts at 20.6, 21.0, 21.4: step a (committed -> redone) fails in 0.4 s each -> 21.8
    b = blind.rec
    assert b.calls == 6 and b.wasted_reasons == {"credentials still expired": 3}
    assert b.redone_steps == 3 and b.claim == "failed" and blind.out.truth == "partial"
    assert b.end_s == pytest.approx(21.8, **APPROX)
    structured = sim.run(scn, "structured", "structured")
    # refresh 20.6 -> 40.6 (valid until 55.6) ; c at 40.6 -> 50.7
    assert structured.log[0].action == RefreshCredentials(2, ())
    s = structured.rec
    assert s.calls == 4 and s.refreshes == 1 and s.wasted_retries == 0 and s.redone_steps == 0
    assert s.claim == "success" and structured.out.recovered
    assert s.end_s == pytest.approx(50.7, **APPROX)


def test_reroute_does_not_skip_unhealthy_workers(sim):
    """Reroute goes to the next worker in rotation whatever its state: a reroute onto another full disk is wasted."""
    # 3 workers; disks of workers 0 and 1 full from t=0.
    scn = sim.scenario(
        {"job": plan_edit_push(sim)},
        faults=[
            {
                "kind": "disk_full",
                "events": [{"worker": 0, "at_s": 0}, {"worker": 1, "at_s": 0}],
                "cleanup_after_s": 100_000,
            }
        ],
        workers=3,
    )
    r = sim.run(scn, "structured", "structured")
    # w0: plan 10.1, edit full -> 10.7 ; reroute -> w1 (full: wasted) edit -> 11.3 ;
    # reroute -> w2 (healthy) edit -> 31.4 ; push -> 36.5
    assert [d.action for d in r.log] == [Reroute(0.0, 1, ()), Reroute(0.0, 1, ())]
    assert [d.worker for d in r.log] == [0, 1]
    assert [d.same_failure_streak for d in r.log] == [1, 2]
    rec = r.rec
    assert rec.worker == 2 and rec.reroutes == 2 and rec.retries == 2
    assert rec.wasted_reasons == {"same full disk": 1}
    assert rec.calls == 5 and rec.redone_steps == 0
    assert rec.claim == "success" and r.out.recovered
    assert rec.end_s == pytest.approx(36.5, **APPROX)


def test_only_append_steps_count_as_duplicates(sim):
    """A restart re-commits idempotent fan-out items (not duplicates) and a committed append (one duplicate)."""
    scn = sim.scenario(
        {
            "crm": [
                sim.step("fetch", 8),
                sim.step("update", 4, fan_out=5, side_effect="idempotent"),
                sim.step("post", 3, side_effect="append"),
            ]
        },
        # fetch -> 8.1 ; update (5 items in parallel) -> 12.2 ; post at 12.2: window [12, 13)
        faults=[
            {
                "kind": "timeout",
                "probability": 1.0,
                "committed_probability": 1.0,
                "timeout_s": 30,
                "windows": [{"start_s": 12, "duration_s": 1}],
            }
        ],
    )
    r = sim.run(scn, "blind-retry", "generic")
    # post times out (committed) 12.2 -> 42.2 ; restart: fetch 50.3, update 54.4, post 57.5
    rec = r.rec
    assert rec.commits == [[2], [2, 2, 2, 2, 2], [2]]
    assert rec.duplicate_side_effects == 1  # only the append step 'post' counts
    assert rec.redone_steps == 3  # fetch, update (all 5 items had committed), post
    assert rec.calls == 14
    assert rec.end_s == pytest.approx(57.5, **APPROX)


# --------------------------------------------------------------------------------------
# cost: tokens and money
# --------------------------------------------------------------------------------------


def test_tokens_are_billed_for_calls_that_ran_not_for_fast_failures(sim):
    """A blipped call consumes no tokens; the retried calls and a timed-out call do; cost follows the prices."""
    scn = sim.scenario(
        {"job": [sim.step("plan", 10, tokens=1000), sim.step("push", 5, side_effect="append", tokens=300)]},
        faults=[
            {"kind": "network_blip", "probability": 1.0, "windows": [{"start_s": 0, "duration_s": 0.5}]},
            {
                "kind": "timeout",
                "probability": 1.0,
                "committed_probability": 0.0,
                "timeout_s": 30,
                "windows": [{"start_s": 11.0, "duration_s": 1.0}],
            },
        ],
    )
    r = sim.run(scn, "blind-retry", "generic")
    # t=0     plan blips (fast failure, 0 tokens), ends 1.1
    # t=1.1   plan runs: 1000 tokens, ends 11.2; push starts 11.2, inside [11, 12) -> timeout: 300 tokens, ends 41.2
    # t=41.2  retry from the start: plan 1000 (ends 51.3), push 300 (ends 56.4)
    # tokens the calls emit = 1000 + 300 + 1000 + 300 = 2600 ; calls = 5
    # the context each of the 5 turns reads (system prompt 2000, a result 200, generic's "failed" 6 characters =
    # 2 tokens): plan 2000, then "failed" -> plan 2002, its result -> push 2202, "failed" -> plan 2204, its
    # result -> push 2404: 10812 input tokens
    assert r.rec.calls == 5 and r.rec.turns == 5
    assert r.rec.input_tokens == 2000 + 2002 + 2202 + 2204 + 2404
    assert r.rec.tokens == 2600 + 10812
    # default prices: 0.01 USD per 1k tokens the calls emit, 0.0025 per 1k read, 0.0005 USD per call
    assert r.metrics["tokens"] == 13412.0
    assert r.metrics["input_tokens"] == 10812.0
    assert r.metrics["cost_usd"] == pytest.approx(2.6 * 0.01 + 10.812 * 0.0025 + 5 * 0.0005, abs=1e-9)
