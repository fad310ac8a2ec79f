"""The original two formats (generic and structured) and the ErrorFormat protocol.

Error formats: how the truth of a dispatch is rendered into what the orchestrator sees.

Two questions decide a format's behaviour, and both are about reporting, not about
what happened:

* ``partial_batch``: when some items of a fan-out step fail, is the step reported as
  failed, hidden as "ok" (the tool returns what it gathered), or reported with a count
  of the failed items?  An envelope answers it by its contract, a suppressing format by
  hiding everything; for a format without an envelope it is the scenario's
  ``fleet.partial_batch`` (None here), an assumption every report states.
* ``render``: what the orchestrator is told when a dispatch stops on a failure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from fleetchaos.sim.envelope import AgentToolError, PartialSuccess, item_ref, step_ref
from fleetchaos.sim.kinds import reported_kind
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport

if TYPE_CHECKING:
    from fleetchaos.sim.config import FleetSpec


@runtime_checkable
class ErrorFormat(Protocol):
    """Renders the truth of a dispatch into an observation."""

    name: str
    partial_batch: str | None
    """How a fan-out step with some failed items is reported: ``"failed"``, ``"ok"`` (hidden) or
    ``"count"``; None: the scenario's ``fleet.partial_batch`` decides (a format without an envelope)."""
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

    How a partly failed fan-out step is reported (failed, hidden as "ok", or with a count
    of its failed items) is the scenario's ``fleet.partial_batch``: a bare word says
    nothing of it either way.
    """

    name = "generic"
    partial_batch = None  # no envelope: the scenario's fleet.partial_batch decides
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


def partial_batch_of(error_format: object, fleet: FleetSpec) -> str:
    """How ``error_format`` reports a partly failed fan-out step in a run of ``fleet``:
    its own ``partial_batch`` (its contract), else the scenario's ``fleet.partial_batch``."""
    own = getattr(error_format, "partial_batch", None)
    return str(own if own is not None else fleet.partial_batch)


def counted(observation: Observation, report: AttemptReport) -> Observation:
    """``observation`` of a partly failed fan-out step as a partial failure that says how many of its items failed
    (any other observation as it is).

    What a tool without an envelope shows under ``fleet.partial_batch: count``: the status
    word ``partial`` and a first line ``2 of 5 items failed`` before any text the format
    gave; which items failed, and what the others returned, it does not say.
    """
    failed = len(report.item_failures)
    if not 0 < failed < report.fan_out:  # not a partly failed fan-out step: nothing to count
        return observation
    line = f"{failed} of {report.fan_out} items failed"
    text = line if not observation.text else f"{line}\n{observation.text}"
    return Observation(
        ok=False,
        status="partial",
        worker=observation.worker,
        envelope=observation.envelope,
        text=text,
        secrets=observation.secrets,
    )


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
    partial_batch = "failed"  # the envelope reports the failure, and its partial_success what completed
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
