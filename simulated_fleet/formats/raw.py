"""``raw``: the vendor's message and stack trace, verbatim, secrets included.

A policy may parse it (see :mod:`fleetchaos.policies.raw_errors`), but the wording differs
per vendor (:mod:`fleetchaos.sim.formats._vendor`).
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import plain_success
from fleetchaos.sim.formats._vendor import VendorText, vendor_text
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport


class RawFormat(VendorText):
    """The vendor's error text, verbatim: message, stack trace and every secret in it.

    The failure is one line in a blob of trace text: easy for an LLM orchestrator to read
    as noise (``misread_factor`` 3), and there is no machine-readable flag for a
    guardrail to check.  How a partly failed fan-out step is reported is the scenario's
    ``fleet.partial_batch``, as for every format without an envelope.  Nothing is sanitised: the planted secrets all reach the
    orchestrator, and ``Observation.secrets`` counts them.
    """

    name = "raw"
    partial_batch = None  # no envelope: the scenario's fleet.partial_batch decides
    misread_setting = "raw"
    misread_factor = DEFAULT_MISREAD_FACTORS["raw"]
    failure_flag = False  # free text: nothing a guardrail can check without parsing

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """The dispatch as the vendor's SDK reports it."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        text = vendor_text(report, self.secrets)
        return Observation(
            ok=False, status="failed", worker=report.worker, text=text, secrets=self.secrets.count_in(text)
        )

    def __repr__(self) -> str:
        return "RawFormat()"
