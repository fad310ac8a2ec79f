"""Real stacks' error renderings, pinned against hand-written expectations.

The expectations are written out here from the stacks' own shapes (docs/formats.md, "Real
stacks' error texts") and from the kinds' wire statuses, never computed by the formats'
code: a format that renders another status, code, channel or wording fails.  The planted
secrets are a hand-made pool of one value per shape, so every expected text is literal.
"""

from __future__ import annotations

import json

import pytest

from fleetchaos.policies.raw_errors import parse_raw
from fleetchaos.policies.readers import code_of, retry_after_s_of, retryable_of, tree_category, tree_recoverable
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats._vendor import vendor_of
from fleetchaos.sim.kinds import KINDS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import PlantedSecrets
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.wire_shapes import wire_json

KEY = "sk_live_Zq8vH2mWc4Rt6Yb1Nd3Fg5Jk7Lp9Xs0A"
URL = "https://billing.corp.internal/api/v1"
HAND = PlantedSecrets(
    api_keys=(KEY,),
    tokens=("9f2c" * 16,),
    emails=("oncall@acme.example",),
    home_paths=("/home/oncall/fleet/app",),
    internal_urls=(URL,),
)

REAL_STACKS = (
    "agent-sdk-default",
    "langgraph-toolnode",
    "mcp",
    "mcp-structured",
    "jsonrpc",
    "problem-details",
    "google-rpc",
)


def observe(name: str, kind: str, tool: str, retry_after_s: float | None = None) -> Observation:
    """Format ``name``'s observation of ``kind`` failing step 1 (``tool``) of task 17, with the hand-made secrets."""
    errors = get_format(name)
    errors._secrets = HAND  # type: ignore[attr-defined]  # every real-stack format is a VendorText
    report = AttemptReport(
        task_id=17,
        worker=3,
        start_step=0,
        failed_step=1,
        step_names=("fetch", tool),
        failure=kind,
        retry_after_s=retry_after_s,
    )
    return errors.render(report)


def wire(observation: Observation) -> dict:
    assert observation.envelope is not None
    return json.loads(wire_json(observation.envelope))


def test_the_tools_used_here_have_one_vendor_each():
    """plan: a JVM client, edit: a Python SDK, search: a Node client (the vendor styles of docs/formats.md)."""
    assert (vendor_of("plan"), vendor_of("edit"), vendor_of("search")) == ("jvm", "python", "node")


def test_agent_sdk_default_advises_a_retry_whatever_the_failure_and_passes_the_message_on():
    sdk = "An error occurred while running the tool. Please try again. Error: "
    obs = observe("agent-sdk-default", "rate_limit", "plan")
    assert obs.text == sdk + f"HTTP 429 Too Many Requests calling {URL}/plan"
    assert (obs.envelope, obs.secrets) == (None, 1)
    obs = observe("agent-sdk-default", "permission_denied", "edit")
    assert obs.text == sdk + f"403 Client Error: Forbidden for url: {URL}/edit?api_key={KEY}"
    assert obs.secrets == 2  # the URL and the API key in its query
    obs = observe("agent-sdk-default", "disk_full", "search")
    assert (obs.text, obs.secrets) == (sdk + "ENOSPC search request failed", 0)


def test_langgraph_toolnode_wraps_the_exception_repr_and_says_fix_your_mistakes():
    obs = observe("langgraph-toolnode", "expired_key", "plan")
    assert obs.text == f"Error: ApiException('HTTP 401 Unauthorized calling {URL}/plan')\n Please fix your mistakes."
    obs = observe("langgraph-toolnode", "network_blip", "edit")
    assert obs.text == (
        f"Error: HTTPError('503 Server Error: Service Unavailable for url: {URL}/edit?api_key={KEY}')\n"
        " Please fix your mistakes."
    )
    obs = observe("langgraph-toolnode", "timeout", "search")
    assert obs.text == "Error: Error('ETIMEDOUT search request failed')\n Please fix your mistakes."
    assert obs.secrets == 0


def test_mcp_tool_execution_error_is_is_error_with_sanitised_text():
    obs = observe("mcp", "rate_limit", "plan")
    text = "Error executing tool plan: HTTP 429 Too Many Requests calling [REDACTED]"
    assert wire(obs) == {"content": [{"type": "text", "text": text}], "isError": True}
    assert (obs.text, obs.secrets) == (text, 0)
    obs = observe("mcp", "network_blip", "search")  # a reset connection: the server ran the tool and it failed
    assert obs.text == "Error executing tool search: ECONNRESET search request failed"


@pytest.mark.parametrize(
    "kind, code, message",
    [
        ("timeout", -32001, "Request timed out"),  # outcome unknown: the client's request timeout
        ("latency_spike", -32001, "Request timed out"),
        ("node_crash", -32000, "Connection closed"),  # ECONNREFUSED: the server's worker is gone
        ("network_partition", -32000, "Connection closed"),  # EHOSTUNREACH
    ],
)
@pytest.mark.parametrize("name", ["mcp", "mcp-structured"])
def test_mcp_protocol_errors_reach_the_client_code_not_the_text(name, kind, code, message):
    obs = observe(name, kind, "plan")
    assert wire(obs) == {"jsonrpc": "2.0", "id": "17-1", "error": {"code": code, "message": message}}
    assert obs.text is None and obs.secrets == 0


def test_mcp_structured_content_carries_code_recovery_and_retry_after():
    obs = observe("mcp-structured", "rate_limit", "search", retry_after_s=2.5)
    body = {
        "error": {
            "code": "RATE_LIMITED",
            "message": "ERR_RATE_LIMITED search request failed",
            "recovery": "transient",
            "retry_after": 2.5,
        }
    }
    shown = wire(obs)
    assert shown["isError"] is True and shown["structuredContent"] == body
    assert json.loads(obs.text) == body  # the serialised JSON in a text block too
    recovery = {
        k: wire(observe("mcp-structured", k, "plan"))["structuredContent"]["error"]["recovery"]
        for k in ("permission_denied", "validation_error", "expired_key", "disk_full", "git_push_conflict")
    }
    assert recovery == {
        "permission_denied": "terminal",
        "validation_error": "terminal",
        "expired_key": "correctable",
        "disk_full": "correctable",
        "git_push_conflict": "transient",
    }


def test_jsonrpc_error_object():
    obs = observe("jsonrpc", "not_found", "plan")
    assert wire(obs) == {
        "jsonrpc": "2.0",
        "id": "17-1",
        "error": {
            "code": -32001,
            "message": "Resource not found",
            "data": {"detail": "HTTP 404 Not Found calling [REDACTED]"},
        },
    }


def test_problem_details_document():
    obs = observe("problem-details", "disk_full", "edit")
    assert wire(obs) == {
        "type": "about:blank",
        "title": "Insufficient Storage",
        "status": 507,
        "detail": "507 Server Error: Insufficient Storage for url: [REDACTED]",
        "instance": "/tools/edit",
    }
    assert obs.secrets == 0


def test_google_rpc_status_with_error_info_and_retry_info():
    obs = observe("google-rpc", "quota_exhausted", "search", retry_after_s=12.5)
    assert wire(obs) == {
        "error": {
            "code": 429,
            "message": "ERR_QUOTA_EXCEEDED search request failed",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "QUOTA_EXCEEDED",
                    "domain": "search.api.example",
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12.5s"},
            ],
        }
    }
    no_hint = wire(observe("google-rpc", "validation_error", "search"))["error"]
    assert (no_hint["code"], no_hint["status"], len(no_hint["details"])) == (400, "INVALID_ARGUMENT", 1)


#: Every kind a dispatch can fail with, as each format shows it, written out by hand from the
#: kinds' wire statuses (docs/scenarios.md) and each stack's table (docs/formats.md):
#: (HTTP status, JSON-RPC code, google.rpc canonical status and its HTTP code, the MCP channel:
#: "tool" for an isError result, else the protocol error's code).
PINS: dict[str, tuple[int, int, str, int, str | int]] = {
    "network_blip": (503, -32002, "UNAVAILABLE", 503, "tool"),
    "timeout": (504, -32002, "DEADLINE_EXCEEDED", 504, -32001),
    "rate_limit": (429, -32005, "RESOURCE_EXHAUSTED", 429, "tool"),
    "disk_full": (507, -32603, "RESOURCE_EXHAUSTED", 429, "tool"),
    "expired_key": (401, -32603, "UNAUTHENTICATED", 401, "tool"),
    "git_push_conflict": (409, -32603, "ABORTED", 409, "tool"),
    "missing_dependency": (424, -32603, "FAILED_PRECONDITION", 400, "tool"),
    "validation_error": (422, -32602, "INVALID_ARGUMENT", 400, "tool"),
    "not_found": (404, -32001, "NOT_FOUND", 404, "tool"),
    "permission_denied": (403, -32603, "PERMISSION_DENIED", 403, "tool"),
    "partial_batch": (500, -32603, "INTERNAL", 500, "tool"),
    "refusal": (400, -32603, "INVALID_ARGUMENT", 400, "tool"),
    "content_filter": (400, -32603, "INVALID_ARGUMENT", 400, "tool"),
    "truncated_call": (422, -32602, "INVALID_ARGUMENT", 400, "tool"),
    "malformed_args": (400, -32603, "INVALID_ARGUMENT", 400, "tool"),
    "unknown_tool": (404, -32001, "NOT_FOUND", 404, "tool"),
    "duplicate_call_id": (400, -32603, "INVALID_ARGUMENT", 400, "tool"),
    "empty_turn": (502, -32002, "UNAVAILABLE", 503, "tool"),
    "stream_cut": (502, -32002, "UNAVAILABLE", 503, -32001),
    "context_overflow": (400, -32603, "INVALID_ARGUMENT", 400, "tool"),
    "node_crash": (502, -32002, "UNAVAILABLE", 503, -32000),
    "network_partition": (503, -32002, "UNAVAILABLE", 503, -32000),
    "latency_spike": (504, -32002, "DEADLINE_EXCEEDED", 504, -32001),
    "quota_exhausted": (429, -32005, "RESOURCE_EXHAUSTED", 429, "tool"),
    "overloaded": (503, -32002, "UNAVAILABLE", 503, "tool"),
    "mcp_protocol_error": (500, -32603, "INTERNAL", 500, -32603),  # the server's JSON-RPC internal error
    "mcp_tool_error": (500, -32603, "INTERNAL", 500, "tool"),  # the tool ran: an isError result
    "mcp_server_restart": (502, -32002, "UNAVAILABLE", 503, -32000),  # connection closed
    "mcp_session_expired": (404, -32001, "NOT_FOUND", 404, -32001),  # the SDK servers' "Session not found"
    "mcp_tool_drift": (404, -32001, "NOT_FOUND", 404, -32602),  # the specification's unknown tool
}


def test_the_pins_cover_every_kind_a_dispatch_can_fail_with():
    assert set(PINS) == {name for name, kind in KINDS.items() if kind.wire is not None}


@pytest.mark.parametrize("kind", sorted(PINS))
def test_every_kind_pinned_in_every_real_stack(kind):
    """Each format shows the kind's pinned status and code, and its stable error code where it carries one."""
    status, rpc, canonical, http, channel = PINS[kind]
    code = KINDS[kind].contract.error_code
    assert observe("problem-details", kind, "plan").envelope.status == status  # type: ignore[union-attr]
    assert wire(observe("jsonrpc", kind, "plan"))["error"]["code"] == rpc
    google = wire(observe("google-rpc", kind, "plan"))["error"]
    assert (google["status"], google["code"], google["details"][0]["reason"]) == (canonical, http, code)
    for name in ("mcp", "mcp-structured"):
        shown = wire(observe(name, kind, "plan"))
        assert (shown["error"]["code"] if "error" in shown and "jsonrpc" in shown else "tool") == channel, name
    if channel == "tool":
        assert wire(observe("mcp-structured", kind, "plan"))["structuredContent"]["error"]["code"] == code
    for name in ("agent-sdk-default", "langgraph-toolnode", "mcp"):  # the JVM client's message names the status
        assert f"HTTP {status} " in (observe(name, kind, "plan").text or "") or channel != "tool", name


@pytest.mark.parametrize("name", REAL_STACKS)
def test_a_completed_dispatch_is_the_bare_ok(name):
    errors = get_format(name)
    done = AttemptReport(task_id=1, worker=0, start_step=0, failed_step=-1, step_names=("plan",))
    assert errors.render(done) == Observation(ok=True, status="ok", worker=0)


# -- what the policy readers get out of each


@pytest.mark.parametrize(
    "name, kind, category, recoverable, retry_after, code",
    [
        ("mcp-structured", "rate_limit", "transient", True, 2.5, "RATE_LIMITED"),
        ("mcp-structured", "permission_denied", "auth", False, None, "PERMISSION_DENIED"),
        ("mcp", "rate_limit", None, None, None, "IS_ERROR"),  # text only: no category, no hint
        ("mcp", "timeout", "transient", None, None, "-32001"),  # a request timeout
        ("mcp", "node_crash", "resource", None, None, "-32000"),  # a closed connection: reroute
        ("jsonrpc", "rate_limit", "transient", None, None, "-32005"),
        ("jsonrpc", "not_found", "dependency", None, None, "-32001"),
        ("jsonrpc", "validation_error", "validation", None, None, "-32602"),
        ("jsonrpc", "expired_key", None, None, None, "-32603"),  # Internal error names no category
        ("problem-details", "expired_key", "auth", None, None, "401"),
        ("problem-details", "rate_limit", "transient", None, None, "429"),  # no standard retry member
        ("google-rpc", "rate_limit", "transient", None, 2.5, "RATE_LIMITED"),
        ("google-rpc", "disk_full", "resource", None, None, "DISK_FULL"),
        ("google-rpc", "permission_denied", "auth", False, None, "PERMISSION_DENIED"),  # AIP-194: do not retry
        ("google-rpc", "expired_key", "auth", None, None, "AUTH_EXPIRED"),  # UNAUTHENTICATED: refresh
    ],
)
def test_readers_read_what_each_shape_shows(name, kind, category, recoverable, retry_after, code):
    obs = observe(name, kind, "plan", retry_after_s=2.5 if kind == "rate_limit" else None)
    assert tree_category(obs) == category
    assert tree_recoverable(obs) is recoverable
    assert retry_after_s_of(obs) == retry_after
    assert code_of(obs) == code


def test_retry_flag_only_where_a_shape_has_one():
    assert retryable_of(observe("mcp-structured", "expired_key", "plan")) is True
    assert retryable_of(observe("mcp-structured", "validation_error", "plan")) is False
    for name in ("mcp", "jsonrpc", "problem-details", "google-rpc"):
        assert retryable_of(observe(name, "rate_limit", "plan")) is None, name


@pytest.mark.parametrize("name", ["agent-sdk-default", "langgraph-toolnode", "mcp"])
def test_raw_parsing_reads_the_status_in_the_text_of_jvm_and_python_clients_only(name):
    assert parse_raw(observe(name, "rate_limit", "plan").text).status == 429  # type: ignore[union-attr]
    assert parse_raw(observe(name, "expired_key", "edit").text).status == 401  # type: ignore[union-attr]
    assert parse_raw(observe(name, "rate_limit", "search").text) is None  # a Node client: an errno only


# -- how long each text is


def mean_length(name: str) -> float:
    """The mean characters a model reads of format ``name``'s failures: every failing kind, three vendor styles."""
    lengths = []
    for kind in PINS:
        for tool in ("plan", "edit", "search"):
            hint = 2.5 if KINDS[kind].retry_after else None
            lengths.append(len(observe(name, kind, tool, retry_after_s=hint).rendered_text()))
    return sum(lengths) / len(lengths)


def test_rendered_text_is_the_text_else_the_wire_json_else_the_status_word():
    assert observe("agent-sdk-default", "timeout", "search").rendered_text() == (
        "An error occurred while running the tool. Please try again. Error: ETIMEDOUT search request failed"
    )
    assert observe("mcp", "node_crash", "plan").rendered_text() == (
        '{"jsonrpc":"2.0","id":"17-1","error":{"code":-32000,"message":"Connection closed"}}'
    )
    assert observe("generic", "timeout", "plan").rendered_text() == "failed"


def test_the_texts_rank_by_size():
    """A bare word, MCP's sanitised text, the structured MCP error, the free texts around the problem and JSON-RPC
    documents, google.rpc with its details, the AgentToolError envelope, then the stack trace (docs/formats.md)."""
    ranked = [
        "generic",
        "mcp",
        "mcp-structured",
        "langgraph-toolnode",
        # these three are within 2% of one another: their order turns on the kinds' mix (docs/formats.md)
        "jsonrpc",
        "agent-sdk-default",
        "problem-details",
        "google-rpc",
        "structured",
        "raw",
    ]
    sizes = [mean_length(name) for name in ranked]
    assert sizes == sorted(sizes), dict(zip(ranked, sizes))
