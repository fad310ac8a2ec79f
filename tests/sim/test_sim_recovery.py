"""Partial batches and silent failures, redone steps, and escalation, by hand."""

from __future__ import annotations

import pytest

from fleetchaos.policies import StructuredDecisionTree
from fleetchaos.sim.observation import Escalate, Retry

APPROX = dict(abs=1e-6)


# --------------------------------------------------------------------------------------
# partial batch / silent failure
# --------------------------------------------------------------------------------------
#
# The five items of a fan-out step start at the same instant on the same worker, so a
# time window or a worker filter cannot single out some of them.  Two robust ways to get
# a partial batch are used:
#
# 1. Fully deterministic, no randomness: the shared API token bucket.  With api_burst 3
#    and a tiny refill rate, items 0, 1, 2 take the three tokens and items 3, 4 get an
#    HTTP-429.  Every number is computed by hand.
# 2. A blip with probability 0.5 inside a window that covers only the first execution of
#    the fan-out step.  Per-call draws are keyed by (seed, task, step, item, execution),
#    not by call order, so every arm with the same seed sees the same items fail on the
#    first execution.  The test searches seeds with the simulator itself (structured
#    format: the envelope lists the items that succeeded) until 1..4 of 5 items fail, then
#    checks the generic arm on that same seed against that set.  No internal key
#    derivation is copied into the test.


def batch(sim, synth_api: bool = False):
    """search (10 s, fan-out 5, API) -> synth (20 s)."""
    return {"batch": [sim.step("search", 10, fan_out=5), sim.step("synth", 20, uses_api=synth_api)]}


def token_starved(sim, **fleet):
    # 3 tokens at t=0, refill 0.01 token/s (one token every 100 s)
    return sim.scenario(batch(sim), api_rate_per_s=0.01, api_burst=3, **fleet)


def test_partial_batch_generic_is_silent_failure(sim):
    """A generic fan-out tool that hides partial batches (partial_batch: ok) says 'ok' with 3 of 5 items: claim
    success, truth partial, silent failure."""
    r = sim.run(token_starved(sim, partial_batch="ok"), "blind-retry", "generic")
    # t=0: items 0,1,2 take the 3 tokens (10.1 s each); items 3,4 get 429 (0.2 s each)
    # the step lasts its longest item, 10.1 ; the generic tool reports "ok" -> synth 20.1 -> 30.2
    rec, out = r.rec, r.out
    assert r.log == []  # the policy is never consulted
    assert rec.commits == [[1, 1, 1, 0, 0], [1]]
    assert rec.calls == 6 and rec.retries == 0
    assert rec.fault_hits == {"rate_limit": 2}
    assert rec.claim == "success" and out.truth == "partial"
    assert out.silent_failure and out.faulted and not out.recovered
    assert rec.end_s == pytest.approx(30.2, **APPROX)
    assert r.metrics["silent_failure_rate"] == 1.0
    assert r.metrics["recovery_rate"] == 0.0
    assert r.metrics["success_rate"] == 0.0


def test_partial_batch_structured_resumes_only_failed_items(sim):
    """The structured policy resumes only the rate-limited items (calls prove it): each item commits once, recovered."""
    r = sim.run(token_starved(sim), "structured", "structured")
    first, second = r.log
    # --- dispatch 1 (t=0): items 0,1,2 ok; 3,4 -> 429, token at 0 + 1/0.01 = 100.
    #     The step ends at 10.1 -> retry after 100 - 10.1 = 89.9 s.
    env = first.observation.envelope
    assert env.error_code == "RATE_LIMITED"
    assert env.partial_success.completed_steps == ()
    assert env.partial_success.artifacts == ("0:search#0", "0:search#1", "0:search#2")
    assert env.retry_after_ms == 89_900
    assert isinstance(first.action, Retry)
    assert (first.action.resume_from, first.action.done_items) == (0, (0, 1, 2))
    u1 = first.action.delay_s - 89.9
    assert 0 <= u1 < 2
    t1 = 100.0 + u1
    # --- dispatch 2 (t1): tokens 0.01*t1 = 1 + 0.01*u1 -> item 3 ok (10.1 s);
    #     item 4: tokens 0.01*u1, token at t1 + (1 - 0.01*u1)/0.01 = 200 -> 429.
    #     The step ends at t1 + 10.1 = 110.1 + u1 -> retry after 89.9 - u1.
    env = second.observation.envelope
    assert second.same_failure_streak == 2
    assert env.partial_success.artifacts == tuple(f"0:search#{i}" for i in range(4))
    assert env.retry_after_ms == pytest.approx((89.9 - u1) * 1000, abs=1)
    assert (second.action.resume_from, second.action.done_items) == (0, (0, 1, 2, 3))
    t2 = t1 + 10.1 + second.action.delay_s
    assert t2 >= 200.0  # the second retry waits for the token: not wasted
    # --- dispatch 3 (t2 >= 200): item 4 ok -> t2 + 10.1 ; synth -> t2 + 30.2
    rec, out = r.rec, r.out
    assert rec.calls == 5 + 2 + 1 + 1  # 9: the resumed dispatches call only the missing items
    assert rec.retries == 2
    assert rec.commits == [[1, 1, 1, 1, 1], [1]]
    assert rec.redone_steps == 0 and rec.duplicate_side_effects == 0
    assert rec.wasted_retries == 0
    assert rec.fault_hits == {"rate_limit": 3}
    assert rec.claim == "success" and out.truth == "full"
    assert out.recovered and not out.silent_failure
    assert rec.end_s == pytest.approx(t2 + 30.2, **APPROX)
    # step executions: search | search, search, synth -> 4 - 1 = 3
    assert out.steps_to_recovery == 3


def _blip_batch(sim, **fleet):
    return sim.scenario(
        batch(sim, synth_api=True),
        faults=[{"kind": "network_blip", "probability": 0.5, "windows": [{"start_s": 0, "duration_s": 1}]}],
        **fleet,
    )


def _find_partial_seed(sim):
    """First seed whose first fan-out execution loses 1..4 of 5 items (seen through the envelope)."""
    scn = _blip_batch(sim)
    for seed in range(200):
        r = sim.run(scn, "structured", "structured", seed)
        if r.log:
            ok = {int(a.rsplit("#", 1)[1]) for a in r.log[0].observation.envelope.partial_success.artifacts}
            if 1 <= len(ok) <= 4:
                return seed, ok, r
    pytest.fail("no seed in 0..199 gives a partial batch")  # P(all 200 miss) ~ (1/16)**200


def test_partial_batch_blip_generic_vs_structured(sim):
    """Blips on some fan-out items (keyed draws, same in both arms): generic that hides partial batches is silent,
    structured resumes only those items."""
    seed, ok, structured = _find_partial_seed(sim)
    failed = sorted(set(range(5)) - ok)
    k = len(failed)
    # --- generic + blind-retry, same seed: the same items blip on execution 1 of step 0.
    #     succeeded items 10.1 s, blipped items 1.1 s -> step ends 10.1 ; "ok" -> synth 20.1 -> 30.2
    generic = sim.run(_blip_batch(sim, partial_batch="ok"), "blind-retry", "generic", seed)
    g = generic.rec
    assert [i for i, c in enumerate(g.commits[0]) if c == 0] == failed
    assert g.calls == 6 and g.retries == 0
    assert g.fault_hits == {"network_blip": k}
    assert g.claim == "success" and generic.out.truth == "partial" and generic.out.silent_failure
    assert g.end_s == pytest.approx(30.2, **APPROX)
    # --- structured: step ends at 10.1, resume step 0 skipping the ok items after d in [0, 2);
    #     t = 10.1 + d is outside the window [0, 1): the k items succeed -> 20.2 + d ; synth -> 40.3 + d
    [decision] = structured.log
    assert decision.action.resume_from == 0 and set(decision.action.done_items) == ok
    d = decision.action.delay_s
    s = structured.rec
    assert s.calls == 5 + k + 1
    assert s.commits == [[1] * 5, [1]]
    assert s.redone_steps == 0 and s.retries == 1
    assert s.claim == "success" and structured.out.recovered and not structured.out.silent_failure
    assert s.end_s == pytest.approx(40.3 + d, **APPROX)


# --------------------------------------------------------------------------------------
# redone steps
# --------------------------------------------------------------------------------------


def three_steps(sim):
    # a, b, c: 10 s each; c starts at 2 * 10.1 = 20.2, the blip window [20, 21) hits only it
    return sim.scenario(
        {"job": [sim.step("a", 10), sim.step("b", 10), sim.step("c", 10)]},
        faults=[{"kind": "network_blip", "probability": 1.0, "windows": [{"start_s": 20, "duration_s": 1}]}],
    )


def test_generic_restart_redoes_completed_steps(sim):
    """Blind-retry restarts from step 0 after a failure at step 2: steps 0 and 1 are redone (redone_steps == 2)."""
    r = sim.run(three_steps(sim), "blind-retry", "generic")
    # a -> 10.1, b -> 20.2, c blips -> 21.3 ; retry: a 31.4, b 41.5, c (41.5 > 21) -> 51.6
    rec = r.rec
    assert rec.redone_steps == 2
    assert rec.executions == [2, 2, 2]
    assert rec.calls == 6 and rec.retries == 1
    assert rec.commits == [[2], [2], [1]]
    assert rec.duplicate_side_effects == 0  # no append steps
    assert rec.end_s == pytest.approx(51.6, **APPROX)
    assert r.out.recovered and r.out.steps_to_recovery == 3
    assert r.metrics["redone_steps"] == 2.0


def test_structured_resume_redoes_nothing(sim):
    """The structured policy resumes from the failed step 2: redone_steps == 0."""
    r = sim.run(three_steps(sim), "structured", "structured")
    [decision] = r.log
    assert decision.observation.envelope.partial_success.completed_steps == ("0:a", "1:b")
    assert decision.action.resume_from == 2
    d = decision.action.delay_s
    # c blips 20.2 -> 21.3 ; c again at 21.3 + d -> 31.4 + d
    rec = r.rec
    assert rec.redone_steps == 0
    assert rec.executions == [1, 1, 2]
    assert rec.calls == 4
    assert rec.end_s == pytest.approx(31.4 + d, **APPROX)
    assert r.out.steps_to_recovery == 1


def test_backoff_on_structured_errors_still_restarts(sim):
    """Resuming is the policy's doing: backoff ignores partial_success even on structured errors and redoes 2 steps."""
    r = sim.run(three_steps(sim), "backoff", "structured")
    [decision] = r.log
    assert decision.action.resume_from == 0
    d = decision.action.delay_s
    rec = r.rec
    assert rec.redone_steps == 2 and rec.calls == 6
    assert rec.end_s == pytest.approx(51.6 + d, **APPROX)


# --------------------------------------------------------------------------------------
# escalation
# --------------------------------------------------------------------------------------


def always_blipping(sim):
    return sim.scenario(
        {"job": [sim.step("plan", 10), sim.step("push", 5, side_effect="append")]},
        faults=[{"kind": "network_blip", "probability": 1.0, "windows": [{"start_s": 0, "duration_s": 100}]}],
    )


def test_structured_policy_on_generic_escalates_after_unknown_retries(sim):
    """Without an envelope the structured policy retries unknown_retries (1) time, then escalates."""
    r = sim.run(always_blipping(sim), "structured", "generic")
    first, second = r.log
    assert isinstance(first.action, Retry) and first.action.resume_from == 0
    assert isinstance(second.action, Escalate)
    d = first.action.delay_s
    assert 0 <= d < 2
    # t=0 blip -> 1.1 ; retry at 1.1+d (< 100, inside) blip -> 2.2+d ; escalate
    rec, out = r.rec, r.out
    assert rec.claim == "escalated"
    assert rec.calls == 2 and rec.retries == 1
    assert out.truth == "none" and not out.false_alarm and not out.recovered
    assert rec.end_s == pytest.approx(2.2 + d, **APPROX)
    assert r.metrics["escalations"] == 1.0
    assert r.metrics["recovery_rate"] == 0.0
    assert r.breakdowns["claims"] == {"escalated": 1}


def test_structured_escalates_after_max_same_identical_codes(sim):
    """On structured errors, three NETWORK_UNREACHABLE in a row (max_same=3) escalate after 2 retries."""
    r = sim.run(always_blipping(sim), "structured", "structured")
    assert [type(d.action) for d in r.log] == [Retry, Retry, Escalate]
    assert [d.same_failure_streak for d in r.log] == [1, 2, 3]
    d1, d2 = r.recorder.delays()
    assert 0 <= d1 < 2 and 0 <= d2 < 4
    # 0 -> 1.1 ; 1.1+d1 -> 2.2+d1 ; 2.2+d1+d2 (< 8, inside) -> 3.3+d1+d2 ; escalate
    rec = r.rec
    assert rec.claim == "escalated" and rec.calls == 3 and rec.retries == 2
    assert rec.end_s == pytest.approx(3.3 + d1 + d2, **APPROX)
    assert r.metrics["escalations"] == 1.0


def test_escalation_after_committed_timeouts_is_false_alarm(sim):
    """Two committed push timeouts then escalation: truth full, claim escalated -> a false alarm with a duplicate push."""
    scn = sim.scenario(
        {"job": [sim.step("plan", 10), sim.step("push", 5, side_effect="append")]},
        faults=[
            {
                "kind": "timeout",
                "probability": 1.0,
                "committed_probability": 1.0,
                "timeout_s": 30,
                # push #1 at 10.1 ; plan retry at 40.1+d (d < 2) misses both ; push #2 at 50.2+d
                "windows": [{"start_s": 10, "duration_s": 1}, {"start_s": 50, "duration_s": 3}],
            }
        ],
    )
    r = sim.run(scn, sim.Recorder(StructuredDecisionTree()), "generic")
    d = r.log[0].action.delay_s
    assert isinstance(r.log[1].action, Escalate)
    rec, out = r.rec, r.out
    # plan 10.1 ; push times out (committed) 40.1 ; retry at 40.1+d: plan 50.2+d ;
    # push times out (committed) 80.2+d ; escalate
    assert rec.commits == [[2], [2]]
    assert rec.duplicate_side_effects == 1
    assert rec.redone_steps == 2  # plan and push had both taken effect before the retry
    assert rec.claim == "escalated" and out.truth == "full"
    assert out.false_alarm and not out.recovered
    assert rec.end_s == pytest.approx(80.2 + d, **APPROX)
    assert r.metrics["false_alarms"] == 1.0 and r.metrics["escalations"] == 1.0
