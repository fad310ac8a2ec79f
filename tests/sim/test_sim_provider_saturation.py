"""A provider's admission (refuse or queue) and the wasted-retry judge on a saturated provider, by hand.

One provider with one server serves the 10 s ``search`` step; two tasks arrive at t=0 on
two workers (a 0.1 s round trip).  Task 0 holds the server from 0 to 10; task 1 meets a
full provider.  Every figure below is computed by hand from that.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fleetchaos.sim.observation import GiveUp, Retry

APPROX = dict(abs=1e-6)
SATURATED = "provider still saturated"


def world(sim, provider: dict, n: int = 2, **fleet):
    steps = [sim.step("search", 10.0, uses_api=False)]
    return sim.scenario(
        {"t": steps},
        [(0.0, "t")] * n,
        workers=n,
        providers=[{"name": "backend", "tools": ["search"], "servers": 1, **provider}],
        **fleet,
    )


@dataclass(frozen=True)
class WaitThenRetry:
    delay_s: float
    name: str = "wait-then-retry"

    def decide(self, observation, history):
        return Retry(delay_s=self.delay_s) if history.retries < 1 else GiveUp()


def test_retries_into_a_provider_that_still_refuses_are_wasted(sim):
    """max_in_flight 1: task 1 is refused (503) at 0 in 0.15 s; its 3 blind retries at 0.15, 0.30, 0.45 find the
    provider still holding task 0's call (until 10): each is wasted, and each is refused again (ends at 0.60)."""
    s = sim.run(world(sim, {"max_in_flight": 1}), "blind-retry", "structured")
    t0, t1 = s.records
    assert t0.claim == "success" and t0.end_s == pytest.approx(10.1, **APPROX)
    assert t1.fault_hits == {"overloaded": 4} and t1.claim == "failed"
    assert t1.wasted_retries == 3 and t1.wasted_reasons == {SATURATED: 3}
    assert t1.failed_retries == 3 and t1.end_s == pytest.approx(0.60, **APPROX)


def test_a_retry_after_the_provider_has_room_is_not_wasted(sim):
    """The same refusal, retried after 20 s: the provider emptied at 10, so the retry is admitted (20.15 -> 30.25)."""
    s = sim.run(world(sim, {"max_in_flight": 1}), WaitThenRetry(20.0), "generic")
    t1 = s.records[1]
    assert t1.wasted_retries == 0 and t1.claim == "success" and t1.end_s == pytest.approx(30.25, **APPROX)


def test_queue_admission_takes_every_call_and_serves_it_late(sim):
    """admission: queue: task 1 is not refused but waits for the server (10 -> 20): answered at 20.1."""
    s = sim.run(world(sim, {"max_in_flight": 1, "admission": "queue"}), "blind-retry", "structured")
    t1 = s.records[1]
    assert t1.fault_hits == {} and t1.claim == "success" and t1.end_s == pytest.approx(20.1, **APPROX)


def test_retries_into_a_queue_longer_than_the_call_timeout_are_wasted(sim):
    """No max_in_flight (every call queues), call timeout 15 s, three tasks: task 1 would be answered at 20.1 and task 2 at 30.1, so
    both time out at 15 (their work, abandoned, holds the server to 20 and 30).  Each blind retry at 15, 30 and 45
    finds the server busy until 30, 40 (then 50, 60, then 70, 80): answered 25 to 35 s later, past the 14.9 s its
    client waits, so each is wasted and times out again; both tasks give up at 60.  A retry's own 10.1 s alone
    fits the timeout, so the transient check ('timed out again') never counted them."""
    s = sim.run(world(sim, {}, n=3, call_timeout_s=15), "blind-retry", "structured")
    t0, t1, t2 = s.records
    assert t0.claim == "success" and t0.end_s == pytest.approx(10.1, **APPROX)
    for t in (t1, t2):
        assert t.fault_hits == {"timeout": 4} and t.claim == "failed" and t.end_s == pytest.approx(60.0, **APPROX)
        assert t.wasted_reasons == {SATURATED: 3}


def test_a_queue_that_drains_within_the_timeout_wastes_nothing(sim):
    """No max_in_flight, call timeout 15 s, two tasks: task 1 is answered at 20.1 > 15 and times out at 15; the queue
    ahead of its retry is then 5 s (abandoned work to 20) + 10 s of its own + 0.1 = 15.1: still late.  With a 25 s
    timeout nothing times out at all."""
    late = sim.run(world(sim, {}, call_timeout_s=15), WaitThenRetry(0.0), "structured").records[1]
    assert late.wasted_reasons == {SATURATED: 1}
    roomy = sim.run(world(sim, {}, call_timeout_s=25), "blind-retry", "structured").records[1]
    assert roomy.fault_hits == {} and roomy.wasted_retries == 0
