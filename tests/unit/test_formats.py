"""What GenericFormat and StructuredFormat reveal and hide about the same AttemptReport."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fleetchaos.policies import resume_point
from fleetchaos.sim.envelope import SCHEMA_VERSION, AgentToolError, PartialSuccess
from fleetchaos.sim.formats import FormatLookupError, get_format
from fleetchaos.sim.formats.generic import GenericFormat
from fleetchaos.sim.formats.registry import builtin_formats
from fleetchaos.sim.formats.structured import StructuredFormat
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import FAILURES, AttemptReport

FAILURE_KINDS = tuple(FAILURES)

STEPS = ("plan", "edit", "search", "write")


def report(
    failure: str | None = "disk_full",
    failed_step: int = 2,
    done_items: tuple[int, ...] = (0, 3),
    retry_after_s: float | None = None,
    start_step: int = 0,
    worker: int = 3,
) -> AttemptReport:
    """A dispatch to worker 3 that stopped in step 2 ('search', fan-out 5)."""
    return AttemptReport(
        task_id=17,
        worker=worker,
        start_step=start_step,
        failed_step=failed_step,
        step_names=STEPS,
        failure=failure,
        fan_out=5,
        done_items=done_items,
        retry_after_s=retry_after_s,
    )


def completed_report() -> AttemptReport:
    return AttemptReport(task_id=17, worker=4, start_step=0, failed_step=-1, step_names=STEPS)


# ---------------------------------------------------------------------------------------
# the vocabulary itself


def test_core_failure_kinds_come_first_in_fixed_order():
    """FAILURES starts with the five core kinds, in a fixed order, and every kind has a stable code."""
    assert FAILURE_KINDS[:5] == ("network_blip", "timeout", "rate_limit", "disk_full", "expired_key")
    assert all(c.error_code.isupper() and c.error_code for c in FAILURES.values())


def test_attempt_report_completed_flag():
    """AttemptReport.completed is True only for failed_step < 0."""
    assert completed_report().completed
    assert not report(failed_step=0).completed


# ---------------------------------------------------------------------------------------
# GenericFormat


@pytest.mark.parametrize("kind", (*FAILURE_KINDS, None))
def test_generic_reveals_only_failed_status(kind):
    """Generic renders every failure kind identically: status 'failed', no envelope."""
    obs = GenericFormat().render(report(failure=kind, retry_after_s=2.5))
    assert obs == Observation(ok=False, status="failed", worker=3, envelope=None)


def test_generic_completed_is_ok():
    """Generic renders a completed report as ok with no envelope."""
    assert GenericFormat().render(completed_report()) == Observation(True, "ok", 4, None)


def test_generic_hides_partial_progress():
    """Generic shows no difference between a failure in step 0 and one after most work was done."""
    early = GenericFormat().render(report(failed_step=0, done_items=()))
    late = GenericFormat().render(report(failed_step=3, done_items=(0, 1, 2)))
    assert early == late


# ---------------------------------------------------------------------------------------
# StructuredFormat


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_structured_carries_the_failure_contract(kind):
    """Structured carries error_code, category, recoverable and suggested_action from FAILURES."""
    obs = StructuredFormat().render(report(failure=kind))
    assert obs.ok is False and obs.status == "failed" and obs.worker == 3
    env = obs.envelope
    assert isinstance(env, AgentToolError)
    contract = FAILURES[kind]
    assert env.error_code == contract.error_code
    assert env.category == contract.category
    assert env.recoverable is contract.recoverable
    assert env.suggested_action == contract.suggested_action
    assert env.schema_version == SCHEMA_VERSION == "1.0"


@pytest.mark.parametrize(
    "kind, code, category, action",
    [
        ("network_blip", "NETWORK_UNREACHABLE", "transient", "retry_with_backoff"),
        ("timeout", "TOOL_TIMEOUT", "transient", "retry_with_backoff"),
        ("rate_limit", "RATE_LIMITED", "transient", "wait_retry_after"),
        ("disk_full", "DISK_FULL", "resource", "reroute_to_healthy_worker"),
        ("expired_key", "AUTH_EXPIRED", "auth", "refresh_credentials"),
    ],
)
def test_structured_contract_literal_values(kind, code, category, action):
    """The contract values are the documented literals (guards against silent edits of FAILURES)."""
    env = StructuredFormat().render(report(failure=kind)).envelope
    assert (env.error_code, env.category, env.recoverable, env.suggested_action) == (
        code,
        category,
        True,
        action,
    )


def test_structured_partial_success_steps_and_artifacts():
    """completed_steps lists steps before failed_step; artifacts the done items of failed_step."""
    env = StructuredFormat().render(report(failed_step=2, done_items=(0, 3))).envelope
    assert env.partial_success == PartialSuccess(
        completed_steps=("0:plan", "1:edit"),
        artifacts=("2:search#0", "2:search#3"),
    )


def test_structured_failure_in_first_step_has_no_completed_steps():
    """A failure in step 0 reports no completed steps and only that step's done items."""
    env = StructuredFormat().render(report(failed_step=0, done_items=(1,))).envelope
    assert env.partial_success.completed_steps == ()
    assert env.partial_success.artifacts == ("0:plan#1",)


def test_structured_completed_steps_include_steps_before_resume_start():
    """Steps before start_step (done by earlier dispatches) are still listed as completed."""
    env = StructuredFormat().render(report(start_step=2, failed_step=3, done_items=())).envelope
    assert env.partial_success.completed_steps == ("0:plan", "1:edit", "2:search")
    assert env.partial_success.artifacts == ()


def test_structured_envelope_round_trips_to_resume_point():
    """resume_point of the rendered envelope recovers (failed_step, done_items)."""
    env = StructuredFormat().render(report(failed_step=2, done_items=(1, 4))).envelope
    assert resume_point(env) == (2, (1, 4))


def test_structured_context_worker_and_tool():
    """context names the worker and the failing tool, and nothing else for a non-timeout."""
    env = StructuredFormat().render(report(failure="disk_full")).envelope
    assert env.context == {"worker": "worker-3", "tool": "search"}


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_structured_outcome_unknown_only_for_timeouts(kind):
    """context['outcome'] == 'unknown' is set for timeouts (injected or from a latency spike), a cut stream (its
    calls may have run) and an MCP isError result (the tool ran: what it did before failing may have taken effect),
    and no other kind."""
    env = StructuredFormat().render(report(failure=kind)).envelope
    if kind in ("timeout", "latency_spike", "stream_cut", "mcp_tool_error"):
        assert env.context["outcome"] == "unknown"
    else:
        assert "outcome" not in env.context


@pytest.mark.parametrize(
    "seconds, ms",
    [
        (None, None),
        (0.0, 0),
        (0.5, 500),  # exact: no rounding
        (2.0, 2000),  # exact: must not become 2001
        (1.2341, 1235),  # 1234.1 ms -> 1235
        (0.0004, 1),  # 0.4 ms -> 1
        (3.9999, 4000),  # 3999.9 ms -> 4000
    ],
)
def test_structured_retry_after_ms_rounded_up(seconds, ms):
    """retry_after_ms is retry_after_s in milliseconds, rounded up (None when there is no hint)."""
    env = StructuredFormat().render(report(failure="rate_limit", retry_after_s=seconds)).envelope
    assert env.retry_after_ms == ms


def test_structured_retry_after_ms_never_shorter_than_hint():
    """retry_after_ms / 1000 is never shorter than retry_after_s (sub-microsecond remainder)."""
    env = StructuredFormat().render(report(failure="rate_limit", retry_after_s=2.0000004)).envelope
    # ceil(2000.0004) = 2001
    assert env.retry_after_ms == 2001


def test_structured_unknown_failure_is_unclassified_fatal():
    """A report with no failure kind becomes UNCLASSIFIED, fatal, not recoverable, escalate."""
    env = StructuredFormat().render(report(failure=None)).envelope
    assert env.error_code == "UNCLASSIFIED"
    assert env.category == "fatal"
    assert env.recoverable is False
    assert env.suggested_action == "escalate"
    assert env.partial_success.completed_steps == ("0:plan", "1:edit")


def test_structured_completed_is_ok_without_envelope():
    """Structured renders a completed report as ok with no envelope, like generic."""
    assert StructuredFormat().render(completed_report()) == Observation(True, "ok", 4, None)


def test_structured_distinguishes_kinds_generic_does_not():
    """Structured observations differ across the five kinds; generic ones are all equal."""
    structured = {StructuredFormat().render(report(failure=k)).envelope.error_code for k in FAILURE_KINDS}
    generic = {GenericFormat().render(report(failure=k)) for k in FAILURE_KINDS}
    assert structured == {c.error_code for c in FAILURES.values()}
    assert len(structured) >= 5
    assert len(generic) == 1


# ---------------------------------------------------------------------------------------
# partial_batch and the registry


def test_partial_batch_is_the_scenarios_without_an_envelope():
    """Formats without an envelope leave partial fan-out batches to fleet.partial_batch; the others fix it by contract."""
    formats = builtin_formats()
    assert {name for name, cls in formats.items() if cls.partial_batch is None} == {
        "generic",
        "status",
        "raw",
        "agent-sdk-default",
        "langgraph-toolnode",
    }
    assert StructuredFormat.partial_batch == "failed"
    assert formats["empty-success"].partial_batch == formats["fabricated-defaults"].partial_batch == "ok"


def test_builtin_formats():
    """Each format's name matches its registry key."""
    assert GenericFormat.name == "generic"
    assert StructuredFormat.name == "structured"
    assert {"generic", "structured"} <= set(builtin_formats())
    assert all(cls.name == name for name, cls in builtin_formats().items())


@pytest.mark.parametrize("name, cls", [("generic", GenericFormat), ("structured", StructuredFormat)])
def test_get_format_returns_fresh_instances(name, cls):
    """get_format returns a new instance of the named format on each call."""
    a, b = get_format(name), get_format(name)
    assert type(a) is cls and type(b) is cls
    assert a is not b


def test_get_format_unknown_name_lists_known():
    """get_format with an unknown name raises FormatLookupError naming it and the known formats."""
    with pytest.raises(FormatLookupError) as info:
        get_format("xml")
    msg = str(info.value)
    assert "'xml'" in msg
    assert all(name in msg for name in ("generic", "status", "raw", "structured", "tool-envelope"))


# ---------------------------------------------------------------------------------------
# the envelope model


def _valid_fields() -> dict:
    return dict(error_code="DISK_FULL", category="resource", recoverable=True, suggested_action="reroute")


def test_agent_tool_error_defaults():
    """A minimal envelope has no partial success, no hint, empty context and the schema version."""
    env = AgentToolError(**_valid_fields())
    assert env.partial_success is None
    assert env.retry_after_ms is None
    assert env.context == {}
    assert env.schema_version == SCHEMA_VERSION


def test_agent_tool_error_rejects_extra_fields():
    """AgentToolError forbids unknown fields (extra=forbid), e.g. a leaked stack trace."""
    with pytest.raises(ValidationError) as info:
        AgentToolError(**_valid_fields(), stack_trace="Traceback ...")
    assert info.value.errors()[0]["type"] == "extra_forbidden"


def test_partial_success_rejects_extra_fields():
    """PartialSuccess forbids unknown fields too."""
    with pytest.raises(ValidationError):
        PartialSuccess(completed_steps=("0:plan",), secrets=("x",))


@pytest.mark.parametrize(
    "override",
    [
        {"category": "network"},  # not one of the six categories
        {"error_code": ""},  # min_length 1
        {"retry_after_ms": -1},  # ge 0
    ],
)
def test_agent_tool_error_rejects_invalid_values(override):
    """AgentToolError rejects an unknown category, an empty code and a negative hint."""
    with pytest.raises(ValidationError):
        AgentToolError(**{**_valid_fields(), **override})


def test_agent_tool_error_is_frozen():
    """An envelope cannot be modified after construction."""
    env = AgentToolError(**_valid_fields())
    with pytest.raises(ValidationError):
        env.recoverable = False
