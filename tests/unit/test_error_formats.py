"""Every error format renders the same truth: what each reveals and what it hides."""

from __future__ import annotations

import json

import pytest

from fleetchaos.policies import FailureTypeRouter, resume_from_refs
from fleetchaos.policies.raw_errors import parse_raw, parse_status, status_of
from fleetchaos.sim.envelope import SCHEMA_VERSION, AgentToolError
from fleetchaos.sim.envelopes import ENVELOPES, FailureTypeError, SubagentResult, ToolEnvelope
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats._vendor import VENDORS, vendor_of, vendor_text
from fleetchaos.sim.formats.failure_type import ABLATION_FORMATS
from fleetchaos.sim.formats.registry import builtin_formats
from fleetchaos.sim.observation import Escalate, RefreshCredentials, Reroute, Retry, TaskHistory, UseAlternative
from fleetchaos.sim.sanitise import REDACTED, PlantedSecrets, sanitise
from fleetchaos.sim.truth import AttemptReport

STEPS = ("plan", "edit", "search", "write")


def truth(failure: str = "timeout", **kw) -> AttemptReport:
    """One dispatch stopped in step 2 ('search', fan-out 5): items 0 and 3 done, 1, 2 and 4 failed."""
    values = dict(
        task_id=17,
        worker=3,
        start_step=0,
        failed_step=2,
        step_names=STEPS,
        failure=failure,
        fan_out=5,
        done_items=(0, 3),
        item_failures=((1, failure), (2, failure), (4, failure)),
    )
    values.update(kw)
    return AttemptReport(**values)


def render(name: str, report: AttemptReport, seed: int = 7):
    """The observation format ``name`` gives of ``report`` in the run with ``seed``."""
    fmt = get_format(name)
    bind = getattr(fmt, "for_run", None)
    return (bind(seed) if bind else fmt).render(report)


def test_same_truth_rendered_by_every_format():
    """For one truth: which formats say ok, which carry an envelope, text or leaked secrets."""
    seen = {name: render(name, truth()) for name in builtin_formats()}
    assert {n for n, o in seen.items() if o.ok} == {"empty-success", "fabricated-defaults"}
    texts = {"status", "raw", "empty-success", "fabricated-defaults", "agent-sdk-default", "langgraph-toolnode"}
    assert {n for n, o in seen.items() if o.envelope is None} == {"generic", *texts}
    assert {n for n, o in seen.items() if o.text} == texts  # an MCP timeout is a protocol error: no text
    assert seen["status"].text == "HTTP 504 InternalServerError"  # a timeout's wire status, no vendor text
    assert {n for n, o in seen.items() if o.secrets} == {"raw"}  # 'search' is a Node client: its message has none
    assert seen["raw"].secrets == 5  # one key, token, e-mail, home path and internal URL
    assert seen["generic"].fields() == {} and seen["empty-success"].text == "{}"
    assert "revenue" in seen["fabricated-defaults"].text


def test_every_format_says_ok_on_a_completed_dispatch():
    """A dispatch that ran every step is 'ok' in every format, with nothing else attached."""
    done = AttemptReport(task_id=1, worker=0, start_step=0, failed_step=-1, step_names=STEPS)
    for name in builtin_formats():
        obs = render(name, done)
        assert obs.ok and obs.envelope is None and obs.secrets == 0, name


def test_structured_and_agent_tool_error_are_the_same_contract():
    """agent-tool-error renders exactly what structured renders."""
    assert render("agent-tool-error", truth()) == render("structured", truth())
    assert isinstance(render("structured", truth()).envelope, AgentToolError)


def test_failure_type_reveals_type_progress_alternatives_and_retry_flag():
    """failure-type: the type, completed steps and items, named alternatives and whether a retry helps."""
    env = render("failure-type", truth("not_found", alternatives_left=2)).envelope
    assert env == FailureTypeError(
        failure_type="not_found",
        partial_results=("0:plan", "1:edit", "2:search#0", "2:search#3"),
        alternatives_suggested=("alternative_source",),
        retry_recommended=False,
    )
    assert render("failure-type", truth("permission_denied")).envelope.failure_type == "auth_error"
    assert render("failure-type", truth("expired_key")).envelope.retry_recommended is True


def test_ablation_steps_add_one_field_each():
    """Each ablation step carries exactly one more field than the one before; absent fields are None."""
    filled = []
    for name in ABLATION_FORMATS:
        env = render(name, truth("missing_dependency")).envelope
        filled.append(
            {
                k
                for k in ("partial_results", "alternatives_suggested", "retry_recommended")
                if getattr(env, k) is not None
            }
        )
    assert filled == [
        set(),
        {"partial_results"},
        {"partial_results", "alternatives_suggested"},
        {"partial_results", "alternatives_suggested", "retry_recommended"},
    ]


def test_subagent_result_reveals_status_category_and_partial_data_not_vendor_secrets():
    """subagent-result: partial status, category, retryable, partial data and a sanitised message."""
    env = render("subagent-result", truth("rate_limit", retry_after_s=2.5)).envelope
    assert isinstance(env, SubagentResult)
    assert (env.status, env.error_category, env.is_retryable, env.retry_after_s) == ("partial", "transient", True, 2.5)
    assert env.partial_data == ("0:plan", "1:edit", "2:search#0", "2:search#3")
    assert "Retry after 2.5s." in env.error_message
    assert (
        render("subagent-result", truth("validation_error", done_items=(), failed_step=0)).envelope.status == "failed"
    )


def test_tool_envelope_reveals_manifest_and_run_health():
    """tool-envelope: timeout status (ambiguous outcome), a per-item manifest and a blocking run-health block."""
    env = render("tool-envelope", truth()).envelope
    assert isinstance(env, ToolEnvelope)
    assert (env.status, env.error_code, env.retriable) == ("timeout", "TOOL_TIMEOUT", True)
    assert [i.status for i in env.manifest] == ["ok", "timeout", "timeout", "ok", "timeout"]
    assert env.run_health.tools_failed == 3 and env.run_health.blocking_failure
    assert render("tool-envelope", truth("partial_batch")).envelope.status == "partial"


@pytest.mark.parametrize("name", ["structured", "failure-type", "subagent-result", "tool-envelope", *ABLATION_FORMATS])
def test_every_structured_format_honours_schema_drift(name):
    """An older worker's envelope carries its version and lacks the fields the drift names."""
    old = truth(schema_version="0.9", dropped_fields=("partial_success", "retry_after_ms"))
    env = render(name, old).envelope
    assert env.schema_version == "0.9" != SCHEMA_VERSION
    dump = env.model_dump()
    progress = {"structured": "partial_success", "subagent-result": "partial_data", "tool-envelope": "data"}
    assert dump[progress.get(name, "partial_results")] is None


def test_router_trusting_a_drifted_envelope_redoes_the_work():
    """Without partial_results (an old worker) the router restarts from step 0; with it, it resumes."""
    router, history = FailureTypeRouter(), TaskHistory(task_id=1)
    new = router.decide(render("failure-type", truth()), history)
    old = router.decide(
        render("failure-type", truth(schema_version="0.9", dropped_fields=("partial_success",))), history
    )
    assert (new.resume_from, new.done_items) == (2, (0, 3))
    assert (old.resume_from, old.done_items) == (0, ())


@pytest.mark.parametrize(
    "kind, alternatives_left, action",
    [
        ("timeout", 0, Retry),
        ("expired_key", 0, RefreshCredentials),
        ("permission_denied", 0, Escalate),
        ("not_found", 2, UseAlternative),
        ("not_found", 0, Escalate),
        ("missing_dependency", 0, Reroute),
        ("validation_error", 0, Escalate),
        ("rate_limit", 0, Retry),
        ("disk_full", 0, Reroute),
    ],
)
def test_router_maps_each_failure_type_to_its_handler(kind, alternatives_left, action):
    """The full failure-type envelope routes each kind to the 001 handler."""
    obs = render("failure-type", truth(kind, alternatives_left=alternatives_left))
    assert type(FailureTypeRouter().decide(obs, TaskHistory(task_id=1))) is action


def test_resume_from_refs_reads_steps_and_items():
    """Step references set the resume step; item references of that step are the done items."""
    assert resume_from_refs(None) == (0, ())
    assert resume_from_refs(("0:plan", "1:edit", "2:search#4", "2:search#1")) == (2, (1, 4))


def test_vendor_texts_differ_and_the_parser_reads_only_some():
    """The three vendor styles word one failure differently; the brittle parser knows two of them."""
    secrets = PlantedSecrets.for_run(3)
    tools = {
        vendor_of(t): t for t in ("search", "edit", "plan", "write", "compile", "checkout", "post_note", "git_push")
    }
    assert set(tools) == set(VENDORS)
    parsed = {}
    for vendor, tool in tools.items():
        report = AttemptReport(
            task_id=1, worker=0, start_step=0, failed_step=0, step_names=(tool,), failure="rate_limit"
        )
        parsed[vendor] = parse_raw(vendor_text(report, secrets))
    assert parsed["jvm"].status == parsed["python"].status == 429 and parsed["node"] is None


@pytest.mark.parametrize(
    "kind, line",
    [
        ("rate_limit", "HTTP 429 RateLimitError"),
        ("expired_key", "HTTP 401 AuthenticationError"),
        ("permission_denied", "HTTP 403 PermissionDeniedError"),
        ("missing_dependency", "HTTP 424 APIStatusError"),
        ("disk_full", "HTTP 507 InternalServerError"),
        ("overloaded", "HTTP 503 InternalServerError"),
    ],
)
def test_the_status_format_shows_the_wire_status_and_exception_class_and_nothing_else(kind, line):
    """status: one line, no envelope, no secret, no progress; the status reader gets the status and category back."""
    obs = render("status", truth(kind))
    assert (obs.ok, obs.text, obs.envelope, obs.secrets) == (False, line, None, 0)
    parsed = status_of(obs)
    assert parsed is not None and parsed.status == int(line.split()[1]) and parsed.vendor == "status"


def test_raw_parse_reads_the_status_line():
    """raw-parse on the status format: a 503 is retried, a 401 refreshes, a 403 escalates, from the first step."""
    from fleetchaos.policies import RawParsing

    policy, history = RawParsing(), TaskHistory(task_id=1)
    assert isinstance(policy.decide(render("status", truth("overloaded")), history), Retry)
    assert policy.decide(render("status", truth("expired_key")), history) == RefreshCredentials()
    assert isinstance(policy.decide(render("status", truth("permission_denied")), history), Escalate)
    assert parse_status("2 of 5 items failed\nHTTP 429 RateLimitError").status == 429  # under a partial count
    assert parse_status("failed") is None and status_of(render("generic", truth())) is None


def test_sanitiser_removes_every_planted_secret_shape():
    """Sanitising a raw vendor text leaves none of the planted values and marks each redaction."""
    secrets = PlantedSecrets.for_run(11)
    for tool in ("search", "edit", "plan", "write", "compile"):
        report = AttemptReport(task_id=5, worker=1, start_step=0, failed_step=0, step_names=(tool,), failure="timeout")
        text = vendor_text(report, secrets)
        assert secrets.count_in(text) == 5
        clean = sanitise(text)
        assert secrets.count_in(clean) == 0 and REDACTED in clean


def test_planted_secrets_are_per_run_and_reproducible():
    """The same seed plants the same secrets; another seed plants others."""
    assert PlantedSecrets.for_run(4) == PlantedSecrets.for_run(4)
    assert set(PlantedSecrets.for_run(4).all()).isdisjoint(PlantedSecrets.for_run(5).all())


def test_every_envelope_has_a_versioned_json_schema():
    """Every contract's JSON Schema is a serialisable object with a schema_version property."""
    for name, model in ENVELOPES.items():
        schema = json.loads(json.dumps(model.model_json_schema()))
        assert "schema_version" in schema["properties"], name
