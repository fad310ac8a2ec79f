"""The error-format protocol, and the helpers the built-in formats share.

A format turns the truth of a dispatch into what the orchestrator sees.  Two questions
decide its behaviour, and both are about reporting, not about what happened:

* ``partial_batch``: when some items of a fan-out step fail, is the step reported as
  failed, hidden as "ok" (the tool returns what it gathered), or reported with a count
  of the failed items?  An envelope answers it by its contract, a suppressing format by
  hiding everything; for a format without an envelope it is the scenario's
  ``fleet.partial_batch`` (None here), an assumption every report states.
* ``render``: what the orchestrator is told when a dispatch stops on a failure.

Standard library and the simulator's light modules only: no SimPy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from fleetchaos.sim.envelope import item_ref, step_ref
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport

if TYPE_CHECKING:
    from fleetchaos.sim.config import FleetSpec

#: The values of ``partial_batch`` (and of ``fleet.partial_batch``).
PARTIAL_BATCH = ("failed", "ok", "count")


@runtime_checkable
class ErrorFormat(Protocol):
    """Renders the truth of a dispatch into an observation.

    A format is a class that builds with no arguments (each run gets its own instance).
    Formats whose text carries the run's planted secrets may also have ``for_run(seed)``,
    which returns the instance bound to that run (:class:`~fleetchaos.sim.formats._vendor.VendorText`).
    """

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


#: A contract's envelope model.
_Envelope = TypeVar("_Envelope", bound=BaseModel)


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


def drifted(envelope: _Envelope, report: AttemptReport, drift: Mapping[str, tuple[str, ...]]) -> _Envelope:
    """The envelope without the fields the worker leaves out, stamped with its older contract version if any.

    ``drift`` is the format's own table: the AgentToolError field a drift fault names ->
    the fields this contract lacks in that older version (read as None).
    """
    if report.schema_version is None and not report.dropped_fields:
        return envelope
    updates: dict = {f: None for name in report.dropped_fields for f in drift.get(name, ())}
    if report.schema_version is not None:
        updates["schema_version"] = report.schema_version
    return envelope.model_copy(update=updates)
