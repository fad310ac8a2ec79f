"""A client that waits for every reply and discards a late one (fleet.late_reply_s), in worlds checked by hand.

Six calls at t=0 into a backend with one server and 1 s of work each: call i (0-based)
leaves the server at i + 1 s and its reply reaches the client 0.1 s later (the round
trip).  With late_reply_s 2.5 the first two replies (1.1 s, 2.1 s) count; the other four
arrive at 3.1, 4.1, 5.1 and 6.1 s and count as timeouts then, though their writes took
effect.
"""

from __future__ import annotations

import pytest

from fleetchaos.sim.observation import GiveUp


class GiveUpAtOnce:
    """Never resubmits: each task's first dispatch is its only one."""

    name = "give-up"

    def decide(self, observation, history):
        return GiveUp()


def _world(sim, *, n=6, **fleet):
    steps = [sim.step("write", 1.0, uses_api=False, side_effect="append")]
    return sim.scenario(
        {"t": steps},
        [(0.0, "t")] * n,
        workers=n,
        tool_slots=1,
        providers=[{"name": "backend", "tools": ["write"], "servers": 1}],
        **fleet,
    )


def test_a_late_reply_is_heard_when_it_arrives_counted_failed_and_its_work_took_effect(sim):
    """Replies after 2.5 s fail as timeouts at their arrival (3.1 .. 6.1 s), each write done: a false alarm."""
    s = sim.run(_world(sim, late_reply_s=2.5), GiveUpAtOnce(), "structured")
    assert [r.claim for r in s.records] == ["success"] * 2 + ["failed"] * 4
    assert [r.end_s for r in s.records[2:]] == pytest.approx([3.1, 4.1, 5.1, 6.1])
    assert all(r.fault_hits == {"timeout": 1} for r in s.records[2:])
    assert [r.commits[0][0] for r in s.records] == [1] * 6
    assert [o.false_alarm for o in s.outcomes] == [False] * 2 + [True] * 4


def test_the_call_timeout_still_cuts_a_reply_later_than_it(sim):
    """late_reply_s 2.5 under a 5 s call timeout: replies at 3.1 and 4.1 s are late, the two after 5 s time out at 5 s."""
    s = sim.run(_world(sim, late_reply_s=2.5, call_timeout_s=5), GiveUpAtOnce(), "structured")
    assert [r.end_s for r in s.records[2:]] == pytest.approx([3.1, 4.1, 5.0, 5.0])
    assert all(r.claim == "failed" for r in s.records[2:])


def test_without_the_setting_every_reply_counts(sim):
    """The same world with late_reply_s unset: six successes, the last at 6.1 s."""
    s = sim.run(_world(sim), GiveUpAtOnce(), "structured")
    assert [r.claim for r in s.records] == ["success"] * 6
    assert s.records[-1].end_s == pytest.approx(6.1)


def test_resubmitting_a_late_reply_repeats_its_side_effect_and_is_wasted_while_the_queue_is_long(sim):
    """blind-retry (one retry): call 2's reply at 3.1 s is late and sent again at once; the server is booked
    until 6 s, so the retry's reply comes at 7.1 s, 4 s after it left: late again, and wasted when sent.
    Each late try's write took effect: four tasks write twice."""
    s = sim.run(_world(sim, late_reply_s=2.5), "blind-retry(max_retries=1)", "structured")
    late = s.records[2:]
    assert [r.retries for r in late] == [1, 1, 1, 1]
    assert [r.wasted_retries for r in late] == [1, 1, 1, 1]
    assert all(r.wasted_reasons == {"timed out again": 1} for r in late)
    # Retries leave at 3.1, 4.1, 5.1, 6.1 s into a server booked to 6 s: they finish at 7, 8, 9, 10 s.
    assert [r.end_s for r in late] == pytest.approx([7.1, 8.1, 9.1, 10.1])
    assert [r.commits[0][0] for r in late] == [2, 2, 2, 2]
    assert [o.duplicate_side_effects for o in s.outcomes] == [0, 0, 1, 1, 1, 1]
    assert sum(r.claim == "success" for r in s.records) == 2


def test_a_resubmission_into_an_idle_provider_is_not_wasted(sim):
    """Three calls at once: the third's reply (3.1 s) is late only for the two ahead of it; by its retry the server is free."""
    steps = [sim.step("write", 1.0, uses_api=False)]
    scenario = sim.scenario(
        {"t": steps},
        [(0.0, "t"), (0.0, "t"), (0.0, "t")],
        workers=3,
        tool_slots=1,
        late_reply_s=2.5,
        providers=[{"name": "backend", "tools": ["write"], "servers": 1}],
    )
    s = sim.run(scenario, "blind-retry(max_retries=1)", "structured")
    # Call 2 leaves the server at 3 s (reply 3.1 s, late); its retry at 3.1 s finds the server free: in time.
    third = s.records[2]
    assert third.retries == 1 and third.wasted_retries == 0 and third.claim == "success"
    assert third.end_s == pytest.approx(3.1 + 1.1)
