"""Error formats: how the truth of a dispatch is rendered into what the orchestrator sees.

A format is a class with five attributes and one method (the :class:`ErrorFormat`
protocol): ``name``; ``partial_batch`` (how a fan-out step with some failed items is
reported: ``failed``, hidden as ``ok``, or with a ``count``; None for a format without an
envelope, where the scenario's ``fleet.partial_batch`` decides); ``misread_setting`` (which
``fleet.misread_factor`` setting of the scenario says how easily a failure in this format
is read as a success, or None to use its own ``misread_factor``; the defaults are
:data:`fleetchaos.sim.misread.DEFAULT_MISREAD_FACTORS`); ``failure_flag`` (a
final-answer guardrail has a machine-readable failure to check); and
``render(report) -> Observation``.  Formats whose text carries vendor error messages also
have ``for_run(seed)``: the world binds them to the run's planted secrets (see
:mod:`fleetchaos.sim.sanitise`).

Each public module of this package is one family of error contract and defines its
formats; :mod:`fleetchaos.sim.formats.registry` finds them, and the formats installed
packages register, by name (:func:`get_format`).  docs/formats.md lists every format and
why each sets these as it does.
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import ErrorFormat, counted, partial_batch_of, plain_success
from fleetchaos.sim.formats.registry import FormatLookupError, bound, format_names, get_format

__all__ = [
    "ErrorFormat",
    "FormatLookupError",
    "bound",
    "counted",
    "format_names",
    "get_format",
    "partial_batch_of",
    "plain_success",
]
