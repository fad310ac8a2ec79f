"""Fault schedules, dependency chains and load-dependent storms, by hand.

Schedules (fault_specs.CallSchedule): recurring windows (``every_s``), two-state bursts
with ``scope: fleet`` (one shared dependency) or ``scope: worker``, ramps, targeting by
worker, tool and template, and ``swarm`` draws per seed.  Chains: a step with ``needs``
that runs on incomplete inputs produces wrong output (no commit, ``wrong_input_steps``).
Storms: with ``api_reject_cost > 0`` every refused request still drains the shared
bucket, so blind retries keep 429s going after the rate-limit window that started them.

Conventions as in conftest.py: RTT 0.1 s, cv 0 durations; blip 1.0 s, 429 0.1 s and
partial-batch 0.5 s fail-fast extras on top of the round trip.
"""

from __future__ import annotations

import dataclasses

import pytest

from fleetchaos.policies import BlindRetry, resume_point
from fleetchaos.sim.faults import build_plan
from fleetchaos.sim.formats.generic import GenericFormat
from fleetchaos.sim.observation import Escalate, GiveUp, Retry

APPROX = dict(abs=1e-6)


def one_call(sim, seconds: float = 1.0):
    return {"job": [sim.step("call", seconds)]}


def blips(**schedule) -> list[dict]:
    return [{"kind": "network_blip", "probability": 1.0, **schedule}]


def failed_ids(r) -> list[int]:
    return [rec.id for rec in r.records if rec.claim != "success"]


# --------------------------------------------------------------------------------------
# recurring windows
# --------------------------------------------------------------------------------------


def test_recurring_window_repeats_every_period(sim):
    """A 5 s window every 20 s: calls starting at 0, 3, 22 and 41 blip; those at 10 and 30 do not."""
    scn = sim.scenario(
        one_call(sim),
        arrivals=[(t, "job") for t in (0.0, 3.0, 10.0, 22.0, 30.0, 41.0)],
        faults=blips(windows=[{"start_s": 0, "duration_s": 5, "every_s": 20}]),
        duration_s=60,
    )
    r = sim.run(scn, BlindRetry(0), "generic")
    # spans [0, 5), [20, 25), [40, 45) up to the 60 s horizon
    assert r.output.plan.describe() == [
        "network_blip (faults[0]) active from 0s to 5s",
        "network_blip (faults[0]) active from 20s to 25s",
        "network_blip (faults[0]) active from 40s to 45s",
    ]
    assert [rec.claim for rec in r.records] == ["failed", "failed", "success", "failed", "success", "failed"]
    assert [t for t, *_ in r.output.fault_log] == [0.0, 3.0, 22.0, 41.0]
    # a blip lasts 0.1 + 1.0 ; a call 0.1 + 1
    assert [rec.end_s - rec.arrival_s for rec in r.records] == pytest.approx([1.1] * 6, **APPROX)


# --------------------------------------------------------------------------------------
# bursts: fleet scope (correlated) vs worker scope
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["fleet", "worker"])
def test_burst_bad_phases_decide_every_call(sim, scope):
    """Each call blips iff it starts in its worker's bad phase; fleet scope gives both workers the same phases."""
    scn = sim.scenario(
        one_call(sim),
        # two tasks every 10 s: even ids -> worker 0, odd ids -> worker 1 (round robin)
        arrivals=[(float(t), "job") for t in range(0, 1000, 10) for _ in range(2)],
        faults=blips(burst={"mean_good_s": 100, "mean_bad_s": 50, "scope": scope}),
        workers=2,
        duration_s=1000,
    )
    r = sim.run(scn, BlindRetry(0), "generic")
    phases = {w: spans.spans for w, spans in r.output.plan.rules[0].worker_spans.items()}
    assert phases[0] and phases[1]

    def bad(w: int, t: float) -> bool:
        return any(start <= t < end for start, end in phases[w])

    predicted = [rec.id for rec in r.records if bad(rec.id % 2, rec.arrival_s)]
    assert failed_ids(r) == predicted
    assert 0 < len(predicted) < len(r.records)  # some calls in bad phases, some in good ones
    pairs = [(r.records[2 * i].claim, r.records[2 * i + 1].claim) for i in range(100)]
    if scope == "fleet":
        assert phases[0] == phases[1]  # one shared dependency: both workers down together
        assert all(a == b for a, b in pairs)
    else:
        assert phases[0] != phases[1]
        assert any(a != b for a, b in pairs)


# --------------------------------------------------------------------------------------
# ramps
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("upward", [True, False])
def test_ramp_moves_the_probability_linearly(sim, upward):
    """A ramp 0 -> 1 over [0, 100]: p(0)=0 never fails, p(25)=0.25, p(>=100)=1 always fails (and the reverse)."""
    lo, hi = (0.0, 1.0) if upward else (1.0, 0.0)
    scn = sim.scenario(
        one_call(sim),
        # task 0 at 0, tasks 1..40 at 50 (64 slots: no queueing), task 41 at 100, task 42 at 150
        arrivals=[(0.0, "job")] + [(50.0, "job")] * 40 + [(100.0, "job"), (150.0, "job")],
        faults=[
            {"kind": "network_blip", "ramp": {"start_s": 0, "end_s": 100, "from_probability": lo, "to_probability": hi}}
        ],
        tool_slots=64,
        duration_s=200,
    )
    rule = build_plan(scn, 0).rules[0]
    assert [rule.probability_at(t, 0) for t in (0, 25, 50, 100, 150)] == pytest.approx(
        [lo, lo + 0.25 * (hi - lo), 0.5, hi, hi], **APPROX
    )
    for seed in range(3):
        r = sim.run(scn, BlindRetry(0), "generic", seed)
        ends = [r.records[0].claim, r.records[41].claim, r.records[42].claim]
        assert ends == (["success", "failed", "failed"] if upward else ["failed", "success", "success"])
        mid = sum(rec.claim == "failed" for rec in r.records[1:41])
        assert 8 <= mid <= 32  # p = 0.5 at t = 50: Binomial(40, 0.5), outside this range with P < 1e-4


# --------------------------------------------------------------------------------------
# targeting by worker, tool and template
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target, failing, tool",
    [
        ({"workers": [1]}, [1, 3], "a"),
        ({"tools": ["b"]}, [0, 1, 2, 3], "b"),
        ({"templates": ["t2"]}, [0, 1], "a"),
        ({"workers": [1], "tools": ["b"], "templates": ["t2"]}, [1], "b"),
    ],
)
def test_targeting_restricts_calls_by_worker_tool_and_template(sim, target, failing, tool):
    """A blip with p=1 hits exactly the calls matching every filter: worker AND tool AND template."""
    steps = [sim.step("a", 1), sim.step("b", 1)]
    scn = sim.scenario(
        {"t1": steps, "t2": steps},
        # ids by arrival order: 0 (t2, w0), 1 (t2, w1), 2 (t1, w0), 3 (t1, w1)
        arrivals=[(0.0, "t2"), (0.0, "t2"), (0.0, "t1"), (0.0, "t1")],
        faults=blips(**target),
        workers=2,
    )
    r = sim.run(scn, BlindRetry(0), "generic")
    assert failed_ids(r) == failing
    # a failing at 'a' blips at 0 -> 1.1 ; at 'b': a 1.1, b blips -> 2.2 ; the others end 2.2
    at = 0.0 if tool == "a" else 1.1
    assert [(round(t, 6), kind, tl, w, task) for t, kind, tl, w, task in r.output.fault_log] == [
        (at, "network_blip", tool, task % 2, task) for task in failing
    ]
    for rec in r.records:
        assert rec.end_s == pytest.approx(1.1 if rec.id in failing and tool == "a" else 2.2, **APPROX)
        assert rec.truth == (
            "none" if rec.id in failing and tool == "a" else "partial" if rec.id in failing else "full"
        )


# --------------------------------------------------------------------------------------
# swarm: parameters drawn per seed
# --------------------------------------------------------------------------------------


def test_swarm_draws_the_same_value_per_seed_and_different_values_across_seeds(sim):
    """connect_timeout_s drawn from [5, 50]: a cut-off dispatch lasts exactly the drawn value, fixed per seed."""
    scn = sim.scenario(
        one_call(sim),
        faults=[
            {
                "kind": "network_partition",
                "windows": [{"start_s": 0, "duration_s": 1000}],
                "swarm": {"connect_timeout_s": [5, 50]},
            }
        ],
    )
    drawn = {}
    for seed in (0, 1, 2, 3, 0, 1):
        r = sim.run(scn, BlindRetry(0), "generic", seed)
        [resolved] = r.output.plan.resolved
        value = resolved["connect_timeout_s"]
        assert "swarm" not in resolved and 5 <= value <= 50
        assert r.rec.end_s == pytest.approx(value, **APPROX)  # one dispatch, failed after the timeout
        assert drawn.setdefault(seed, value) == value  # same seed, same world
    assert len(set(drawn.values())) == 4  # different seeds, different worlds


def test_swarm_integer_parameter_is_rounded_and_drives_the_truth(sim):
    """partial_batch failures drawn from [1, 4] is an int; exactly that many of the 5 items fail."""
    scn = sim.scenario(
        {"batch": [sim.step("search", 10, fan_out=5)]},
        faults=[{"kind": "partial_batch", "probability": 1.0, "swarm": {"failures": [1, 4]}}],
    )
    values = set()
    for seed in range(6):
        plan = build_plan(scn, seed)
        k = plan.rules[0].spec.failures
        assert isinstance(k, int) and 1 <= k <= 4
        # plan.resolved (for replay) omits a value equal to the default (2): it replays the same
        assert plan.resolved[0].get("failures", 2) == k and "swarm" not in plan.resolved[0]
        values.add(k)
        r = sim.run(scn, BlindRetry(0), "generic", seed)
        assert r.rec.commits[0].count(0) == k and r.rec.fault_hits == {"partial_batch": k}
    assert len(values) > 1


# --------------------------------------------------------------------------------------
# dependency chains (needs)
# --------------------------------------------------------------------------------------


def chain_world(sim, **fleet):
    return sim.scenario(
        {
            "research": [
                sim.step("search", 10, fan_out=5),
                sim.step("synth", 20, needs=["search"]),
                sim.step("publish", 5, needs=["synth"], side_effect="append"),
            ]
        },
        faults=[
            {"kind": "partial_batch", "probability": 1.0, "failures": 2, "windows": [{"start_s": 0, "duration_s": 1}]}
        ],
        **fleet,
    )


def test_dependency_chain_generic_propagates_wrong_output(sim):
    """A generic tool that hides partial batches (partial_batch: ok) passes 3/5 sources on: synth is wrong, so
    publish (which needs synth) is wrong too: 2 wrong steps."""
    r = sim.run(chain_world(sim, partial_batch="ok"), "blind-retry", "generic")
    # search 10.1 (2 items failed, tool says ok) ; synth 20.1 on 3/5 -> 30.2 wrong ; publish on nothing -> 35.3 wrong
    rec = r.rec
    assert r.log == []
    assert rec.commits[0].count(1) == 3 and rec.commits[1:] == [[0], [0]]
    assert rec.wrong_input_steps == 2
    assert rec.claim == "success" and rec.truth == "partial" and r.out.silent_failure
    assert rec.end_s == pytest.approx(35.3, **APPROX)


class _GiveUpAtOnce:
    name = "give-up-at-once"

    def decide(self, observation, history):
        return GiveUp()


def test_a_call_on_incomplete_inputs_that_times_out_yet_commits_takes_no_effect(sim):
    """One dispatch: search is partial (a generic tool that says ok), synth runs on it, publish runs on
    the wrong synth and times out though its post went through.  Like a successful call on
    incomplete inputs, what it did is wrong, so nothing took effect."""
    world = sim.scenario(
        {"research": [
            sim.step("search", 10, fan_out=5),
            sim.step("synth", 20, needs=["search"]),
            sim.step("publish", 5, needs=["synth"], side_effect="append"),
        ]},
        faults=[
            {"kind": "partial_batch", "probability": 1.0, "failures": 2, "windows": [{"start_s": 0, "duration_s": 1}]},
            {"kind": "timeout", "probability": 1.0, "tools": ["publish"], "committed_probability": 1.0},
        ],
        partial_batch="ok",
    )  # fmt: skip
    r = sim.run(world, _GiveUpAtOnce(), "generic")
    rec = r.rec
    assert rec.fault_hits == {"partial_batch": 2, "timeout": 1} and rec.claim == "failed"
    assert rec.commits[0].count(1) == 3 and rec.commits[1:] == [[0], [0]]
    assert rec.wrong_input_steps == 1  # synth "succeeded" on wrong inputs; publish failed


def test_dependency_chain_structured_completes_inputs_first(sim):
    """Structured stops at the partial search and retries its 2 items, so synth and publish run on full inputs."""
    r = sim.run(chain_world(sim), "structured", "structured")
    [d] = r.log
    assert d.observation.envelope.error_code == "BATCH_ITEM_FAILED" and len(d.action.done_items) == 3
    delay = d.action.delay_s
    # 10.1 + delay: 2 items -> 20.2 + delay ; synth -> 40.3 + delay ; publish -> 45.4 + delay
    rec = r.rec
    assert rec.commits == [[1] * 5, [1], [1]] and rec.wrong_input_steps == 0
    assert rec.claim == "success" and r.out.recovered
    assert rec.end_s == pytest.approx(45.4 + delay, **APPROX)


# --------------------------------------------------------------------------------------
# load-dependent storms: api_reject_cost
# --------------------------------------------------------------------------------------


def storm_world(sim, cost: float):
    """a -> b (1 s each, API); 1 token/s, burst 1; no refill at all in [0, 10)."""
    return sim.scenario(
        {"job": [sim.step("a", 1), sim.step("b", 1)]},
        faults=[{"kind": "rate_limit", "capacity_factor": 0.0, "windows": [{"start_s": 0, "duration_s": 10}]}],
        api_rate_per_s=1.0,
        api_burst=1,
        api_reject_cost=cost,
    )


@pytest.mark.parametrize(
    "cost, claim, hits, late_hits, retries, calls, commits",
    [
        # a takes the only token -> 1.1 ; b 429 -> 1.3 (token at 11) ; restarts every 0.2 s:
        # 1.3 .. 10.9 fail (49), the one at 11.1 finds a token: a 12.2, b 13.3
        (0.0, "success", 1 + 49, 5, 50, 2 + 49 + 2, [[2], [1]]),
        # every 429 also takes a token (floor -1): +0.2 refill per 0.2 s gap never reaches 1,
        # so all 60 restarts fail, 16 of them after the window ended (10.1 .. 13.1) -> 13.3
        (1.0, "failed", 1 + 60, 16, 60, 2 + 60, [[1], [0]]),
    ],
)
def test_reject_cost_keeps_the_storm_going_after_the_window(sim, cost, claim, hits, late_hits, retries, calls, commits):
    """With api_reject_cost 0 the 429s stop 1 s after the window; with 1 the blind retries starve themselves for good."""
    r = sim.run(storm_world(sim, cost), BlindRetry(max_retries=60), "generic")
    rec = r.rec
    assert rec.claim == claim and rec.commits == commits
    assert rec.fault_hits == {"rate_limit": hits} and rec.retries == retries and rec.calls == calls
    assert sum(t >= 10.0 for t, *_ in r.output.fault_log) == late_hits
    assert rec.wasted_reasons == {"API token bucket still empty": hits - 1}  # every restart found the bucket empty
    assert rec.failed_retries == retries - (claim == "success")  # all but the one that found a token
    assert rec.end_s == pytest.approx(13.3, **APPROX)


@dataclasses.dataclass
class WaitHint:
    """Waits exactly the retry-after hint plus ``margin_s`` (once), resuming; else escalates."""

    margin_s: float = 0.05
    name: str = "wait-hint"

    def decide(self, observation, history):
        env = observation.envelope
        if env is None or env.retry_after_ms is None or history.retries >= 1:
            return Escalate("no hint or already retried")
        start, done = resume_point(env)
        return Retry(env.retry_after_ms / 1000.0 + self.margin_s, start, done)


def hint_world(sim, cost: float):
    return sim.scenario(
        {"job": [sim.step("a", 0.3), sim.step("b", 0.3)]}, api_rate_per_s=1.0, api_burst=1, api_reject_cost=cost
    )


@pytest.mark.parametrize(
    "cost, hint_ms",
    [
        # a takes the token -> 0.4 ; b at 0.4: 0.4 tokens, 429, token at 1.0 ; seen at 0.6 -> 400 ms
        # wait 0.45 -> b at 1.05 with 1.05 tokens -> ok -> 1.45
        (0.0, 400),
        # the refused b also takes 1 token: 0.4 - 1 = -0.6 ; a token is due at 0.4 + 1.6 = 2.0 ;
        # seen at 0.6 -> the hint must be 1400 ms ("never a hint shorter than the real wait")
        (1.0, 1400),
    ],
)
def test_retry_after_hint_is_honest_under_reject_cost(sim, cost, hint_ms):
    """Waiting exactly the 429 hint (+0.05 s) finds a token, with or without a reject cost."""
    r = sim.run(hint_world(sim, cost), sim.Recorder(WaitHint()), "structured")
    first = r.log[0]
    assert first.observation.envelope.error_code == "RATE_LIMITED"
    assert GenericFormat().render(r.reports[0]).status == "failed"  # generic: no hint at all
    assert first.observation.envelope.retry_after_ms == hint_ms
    assert r.rec.claim == "success" and r.rec.fault_hits == {"rate_limit": 1}
    assert r.rec.end_s == pytest.approx(0.6 + hint_ms / 1000 + 0.05 + 0.4, **APPROX)
