"""Imperfect contracts: each way a worker's envelope can be wrong, keyed draws, and judgement against the truth."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from fleetchaos.sim.envelope_errors import (
    MARKED_RECOVERABLE,
    MISCLASSIFIED,
    OMITTED_PARTIAL_SUCCESS,
    WRONG_RETRY_AFTER,
    EnvelopeErrors,
    compile_rule,
    over_recoverable,
)
from fleetchaos.sim.fault_specs import WrongEnvelope
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.kinds import KINDS
from fleetchaos.sim.truth import AttemptReport

STEPS = ("plan", "search", "write")


def report(failure: str = "network_blip", **kw) -> AttemptReport:
    """A dispatch that completed step 0 and failed in step 1 ('search', fan-out 3): item 0 done, 1 and 2 failed."""
    values = dict(
        task_id=5,
        worker=2,
        start_step=0,
        failed_step=1,
        step_names=STEPS,
        failure=failure,
        fan_out=3,
        done_items=(0,),
        item_failures=((1, failure), (2, failure)),
    )
    values.update(kw)
    return AttemptReport(**values)


def errors(seed: int = 1, **fault) -> EnvelopeErrors:
    """The run's rules for one wrong_envelope fault with these parameters."""
    rule = compile_rule(WrongEnvelope(**fault), 0, 86_400.0)
    world = SimpleNamespace(faults=[WrongEnvelope(**fault)], duration_s=86_400.0, fleet=SimpleNamespace(providers=[]))
    built = EnvelopeErrors.build(world, seed)
    assert built is not None and built.rules == (rule,)
    return built


def shown(name: str, truth: AttemptReport, errs: EnvelopeErrors, now: float = 0.0, execution: int = 1):
    """(observation, ways) the orchestrator gets from format ``name`` for ``truth`` under ``errs``."""
    fmt = get_format(name)
    bind = getattr(fmt, "for_run", None)
    fmt = bind(1) if bind else fmt
    return errs.apply(fmt, truth, fmt.render(truth), now, execution)


def test_a_misclassified_failure_shows_another_kinds_contract_in_every_envelope():
    """misclassify 1 with reported_as disk_full: a blip shows DISK_FULL / resource in each contract's words."""
    errs = errors(misclassify=1.0, reported_as=["disk_full"])
    obs, ways = shown("structured", report(), errs)
    assert ways == (MISCLASSIFIED,)
    assert (obs.envelope.error_code, obs.envelope.category, obs.envelope.suggested_action) == (
        "DISK_FULL",
        "resource",
        "reroute_to_healthy_worker",
    )
    assert shown("failure-type", report(), errs)[0].envelope.failure_type == "unavailable"
    tool = shown("tool-envelope", report(), errs)[0].envelope
    assert tool.error_code == "DISK_FULL" and {i.error_code for i in tool.manifest if i.status == "error"} == {
        "DISK_FULL"
    }
    assert report().shown_as is None  # the truth is never changed, only a copy for rendering


def test_a_misclassification_is_never_into_a_kind_with_the_same_code():
    """A timeout reported as latency_spike (both TOOL_TIMEOUT) is no misclassification: nothing changes."""
    errs = errors(misclassify=1.0, reported_as=["latency_spike"])
    truth = report("timeout")
    obs, ways = shown("structured", truth, errs)
    assert ways == () and obs == get_format("structured").render(truth)


def test_a_way_counts_only_when_the_orchestrator_sees_a_difference():
    """In failure-type words a timeout and a blip are both 'timeout': the misclassification is not counted there."""
    errs = errors(misclassify=1.0, reported_as=["network_blip"])
    assert shown("failure-type", report("timeout"), errs)[1] == ()
    assert shown("structured", report("timeout"), errs)[1] == (MISCLASSIFIED,)  # NETWORK_UNREACHABLE != TOOL_TIMEOUT


def test_only_a_permanent_failure_is_marked_recoverable():
    """mark_recoverable turns VALIDATION_FAILED into a recoverable transient failure, and leaves a blip alone."""
    errs = errors(mark_recoverable=1.0)
    obs, ways = shown("structured", report("validation_error"), errs)
    assert ways == (MARKED_RECOVERABLE,)
    env = obs.envelope
    assert (env.error_code, env.category, env.recoverable, env.suggested_action) == (
        "VALIDATION_FAILED",
        "transient",
        True,
        "retry_with_backoff",
    )
    assert shown("failure-type", report("validation_error"), errs)[0].envelope.retry_recommended is True
    assert shown("tool-envelope", report("validation_error"), errs)[0].envelope.retriable is True
    assert shown("structured", report("network_blip"), errs)[1] == ()
    assert over_recoverable(KINDS["permission_denied"]).wire == KINDS["permission_denied"].wire


def test_a_wrong_retry_after_is_the_true_wait_times_a_drawn_factor():
    """wrong_retry_after 1 with the factor fixed at 0.25: a 10 s hint reads 2.5 s; no hint, nothing to get wrong."""
    errs = errors(wrong_retry_after=1.0, retry_after_factor=(0.25, 0.25))
    obs, ways = shown("structured", report("rate_limit", retry_after_s=10.0), errs)
    assert ways == (WRONG_RETRY_AFTER,) and obs.envelope.retry_after_ms == 2500
    assert shown("subagent-result", report("rate_limit", retry_after_s=10.0), errs)[0].envelope.retry_after_s == 2.5
    assert shown("structured", report("rate_limit"), errs)[1] == ()


def test_an_omitted_partial_success_hides_completed_work_only_where_there_was_some():
    """omit_partial_success 1: the progress field is left out where something completed, and not in a step-0 failure."""
    errs = errors(omit_partial_success=1.0)
    obs, ways = shown("structured", report(), errs)
    assert ways == (OMITTED_PARTIAL_SUCCESS,) and obs.envelope.partial_success is None
    assert obs.envelope.schema_version == "1.0"  # left out, not an older contract
    assert shown("failure-type", report(), errs)[0].envelope.partial_results is None
    assert shown("structured", report(failed_step=0, done_items=()), errs)[1] == ()
    # an ablation step that carries no partial results has nothing to leave out
    assert shown("ablation:failure_type", report(), errs)[1] == ()


def test_draws_are_keyed_by_the_failed_call_and_hit_at_the_set_rate():
    """The same call draws the same answer every time; over 4,000 calls misclassify 0.3 hits about 30%."""
    errs = errors(misclassify=0.3)
    first = [shown("structured", report(task_id=t), errs)[1] for t in range(4000)]
    again = [shown("structured", report(task_id=t), errs)[1] for t in range(4000)]
    assert first == again
    rate = sum(bool(w) for w in first) / len(first)
    assert rate == pytest.approx(0.3, abs=0.025)
    # another execution of the same step is another call: its own draw
    other = [shown("structured", report(task_id=t), errs, execution=2)[1] for t in range(4000)]
    assert other != first


def test_a_rule_covers_only_its_workers_failures_tools_and_windows():
    """workers, failures, tools and windows each narrow where envelopes go wrong."""
    errs = errors(
        misclassify=1.0,
        workers=[2],
        failures=["network_blip"],
        tools=["search"],
        windows=[{"start_s": 100, "duration_s": 50}],
    )
    assert shown("structured", report(), errs, now=120.0)[1] == (MISCLASSIFIED,)
    assert shown("structured", report(), errs, now=10.0)[1] == ()  # outside the window
    assert shown("structured", report(worker=3), errs, now=120.0)[1] == ()
    assert shown("structured", report("timeout"), errs, now=120.0)[1] == ()
    assert shown("structured", report(failed_step=2), errs, now=120.0)[1] == ()  # tool 'write'


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ({"failures": ["schema_drift"]}, "not a fault kind reported as a failure"),
        ({"reported_as": ["silent_suppression"]}, "not a fault kind reported as a failure"),
        ({"retry_after_factor": [0, 2]}, "0 < low <= high"),
        ({"retry_after_factor": [3, 2]}, "0 < low <= high"),
        ({"misclassify": 1.5}, "less than or equal to 1"),
    ],
)
def test_wrong_envelope_parameters_are_validated(fault, message):
    """Kinds must be ones reported as failures, the factor range ordered and positive, probabilities in [0, 1]."""
    with pytest.raises(ValidationError, match=message):
        WrongEnvelope(**fault)


def test_a_misclassification_names_a_providers_overload_only_where_a_provider_is_declared():
    """Without fleet.providers the default pool leaves out overloaded (a world without one never meets it); with one it is in.
    The model-side and MCP kinds are never in it (a worker's tool envelope names them only when reported_as does)."""
    fault = WrongEnvelope(misclassify=1.0)
    without = compile_rule(fault, 0, 86_400.0)
    with_provider = compile_rule(fault, 0, 86_400.0, providers=True)
    model_side = (
        "refusal",
        "content_filter",
        "truncated_call",
        "malformed_args",
        "unknown_tool",
        "duplicate_call_id",
        "empty_turn",
        "stream_cut",
        "context_overflow",
    )
    mcp = ("mcp_protocol_error", "mcp_tool_error", "mcp_server_restart", "mcp_session_expired", "mcp_tool_drift")
    reported = tuple(n for n, k in KINDS.items() if k.wire is not None and n not in model_side + mcp)
    assert "overloaded" in reported and "overloaded" not in without.reportable
    assert with_provider.reportable == reported
    assert without.reportable == tuple(n for n in reported if n != "overloaded")
    world = SimpleNamespace(faults=[fault], duration_s=86_400.0, fleet=SimpleNamespace(providers=["model_api"]))
    assert EnvelopeErrors.build(world, 1).rules == (with_provider,)
