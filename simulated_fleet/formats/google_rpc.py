"""``google-rpc``: a ``google.rpc.Status`` as AIP-193 puts it in an HTTP body, with ErrorInfo and RetryInfo.

``{"error": {"code", "message", "status", "details"}}``: ``status`` is the canonical code the
failure's HTTP status maps to (:data:`CANONICAL`, from ``google/rpc/code.proto``'s HTTP
mappings; 422 is an invalid argument, 424 a failed precondition and 507, "the entire file
system is out of space", resource exhausted), ``code`` the HTTP status that canonical code
maps back to, ``message`` the exception's message, sanitised (a developer-facing message,
AIP-193).  ``details`` holds an ``ErrorInfo`` whose ``reason`` is the kind's stable error
code (AIP-193: a constant UPPER_SNAKE_CASE identifier of the proximate cause) in the tool's
``domain``, and, for a failure with a retry-after hint, a ``RetryInfo`` whose ``retryDelay``
says how long to wait.  No progress.
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import plain_success, retry_after_ms
from fleetchaos.sim.formats._vendor import VendorText, shown_kind, vendor_error
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import sanitise
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.wire_shapes import ErrorInfo, GoogleRpcError, RetryInfo, RpcStatus

#: HTTP status of the failure -> (canonical code, the HTTP status that code maps to).
CANONICAL: dict[int, tuple[str, int]] = {
    400: ("INVALID_ARGUMENT", 400),
    401: ("UNAUTHENTICATED", 401),
    403: ("PERMISSION_DENIED", 403),
    404: ("NOT_FOUND", 404),
    409: ("ABORTED", 409),
    422: ("INVALID_ARGUMENT", 400),
    424: ("FAILED_PRECONDITION", 400),
    429: ("RESOURCE_EXHAUSTED", 429),
    500: ("INTERNAL", 500),
    502: ("UNAVAILABLE", 503),
    503: ("UNAVAILABLE", 503),
    504: ("DEADLINE_EXCEEDED", 504),
    507: ("RESOURCE_EXHAUSTED", 429),
}

#: What an HTTP status not in :data:`CANONICAL` maps to: UNKNOWN, served as 500.
UNKNOWN = ("UNKNOWN", 500)


def retry_delay(ms: int) -> str:
    """A JSON ``google.protobuf.Duration`` of ``ms`` milliseconds: ``"12.5s"``, ``"3s"``."""
    seconds, millis = divmod(ms, 1000)
    return f"{seconds}.{millis:03d}".rstrip("0").rstrip(".") + "s"


class GoogleRpcFormat(VendorText):
    """An AIP-193 error: canonical status, ErrorInfo (the stable code as reason), RetryInfo when there is a hint."""

    name = "google-rpc"
    partial_batch = "failed"  # the error object reports the failure
    misread_setting = "google_rpc"
    misread_factor = DEFAULT_MISREAD_FACTORS["google_rpc"]
    failure_flag = True  # an error member with a canonical status: machine-readable

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """The AIP-193 error body for the dispatch's failure."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        kind = shown_kind(report)
        tool = report.step_names[report.failed_step]
        status, http = CANONICAL.get(kind.wire.status if kind.wire is not None else 500, UNKNOWN)
        details: list[ErrorInfo | RetryInfo] = [
            ErrorInfo(reason=kind.contract.error_code, domain=f"{tool}.api.example")
        ]
        hint = retry_after_ms(report)
        if hint is not None:
            details.append(RetryInfo(retry_delay=retry_delay(hint)))
        envelope = GoogleRpcError(
            error=RpcStatus(
                code=http,
                message=sanitise(vendor_error(report, self.secrets).message),
                status=status,
                details=tuple(details),
            )
        )
        return self.failed(report, envelope=envelope)

    def __repr__(self) -> str:
        return "GoogleRpcFormat()"
