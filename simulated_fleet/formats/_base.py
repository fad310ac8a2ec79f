"""The original two formats (generic and structured) and the ErrorFormat protocol.

Error formats: how the truth of a dispatch is rendered into what the orchestrator sees.

Two questions decide a format's behaviour, and both are about reporting, not about
what happened:

* ``partial_step_ok``: when some items of a fan-out step fail, does the tool say "ok"
  (it returns what it gathered and has no per-item status) or does it report a partial
  failure?  A generic tool says "ok", which is how partial work is silently passed on.
* ``render``: what the orchestrator is told when a dispatch stops on a failure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, TypeVar, runtime_checkable

from fleetchaos.sim.envelope import AgentToolError, PartialSuccess, item_ref, step_ref
from fleetchaos.sim.kinds import reported_kind
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport


@runtime_checkable
class ErrorFormat(Protocol):
    """Renders the truth of a dispatch into an observation."""

    name: str
    partial_step_ok: bool
    misread_setting: str | None
    """The ``fleet.misread_factor`` setting this format is misread with (None: its own ``misread_factor``)."""
    misread_factor: float
    """The default factor: how easily a failure in this format is misread as success (multiplies the fleet's misread_probability)."""
    failure_flag: bool
    """Whether the format carries a machine-readable failure flag a final-answer guardrail can check."""

    def render(self, report: AttemptReport) -> Observation:
        """What the orchestrator sees of this dispatch."""
        ...


#: A format's ``render`` method, marked by :func:`plain_success`.
_Render = TypeVar("_Render", bound=Callable[..., Observation])


def plain_success(render: _Render) -> _Render:
    """Mark a ``render`` that shows every completed dispatch as the bare
    ``Observation(ok=True, status="ok", worker=report.worker)`` and nothing else.

    The world then skips building the report of a successful dispatch (most
    dispatches) and rendering it.  The mark is on the function, so a subclass or a
    wrapper that overrides ``render`` does not inherit it and is always asked.
    """
    render.plain_success = True  # type: ignore[attr-defined]  # a function takes attributes; mypy does not model it
    return render


class GenericFormat:
    """A bare status word: the orchestrator learns only that the call failed.

    A fan-out tool returns whatever items it gathered and says "ok" (no per-item status),
    so a partly failed batch is passed on as a success.
    """

    name = "generic"
    partial_step_ok = True
    misread_setting = "generic"
    misread_factor = DEFAULT_MISREAD_FACTORS["generic"]  # the default: a scenario may set its own
    failure_flag = False

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        return Observation(ok=False, status="failed", worker=report.worker)

    def __repr__(self) -> str:
        return "GenericFormat()"


def progress_refs(report: AttemptReport) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(completed step references, completed item references of the failed step)."""
    names = report.step_names
    failed = report.failed_step
    steps = tuple(step_ref(i, names[i]) for i in range(failed))
    items = tuple(item_ref(failed, names[failed], k) for k in report.done_items)
    return steps, items


def retry_after_ms(report: AttemptReport) -> int | None:
    """The retry-after hint in whole milliseconds, rounded up (never a hint shorter than the real wait, ignoring float noise)."""
    if report.retry_after_s is None or not math.isfinite(report.retry_after_s):
        return None
    return math.ceil(round(report.retry_after_s * 1000.0, 6))


class StructuredFormat:
    """The AgentToolError envelope: code, category, recoverability, partial success, hints.

    The four contract fields are the failure kind's :class:`~fleetchaos.sim.kinds.FailureContract`
    (``UNCLASSIFIED``, fatal, escalate for a report that names no kind).
    """

    name = "structured"
    partial_step_ok = False
    misread_setting = "structured"
    misread_factor = DEFAULT_MISREAD_FACTORS["structured"]
    failure_flag = True  # recoverable/category are machine-readable: a guardrail can check them

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
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
