"""Context overflow: it emerges from the tool outputs' sizes and the model's window, and a plain retry of it is wasted.

Worked out by hand on the shared tiny worlds (tests/sim/conftest.py: constant steps, the model's reading switched
off): a task of three turns whose context starts at 1000 tokens and grows by 500 per tool result reads 1000, 1500 and
2000 tokens.
"""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from fleetchaos.results.metrics import compute_run
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.kind_record import PERMANENT_ERROR

THREE = ("plan", "read", "write")


def _three(sim, window: int, **model):
    model = {"system_prompt_tokens": 1000, "result_tokens": 500, "context_window_tokens": window, **model}
    return sim.scenario({"job": [sim.step(name, 2, tokens=10) for name in THREE]}, model=model)


def test_a_context_that_fits_the_window_is_read_whole(sim):
    """A window of 2000 holds the third turn's 2000 tokens: no overflow, 4500 input tokens."""
    rec = sim.run(_three(sim, 2000), "blind-retry", "generic").rec
    assert rec.fault_hits == {} and rec.claim == "success"
    assert (rec.turns, rec.input_tokens) == (3, 1000 + 1500 + 2000)


def test_a_turn_past_the_window_is_refused_and_a_plain_retry_is_wasted(sim):
    """A window of 1999: the third turn's 2000 tokens are refused before the model reads them (not billed) and nothing
    is written.  blind-retry restarts on the generic word: the context now holds the word "failed" too (2 tokens), so
    each of its three retries is refused at its first turn and wasted (the context still past the window), in the
    family of a permanent error retried."""
    scn = _three(sim, 1999)
    r = sim.run(scn, "blind-retry", "generic")
    rec = r.rec
    assert rec.fault_hits == {"context_overflow": 4} and rec.claim == "failed"
    assert rec.commits == [[1], [1], [0]]
    assert (rec.retries, rec.wasted_retries) == (3, 3)
    assert rec.input_tokens == 1000 + 1500  # the four refused turns read nothing
    assert rec.context_tokens == 2000 + 4 * 2  # each refusal's "failed" joined the context
    _, breakdowns, _ = compute_run(r.output, scn.fleet)
    assert breakdowns["wasted_retries_by_family"] == {PERMANENT_ERROR: 3}


def test_result_sizes_spread_around_their_median_and_the_tail_grows_with_the_shape():
    """A result's tokens are lognormal around the step's result_tokens: the same call draws the same size, half of the
    calls draw less and half more, their mean is result_tokens x exp(sigma^2 / 2), and a wider shape puts more of
    them far above it (one in a hundred above 10x at sigma 1: exp(2.326) = 10.2)."""
    from fleetchaos.sim.conversation import ResultSizes

    keys = range(1, 20_001)
    assert ResultSizes(0.0).tokens(500, 7) == 500
    for sigma in (0.5, 1.0):
        sizes = sorted(ResultSizes(sigma).tokens(500, k) for k in keys)
        assert sizes[len(sizes) // 2] == pytest.approx(500, rel=0.03)
        assert sum(sizes) / len(sizes) == pytest.approx(500 * math.exp(sigma**2 / 2), rel=0.03)
    assert [ResultSizes(1.0).tokens(500, k) for k in range(1, 51)] == [
        ResultSizes(1.0).tokens(500, k) for k in range(1, 51)
    ]
    tail = {sigma: sum(ResultSizes(sigma).tokens(500, k) > 5000 for k in keys) for sigma in (0.5, 1.0, 2.0)}
    assert tail[0.5] < tail[1.0] < tail[2.0]
    assert tail[1.0] == pytest.approx(0.0107 * len(keys), rel=0.15)  # P(Z > ln 10) = 1.07%


def _tailed(sim, sigma: float):
    """40 tasks of five turns, 2000-token results on a 2000-token prompt: without a tail the turns read 2000 to 10000
    tokens, well inside a 16000-token window; only a tail can pass it."""
    steps = [sim.step(f"s{i}", 2, tokens=10) for i in range(5)]
    model = {"system_prompt_tokens": 2000, "result_tokens": 2000, "context_window_tokens": 16000}
    model["result_tokens_sigma"] = sigma
    arrivals = [(60.0 * i, "job") for i in range(40)]
    return sim.scenario({"job": steps}, arrivals, model=model)


def test_overflow_rises_with_the_tool_outputs_tail_on_every_seed(sim):
    """The same calls draw the same normals in every arm: more spread, more tasks refused for their context, seed by
    seed; without a tail none is."""
    for seed in (1, 2, 3, 4, 5):
        overflowed = []
        for sigma in (0.0, 1.0, 1.5, 2.0, 2.5):
            records = sim.run(_tailed(sim, sigma), "blind-retry", "generic", seed=seed).records
            overflowed.append(sum("context_overflow" in r.fault_hits for r in records))
        assert overflowed[0] == 0 and overflowed == sorted(overflowed) and overflowed[-1] > 0, (seed, overflowed)


def test_context_overflow_is_never_declared(sim):
    scn = _three(sim, 2000).model_dump(mode="json", exclude_none=True)
    scn["faults"] = [{"kind": "context_overflow"}]
    with pytest.raises(ValidationError, match="fleet.model.context_window_tokens"):
        Scenario.model_validate(scn)
