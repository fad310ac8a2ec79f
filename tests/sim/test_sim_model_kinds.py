"""The model-side fault kinds: a refusal retried is wasted in its own family, a stream cut retried without
idempotency duplicates what committed, and each kind is listed, documented and drawable.

Worked out by hand on the shared tiny worlds (tests/sim/conftest.py: a round trip of 0.1 s,
constant steps, the model's reading switched off).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.results.metrics import compute_run
from fleetchaos.scenario.docs import render as render_docs
from fleetchaos.sim.kinds import KINDS
from fleetchaos.sim.kinds_model import DETERMINISTIC_DENIAL, MODEL_KINDS
from fleetchaos.sim.observation import GiveUp, Reroute, Retry

NEW = [k.name for k in MODEL_KINDS]


@pytest.mark.parametrize("kind", ["refusal", "content_filter"])
def test_a_deterministic_denial_retried_is_always_wasted_in_its_own_family(sim, kind):
    """The same request is denied on every try: blind-retry's three retries are all wasted, none recovers."""
    scn = sim.scenario({"job": [sim.step("ask", 5, tokens=10)]}, faults=[{"kind": kind, "probability": 1.0}])
    r = sim.run(scn, "blind-retry", "generic")
    rec = r.rec
    assert rec.fault_hits == {kind: 4} and rec.retries == 3 and rec.wasted_retries == 3
    assert rec.claim == "failed" and rec.commits == [[0]]
    _, breakdowns, _ = compute_run(r.output, scn.fleet)
    assert breakdowns["wasted_retries_by_family"] == {DETERMINISTIC_DENIAL: 3}


@dataclass(frozen=True)
class RerouteAll:
    name: str = "reroute-all"

    def decide(self, observation, history):
        return Reroute() if history.retries < 3 else GiveUp()


def test_a_refusal_is_denied_again_on_another_worker_too(sim):
    """The denial is the model's answer to the request, not a worker's state: rerouting meets it again."""
    scn = sim.scenario({"job": [sim.step("ask", 5)]}, faults=[{"kind": "refusal", "probability": 1.0}], workers=3)
    rec = sim.run(scn, RerouteAll(), "structured").rec
    assert rec.reroutes == 3 and rec.fault_hits == {"refusal": 4} and rec.wasted_retries == 3
    assert rec.claim == "failed"


@dataclass(frozen=True)
class RetryAll:
    name: str = "retry-all"
    idempotency_keys: bool = False

    def decide(self, observation, history):
        return Retry() if history.retries < 3 else None


@pytest.mark.parametrize("keys, commits, duplicates, deduplicated", [(False, 2, 1, 0), (True, 1, 0, 1)])
def test_a_stream_cut_retried_without_idempotency_duplicates_what_committed(
    sim, keys, commits, duplicates, deduplicated
):
    """The cut comes after the call ran (committed_probability 1): a plain retry posts the note twice and the
    oracle counts the duplicate; with idempotency keys the second post is deduplicated."""
    window = {"start_s": 0, "duration_s": 1}
    scn = sim.scenario(
        {"job": [sim.step("post", 2, side_effect="append")]},
        faults=[
            {
                "kind": "stream_cut",
                "probability": 1.0,
                "committed_probability": 1.0,
                "timeout_s": 5,
                "windows": [window],
            }
        ],
    )
    r = sim.run(scn, RetryAll(idempotency_keys=keys), "generic")
    rec = r.rec
    # t=0 the stream is cut 5 s in, the post already ran; t=5 the retry posts again (2.1 s): success at 7.1 s
    assert rec.fault_hits == {"stream_cut": 1} and rec.claim == "success"
    assert rec.commits == [[commits]] and rec.deduplicated == deduplicated
    assert r.out.duplicate_side_effects == duplicates
    m, _, _ = compute_run(r.output, scn.fleet)
    assert m["duplicate_side_effects"] == float(duplicates)


@pytest.mark.parametrize("kind", ["malformed_args", "unknown_tool", "duplicate_call_id", "empty_turn"])
def test_a_malformed_turn_fails_fast_and_a_retry_usually_passes(sim, kind):
    window = {"start_s": 0, "duration_s": 1}
    scn = sim.scenario({"job": [sim.step("act", 2)]}, faults=[{"kind": kind, "probability": 1.0, "windows": [window]}])
    rec = sim.run(scn, "blind-retry", "generic").rec
    assert rec.fault_hits == {kind: 1} and rec.claim == "success" and rec.commits == [[1]]
    assert rec.wasted_retries == 0  # the retry left the window: its own draw did not meet the kind again


def test_each_model_kind_is_listed_shown_documented_and_in_the_catalogue():
    runner = CliRunner()
    listed = runner.invoke(main, ["faults", "list"], catch_exceptions=False).output
    docs = render_docs()
    for kind in NEW:
        assert kind in KINDS and kind in listed and f"`{kind}`" in docs
        shown = runner.invoke(main, ["faults", "show", kind], catch_exceptions=False)
        assert shown.exit_code == 0 and KINDS[kind].contract.error_code in shown.output
