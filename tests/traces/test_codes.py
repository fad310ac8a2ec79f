"""Error codes to fault kinds: defaults that cover the simulator's own wire codes, mapping files, and unmapped counts."""

from __future__ import annotations

import pytest

from fleetchaos.sim.fault_specs import FAULT_MODELS
from fleetchaos.traces.bounded import TraceFileError
from fleetchaos.traces.codes import FAULT_KINDS, CodeMap, load_code_map
from fleetchaos.traces.otlp_write import WIRE


def test_kinds_are_the_simulators():
    """The kinds a mapping may name are the simulator's fault kinds but wrong_envelope.

    A wrong envelope is a contract disagreeing with the call's true outcome; a trace records
    one outcome per call, so no error code in it can name that kind.
    """
    assert set(FAULT_KINDS) == set(FAULT_MODELS) - {"wrong_envelope"}


def test_every_wire_code_maps_back_to_its_kind():
    """What an exported simulated run writes as error.type maps back to the fault that caused it."""
    codes = CodeMap()
    for kind, (status, _reason, code) in WIRE.items():
        expected = "timeout" if kind == "latency_spike" else kind
        assert codes.kind(code, status) == expected, kind


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        (None, 429, "rate_limit"),
        (None, 401, "expired_key"),
        (None, 403, "permission_denied"),
        (None, 404, "not_found"),
        ("429", None, "rate_limit"),
        ("TimeoutError", None, "timeout"),
        ("econnreset", 502, "network_blip"),
        ("ENOSPC", None, "disk_full"),
        ("ERR_QUOTA_EXCEEDED", 429, "quota_exhausted"),
        ("refusal", None, "refusal"),
        ("content_filter", 400, "content_filter"),
        ("SAFETY", None, "content_filter"),
        ("length", None, "truncated_call"),
        ("max_tokens", None, "truncated_call"),
        ("tool_use_failed", 400, "malformed_args"),
        ("MALFORMED_FUNCTION_CALL", None, "malformed_args"),
        ("UNEXPECTED_TOOL_CALL", None, "unknown_tool"),
        ("DUPLICATE_TOOL_CALL_ID", 400, "duplicate_call_id"),
        ("context_length_exceeded", 400, "context_overflow"),
        ("RemoteProtocolError", None, "stream_cut"),
        ("ConnectError", None, "network_blip"),  # httpx's and httpx2's dropped connection
    ],
)
def test_defaults(code, status, kind):
    """The issue's defaults: 429, 401, 403, 404, timeouts, resets, ENOSPC; the code wins over the status.  The
    model's own faults by the finish or stop reason an LLM API gives (a refusal, a content filter, a length stop,
    a tool call the provider could not parse or that names no declared tool) and a stream cut by what a client raises."""
    assert CodeMap().kind(code, status) == kind


def test_unmapped_codes_are_counted_and_listed():
    """A code neither the defaults nor the file know is counted by code and status, most frequent first."""
    codes = CodeMap()
    for _ in range(3):
        assert codes.kind("E_WEIRD", 599) is None
    assert codes.kind(None, None) is None
    assert codes.unmapped_rows() == [("code 'E_WEIRD', HTTP 599", 3), ("no error code", 1)]


def test_a_mapping_file_adds_and_overrides(tmp_path):
    """A mapping file maps a team's codes, overrides a default, and can ignore a code."""
    path = tmp_path / "codes.yaml"
    path.write_text("codes:\n  CRM_DENIED: permission_denied\n  ENOSPC: ignore\nhttp:\n  418: validation_error\n")
    codes = load_code_map(path)
    assert codes.kind("crm_denied", None) == "permission_denied"
    assert codes.kind("ENOSPC", None) == "ignore"
    assert codes.kind(None, 418) == "validation_error"
    assert codes.kind(None, 429) == "rate_limit"
    path.write_text("defaults: false\ncodes: {X: timeout}\n")
    assert load_code_map(path).kind(None, 429) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("codes: {X: rate_limited}\n", "codes: X: unknown fault kind 'rate_limited'"),
        ("http: {999: timeout}\n", "http: 999: not an HTTP status"),
        ("colours: {}\n", "colours: Extra inputs are not permitted"),
        ("codes: [1, 2\n", "not valid YAML"),
    ],
)
def test_a_bad_mapping_file_gets_one_message(tmp_path, text, expected):
    """A mapping file with an unknown kind, a bad status, an unknown key or broken YAML names what is wrong."""
    path = tmp_path / "codes.yaml"
    path.write_text(text)
    with pytest.raises(TraceFileError) as info:
        load_code_map(path)
    assert expected in str(info.value)
    assert str(path) in str(info.value)
