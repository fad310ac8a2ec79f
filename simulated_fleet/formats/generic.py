"""``generic``: a bare status word, the orchestrator learns only that the call failed."""

from __future__ import annotations

from fleetchaos.sim.formats._base import plain_success
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport


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
        """``ok``, or the word "failed"."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        return Observation(ok=False, status="failed", worker=report.worker)

    def __repr__(self) -> str:
        return "GenericFormat()"
