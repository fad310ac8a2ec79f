"""Every fault kind, one record each: where the world meets it and how each contract reports it.

Every table that keys on a kind (the error formats, vendor texts, the transport layer,
the waste families, ``fleetchaos faults list``, docs/scenarios.md) reads these records;
:mod:`fleetchaos.sim.kind_record` defines their shape and how to add a kind.  Standard
library only: a policy, a format or a real-code runtime reads it without SimPy or pydantic.
"""

from __future__ import annotations

from fleetchaos.sim.kind_record import (
    ALTERNATIVE_SOURCE,
    BATCH,
    CAUSES,
    CONVERSATION,
    EXHAUSTED_RESOURCE,
    MASKING,
    OTHER_WORKER,
    PERMANENT_ERROR,
    PERSISTENT,
    PERSISTENT_SCOPES,
    REMEDIES,
    REPORTING,
    SOURCE,
    STAGES,
    STATE,
    STATE_CAUSE,
    STILL_RATE_LIMITED,
    TASK_STEP,
    TASK_STEP_ITEM,
    TRANSIENT,
    TRANSIENT_AGAIN,
    UNCLASSIFIED,
    WORKER_TOOL,
    FailureContract,
    FaultKind,
    Waste,
    Wire,
)
from fleetchaos.sim.kinds_mcp import MCP_KINDS
from fleetchaos.sim.kinds_model import MODEL_KINDS
from fleetchaos.sim.kinds_reporting import REPORTING_KINDS

#: Why a retry into a provider still saturated at its dispatch is wasted: the ``overloaded``
#: kind's cause, and the judge's second cause for every kind of :data:`SATURATION_KINDS`.
PROVIDER_SATURATED = Waste("provider_saturated", "provider still saturated", EXHAUSTED_RESOURCE)

KINDS: dict[str, FaultKind] = {
    k.name: k
    for k in (
        FaultKind(
            name="network_blip",
            stage=TRANSIENT,
            contract=FailureContract("NETWORK_UNREACHABLE", "transient", True, "retry_with_backoff"),
            fail_fast_s=1.0,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=True,
            retry_helps=True,
            failure_type="timeout",
            subagent_category="transient",
            alternative=None,
            wire=Wire(503, "Service Unavailable", "ECONNRESET"),
            waste=Waste("transient", "blip drawn again", TRANSIENT_AGAIN),
            remedy=None,
            persistent_scope=None,
            effect="The call fails fast on a dropped connection and takes no effect; a retry normally succeeds.",
        ),
        FaultKind(
            name="timeout",
            stage=TRANSIENT,
            contract=FailureContract("TOOL_TIMEOUT", "transient", True, "retry_with_backoff"),
            fail_fast_s=None,
            outcome_unknown=True,
            retry_after=False,
            transport_retryable=True,
            retry_helps=True,
            failure_type="timeout",
            subagent_category="transient",
            alternative=None,
            wire=Wire(504, "Gateway Timeout", "ETIMEDOUT"),
            waste=Waste("transient", "timed out again", TRANSIENT_AGAIN),
            remedy=None,
            persistent_scope=None,
            effect="The call hangs until timeout_s; with committed_probability its side effect took effect anyway, "
            "so the outcome is unknown and running it again may duplicate it.",
        ),
        FaultKind(
            name="rate_limit",
            stage=STATE,
            contract=FailureContract("RATE_LIMITED", "transient", True, "wait_retry_after"),
            fail_fast_s=0.1,
            outcome_unknown=False,
            retry_after=True,
            transport_retryable=True,
            retry_helps=True,
            failure_type="rate_limited",
            subagent_category="transient",
            alternative=None,
            wire=Wire(429, "Too Many Requests", "ERR_RATE_LIMITED"),
            waste=Waste(STATE_CAUSE, "API token bucket still empty", STILL_RATE_LIMITED),
            remedy=None,
            persistent_scope=None,
            effect="Inside its windows the fleet-wide API token bucket refills at capacity_factor of its rate; an API "
            "call that finds no token is refused (429, with a retry-after hint) and takes no effect.",
        ),
        FaultKind(
            name="disk_full",
            stage=STATE,
            contract=FailureContract("DISK_FULL", "resource", True, "reroute_to_healthy_worker"),
            fail_fast_s=0.5,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=False,
            failure_type="unavailable",
            subagent_category="transient",
            alternative=None,
            wire=Wire(507, "Insufficient Storage", "ENOSPC"),
            waste=Waste(STATE_CAUSE, "same full disk", EXHAUSTED_RESOURCE),
            remedy="clear_disk",
            persistent_scope=None,
            effect="From each fill until cleanup_after_s later, every disk-writing step on that worker fails and "
            "takes no effect; steps that do not write still run.",
        ),
        FaultKind(
            name="expired_key",
            stage=STATE,
            contract=FailureContract("AUTH_EXPIRED", "auth", True, "refresh_credentials"),
            fail_fast_s=0.3,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=True,
            failure_type="auth_error",
            subagent_category="permission",
            alternative=None,
            wire=Wire(401, "Unauthorized", "ERR_TOKEN_EXPIRED"),
            waste=Waste(STATE_CAUSE, "credentials still expired", PERMANENT_ERROR),
            remedy="refresh_credentials",
            persistent_scope=None,
            effect="From the revocation on, every API call on that worker fails and takes no effect until the "
            "orchestrator refreshes the worker's credentials.",
        ),
        FaultKind(
            name="git_push_conflict",
            stage=STATE,
            contract=FailureContract("GIT_PUSH_REJECTED", "transient", True, "fetch_rebase_and_retry"),
            fail_fast_s=None,  # rejected when the push ends: it ran its full duration
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=True,
            failure_type="timeout",
            subagent_category="transient",
            alternative=None,
            wire=Wire(409, "Conflict", "ERR_NON_FAST_FORWARD"),
            waste=None,
            remedy=None,
            persistent_scope=None,
            effect="A push takes effect only if no other push landed on its branch while it ran; otherwise it is "
            "rejected and takes no effect, so contention grows with pushers and retry timing.",
        ),
        FaultKind(
            name="missing_dependency",
            stage=PERSISTENT,
            contract=FailureContract("DEPENDENCY_MISSING", "dependency", True, "reroute_or_provision"),
            fail_fast_s=0.2,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=False,
            failure_type="permanent",
            subagent_category="business",
            alternative=OTHER_WORKER,
            wire=Wire(424, "Failed Dependency", "ENOENT"),
            waste=Waste("persistent", "tool still missing", PERMANENT_ERROR),
            remedy="install_tool",
            persistent_scope=WORKER_TOOL,
            effect="Calls of the targeted tools on the targeted workers fail and take no effect (with probability 1, "
            "always); the same call on another worker succeeds.",
        ),
        FaultKind(
            name="validation_error",
            stage=PERSISTENT,
            contract=FailureContract("VALIDATION_FAILED", "validation", False, "fix_input_upstream"),
            fail_fast_s=0.5,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=False,
            failure_type="permanent",
            subagent_category="validation",
            alternative=None,
            wire=Wire(422, "Unprocessable Entity", "ERR_INVALID_ARG_VALUE"),
            waste=Waste("persistent", "input still invalid", PERMANENT_ERROR),
            remedy=None,
            persistent_scope=TASK_STEP,
            effect="A chosen task's step fails on every execution, on every worker, and never takes effect: "
            "retrying cannot help.",
        ),
        FaultKind(
            name="not_found",
            stage=PERSISTENT,
            contract=FailureContract("NOT_FOUND", "dependency", True, "use_alternative_source"),
            fail_fast_s=0.4,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=False,
            failure_type="not_found",
            subagent_category="business",
            alternative=ALTERNATIVE_SOURCE,
            wire=Wire(404, "Not Found", "ERR_NOT_FOUND"),
            waste=Waste("persistent", "same missing source", PERMANENT_ERROR),
            remedy=None,
            persistent_scope=SOURCE,
            effect="A chosen item's source is gone for good: it fails on every retry until the orchestrator "
            "switches to an alternative source (each of which may be missing too).",
        ),
        FaultKind(
            name="permission_denied",
            stage=PERSISTENT,
            contract=FailureContract("PERMISSION_DENIED", "auth", False, "request_access"),
            fail_fast_s=0.3,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=False,
            failure_type="auth_error",
            subagent_category="permission",
            alternative=None,
            wire=Wire(403, "Forbidden", "EACCES"),
            waste=Waste("persistent", "access still denied", PERMANENT_ERROR),
            remedy=None,
            persistent_scope=TASK_STEP_ITEM,
            effect="The chosen items are refused (403) on every retry, on every worker, and never take effect: "
            "only a human granting access would help.",
        ),
        FaultKind(
            name="partial_batch",
            stage=BATCH,
            contract=FailureContract("BATCH_ITEM_FAILED", "transient", True, "retry_failed_items"),
            fail_fast_s=0.5,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=True,
            failure_type="timeout",
            subagent_category="transient",
            alternative=None,
            wire=Wire(500, "Internal Server Error", "ERR_BATCH_ITEM"),
            waste=Waste("batch", "same failing batch items", PERMANENT_ERROR),
            remedy=None,
            persistent_scope=None,
            effect="In one execution of a fan-out step, `failures` of its items fail together and take no effect "
            "while the others do (the same items every time when persistent).",
        ),
        *MODEL_KINDS,  # refusal ... stream_cut: the model-side kinds (fleetchaos.sim.kinds_model)
        FaultKind(
            name="silent_suppression",
            stage=MASKING,
            contract=FailureContract("EMPTY_SUCCESS", "fatal", False, "none_visible"),
            fail_fast_s=None,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=False,
            failure_type=None,
            subagent_category=None,
            alternative=None,
            wire=None,
            waste=None,
            remedy=None,
            persistent_scope=None,
            effect="The call returns an empty success but took no effect: the truth stays incomplete while every "
            "error format shows ok, and steps that need it run on missing input.",
        ),
        FaultKind(
            name="fabricated_defaults",
            stage=MASKING,
            contract=FailureContract("FABRICATED_DEFAULT", "fatal", False, "none_visible"),
            fail_fast_s=None,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=False,
            failure_type=None,
            subagent_category=None,
            alternative=None,
            wire=None,
            waste=None,
            remedy=None,
            persistent_scope=None,
            effect="The call returns plausible default values as a success but took no effect: the truth stays "
            "incomplete while every error format shows ok, and steps that need it run on made-up input.",
        ),
        *REPORTING_KINDS,  # schema_drift, wrong_envelope (fleetchaos.sim.kinds_reporting)
        FaultKind(
            name="node_crash",
            stage=STATE,
            contract=FailureContract("WORKER_LOST", "resource", True, "requeue_on_healthy_worker"),
            fail_fast_s=0.2,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=True,
            retry_helps=False,
            failure_type="unavailable",
            subagent_category="transient",
            alternative=None,
            wire=Wire(502, "Bad Gateway", "ECONNREFUSED"),
            waste=Waste(STATE_CAUSE, "worker still down", EXHAUSTED_RESOURCE),
            remedy=None,
            persistent_scope=None,
            effect="The worker is down for down_s: calls in flight at the crash are lost (those that finished "
            "before it took effect), nothing reports back until the orchestrator misses its heartbeats "
            "(fleet.heartbeat_timeout_s after the crash), and calls dispatched while it is down fail fast.",
        ),
        FaultKind(
            name="network_partition",
            stage=STATE,
            contract=FailureContract("NETWORK_PARTITION", "resource", True, "reroute_to_reachable_worker"),
            fail_fast_s=None,  # the dispatch waits the partition's connect_timeout_s
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=False,
            retry_helps=False,
            failure_type="unavailable",
            subagent_category="transient",
            alternative=None,
            wire=Wire(503, "Service Unavailable", "EHOSTUNREACH"),
            waste=Waste(STATE_CAUSE, "still partitioned", EXHAUSTED_RESOURCE),
            remedy=None,
            persistent_scope=None,
            effect="During its windows a dispatch from one of the orchestrators to a targeted worker fails after "
            "connect_timeout_s without running anything.",
        ),
        FaultKind(
            name="latency_spike",
            stage=STATE,
            contract=FailureContract("TOOL_TIMEOUT", "transient", True, "retry_with_backoff"),
            fail_fast_s=None,
            outcome_unknown=True,
            retry_after=False,
            transport_retryable=True,
            retry_helps=True,
            failure_type="timeout",
            subagent_category="transient",
            alternative=None,
            wire=Wire(504, "Gateway Timeout", "ETIMEDOUT"),
            waste=Waste("transient", "still too slow in the spike", TRANSIENT_AGAIN),
            remedy=None,
            persistent_scope=None,
            effect="During its windows network latency on the targeted workers is multiplied by factor (plus add_s); "
            "a call slower than fleet.call_timeout_s times out with an unknown outcome (committed half the time).",
        ),
        FaultKind(
            name="quota_exhausted",
            stage=STATE,
            contract=FailureContract("QUOTA_EXCEEDED", "resource", True, "wait_for_quota_reset"),
            fail_fast_s=0.1,
            outcome_unknown=False,
            retry_after=True,
            transport_retryable=False,
            retry_helps=True,
            failure_type="rate_limited",
            subagent_category="transient",
            alternative=None,
            wire=Wire(429, "Too Many Requests", "ERR_QUOTA_EXCEEDED"),
            waste=Waste(STATE_CAUSE, "same exhausted quota", EXHAUSTED_RESOURCE),
            remedy=None,
            persistent_scope=None,
            effect="Once calls_per_day API calls have gone through in a simulated day, every further API call fails "
            "and takes no effect until the next day starts.",
        ),
        FaultKind(
            name="overloaded",
            stage=STATE,
            contract=FailureContract("SERVICE_OVERLOADED", "transient", True, "retry_with_backoff"),
            fail_fast_s=0.05,
            outcome_unknown=False,
            retry_after=False,
            transport_retryable=True,
            retry_helps=True,
            failure_type="rate_limited",
            subagent_category="transient",
            alternative=None,
            wire=Wire(503, "Service Unavailable", "ERR_OVERLOADED"),
            waste=PROVIDER_SATURATED,
            remedy=None,
            persistent_scope=None,
            effect="A full provider (fleet.providers) refuses a new call at once (HTTP 503) and the call takes no "
            "effect; during the fault's windows the provider serves at capacity_factor of its speed, so it fills "
            "at a lower load.",
        ),
        *MCP_KINDS,  # the MCP boundary's kinds (fleetchaos.sim.kinds_mcp)
    )
}
"""Every fault kind by name, in catalogue order (the five core kinds first)."""


class UnknownFaultKind(KeyError):
    """A name that no :class:`FaultKind` record has."""

    def __str__(self) -> str:
        return (
            f"unknown fault kind {self.args[0]!r} (known: {', '.join(KINDS)}); "
            "a new kind needs a FaultKind record in fleetchaos.sim.kinds"
        )


def fault_kind(name: str) -> FaultKind:
    """The record of a kind; an unknown name raises :class:`UnknownFaultKind` (never a default)."""
    try:
        return KINDS[name]
    except KeyError:
        raise UnknownFaultKind(name) from None


def reported_kind(failure: str | None) -> FaultKind:
    """The record a format renders a failure with: :data:`UNCLASSIFIED` when the report names none."""
    return UNCLASSIFIED if failure is None else fault_kind(failure)


def rendered_kind(failure: str | None) -> FaultKind:
    """:func:`reported_kind` for a format that needs the kind's wording in every contract.

    A masking or reporting kind is never the failure of a dispatch (its call looked
    successful), so it has no wire status or failure type: asking for one is an error.
    """
    kind = reported_kind(failure)
    if kind.wire is None:
        raise ValueError(f"fault kind {failure!r} ({kind.stage}) is never reported as a failure")
    return kind


#: Kinds that only a provider with a declared capacity (``fleet.providers``) produces: a
#: world without one never meets them, and a wrong envelope there does not name them.
PROVIDER_KINDS: frozenset[str] = frozenset({"overloaded"})

#: Kinds a saturated provider (``fleet.providers``) produces: its refusals (a full provider's 503,
#: or its 429 with ``overload_status: 429``) and a call that waited for a server past its
#: client's patience (a timeout, or a latency spike's).  A retry after one of them into a
#: provider still saturated at its dispatch is wasted whatever else its kind's own cause says
#: (:meth:`fleetchaos.sim.waste.RetryJudge.wasted`).
SATURATION_KINDS: frozenset[str] = frozenset({"overloaded", "rate_limit", "timeout", "latency_spike"})

#: Kinds that are a request refused by the API or a provider for capacity (a 429 of the token
#: bucket or a provider, a spent quota, a full provider's 503): each is a refused request
#: (``refused_calls``, priced at ``fleet.usd_per_refused_call``).
REFUSAL_KINDS: tuple[str, ...] = ("rate_limit", "quota_exhausted", "overloaded")


def kinds_in(*stages: str) -> tuple[str, ...]:
    """The names of the kinds met at these stages, in catalogue order (read now, not at import)."""
    return tuple(name for name, k in KINDS.items() if k.stage in stages)


def waste_families() -> dict[str, str]:
    """Each wasted-retry reason the judge can record -> its family."""
    return {k.waste.reason: k.waste.family for k in KINDS.values() if k.waste is not None}


__all__ = [  # the records, their lookups, and the words the records use (from kind_record)
    "ALTERNATIVE_SOURCE",
    "BATCH",
    "CAUSES",
    "CONVERSATION",
    "KINDS",
    "MASKING",
    "OTHER_WORKER",
    "PERSISTENT",
    "PERSISTENT_SCOPES",
    "PROVIDER_KINDS",
    "PROVIDER_SATURATED",
    "REFUSAL_KINDS",
    "REMEDIES",
    "REPORTING",
    "SATURATION_KINDS",
    "SOURCE",
    "STAGES",
    "STATE",
    "STATE_CAUSE",
    "TASK_STEP",
    "TASK_STEP_ITEM",
    "TRANSIENT",
    "UNCLASSIFIED",
    "WORKER_TOOL",
    "FailureContract",
    "FaultKind",
    "UnknownFaultKind",
    "Waste",
    "Wire",
    "fault_kind",
    "kinds_in",
    "rendered_kind",
    "reported_kind",
    "waste_families",
]
