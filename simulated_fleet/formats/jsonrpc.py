"""``jsonrpc``: a JSON-RPC 2.0 error object (``code``, ``message``, ``data``) from a tool server.

JSON-RPC 2.0 defines five codes of its own (-32700 to -32603) and leaves -32000 to -32099 to
each server, so what a code says depends on the server.  The code here is read from the
kind's wire status (:data:`STATUS_CODES`): the specification's ``Invalid params`` for input
the tool rejected (422) and ``Internal error`` for what has no code of its own, and for the
rest the server range as EIP-1474 assigns it (``Resource not found``, ``Resource
unavailable``, ``Limit exceeded``), the most widely deployed published table of server codes
(Ethereum's node APIs).  Auth failures, conflicts, a failed dependency and a full disk all
come back -32603, told apart only by ``data``: what a server that maps every exception it has
no code for to ``Internal error`` answers.  The message is the code's own; ``data.detail`` is
the exception's message, sanitised.  No retry flag, no retry-after, no progress: JSON-RPC
has none.
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import plain_success
from fleetchaos.sim.formats._vendor import VendorText, shown_wire, vendor_error
from fleetchaos.sim.formats.mcp import request_id
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import sanitise
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.wire_shapes import JsonRpcError, JsonRpcErrorResponse

#: JSON-RPC 2.0's code for what a server has no code of its own for.
INTERNAL_ERROR = (-32603, "Internal error")

#: HTTP status of the failure -> (JSON-RPC code, its message); every other status is :data:`INTERNAL_ERROR`.
STATUS_CODES: dict[int, tuple[int, str]] = {
    404: (-32001, "Resource not found"),
    422: (-32602, "Invalid params"),
    429: (-32005, "Limit exceeded"),
    502: (-32002, "Resource unavailable"),
    503: (-32002, "Resource unavailable"),
    504: (-32002, "Resource unavailable"),
}


class JsonRpcFormat(VendorText):
    """A JSON-RPC 2.0 error response: a code (:data:`STATUS_CODES`), its message, the sanitised detail in ``data``."""

    name = "jsonrpc"
    partial_batch = "failed"  # the error object reports the failure
    misread_setting = "jsonrpc"
    misread_factor = DEFAULT_MISREAD_FACTORS["jsonrpc"]
    failure_flag = True  # an error member: machine-readable

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """The error response for the dispatch's failure."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        code, message = STATUS_CODES.get(shown_wire(report).status, INTERNAL_ERROR)
        detail = sanitise(vendor_error(report, self.secrets).message)
        envelope = JsonRpcErrorResponse(
            id=request_id(report), error=JsonRpcError(code=code, message=message, data={"detail": detail})
        )
        return self.failed(report, envelope=envelope)

    def __repr__(self) -> str:
        return "JsonRpcFormat()"
