"""``subagent-result``: a sub-agent's envelope (status, error category, retryable flag, partial data).

The vendor message crosses the boundary only sanitised, as one line.  A worker on an older
contract version emits the envelope without the fields that version lacks (``DRIFT``).
"""

from __future__ import annotations

from fleetchaos.sim.envelopes import SubagentResult
from fleetchaos.sim.formats._base import drifted, plain_success, progress_refs, retry_after_ms
from fleetchaos.sim.formats._vendor import VendorText, first_line, shown_kind, vendor_text
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import sanitise
from fleetchaos.sim.truth import AttemptReport

#: The AgentToolError field a drift fault names -> the fields this contract lacks in that older version.
DRIFT: dict[str, tuple[str, ...]] = {
    "partial_success": ("partial_data",),
    "retry_after_ms": ("retry_after_s",),
    "suggested_action": ("is_retryable",),
    "context": ("error_message",),
}


class SubagentResultFormat(VendorText):
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
        message = sanitise(first_line(vendor_text(report, self.secrets)))
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
        envelope = drifted(envelope, report, DRIFT)
        text = envelope.model_dump_json()
        return Observation(
            ok=False, status="failed", worker=report.worker, envelope=envelope, secrets=self.secrets.count_in(text)
        )

    def __repr__(self) -> str:
        return "SubagentResultFormat()"
