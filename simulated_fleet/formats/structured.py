"""``structured`` and ``agent-tool-error``: the AgentToolError envelope (code, category,
recoverability, partial success, hints)."""

from __future__ import annotations

from fleetchaos.sim.envelope import AgentToolError, PartialSuccess
from fleetchaos.sim.formats._base import plain_success, progress_refs, retry_after_ms
from fleetchaos.sim.kinds import reported_kind
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport


class StructuredFormat:
    """The AgentToolError envelope: code, category, recoverability, partial success, hints.

    The four contract fields are the failure kind's :class:`~fleetchaos.sim.kinds.FailureContract`
    (``UNCLASSIFIED``, fatal, escalate for a report that names no kind).
    """

    name = "structured"
    partial_batch = "failed"  # the envelope reports the failure and what completed
    misread_setting = "structured"
    misread_factor = DEFAULT_MISREAD_FACTORS["structured"]
    failure_flag = True  # recoverable/category are machine-readable: a guardrail can check them

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """An AgentToolError for the dispatch."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        kind = report.shown_as or reported_kind(report.failure)  # a worker's wrong envelope names another
        contract = kind.contract
        steps, items = progress_refs(report)
        partial = PartialSuccess(completed_steps=steps, artifacts=items)
        context = {"worker": f"worker-{report.worker}", "tool": report.step_names[report.failed_step]}
        if kind.outcome_unknown:
            context["outcome"] = "unknown"  # the side effect may or may not have committed
        if report.alternatives_left:
            context["alternatives_left"] = str(report.alternatives_left)
        envelope = AgentToolError(
            error_code=contract.error_code,
            category=contract.category,  # type: ignore[arg-type]  # "reporting" (a reporting kind) is refused
            recoverable=contract.recoverable,  # type: ignore[arg-type]  # None (a reporting kind) is refused
            suggested_action=contract.suggested_action,
            partial_success=partial,
            retry_after_ms=retry_after_ms(report),
            context=context,
        )
        if report.schema_version is not None or report.dropped_fields:
            envelope = _older(envelope, report.schema_version, report.dropped_fields)
        return Observation(ok=False, status="failed", worker=report.worker, envelope=envelope)

    def __repr__(self) -> str:
        return "StructuredFormat()"


#: What a field reads as in an envelope version that does not have it.
_ABSENT: dict[str, object] = {"partial_success": None, "retry_after_ms": None, "suggested_action": "", "context": {}}


def _older(envelope: AgentToolError, version: str | None, dropped: tuple[str, ...]) -> AgentToolError:
    """The envelope without the ``dropped`` fields, stamped with an older contract ``version`` when one is given."""
    updates = {name: _ABSENT[name] for name in dropped if name in _ABSENT}
    if version is not None:
        updates["schema_version"] = version
    return envelope.model_copy(update=updates)


class AgentToolErrorFormat(StructuredFormat):
    """The AgentToolError envelope under its contract's name: the same as ``structured``."""

    name = "agent-tool-error"

    def __repr__(self) -> str:
        return "AgentToolErrorFormat()"
