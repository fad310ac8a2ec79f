"""Vendor error text: what a tool's SDK says when a call fails, secrets and all.

Three vendor styles (a JVM client, a Python SDK, a Node client) are assigned per tool
by a stable hash of the tool's name, the way a real fleet calls different vendors'
APIs.  A kind's wire status (:attr:`fleetchaos.sim.kinds.FaultKind.wire`) gives the
HTTP status, reason and errno-like code.  Each style words the same failure differently: the JVM and Python texts carry an
HTTP status, the Node text carries only an errno-like code.  Every text plants one
secret of each shape (API key, bearer token, e-mail, home path, internal URL) from the
run's :class:`~fleetchaos.sim.sanitise.PlantedSecrets`.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import NamedTuple, Self, cast

from pydantic import BaseModel

from fleetchaos.sim import _rng
from fleetchaos.sim.kind_record import Wire
from fleetchaos.sim.kinds import FaultKind, rendered_kind
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import PlantedSecrets
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.wire_shapes import wire_json

VENDORS = ("jvm", "python", "node")


@lru_cache(maxsize=16)
def planted(seed: int) -> PlantedSecrets:
    """The planted-secret pool of the run with ``seed`` (cached: building Faker is slow)."""
    return PlantedSecrets.for_run(seed)


def vendor_of(tool: str) -> str:
    """The vendor style of a tool: stable across runs and seeds."""
    return VENDORS[_rng.stream_id(f"vendor:{tool}") % len(VENDORS)]


def failure_key(report: AttemptReport) -> int:
    """A stable key for one dispatch's failure (selects which planted secrets it carries)."""
    return _rng.key(report.task_id, report.worker, report.start_step, report.failed_step, len(report.done_items))


def shown_kind(report: AttemptReport) -> FaultKind:
    """The kind record a format renders the dispatch's failure with: the one a worker's
    wrong envelope reports (``report.shown_as``), else the truth's (:func:`rendered_kind`)."""
    return report.shown_as or rendered_kind(report.failure)


class VendorError(NamedTuple):
    """The exception a tool's client raises for a failed call: its class and its message (``str(e)``)."""

    cls: str
    """The exception's class, qualified as the vendor's runtime prints it in a trace."""
    message: str
    """What ``str(e)`` gives: the message alone, without the class."""

    @property
    def short_cls(self) -> str:
        """The class without its package (what ``repr(e)`` starts with)."""
        return self.cls.rpartition(".")[2]


def shown_wire(report: AttemptReport) -> Wire:
    """The wire status (HTTP status, reason, errno-like code) of the kind the dispatch's failure is shown as."""
    # A shown kind has a wire status: rendered_kind() refuses a kind without one, and a wrong
    # envelope shows a reportable kind (fleetchaos.sim.envelope_errors).
    return cast(Wire, shown_kind(report).wire)


def vendor_error(report: AttemptReport, secrets: PlantedSecrets) -> VendorError:
    """The exception the failed step's client raised, in its vendor's style (the message line of :func:`vendor_text`).

    The JVM and Python messages carry the HTTP status and an internal URL (the Python one
    with the API key in its query, as an HTTP client's error names the URL it called); the
    Node message carries only the errno-like code.
    """
    tool = report.step_names[report.failed_step]
    status, reason, errno = shown_wire(report)
    key, _token, _email, _home, url = secrets.pick(failure_key(report))
    vendor = vendor_of(tool)
    if vendor == "jvm":
        return VendorError(f"com.acme.{tool}.client.ApiException", f"HTTP {status} {reason} calling {url}/{tool}")
    if vendor == "python":
        side = "Client" if status < 500 else "Server"
        return VendorError(
            f"{tool}_sdk.errors.HTTPError", f"{status} {side} Error: {reason} for url: {url}/{tool}?api_key={key}"
        )
    return VendorError("Error", f"{errno} {tool} request failed")


def vendor_text(report: AttemptReport, secrets: PlantedSecrets) -> str:
    """The vendor's error text for a failed dispatch: message line first, then a trace."""
    tool = report.step_names[report.failed_step]
    errno = shown_wire(report).errno
    key, token, email, home, url = secrets.pick(failure_key(report))
    error = vendor_error(report, secrets)
    line = f"{error.cls}: {error.message}"
    vendor = vendor_of(tool)
    if vendor == "jvm":
        return (
            f"{line}\n"
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
            f"{line}\n"
            f"(account {email}; session Bearer {token})"
        )
    return (
        f"{line}\n"
        f"    at ClientRequest.<anonymous> ({home}/node_modules/{tool}-client/lib/request.js:41:17)\n"
        f"    at processTicksAndRejections (node:internal/process/task_queues:95:5) {{\n"
        f"  code: '{errno}',\n"
        f"  config: {{ url: '{url}/{tool}', headers: {{ Authorization: 'Bearer {token}', 'x-api-key': '{key}' }} }},\n"
        f"  user: '{email}'\n}}"
    )


def first_line(text: str) -> str:
    """The message line of a vendor text, cut to 200 characters."""
    return text.splitlines()[0][:200] if text else ""


class VendorText:
    """A format whose text carries the run's planted secrets: the world binds it to each run (``for_run``)."""

    seed: int = 0
    _secrets: PlantedSecrets | None = None

    def for_run(self, seed: int) -> Self:
        """A copy of this format bound to the planted secrets of the run with ``seed``."""
        fresh = copy.copy(self)
        fresh.seed = seed
        fresh._secrets = None
        return fresh

    @property
    def secrets(self) -> PlantedSecrets:
        """The run's planted secrets (those of seed 0 when the format was never bound)."""
        if self._secrets is None:
            self._secrets = planted(self.seed)
        return self._secrets

    def failed(
        self, report: AttemptReport, *, text: str | None = None, envelope: BaseModel | None = None
    ) -> Observation:
        """The failed dispatch showing ``text`` and ``envelope`` (as it travels), counting the planted secrets they let through."""
        shown = [part for part in (text, None if envelope is None else wire_json(envelope)) if part is not None]
        return Observation(
            ok=False,
            status="failed",
            worker=report.worker,
            envelope=envelope,
            text=text,
            secrets=self.secrets.count_in(*shown),
        )
