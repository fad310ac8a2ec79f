"""fleet.partial_batch and fleet.checkpoints, by hand: how a partly failed fan-out is reported
without an envelope, and whether a retry can resume without one.

The world is the token-starved batch of test_sim_recovery: ``search`` (10 s, fan-out 5,
API) then ``synth`` (20 s, no API); the bucket holds 3 tokens at t=0 and refills one
every 100 s, so items 0, 1, 2 run (10.1 s each: a 0.1 s round trip) and items 3, 4 are
refused with a 429 in 0.2 s.  Every figure below is computed by hand from that.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fleetchaos.policies import BlindRetry
from fleetchaos.sim.observation import GiveUp, Retry

APPROX = dict(abs=1e-6)
ENVELOPE_LESS = ("generic", "status", "raw")


def starved(sim, **fleet):
    templates = {"batch": [sim.step("search", 10, fan_out=5), sim.step("synth", 20, uses_api=False)]}
    return sim.scenario(templates, api_rate_per_s=0.01, api_burst=3, **fleet)


@dataclass(frozen=True)
class WaitThenRetry:
    """Reads nothing: waits ``delay_s`` and dispatches again from the start, ``retries`` times, then gives up."""

    delay_s: float = 200.0
    retries: int = 1
    name: str = "wait-then-retry"

    def decide(self, observation, history):
        return Retry(delay_s=self.delay_s) if history.retries < self.retries else GiveUp()


@pytest.mark.parametrize("errors", ENVELOPE_LESS)
def test_failed_is_the_default_and_reports_the_step(sim, errors):
    """partial_batch: failed (the default): the step fails with its first failure; blind retries restart the batch.

    Dispatch 1 ends at 10.1 (items 3, 4 refused); the 3 blind retries find 0.101, 0.103,
    0.105 tokens: all 5 items refused in 0.2 s each -> 10.3, 10.5, 10.7, then give up.
    """
    assert starved(sim).fleet.partial_batch == "failed"
    r = sim.run(starved(sim), "blind-retry", errors)
    rec = r.rec
    assert [d.observation.ok for d in r.log] == [False] * 4
    assert rec.commits == [[1, 1, 1, 0, 0], [0]] and rec.claim == "failed" and rec.truth == "partial"
    assert rec.calls == 20 and rec.retries == 3 and rec.fault_hits == {"rate_limit": 17}
    assert rec.wasted_retries == 3  # the bucket held less than a token at every retry
    assert rec.end_s == pytest.approx(10.7, **APPROX)
    assert not r.out.silent_failure
    assert r.metrics["undone_tasks"] == 1.0 and r.metrics["refused_calls"] == 17.0


@pytest.mark.parametrize("errors", ENVELOPE_LESS)
def test_ok_hides_the_partial_step(sim, errors):
    """partial_batch: ok: the tool says ok with 3 of 5 items; synth runs (10.1 + 20.1): a silent failure."""
    r = sim.run(starved(sim, partial_batch="ok"), "blind-retry", errors)
    assert r.log == [] and r.rec.claim == "success" and r.out.silent_failure
    assert r.rec.commits == [[1, 1, 1, 0, 0], [1]] and r.rec.end_s == pytest.approx(30.2, **APPROX)


def test_count_says_how_many_items_failed(sim):
    """partial_batch: count: a partial failure first ('2 of 5'), then plain failures once every item fails."""
    r = sim.run(starved(sim, partial_batch="count"), sim.Recorder(BlindRetry(1)), "status")
    first, second = (d.observation for d in r.log)
    assert (first.ok, first.status, first.text) == (False, "partial", "2 of 5 items failed\nHTTP 429 RateLimitError")
    assert (second.status, second.text) == ("failed", "HTTP 429 RateLimitError")  # 5 of 5: nothing partial
    generic = sim.run(starved(sim, partial_batch="count"), sim.Recorder(BlindRetry(1)), "generic").log[0].observation
    assert (generic.status, generic.text) == ("partial", "2 of 5 items failed")
    # The same run as "failed" otherwise: only what the orchestrator is told differs.
    failed = sim.run(starved(sim), sim.Recorder(BlindRetry(1)), "status")
    assert (r.rec.commits, r.rec.calls, r.rec.end_s) == (failed.rec.commits, failed.rec.calls, failed.rec.end_s)


@pytest.mark.parametrize("errors", (*ENVELOPE_LESS, "structured"))
def test_checkpoints_resume_whatever_the_format(sim, errors):
    """fleet.checkpoints: a policy that reads nothing resumes anyway, on every format.

    Dispatch 1 ends at 10.1 with items 0, 1, 2 done; the retry at 210.1 finds 2.101
    tokens.  With checkpoints it runs items 3 and 4 only (both get a token): 220.2, then
    synth 240.3, recovered in 5 + 2 + 1 calls.  Without, it restarts the batch: items 0
    and 1 take the two tokens (again), 2, 3, 4 are refused, and the task is given up.
    """
    r = sim.run(starved(sim, checkpoints=True), WaitThenRetry(), errors)
    rec = r.rec
    assert rec.commits == [[1] * 5, [1]] and rec.claim == "success" and r.out.recovered
    assert rec.calls == 8 and rec.redone_steps == 0
    assert rec.end_s == pytest.approx(240.3, **APPROX)
    restart = sim.run(starved(sim), WaitThenRetry(), errors).rec
    assert restart.commits == [[2, 2, 1, 0, 0], [0]] and restart.claim == "failed" and restart.calls == 10


def test_checkpoints_never_move_an_envelope_resume_point_back(sim):
    """The structured tree resumes from partial_success; the checkpoint names the same point, so nothing changes."""
    off = sim.run(starved(sim), "structured", "structured")
    on = sim.run(starved(sim, checkpoints=True), "structured", "structured")
    assert [(d.action.resume_from, d.action.done_items) for d in on.log] == [
        (d.action.resume_from, d.action.done_items) for d in off.log
    ]
    assert (on.rec.commits, on.rec.calls, on.rec.end_s) == (off.rec.commits, off.rec.calls, off.rec.end_s)


def test_crm_writes_without_an_envelope_fail_the_sync_instead_of_lying(sim):
    """004's CRM sync, partial_batch: failed: 3 of 5 writes refused with 403 fail the sync; blind retries restart it.

    Each dispatch: fetch 8.1, the 5 writes (0 and 1 in 4.1 s, 2, 3, 4 refused in 0.4 s)
    -> 12.2 per dispatch; 4 dispatches -> 48.8, then give up.  Not silent: claimed failed.
    """
    templates = {
        "crm_sync": [
            sim.step("fetch_contacts", 8),
            sim.step("update_contact", 4, fan_out=5, side_effect="idempotent", needs=["fetch_contacts"]),
            sim.step("post_note", 3, side_effect="append"),
        ]
    }
    faults = [{"kind": "permission_denied", "probability": 1.0, "tools": ["update_contact"], "items": [2, 3, 4]}]
    r = sim.run(sim.scenario(templates, faults=faults), "blind-retry", "generic")
    rec = r.rec
    assert rec.commits == [[4], [4, 4, 0, 0, 0], [0]] and rec.claim == "failed" and not r.out.silent_failure
    assert rec.calls == 24 and rec.wasted_retries == 3 and rec.wasted_reasons == {"access still denied": 3}
    assert rec.end_s == pytest.approx(48.8, **APPROX)
