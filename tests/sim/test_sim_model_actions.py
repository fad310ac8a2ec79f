"""The model-side recovery actions against hand-computed worlds: a repair turn, a re-prompt, a fallback model, a
stream resume (fleetchaos.sim.model_turns).

Each world is one step that the model-side fault hits on every first turn, so what happens
next is the action's alone: the counts follow from the settings by hand (a binomial count
within four standard deviations of N p, exact counts where the chance is 0 or 1), never from
the code's own figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from fleetchaos.sim.observation import (
    Action,
    FallbackModel,
    GiveUp,
    Observation,
    RepairTurn,
    RepromptWithSchema,
    ResumeStream,
    Retry,
    TaskHistory,
)

N = 400


@dataclass(frozen=True)
class Once:
    """Answer the first ``times`` failures of a task with ``action``, then give up."""

    action: type
    times: int = 1
    name: str = "once"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        return self.action() if history.retries < self.times else GiveUp()


def _world(sim, tool: str, faults: list[dict], *, side_effect: str | None = None, **model):
    extra = {"side_effect": side_effect} if side_effect else {}
    return sim.scenario(
        {"job": [sim.step(tool, 1, tokens=100, **extra)]},
        [(20.0 * i, "job") for i in range(N)],
        faults,
        duration_s=20.0 * N + 10,
        model={"system_prompt_tokens": 1000, **model},
    )


def _recovered(run) -> int:
    return sum(1 for rec in run.records if rec.claim == "success" and rec.truth == "full")


def _within_binomial(count: int, n: int, p: float) -> bool:
    return abs(count - n * p) <= 4 * math.sqrt(n * p * (1 - p))


MALFORMED = [{"kind": "malformed_args", "probability": 1.0, "tools": ["work"]}]


@pytest.mark.parametrize("p", [0.0, 0.3, 0.7, 1.0])
def test_a_repair_turn_passes_with_its_probability_and_a_failed_one_is_wasted(sim, p):
    """Every first turn is malformed; one repair turn each: about N p tasks recover (exactly 0 or N at the ends), and
    the judge counts exactly the repairs that came back malformed as wasted."""
    run = sim.run(_world(sim, "work", MALFORMED, repair_valid_probability=p), Once(RepairTurn), "generic", seed=3)
    recovered = _recovered(run)
    if p in (0.0, 1.0):
        assert recovered == N * p
    else:
        assert _within_binomial(recovered, N, p), (recovered, N * p)
    assert run.metrics["wasted_retries"] == N - recovered
    assert all(rec.turns == 2 and rec.model_turns == {"repair": 1} for rec in run.records)


def test_a_fresh_turn_never_passes_where_every_turn_is_malformed(sim):
    """The naive retry asks a fresh turn, which the fault hits again (probability 1): nothing recovers, all wasted."""
    run = sim.run(_world(sim, "work", MALFORMED, repair_valid_probability=0.9), Once(Retry), "generic", seed=3)
    assert _recovered(run) == 0 and run.metrics["wasted_retries"] == N


def test_a_reprompt_reads_the_schema_and_passes_with_its_own_probability(sim):
    """The re-prompt's turn reads schema_tokens more context than the repair turn's, exactly; its chance is its own."""
    repair = sim.run(_world(sim, "work", MALFORMED, repair_valid_probability=1.0), Once(RepairTurn), "generic")
    reprompt = sim.run(
        _world(sim, "work", MALFORMED, reprompt_valid_probability=1.0, schema_tokens=640),
        Once(RepromptWithSchema),
        "generic",
    )
    assert _recovered(repair) == _recovered(reprompt) == N
    assert all(b.input_tokens - a.input_tokens == 640 for a, b in zip(repair.records, reprompt.records))
    low = sim.run(
        _world(sim, "work", MALFORMED, reprompt_valid_probability=0.5, repair_valid_probability=1.0),
        Once(RepromptWithSchema),
        "generic",
        seed=5,
    )
    assert _within_binomial(_recovered(low), N, 0.5)


CUT = [{"kind": "stream_cut", "probability": 1.0, "committed_probability": 1.0, "timeout_s": 5, "tools": ["post"]}]


def test_a_naive_retry_of_a_cut_stream_duplicates_each_committed_post_and_a_resume_none(sim):
    """Every turn's stream is cut after its post committed.  Two naive retries post each comment three times: 2 N
    duplicates; a resume keeps the committed post: no duplicate, every task done with one post and one call."""
    world = _world(sim, "post", CUT, side_effect="append")
    naive = sim.run(world, Once(Retry, times=2), "generic")
    assert naive.metrics["duplicate_side_effects"] == 2 * N
    assert all(rec.commits == [[3]] for rec in naive.records)
    resumed = sim.run(world, Once(ResumeStream, times=2), "generic")
    assert resumed.metrics["duplicate_side_effects"] == 0 and resumed.metrics["deduplicated_side_effects"] == 0
    assert all(rec.commits == [[1]] and rec.claim == "success" and rec.calls == 1 for rec in resumed.records)
    assert resumed.metrics["wasted_retries"] == 0  # nothing was sent again


def test_a_resume_sends_again_what_had_not_committed(sim):
    """A cut before the post committed leaves nothing to keep: the resume sends it again (cut again here)."""
    uncommitted = [{**CUT[0], "committed_probability": 0.0}]
    run = sim.run(_world(sim, "post", uncommitted, side_effect="append"), Once(ResumeStream), "generic")
    assert all(rec.commits == [[0]] and rec.calls == 2 for rec in run.records)
    assert run.metrics["wasted_retries"] == N  # the resent post is cut again: the cause held


REFUSAL = [{"kind": "refusal", "probability": 1.0, "tools": ["draft"]}]
FALLBACK = {"name": "second", "usd_per_1k_tokens": 0.03, "usd_per_1k_input_tokens": 0.007}


def test_a_fallback_model_answers_what_the_first_refuses(sim):
    """The first model refuses every draft (deterministically: a retry on it never passes); a fallback that never
    refuses answers each on its one turn, whose tokens are its own and priced at its prices."""
    same = sim.run(_world(sim, "draft", REFUSAL), Once(Retry), "generic")
    assert _recovered(same) == 0 and same.metrics["wasted_retries"] == N
    alone = sim.run(_world(sim, "draft", REFUSAL), Once(FallbackModel), "generic")  # none declared: the same model
    assert _recovered(alone) == 0 and alone.metrics["wasted_retries"] == N
    world = _world(sim, "draft", REFUSAL, fallback={**FALLBACK, "denial_factor": 0.0})
    run = sim.run(world, Once(FallbackModel), "generic")
    assert _recovered(run) == N and run.metrics["wasted_retries"] == 0
    rec = run.records[0]
    read = 1000 + (rec.input_tokens - 2 * 1000)  # the second turn read the system prompt and the error text
    # By hand: the first turn read 1000 tokens and emitted nothing (a refusal runs no call); the fallback's turn
    # read the same 1000 and the error text, and emitted the draft's 100.
    assert (rec.tokens, rec.fallback_tokens, rec.fallback_input_tokens) == (1000 + read + 100, read + 100, read)
    per_task = 1000 / 1000 * 0.0025 + read / 1000 * 0.007 + 100 / 1000 * 0.03
    assert run.metrics["token_cost_usd"] == pytest.approx(N * per_task)


def test_the_fallback_draws_its_own_denials(sim):
    """Half the drafts are refused by the first model; the fallback, as cautious (denial_factor 1) but drawing apart,
    answers about half of those; one as strict as certain (probability 1 times the factor) answers none."""
    half = [{**REFUSAL[0], "probability": 0.5}]
    run = sim.run(_world(sim, "draft", half, fallback=FALLBACK), Once(FallbackModel), "generic", seed=7)
    denied = [rec for rec in run.records if rec.fault_hits.get("refusal")]
    answered = sum(1 for rec in denied if rec.claim == "success" and rec.truth == "full")
    assert _within_binomial(len(denied), N, 0.5) and _within_binomial(answered, len(denied), 0.5)
    assert run.metrics["wasted_retries"] == len(denied) - answered
    strict = sim.run(
        _world(sim, "draft", REFUSAL, fallback={**FALLBACK, "denial_factor": 1.0}), Once(FallbackModel), "generic"
    )
    assert _recovered(strict) == 0 and strict.metrics["wasted_retries"] == N
