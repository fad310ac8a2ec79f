"""``tool-envelope``: a tool envelope with batch semantics and a run-health block.

Vendor text crosses the boundary only sanitised (message and metadata).  A worker on an
older contract version emits the envelope without the fields that version lacks (``DRIFT``).
"""

from __future__ import annotations

from typing import Literal

from fleetchaos.sim.envelopes import ItemStatus, RunHealth, ToolEnvelope
from fleetchaos.sim.formats._base import drifted, plain_success, progress_refs, retry_after_ms
from fleetchaos.sim.formats._vendor import VendorText, first_line, shown_kind, vendor_text
from fleetchaos.sim.kinds import FaultKind, rendered_kind
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import sanitise
from fleetchaos.sim.truth import AttemptReport

#: The AgentToolError field a drift fault names -> the fields this contract lacks in that older version.
DRIFT: dict[str, tuple[str, ...]] = {
    "partial_success": ("data", "manifest"),
    "retry_after_ms": ("run_health",),
    "suggested_action": ("retriable",),
    "context": ("metadata",),
}


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


class ToolEnvelopeFormat(VendorText):
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
            message=sanitise(first_line(text)),
            data={"completed_steps": steps, "completed_items": items},
            manifest=manifest,
            metadata=metadata,
            run_health=RunHealth(tools_ok=len(steps) + len(items), tools_failed=n_failed, blocking_failure=True),
        )
        envelope = drifted(envelope, report, DRIFT)
        return Observation(
            ok=False,
            status="failed",
            worker=report.worker,
            envelope=envelope,
            secrets=self.secrets.count_in(envelope.model_dump_json()),
        )

    def __repr__(self) -> str:
        return "ToolEnvelopeFormat()"
