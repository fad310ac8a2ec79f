"""The middle rung of what a failure reveals without an envelope: an HTTP status and an exception class.

The ladder of envelope-less formats, from least to most revealing:

* ``generic``: the bare word "failed";
* ``status``: what a caught SDK exception says on its own, ``HTTP 429 RateLimitError``:
  the response's status code and the exception's class, no vendor text, no envelope,
  no progress, no retry-after header;
* ``raw``: the vendor's whole text, stack trace and secrets included (and a Node
  client's errno-like code instead of a status).

A tool without an error contract still hands its caller this much: every HTTP client
raises an exception whose class and ``status_code`` say what the server answered.  The
status is the kind's wire status (:attr:`fleetchaos.sim.kinds.FaultKind.wire`, the one
the raw vendor texts carry); the class is the one a typical Python SDK raises for that
status (:data:`STATUS_EXCEPTIONS`, the names the OpenAI and Anthropic SDKs use).
``fleetchaos.policies.raw_errors.parse_status`` reads the line back.
"""

from __future__ import annotations

from typing import cast

from fleetchaos.sim.formats._base import plain_success
from fleetchaos.sim.formats._vendor import shown_kind
from fleetchaos.sim.kind_record import Wire
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport

#: HTTP status -> the exception class an SDK raises for it (every other 4xx: ``APIStatusError``,
#: every 5xx: ``InternalServerError``, as those SDKs do).
STATUS_EXCEPTIONS: dict[int, str] = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}


def exception_class(status: int) -> str:
    """The exception class an SDK raises for an HTTP ``status``."""
    if status >= 500:
        return "InternalServerError"
    return STATUS_EXCEPTIONS.get(status, "APIStatusError")


def status_line(status: int) -> str:
    """``HTTP 429 RateLimitError``: what the status format shows for a failure answered with ``status``."""
    return f"HTTP {status} {exception_class(status)}"


class StatusFormat:
    """An HTTP status and an exception class: ``HTTP 503 InternalServerError``, nothing more.

    No envelope (no category, no recoverability, no progress, no retry-after) and no
    vendor text (so no secret reaches the orchestrator).  How a partly failed fan-out step
    is reported is the scenario's ``fleet.partial_batch``, as for every format without an
    envelope.  The line is short and explicit, so it is misread as easily as a bare
    "failed" (``fleet.misread_factor.status``); a guardrail has no failure flag to check.
    """

    name = "status"
    partial_batch = None  # no envelope: the scenario's fleet.partial_batch decides
    misread_setting = "status"
    misread_factor = DEFAULT_MISREAD_FACTORS["status"]
    failure_flag = False  # a status line is text: no flag a final-answer guardrail reads

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """The failure's status line, as the text of a failed observation."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        # A shown kind has a wire status (fleetchaos.sim.kinds.rendered_kind refuses one without).
        status = cast(Wire, shown_kind(report).wire).status
        return Observation(ok=False, status="failed", worker=report.worker, text=status_line(status))

    def __repr__(self) -> str:
        return "StatusFormat()"


__all__ = ["STATUS_EXCEPTIONS", "StatusFormat", "exception_class", "status_line"]
