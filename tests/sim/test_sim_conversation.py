"""A task as a conversation: each turn reads the context so far, which grows by results and error texts.

The figures are worked out by hand from the worlds' stories (system prompt, results, the
tokeniser rule), never read back from the metrics module.
"""

from __future__ import annotations

import math

import pytest

from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import load_scenario
from fleetchaos.sim.conversation import Tokeniser
from fleetchaos.sim.observation import Observation


def _failing_world(sim, **model):
    """One task: ``check`` fails its validation every time; blind-retry retries it until its cap."""
    return sim.scenario(
        {"val": [sim.step("check", 1, tokens=7)]},
        faults=[{"kind": "validation_error", "probability": 1.0, "tools": ["check"]}],
        max_actions_per_task=3,
        model={"system_prompt_tokens": 1000, "result_tokens": 50, **model},
    )


def test_the_tokeniser_rule_rounds_characters_up_to_tokens():
    rule = Tokeniser(4.0)
    assert [rule.count("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    assert Tokeniser(2.5).count("x" * 10) == 4
    assert rule.observation(Observation(ok=False, status="failed", worker=0)) == 2  # 6 characters


@pytest.mark.parametrize("errors", ["generic", "structured"])
def test_each_retry_reads_the_error_texts_before_it(sim, errors):
    """Turn k of a task failing the same way reads the system prompt and k - 1 error texts."""
    r = sim.run(_failing_world(sim), "blind-retry", errors)
    rec = r.rec
    texts = [obs for _, obs in r.rendered if not obs.ok]
    e = [math.ceil(len(obs.rendered_text()) / 4) for obs in texts]
    turns = rec.turns
    assert turns == len(texts) >= 3
    # turn 1 reads 1000, turn 2 reads 1000 + e1, turn 3 1000 + e1 + e2, ...
    assert rec.input_tokens == sum(1000 + sum(e[:k]) for k in range(turns))
    assert rec.context_tokens == 1000 + sum(e)
    assert rec.tokens == rec.input_tokens  # a validation failure fails fast: its calls emit nothing


def test_a_wordier_format_costs_more_context_for_the_same_failures(sim):
    """Same world, same failures: the raw trace costs more tokens than the envelope, the envelope than a word."""
    read = {
        e: sim.run(_failing_world(sim), "blind-retry", e).rec.input_tokens for e in ("generic", "structured", "raw")
    }
    assert read["generic"] < read["structured"] < read["raw"]


def test_results_and_the_system_prompt_grow_the_context_the_next_turn_reads(sim):
    """Three steps, no fault: turns read 1000, 1000 + 50, 1000 + 50 + 3 x 50 (the fan-out's three results)."""
    scn = sim.scenario(
        {"job": [sim.step("a", 1, tokens=10), sim.step("b", 1, tokens=10, fan_out=3), sim.step("c", 1, tokens=10)]},
        model={"system_prompt_tokens": 1000, "result_tokens": 50},
    )
    rec = sim.run(scn, "blind-retry", "generic").rec
    assert rec.turns == 3
    assert rec.input_tokens == 1000 + 1050 + 1200
    assert rec.tokens == 1000 + 1050 + 1200 + 10 * 5
    assert rec.context_tokens == 1000 + 5 * 50


def test_a_step_without_the_api_takes_no_turn_but_its_result_joins_the_context(sim):
    scn = sim.scenario(
        {"job": [sim.step("test", 1, uses_api=False), sim.step("push", 1, tokens=10, result_tokens=0)]},
        model={"system_prompt_tokens": 100, "result_tokens": 30},
    )
    rec = sim.run(scn, "blind-retry", "generic").rec
    assert rec.turns == 1 and rec.input_tokens == 130 and rec.context_tokens == 130


def test_the_conversation_changes_tokens_and_their_cost_only():
    """Today's templates keep their meaning: with other conversation settings every other figure is the same."""
    base = load_scenario("default")
    doc = base.model_dump()
    doc["fleet"]["model"] = {"system_prompt_tokens": 0, "result_tokens": 5000, "chars_per_token": 1.0}
    other = type(base).model_validate(doc)
    for errors in ("generic", "structured"):
        a, b = run_one(base, "structured", errors, 3), run_one(other, "structured", errors, 3)
        read = {"tokens", "input_tokens", "token_cost_usd", "cost_usd"}
        for name in a.metrics:
            if name not in read:
                assert a.metrics[name] == b.metrics[name], (errors, name)
        assert a.metrics["input_tokens"] != b.metrics["input_tokens"]
        assert a.metrics["tokens"] - a.metrics["input_tokens"] == b.metrics["tokens"] - b.metrics["input_tokens"]
