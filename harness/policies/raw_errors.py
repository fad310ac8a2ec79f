"""Reading an HTTP status out of a failure without an envelope: the status line, or raw vendor text.

What an orchestrator does when tools return no envelope: find the HTTP status and map it
to a category.  :func:`parse_status` reads the status format's line (``HTTP 429
RateLimitError``: every failure carries one); :func:`parse_raw` is a deliberately brittle
parser of raw vendor blobs that recognises the JVM client's ``ApiException: HTTP 429 ...``
and the Python SDK's ``HTTPError: 429 Client Error``, and nothing else: the Node client
reports an errno-like code (``ETIMEDOUT``, ``EACCES``) with no status, so its failures
come back unparsed.  Real fleets have the same problem with every vendor they add.
:func:`status_of` is the one reader policies use: the status line first, then the vendor
text, reading no envelope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleetchaos.sim.observation import Observation

__all__ = ["STATUS_CATEGORIES", "ParsedError", "parse_raw", "parse_status", "status_of"]

# The exception's message, with or without its class before it: a trace's line
# (``ApiException: HTTP 429 ...``), an agent SDK's ``Error: HTTP 429 ...``, LangGraph's
# ``HTTPError('429 Client Error: ...')`` and an MCP server's text all carry it.
_JVM = re.compile(r"\bHTTP (\d{3}) ")
_PYTHON = re.compile(r"\b(\d{3}) (?:Client|Server) Error")
_STATUS = re.compile(r"^HTTP (\d{3}) ([A-Za-z]+Error)$", re.M)

#: HTTP status -> category, in the structured contract's vocabulary.
STATUS_CATEGORIES: dict[int, str] = {
    401: "auth",
    403: "validation",  # forbidden: a retry will not help
    404: "dependency",
    409: "transient",
    422: "validation",
    424: "dependency",
    429: "transient",
    500: "transient",
    502: "resource",
    503: "transient",
    504: "transient",
    507: "resource",
}


@dataclass(frozen=True, slots=True)
class ParsedError:
    """What the parser could get out of a raw error text."""

    status: int
    category: str
    vendor: str


def parse_raw(text: str | None) -> ParsedError | None:
    """The HTTP status and category of a raw vendor error, or None when the text is not recognised."""
    if not text:
        return None
    for vendor, pattern in (("jvm", _JVM), ("python", _PYTHON)):
        match = pattern.search(text)
        if match:
            status = int(match.group(1))
            return ParsedError(status, STATUS_CATEGORIES.get(status, "fatal"), vendor)
    return None


def parse_status(text: str | None) -> ParsedError | None:
    """The HTTP status and category of a status line (``HTTP 429 RateLimitError``, the status format), else None."""
    match = _STATUS.search(text) if text else None
    if match is None:
        return None
    status = int(match.group(1))
    return ParsedError(status, STATUS_CATEGORIES.get(status, "fatal"), "status")


def status_of(observation: Observation) -> ParsedError | None:
    """The HTTP status a failure without an envelope shows: its status line, else a vendor text's; None when neither."""
    return parse_status(observation.text) or parse_raw(observation.text)
