"""``problem-details``: an RFC 9457 problem (``type``, ``title``, ``status``, ``detail``, ``instance``).

The shape a web framework gives an HTTP API's errors by default (Spring's ``ProblemDetail``,
ASP.NET Core's ``ProblemDetails``): ``type`` is ``about:blank`` (RFC 9457 section 4.2.1: the
problem has no semantics beyond its status, and ``title`` is the status's reason phrase), the
status is the failure's HTTP status, ``detail`` the exception's message, sanitised (the RFC's
security considerations: details must not leak implementation information), and ``instance``
the request's path.  RFC 9457 has no standard member for retrying: the status is all a client
reads, and a ``Retry-After`` header, when a server sends one, is not in the body a tool hands
on.  No progress.
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import plain_success
from fleetchaos.sim.formats._vendor import VendorText, shown_wire, vendor_error
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import sanitise
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.wire_shapes import ProblemDetails


class ProblemDetailsFormat(VendorText):
    """An RFC 9457 problem with ``type: about:blank``: the HTTP status and its title, the sanitised detail, the path."""

    name = "problem-details"
    partial_batch = "failed"  # the error object reports the failure
    misread_setting = "problem_details"
    misread_factor = DEFAULT_MISREAD_FACTORS["problem_details"]
    failure_flag = True  # a status of 400 or more: machine-readable

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """The problem document for the dispatch's failure."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        status, reason, _errno = shown_wire(report)
        envelope = ProblemDetails(
            title=reason,
            status=status,
            detail=sanitise(vendor_error(report, self.secrets).message),
            instance=f"/tools/{report.step_names[report.failed_step]}",
        )
        return self.failed(report, envelope=envelope)

    def __repr__(self) -> str:
        return "ProblemDetailsFormat()"
