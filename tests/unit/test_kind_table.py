"""Each fault kind's wire status, error code, category and hint, pinned against a table written by hand.

The records in :mod:`fleetchaos.sim.kinds` feed every format, the vendor texts, the
real-code transport and the metrics' error codes; a wrong value there (a full disk
reported as 503) changes what every contract shows without any other test noticing.
This table is written out here, from what each failure is on the wire, and not read
from the records: changing a kind's contract means changing it in both places.
"""

from __future__ import annotations

import pytest

from fleetchaos.sim.kinds import KINDS

#: kind -> (HTTP status or None for a failure never reported, error code, category, recoverable, retry-after hint)
WIRE = {
    "network_blip": (503, "NETWORK_UNREACHABLE", "transient", True, False),
    "timeout": (504, "TOOL_TIMEOUT", "transient", True, False),
    "rate_limit": (429, "RATE_LIMITED", "transient", True, True),
    "disk_full": (507, "DISK_FULL", "resource", True, False),
    "expired_key": (401, "AUTH_EXPIRED", "auth", True, False),
    "git_push_conflict": (409, "GIT_PUSH_REJECTED", "transient", True, False),
    "missing_dependency": (424, "DEPENDENCY_MISSING", "dependency", True, False),
    "validation_error": (422, "VALIDATION_FAILED", "validation", False, False),
    "not_found": (404, "NOT_FOUND", "dependency", True, False),
    "permission_denied": (403, "PERMISSION_DENIED", "auth", False, False),
    "partial_batch": (500, "BATCH_ITEM_FAILED", "transient", True, False),
    "refusal": (400, "MODEL_REFUSAL", "fatal", False, False),
    "content_filter": (400, "CONTENT_FILTERED", "fatal", False, False),
    "truncated_call": (422, "OUTPUT_TRUNCATED", "validation", False, False),
    "malformed_args": (400, "INVALID_TOOL_ARGUMENTS", "validation", True, False),
    "unknown_tool": (404, "UNKNOWN_TOOL", "validation", True, False),
    "duplicate_call_id": (400, "DUPLICATE_TOOL_CALL_ID", "validation", True, False),
    "empty_turn": (502, "EMPTY_RESPONSE", "transient", True, False),
    "stream_cut": (502, "STREAM_INTERRUPTED", "transient", True, False),
    "context_overflow": (400, "CONTEXT_LENGTH_EXCEEDED", "validation", False, False),
    "silent_suppression": (None, "EMPTY_SUCCESS", "fatal", False, False),
    "fabricated_defaults": (None, "FABRICATED_DEFAULT", "fatal", False, False),
    "schema_drift": (None, "SCHEMA_VERSION_SKEW", "reporting", None, False),
    "wrong_envelope": (None, "ENVELOPE_WRONG", "reporting", None, False),
    "node_crash": (502, "WORKER_LOST", "resource", True, False),
    "network_partition": (503, "NETWORK_PARTITION", "resource", True, False),
    "latency_spike": (504, "TOOL_TIMEOUT", "transient", True, False),
    "quota_exhausted": (429, "QUOTA_EXCEEDED", "resource", True, True),
    "overloaded": (503, "SERVICE_OVERLOADED", "transient", True, False),
    "mcp_protocol_error": (500, "MCP_PROTOCOL_ERROR", "transient", True, False),
    "mcp_tool_error": (500, "MCP_TOOL_ERROR", "transient", True, False),
    "mcp_server_restart": (502, "MCP_SERVER_UNAVAILABLE", "transient", True, False),
    "mcp_session_expired": (404, "MCP_SESSION_EXPIRED", "auth", True, False),
    "mcp_tool_drift": (404, "MCP_UNKNOWN_TOOL", "validation", True, False),
}


def test_the_table_names_every_kind_of_the_catalogue():
    """A kind added to the catalogue needs its row here (and a removed one loses it)."""
    assert sorted(WIRE) == sorted(KINDS)


@pytest.mark.parametrize("kind", sorted(WIRE))
def test_each_kind_has_the_wire_status_code_category_and_hint_of_the_table(kind):
    """The record's wire status, contract code, category, recoverability and hint are the table's."""
    status, code, category, recoverable, hinted = WIRE[kind]
    record = KINDS[kind]
    assert (record.wire.status if record.wire is not None else None) == status
    assert (record.contract.error_code, record.contract.category, record.contract.recoverable) == (
        code,
        category,
        recoverable,
    )
    assert record.retry_after is hinted
