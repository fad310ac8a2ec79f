"""A real-code run keeps the simulator's conversation: the same turns, context and tokens, written once."""

from __future__ import annotations

import fleetchaos
from fleetchaos.real import InjectedFault, run_real


@fleetchaos.tool("fetch")
def fetch(task_id: int) -> str:
    return f"data-{task_id}"


@fleetchaos.tool("write", item=lambda task_id, slot: slot)
def write(task_id: int, slot: int) -> None:
    return None


def agent(task, rt):
    for _ in range(20):
        try:
            fetch(task.id)
            break
        except InjectedFault:
            pass
    for slot in range(4):
        write(task.id, slot)
    return "success"


def test_a_real_run_reads_the_context_the_simulator_reads(small_scenario):
    """No fault: fetch's turn reads the 2000-token system prompt, the writes' turn that and fetch's 200-token
    result; 5 calls emit 2000 tokens each."""
    run = run_real(small_scenario([]), agent, seed=1)
    for rec in run.records:
        assert (rec.turns, rec.input_tokens, rec.tokens, rec.context_tokens) == (2, 4200, 14_200, 3000)


def test_an_error_text_the_code_is_handed_joins_the_context(small_scenario):
    """The first task's fetch blips once (a fast failure, no output): the retry's turn reads its error text e,
    and so does the writes' turn: 2000 + (2000 + e) + (2200 + e) read, 3000 + e left in the context."""
    window = {"start_s": 0, "duration_s": 0.5}
    spec = small_scenario([{"kind": "network_blip", "probability": 1.0, "tools": ["fetch"], "windows": [window]}])
    first = run_real(spec, agent, seed=1).records[0]
    assert first.fault_hits == {"network_blip": 1}
    e = first.context_tokens - 3000
    assert e > 10  # a vendor's error text, a few dozen tokens
    assert first.turns == 3
    assert first.input_tokens == 6200 + 2 * e
    assert first.tokens == first.input_tokens + 5 * 2000
