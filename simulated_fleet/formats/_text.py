"""Unstructured formats: the raw vendor blob, and the two ways of hiding a failure.

* ``raw``: the vendor's message and stack trace, verbatim, secrets included.  A policy
  may parse it (see :mod:`fleetchaos.policies.raw_errors`), but the wording differs per vendor.
* ``empty-success``: the failure is swallowed and an empty result returned as a success.
* ``fabricated-defaults``: the failure is swallowed and plausible default values returned.
"""

from __future__ import annotations

import copy

from fleetchaos.sim.formats._base import plain_success
from fleetchaos.sim.formats._vendor import planted, vendor_text
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import PlantedSecrets
from fleetchaos.sim.truth import AttemptReport


class _Bound:
    """Formats whose text carries the run's planted secrets: bound per run by the world."""

    seed: int = 0
    _secrets: PlantedSecrets | None = None

    def for_run(self, seed: int):
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


class RawFormat(_Bound):
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
