"""Vendor error text: what a tool's SDK says when a call fails, secrets and all.

Three vendor styles (a JVM client, a Python SDK, a Node client) are assigned per tool
by a stable hash of the tool's name, the way a real fleet calls different vendors'
APIs.  Each style words the same failure differently: the JVM and Python texts carry an
HTTP status, the Node text carries only an errno-like code.  Every text plants one
secret of each shape (API key, bearer token, e-mail, home path, internal URL) from the
run's :class:`~fleetchaos.sim.sanitise.PlantedSecrets`.
"""

from __future__ import annotations

from functools import lru_cache

from fleetchaos.sim import _rng
from fleetchaos.sim.sanitise import PlantedSecrets
from fleetchaos.sim.truth import AttemptReport

VENDORS = ("jvm", "python", "node")

#: Fault kind -> (HTTP status, reason phrase, Node errno-like code).
WIRE: dict[str, tuple[int, str, str]] = {
    "network_blip": (503, "Service Unavailable", "ECONNRESET"),
    "timeout": (504, "Gateway Timeout", "ETIMEDOUT"),
    "latency_spike": (504, "Gateway Timeout", "ETIMEDOUT"),
    "rate_limit": (429, "Too Many Requests", "ERR_RATE_LIMITED"),
    "quota_exhausted": (429, "Too Many Requests", "ERR_QUOTA_EXCEEDED"),
    "disk_full": (507, "Insufficient Storage", "ENOSPC"),
    "expired_key": (401, "Unauthorized", "ERR_TOKEN_EXPIRED"),
    "permission_denied": (403, "Forbidden", "EACCES"),
    "git_push_conflict": (409, "Conflict", "ERR_NON_FAST_FORWARD"),
    "missing_dependency": (424, "Failed Dependency", "ENOENT"),
    "validation_error": (422, "Unprocessable Entity", "ERR_INVALID_ARG_VALUE"),
    "not_found": (404, "Not Found", "ERR_NOT_FOUND"),
    "partial_batch": (500, "Internal Server Error", "ERR_BATCH_ITEM"),
    "node_crash": (502, "Bad Gateway", "ECONNREFUSED"),
    "network_partition": (503, "Service Unavailable", "EHOSTUNREACH"),
}
UNKNOWN_WIRE = (500, "Internal Server Error", "ERR_UNKNOWN")


@lru_cache(maxsize=16)
def planted(seed: int) -> PlantedSecrets:
    """The planted-secret pool of the run with ``seed`` (cached: building Faker is slow)."""
    return PlantedSecrets.for_run(seed)


def vendor_of(tool: str) -> str:
    """The vendor style of a tool: stable across runs and seeds."""
    return VENDORS[_rng.stream_id(f"vendor:{tool}") % len(VENDORS)]


def call_key(report: AttemptReport) -> int:
    """A stable key for one dispatch's failure (selects which planted secrets it carries)."""
    return _rng.key(report.task_id, report.worker, report.start_step, report.failed_step, len(report.done_items))


def vendor_text(report: AttemptReport, secrets: PlantedSecrets) -> str:
    """The vendor's error text for a failed dispatch: message line first, then a trace."""
    kind = report.failure or "unknown"
    tool = report.step_names[report.failed_step]
    status, reason, errno = WIRE.get(kind, UNKNOWN_WIRE)
    key, token, email, home, url = secrets.pick(call_key(report))
    vendor = vendor_of(tool)
    if vendor == "jvm":
        return (
            f"com.acme.{tool}.client.ApiException: HTTP {status} {reason} calling {url}/{tool}\n"
            f"\tat com.acme.{tool}.client.HttpTransport.execute(HttpTransport.java:212)\n"
            f"\tat com.acme.{tool}.client.{tool.title()}Api.call({tool.title()}Api.java:88)\n"
            f"Caused by: request headers {{Authorization=Bearer {token}, X-Api-Key={key}}} "
            f"principal={email} config={home}/application.yml"
        )
    if vendor == "python":
        return (
            "Traceback (most recent call last):\n"
            f'  File "{home}/.venv/lib/python3.11/site-packages/{tool}_sdk/client.py", line 88, in request\n'
            "    response.raise_for_status()\n"
            f"{tool}_sdk.errors.HTTPError: {status} {'Client' if status < 500 else 'Server'} Error: {reason} "
            f"for url: {url}/{tool}?api_key={key}\n"
            f"(account {email}; session Bearer {token})"
        )
    return (
        f"Error: {errno} {tool} request failed\n"
        f"    at ClientRequest.<anonymous> ({home}/node_modules/{tool}-client/lib/request.js:41:17)\n"
        f"    at processTicksAndRejections (node:internal/process/task_queues:95:5) {{\n"
        f"  code: '{errno}',\n"
        f"  config: {{ url: '{url}/{tool}', headers: {{ Authorization: 'Bearer {token}', 'x-api-key': '{key}' }} }},\n"
        f"  user: '{email}'\n}}"
    )
