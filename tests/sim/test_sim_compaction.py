"""Context compaction against a hand-computed world (fleetchaos.sim.compaction).

The world: one task of three turns (plan, read, write; 2 s each, 10 output tokens per call) on a 1000-token system
prompt, each tool result 500 tokens, a 1999-token window, generic errors ("failed": 6 characters, 2 tokens).  The
turns read 1000 and 1500 tokens; the third would read 2000 and is refused (context_overflow, 0.5 s, nothing
billed); "failed" joins the context: 2002 tokens.

A compaction with a 300-token summary and nothing kept summarises the 1002 tokens after the system prompt: it reads
them (1002 input tokens), writes 300, and leaves 1000 + 300 = 1300 tokens, 702 fewer.  The retry from the failed
step then reads 1300 tokens and writes the answer; the answer rests on the summarised plan and read.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fleetchaos.results.metrics import compute_run
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.observation import Action, CompactContext, GiveUp, Observation, Retry, TaskHistory

THREE = ("plan", "read", "write")
SUMMARY, COMPACT_S = 300, 5.0


@dataclass(frozen=True)
class CompactOnce:
    """Answer the first failure with ``action`` from step ``resume_from`` (the step that overflowed), then give up."""

    action: type = CompactContext
    resume_from: int = 2
    times: int = 1
    name: str = "compact-once"

    def decide(self, observation: Observation, history: TaskHistory) -> Action:
        return self.action(0.0, self.resume_from) if history.retries < self.times else GiveUp()


def _world(sim, faults: list[dict] | None = None, **compaction):
    compaction = {"summary_tokens": SUMMARY, "duration": {"mean_s": COMPACT_S, "cv": 0}, **compaction}
    model = {"system_prompt_tokens": 1000, "result_tokens": 500, "context_window_tokens": 1999}
    return sim.scenario(
        {"job": [sim.step(name, 2, tokens=10) for name in THREE]},
        faults=faults,
        model={**model, "compaction": compaction},
    )


def test_a_compaction_shrinks_the_context_by_the_computed_amount_and_the_task_is_partial(sim):
    scn = _world(sim)
    r = sim.run(scn, CompactOnce(), "generic")
    rec = r.rec
    assert rec.fault_hits == {"context_overflow": 1}
    assert rec.model_turns == {"compact": 1} and rec.compactions_failed == 0
    # after the compaction: 1000 + 300 = 1300; the answer's result joins it: 1800
    assert rec.context_tokens == 1000 + SUMMARY + 500
    assert rec.turns == 3 + 1 + 1  # three turns (the refused one too), the compaction, the retried write
    assert rec.input_tokens == 1000 + 1500 + 1002 + 1300
    assert rec.tokens == rec.input_tokens + 10 + 10 + SUMMARY + 10
    assert rec.commits == [[1], [1], [1]]
    assert rec.summarised == ((0, 1), (1, 1))  # plan and read, each at its first execution
    # 2.1 + 2.1 for plan and read, 0.5 refused, 0.1 + 5 for the compaction, 2.1 for the write
    assert rec.end_s == pytest.approx(2.1 + 2.1 + 0.5 + sim.RTT + COMPACT_S + 2.1)
    # the answer rests on a summary that lost what it needed (loss_probability 1): partial in truth and in claim
    assert (rec.truth, rec.claim) == ("partial", "partial")
    assert (r.out.recovered, r.out.silent_failure, r.out.false_alarm) == (False, False, False)
    assert (rec.retries, rec.wasted_retries) == (1, 0)  # the retry's context (1300) fits the window
    metrics, _, _ = compute_run(r.output, scn.fleet)
    assert (metrics["partial_results"], metrics["compactions"], metrics["failed_compactions"]) == (1, 1, 0)
    assert (metrics["success_rate"], metrics["undone_tasks"]) == (0.0, 1)


def test_what_is_kept_and_a_summary_longer_than_what_it_replaces(sim):
    """keep_tokens 200 keeps the last 200 of the 1002: 802 summarised into 300: 1000 + 300 + 200 = 1500 before the
    write.  A 2000-token summary of 1002 tokens is cut to them: the context does not shrink, and the retry is refused
    again and wasted."""
    kept = sim.run(_world(sim, keep_tokens=200), CompactOnce(), "generic").rec
    assert kept.context_tokens == 1000 + SUMMARY + 200 + 500
    assert kept.input_tokens == 1000 + 1500 + 802 + 1500
    long = sim.run(_world(sim, summary_tokens=2000), CompactOnce(), "generic").rec
    assert long.fault_hits == {"context_overflow": 2} and long.claim == "failed"
    assert long.context_tokens == 2002 + 2  # the same 2002 after the compaction, and the second "failed"
    assert (long.retries, long.wasted_retries) == (1, 1)


def test_the_loss_and_the_claim_are_settings_the_oracle_judges(sim):
    """loss_probability 0: the answer had what it needed (full), but the orchestrator still says partial: a false
    alarm.  claim success with the summary lost: a silent failure."""
    intact = sim.run(_world(sim, loss_probability=0.0), CompactOnce(), "generic")
    assert (intact.rec.truth, intact.rec.claim, intact.out.false_alarm) == ("full", "partial", True)
    claimed = sim.run(_world(sim, claim="success"), CompactOnce(), "generic")
    assert (claimed.rec.truth, claimed.rec.claim, claimed.out.silent_failure) == ("partial", "success", True)


def test_a_step_executed_again_after_the_compaction_brings_its_result_back():
    """The answer rests on a summary while a summarised step has not run again since; truth is partial only when the
    summary also lost what the answer needed."""
    rec = TaskRecord(0, "job", "t", 0, 0.0, [[1], [1], [1]], (), [1, 1, 1], summarised=((0, 1), (1, 1)))
    assert rec.rests_on_summary and rec.truth == "full"  # nothing lost
    rec.summary_lost = True
    assert rec.truth == "partial"
    rec.executions = [2, 1, 1]  # the plan ran again: the read still rests on the summary
    assert rec.rests_on_summary and rec.truth == "partial"
    rec.executions = [2, 2, 1]  # both ran again: the answer rests on fresh results
    assert not rec.rests_on_summary and rec.truth == "full"


def test_a_retry_from_the_first_step_redoes_the_summarised_steps(sim):
    """Compacting, then redoing plan and read from the first step: 1300 + 500 + 500 = 2300 tokens, refused again at
    the write; compacted again and redone again; then the policy gives up: nothing rests on a summary, and the task
    failed."""
    rec = sim.run(_world(sim), CompactOnce(resume_from=0, times=2), "generic").rec
    assert rec.fault_hits == {"context_overflow": 3} and rec.model_turns == {"compact": 2}
    assert rec.executions == [3, 3, 3] and not rec.rests_on_summary and rec.claim == "failed"


def test_a_compaction_that_meets_a_fault_leaves_the_context_as_it_was(sim):
    """An empty turn on every write turn: the compaction turn of the write step meets it, so
    nothing is compacted, the retry is refused again and wasted; the 1002 tokens it read are billed, no summary."""
    empty = [{"kind": "empty_turn", "probability": 1.0, "tools": ["write"]}]
    r = sim.run(_world(sim, empty), CompactOnce(), "generic")
    rec = r.rec
    assert rec.compactions_failed == 1 and rec.summarised is None
    assert rec.fault_hits == {"context_overflow": 2, "empty_turn": 1}
    assert (rec.retries, rec.wasted_retries) == (1, 1)
    assert rec.input_tokens == 1000 + 1500 + 1002
    assert rec.claim == "failed" and rec.truth == "partial"


def test_a_plain_retry_of_an_overflow_never_compacts(sim):
    """The same world with a Retry: the context stays at 2002, the retry is refused again."""
    r = sim.run(_world(sim), CompactOnce(action=Retry), "generic").rec
    assert r.model_turns is None and r.summarised is None and r.fault_hits == {"context_overflow": 2}
