"""Structured formats beyond AgentToolError: failure-type (and its field ablation),
subagent-result and tool-envelope.

Each maps a fault kind onto its own contract's vocabulary (the kind's record in
:mod:`fleetchaos.sim.kinds`: its failure type, subagent category, retry flag,
alternative and wire status), carries the dispatch's
progress in its own way, honours schema drift (a worker on an older contract version
emits the envelope without the fields that version lacks: see ``DRIFT``), and passes
any vendor text through the sanitiser before it crosses the boundary.
"""

from __future__ import annotations

from typing import Literal

from fleetchaos.sim.envelopes import FailureTypeError, ItemStatus, RunHealth, SubagentResult, ToolEnvelope
from fleetchaos.sim.formats._base import plain_success, progress_refs, retry_after_ms
from fleetchaos.sim.formats._text import _Bound
from fleetchaos.sim.formats._vendor import shown_kind, vendor_text
from fleetchaos.sim.kinds import ALTERNATIVE_SOURCE, FaultKind, rendered_kind
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import sanitise
from fleetchaos.sim.truth import AttemptReport

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
    """The envelope without the fields the worker leaves out, stamped with its older contract version if any."""
    if report.schema_version is None and not report.dropped_fields:
        return envelope
    table = DRIFT[contract]
    updates: dict = {f: None for name in report.dropped_fields for f in table.get(name, ())}
    if report.schema_version is not None:
        updates["schema_version"] = report.schema_version
    return envelope.model_copy(update=updates)


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
    partial_batch = "failed"  # the envelope reports the failure and what completed
    misread_setting = "failure_type"
    misread_factor = DEFAULT_MISREAD_FACTORS["failure_type"]
    failure_flag = True  # failure_type is machine-readable: a guardrail can check it

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """A FailureTypeError with the fields this format carries."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        kind = shown_kind(report)
        values: dict = {"failure_type": kind.failure_type}
        if "partial_results" in self.fields:
            steps, items = progress_refs(report)
            values["partial_results"] = steps + items
        if "alternatives_suggested" in self.fields:
            alternatives: tuple[str, ...] = ()
            # An alternative source is named only while an untried one is left.
            if kind.alternative is not None and (
                kind.alternative != ALTERNATIVE_SOURCE or report.alternatives_left > 0
            ):
                alternatives = (kind.alternative,)
            values["alternatives_suggested"] = alternatives
        if "retry_recommended" in self.fields:
            values["retry_recommended"] = kind.retry_helps
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
    partial_batch = "failed"  # the envelope reports the failure and what completed
    misread_setting = "subagent_result"
    misread_factor = DEFAULT_MISREAD_FACTORS["subagent_result"]
    failure_flag = True  # status is machine-readable: a guardrail can check it

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """A SubagentResult for the dispatch."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        kind = shown_kind(report)
        steps, items = progress_refs(report)
        category = kind.subagent_category
        hint = retry_after_ms(report)
        message = sanitise(_first_line(vendor_text(report, self.secrets)))
        if hint is not None:
            message += f" Retry after {hint / 1000.0:g}s."
        envelope = SubagentResult(
            status="partial" if steps or items else "failed",
            task_id=str(report.task_id),
            task_description=report.step_names[report.failed_step],
            error_category=category,
            error_message=message,
            is_retryable=bool(kind.contract.recoverable and category == "transient"),
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


def _item_status(item: int, done: set[int], failed: dict[int, FaultKind]) -> ItemStatus:
    """One item of a failed batch in the tool envelope's manifest."""
    if item in done:
        return ItemStatus(item=item, status="ok")
    kind = failed.get(item)
    if kind is None:
        return ItemStatus(item=item, status="skipped")
    return ItemStatus(
        item=item, status="timeout" if kind.outcome_unknown else "error", error_code=kind.contract.error_code
    )


class ToolEnvelopeFormat(_Bound):
    """A tool envelope with batch semantics and a run-health block.

    status ok/partial/error/timeout (timeout when the outcome is unknown), a stable
    error code, retriable, a sanitised one-line message, data with the completed
    references, a per-item manifest of the failed batch, sanitised metadata, and a
    run_health block whose failure count and blocking flag are the hardest thing in
    any format to misread.
    """

    name = "tool-envelope"
    partial_batch = "failed"  # the envelope reports the failure and what completed
    misread_setting = "tool_envelope"
    misread_factor = DEFAULT_MISREAD_FACTORS["tool_envelope"]
    failure_flag = True  # blocking_failure is exactly what a final-answer guardrail checks

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """A ToolEnvelope for the dispatch."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        kind = shown_kind(report)
        steps, items = progress_refs(report)
        tool = report.step_names[report.failed_step]
        status: Literal["timeout", "partial", "error"]
        if kind.outcome_unknown:
            status = "timeout"
        elif items or (report.fan_out > 1 and report.item_failures and len(report.item_failures) < report.fan_out):
            status = "partial"
        else:
            status = "error"
        manifest = None
        if report.fan_out > 1:
            failed = {
                item: kind if name == report.failure else rendered_kind(name) for item, name in report.item_failures
            }
            done = set(report.done_items)
            manifest = tuple(_item_status(i, done, failed) for i in range(report.fan_out))
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
            status=status,
            error_code=kind.contract.error_code,
            retriable=bool(kind.contract.recoverable),
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
