"""Structured formats beyond AgentToolError: failure-type (and its field ablation),
subagent-result and tool-envelope.

Each maps a fault kind onto its own contract's vocabulary, carries the dispatch's
progress in its own way, honours schema drift (a worker on an older contract version
emits the envelope without the fields that version lacks: see ``DRIFT``), and passes
any vendor text through the sanitiser before it crosses the boundary.
"""

from __future__ import annotations

from fleetchaos.sim.envelopes import FailureTypeError, ItemStatus, RunHealth, SubagentResult, ToolEnvelope
from fleetchaos.sim.formats._base import plain_success, progress_refs, retry_after_ms
from fleetchaos.sim.formats._text import _Bound
from fleetchaos.sim.formats._vendor import vendor_text
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import sanitise
from fleetchaos.sim.truth import FAILURES, AttemptReport

#: Fault kind -> failure type of the failure-type contract (the router's handler).
FAILURE_TYPES: dict[str, str] = {
    "network_blip": "timeout",
    "timeout": "timeout",
    "latency_spike": "timeout",
    "partial_batch": "timeout",
    "git_push_conflict": "timeout",
    "expired_key": "auth_error",
    "permission_denied": "auth_error",
    "not_found": "not_found",
    "rate_limit": "rate_limited",
    "quota_exhausted": "rate_limited",
    "validation_error": "permanent",
    "missing_dependency": "permanent",
    "disk_full": "unavailable",
    "node_crash": "unavailable",
    "network_partition": "unavailable",
}

#: Kinds whose failed call succeeds when simply tried again (after the type's own
#: handler: a wait for a rate limit, a credential refresh for an expired key).
RETRY_HELPS = frozenset(
    {
        "network_blip",
        "timeout",
        "latency_spike",
        "partial_batch",
        "git_push_conflict",
        "expired_key",
        "rate_limit",
        "quota_exhausted",
    }
)

#: Alternatives a worker can name, per kind (when it has them).
ALTERNATIVE_SOURCE = "alternative_source"
OTHER_WORKER = "reroute_to_worker_with_tool"

#: Fault kind -> error category of the subagent-result contract.
SUBAGENT_CATEGORIES: dict[str, str] = {
    **{
        k: "transient"
        for k in (
            "network_blip",
            "timeout",
            "latency_spike",
            "partial_batch",
            "git_push_conflict",
            "rate_limit",
            "quota_exhausted",
            "disk_full",
            "node_crash",
            "network_partition",
        )
    },
    "expired_key": "permission",
    "permission_denied": "permission",
    "validation_error": "validation",
    "not_found": "business",
    "missing_dependency": "business",
}

#: Per format: the AgentToolError field a drift fault names -> the fields this contract
#: lacks in that older version (read as None).
DRIFT: dict[str, dict[str, tuple[str, ...]]] = {
    "failure-type": {
        "partial_success": ("partial_results",),
        "suggested_action": ("alternatives_suggested",),
        "retry_after_ms": ("retry_recommended",),
    },
    "subagent-result": {
        "partial_success": ("partial_data",),
        "retry_after_ms": ("retry_after_s",),
        "suggested_action": ("is_retryable",),
        "context": ("error_message",),
    },
    "tool-envelope": {
        "partial_success": ("data", "manifest"),
        "retry_after_ms": ("run_health",),
        "suggested_action": ("retriable",),
        "context": ("metadata",),
    },
}


def _drifted(envelope, report: AttemptReport, contract: str):
    """The envelope as a worker on an older contract version emits it."""
    if report.schema_version is None:
        return envelope
    table = DRIFT[contract]
    updates = {f: None for name in report.dropped_fields for f in table.get(name, ())}
    return envelope.model_copy(update={**updates, "schema_version": report.schema_version})


def _first_line(text: str) -> str:
    return text.splitlines()[0][:200] if text else ""


class FailureTypeFormat:
    """failure_type, partial_results, alternatives_suggested, retry_recommended.

    ``fields`` names the optional fields this format fills; the full format fills all
    three, the ablation steps fewer.  The failure type is an explicit enum a guardrail
    can check (``failure_flag``); it is misread as rarely as an AgentToolError.
    """

    name = "failure-type"
    fields: frozenset[str] = frozenset({"partial_results", "alternatives_suggested", "retry_recommended"})
    partial_step_ok = False
    misread_factor = 0.2  # an explicit failure_type enum, as explicit as an AgentToolError's code
    failure_flag = True  # failure_type is machine-readable: a guardrail can check it

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """A FailureTypeError with the fields this format carries."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        kind = report.failure or "unknown"
        values: dict = {"failure_type": FAILURE_TYPES.get(kind, "permanent")}
        if "partial_results" in self.fields:
            steps, items = progress_refs(report)
            values["partial_results"] = steps + items
        if "alternatives_suggested" in self.fields:
            alternatives: tuple[str, ...] = ()
            if kind == "not_found" and report.alternatives_left > 0:
                alternatives = (ALTERNATIVE_SOURCE,)
            elif kind == "missing_dependency":
                alternatives = (OTHER_WORKER,)
            values["alternatives_suggested"] = alternatives
        if "retry_recommended" in self.fields:
            values["retry_recommended"] = kind in RETRY_HELPS
        envelope = _drifted(FailureTypeError(**values), report, "failure-type")
        return Observation(ok=False, status="failed", worker=report.worker, envelope=envelope)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AblationFailureType(FailureTypeFormat):
    """Ablation step 1: failure_type only."""

    name = "ablation:failure_type"
    fields = frozenset()


class AblationPartialResults(FailureTypeFormat):
    """Ablation step 2: failure_type + partial_results."""

    name = "ablation:+partial_results"
    fields = frozenset({"partial_results"})


class AblationAlternatives(FailureTypeFormat):
    """Ablation step 3: failure_type + partial_results + alternatives_suggested."""

    name = "ablation:+alternatives"
    fields = frozenset({"partial_results", "alternatives_suggested"})


class AblationRetryFlag(FailureTypeFormat):
    """Ablation step 4: every field (failure_type, partial results, alternatives, retry flag)."""

    name = "ablation:+retry_recommended"
    fields = frozenset({"partial_results", "alternatives_suggested", "retry_recommended"})


#: The field ablation, in order: each step adds one field to the one before.
ABLATION_STEPS: tuple[type[FailureTypeFormat], ...] = (
    AblationFailureType,
    AblationPartialResults,
    AblationAlternatives,
    AblationRetryFlag,
)


class SubagentResultFormat(_Bound):
    """A sub-agent's envelope: status, error category, retryable flag, partial data.

    The vendor message reaches the orchestrator only sanitised, as one line.  The
    status word ("failed"/"partial") is explicit and machine-readable.
    """

    name = "subagent-result"
    partial_step_ok = False
    misread_factor = 0.2  # an explicit failed/partial status field
    failure_flag = True  # status is machine-readable: a guardrail can check it

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """A SubagentResult for the dispatch."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        kind = report.failure or "unknown"
        steps, items = progress_refs(report)
        category = SUBAGENT_CATEGORIES.get(kind, "unknown")
        contract = FAILURES.get(kind)
        hint = retry_after_ms(report)
        message = sanitise(_first_line(vendor_text(report, self.secrets)))
        if hint is not None:
            message += f" Retry after {hint / 1000.0:g}s."
        envelope = SubagentResult(
            status="partial" if steps or items else "failed",
            task_id=str(report.task_id),
            task_description=report.step_names[report.failed_step],
            error_category=category,  # type: ignore[arg-type]
            error_message=message,
            is_retryable=bool(contract and contract.recoverable and category == "transient"),
            retry_after_s=None if hint is None else hint / 1000.0,
            partial_data=steps + items,
        )
        envelope = _drifted(envelope, report, "subagent-result")
        text = envelope.model_dump_json()
        return Observation(
            ok=False, status="failed", worker=report.worker, envelope=envelope, secrets=self.secrets.count_in(text)
        )

    def __repr__(self) -> str:
        return "SubagentResultFormat()"


class ToolEnvelopeFormat(_Bound):
    """A tool envelope with batch semantics and a run-health block.

    status ok/partial/error/timeout (timeout when the outcome is unknown), a stable
    error code, retriable, a sanitised one-line message, data with the completed
    references, a per-item manifest of the failed batch, sanitised metadata, and a
    run_health block whose failure count and blocking flag are the hardest thing in
    any format to misread.
    """

    name = "tool-envelope"
    partial_step_ok = False
    misread_factor = 0.05  # a failure count and a blocking_failure flag are hard to misread
    failure_flag = True  # blocking_failure is exactly what a final-answer guardrail checks

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """A ToolEnvelope for the dispatch."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        kind = report.failure or "unknown"
        contract = FAILURES.get(kind)
        steps, items = progress_refs(report)
        tool = report.step_names[report.failed_step]
        if kind in ("timeout", "latency_spike"):
            status = "timeout"
        elif items or (report.fan_out > 1 and report.item_failures and len(report.item_failures) < report.fan_out):
            status = "partial"
        else:
            status = "error"
        manifest = None
        if report.fan_out > 1:
            failed = dict(report.item_failures)
            done = set(report.done_items)
            manifest = tuple(
                ItemStatus(
                    item=i,
                    status="ok"
                    if i in done
                    else (
                        "timeout"
                        if failed.get(i) in ("timeout", "latency_spike")
                        else "error"
                        if i in failed
                        else "skipped"
                    ),
                    error_code=FAILURES[failed[i]].error_code if failed.get(i) in FAILURES else None,
                )
                for i in range(report.fan_out)
            )
        text = vendor_text(report, self.secrets)
        metadata = {
            "tool": tool,
            "worker": f"worker-{report.worker}",
            "call_id": f"{report.task_id}:{report.failed_step}",
            "detail": sanitise(text.splitlines()[1].strip() if "\n" in text else ""),
        }
        hint = retry_after_ms(report)
        if hint is not None:
            metadata["retry_after_ms"] = str(hint)
        n_failed = len(report.item_failures) or 1
        envelope = ToolEnvelope(
            status=status,  # type: ignore[arg-type]
            error_code=contract.error_code if contract else "UNCLASSIFIED",
            retriable=bool(contract and contract.recoverable),
            message=sanitise(_first_line(text)),
            data={"completed_steps": steps, "completed_items": items},
            manifest=manifest,
            metadata=metadata,
            run_health=RunHealth(tools_ok=len(steps) + len(items), tools_failed=n_failed, blocking_failure=True),
        )
        envelope = _drifted(envelope, report, "tool-envelope")
        return Observation(
            ok=False,
            status="failed",
            worker=report.worker,
            envelope=envelope,
            secrets=self.secrets.count_in(envelope.model_dump_json()),
        )

    def __repr__(self) -> str:
        return "ToolEnvelopeFormat()"
