"""The structured tree's model-side branches and the naive model-side presets, on observations rendered by the formats.

A recoverable malformed call of the model's own gets a re-prompt (not a page, as before); a
validation failure of the tool's input still pages a human; a denial goes to the fallback
model once, then to a human; a cut stream is resumed.  A generic "failed" reveals none of
it: the tree's unknown branch, and the naive presets their one action whatever the cause.
"""

from __future__ import annotations

import random

import pytest

from fleetchaos.policies.builtins import StructuredDecisionTree
from fleetchaos.policies.model_recovery import MODEL_PRESETS
from fleetchaos.policies.readers import model_fault_of
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.observation import (
    CompactContext,
    Escalate,
    FallbackModel,
    GiveUp,
    RepairTurn,
    RepromptWithSchema,
    ResumeStream,
    Retry,
    TaskHistory,
)
from fleetchaos.sim.truth import AttemptReport


def _seen(kind: str, errors: str = "structured"):
    report = AttemptReport(
        task_id=1, worker=0, start_step=0, failed_step=1, step_names=("read", "write"), failure=kind,
        item_failures=((0, kind),), done_items=(),
    )  # fmt: skip
    return get_format(errors).render(report)


def _history(streak: int = 1, retries: int = 0) -> TaskHistory:
    return TaskHistory(task_id=1, retries=retries, same_failure_streak=streak, rng=random.Random(1))


@pytest.mark.parametrize("kind", ["malformed_args", "unknown_tool", "duplicate_call_id"])
def test_the_tree_reprompts_a_recoverable_malformed_call_instead_of_paging(kind):
    action = StructuredDecisionTree().decide(_seen(kind), _history())
    assert isinstance(action, RepromptWithSchema) and action.resume_from == 1
    assert isinstance(StructuredDecisionTree(malformed="repair").decide(_seen(kind), _history()), RepairTurn)
    assert isinstance(StructuredDecisionTree(malformed="escalate").decide(_seen(kind), _history()), Escalate)
    assert isinstance(StructuredDecisionTree().decide(_seen(kind), _history(streak=3)), Escalate)  # repeated


def test_the_tree_still_pages_a_bad_input_and_a_length_stop():
    """VALIDATION_FAILED (the tool's input) and OUTPUT_TRUNCATED are not recoverable by their contracts."""
    for kind in ("validation_error", "truncated_call"):
        assert isinstance(StructuredDecisionTree().decide(_seen(kind), _history()), Escalate), kind


def test_the_tree_falls_back_once_on_a_denial_and_resumes_a_cut_stream():
    tree = StructuredDecisionTree(denial="fallback", cut="resume")
    for kind in ("refusal", "content_filter"):
        assert isinstance(tree.decide(_seen(kind), _history()), FallbackModel)
        assert isinstance(tree.decide(_seen(kind), _history(streak=2)), Escalate)  # the fallback denied it too
        assert isinstance(StructuredDecisionTree().decide(_seen(kind), _history()), Escalate)  # off by default
    assert isinstance(tree.decide(_seen("stream_cut"), _history()), ResumeStream)
    assert type(StructuredDecisionTree().decide(_seen("stream_cut"), _history())) is Retry
    assert type(tree.decide(_seen("network_blip"), _history())) is Retry  # no model-side fault: a plain retry


@pytest.mark.parametrize("errors", ["structured", "tool-envelope", "mcp-structured", "google-rpc"])
def test_the_tree_compacts_an_overflowed_context_where_a_contract_names_it(errors):
    """CONTEXT_LENGTH_EXCEEDED is not recoverable by a retry: the tree escalates it, unless its overflow branch is on,
    which compacts (resuming at the refused turn) where the code names it (AgentToolError also suggests
    compact_context), and escalates a compaction that overflows again and again.  A contract without the code (a
    failure type's bare "permanent", a generic "failed") names no overflow."""
    seen = _seen("context_overflow", errors)
    assert model_fault_of(seen) == "overflow"
    assert isinstance(StructuredDecisionTree().decide(seen, _history()), Escalate)
    tree = StructuredDecisionTree(overflow="compact")
    action = tree.decide(seen, _history())
    assert isinstance(action, CompactContext)
    assert action.resume_from == (1 if errors in ("structured", "tool-envelope") else 0)  # what the contract reveals
    assert isinstance(tree.decide(seen, _history(streak=3)), Escalate)
    for blind in ("generic", "failure-type"):
        assert model_fault_of(_seen("context_overflow", blind)) is None
        assert not isinstance(tree.decide(_seen("context_overflow", blind), _history()), CompactContext)


def test_a_generic_failure_reveals_no_model_fault():
    for kind in ("malformed_args", "refusal", "stream_cut"):
        seen = _seen(kind, "generic")
        assert model_fault_of(seen) is None
        action = StructuredDecisionTree(denial="fallback", cut="resume").decide(seen, _history())
        assert type(action) in (Retry, Escalate)  # the unknown branch
    assert [model_fault_of(_seen(k)) for k in ("malformed_args", "refusal", "stream_cut", "timeout")] == [
        "malformed",
        "denial",
        "cut",
        None,
    ]


@pytest.mark.parametrize(
    "name, action",
    [
        ("repair-turn", RepairTurn),
        ("reprompt-schema", RepromptWithSchema),
        ("fallback-model", FallbackModel),
        ("resume-stream", ResumeStream),
        ("compact-context", CompactContext),
    ],
)
def test_each_naive_preset_takes_its_action_on_any_failure_then_gives_up(name, action):
    policy = MODEL_PRESETS[name]()
    assert policy.name == name
    for kind in ("timeout", "malformed_args"):
        assert type(policy.decide(_seen(kind, "generic"), _history())) is action
    assert isinstance(policy.decide(_seen("timeout", "generic"), _history(retries=3)), GiveUp)
