"""Silent suppression: the failure is swallowed and a success returned.

* ``empty-success``: an empty result;
* ``fabricated-defaults``: plausible default values.
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import plain_success
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport


class EmptySuccessFormat:
    """Silent suppression: a failed call returns an empty result, reported as a success.

    The orchestrator is never told of a failure (``ok`` is True), so no policy runs and
    the task is claimed a success: every failure becomes a silent failure.  A partly
    failed batch likewise says "ok".  There is no failure to misread (``misread_factor``
    0) and no flag; no vendor text, so no secret, reaches the orchestrator.
    """

    name = "empty-success"
    partial_batch = "ok"  # it hides every failure, a partial batch's too: that is what the format is
    misread_setting = None  # nothing is reported as failed, so there is nothing to misread
    misread_factor = 0.0
    failure_flag = False
    failure_text = "{}"
    """What a failed call shows instead of its error."""

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """``ok`` with :attr:`failure_text` as the result, whatever happened."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        return Observation(ok=True, status="ok", worker=report.worker, text=self.failure_text)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


#: The plausible values a suppressing tool returns instead of its error.
DEFAULTS_TEXT = '{"results": [], "count": 0, "revenue": 0, "customers": 0, "status": "synced"}'


class FabricatedDefaultsFormat(EmptySuccessFormat):
    """Silent suppression with plausible defaults: the failure looks like real, zero-valued data.

    Mechanically the same as ``empty-success`` (``ok`` is True, nothing is retried); it
    differs in what it shows: an empty result can be caught by a non-empty-success
    contract, fabricated defaults cannot be told from data at all.
    """

    name = "fabricated-defaults"
    failure_text = DEFAULTS_TEXT
