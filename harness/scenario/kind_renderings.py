"""How error formats show one fault kind: the text a model reads of it, in each vendor style.

``fleetchaos faults show KIND --errors A,B`` prints these.  Each format renders the kind
failing the second step of a task once per vendor style (a JVM client, a Python SDK and a
Node client: :data:`VENDOR_TOOLS`), bound to the planted secrets of seed 0, with a 12.5 s
retry-after hint for a kind that gives one.  The text is what a model reads
(:meth:`fleetchaos.sim.observation.Observation.rendered_text`) and its length is that text's;
a planted value the text lets through is printed as a placeholder naming its shape
(``<api key>``), so no planted secret reaches the output, and ``secrets`` counts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fleetchaos.errors import UserError
from fleetchaos.names import check_formats
from fleetchaos.scenario.fault_catalogue import describe_kind
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats._vendor import planted
from fleetchaos.sim.kinds import fault_kind
from fleetchaos.sim.truth import AttemptReport

__all__ = ["HINT_S", "VENDOR_TOOLS", "Rendering", "kind_renderings"]

#: One tool of each vendor style (:func:`fleetchaos.sim.formats._vendor.vendor_of`).
VENDOR_TOOLS = (("jvm", "plan"), ("python", "edit"), ("node", "search"))

#: The retry-after hint a kind that gives one carries here, in seconds.
HINT_S = 12.5


@dataclass(frozen=True, slots=True)
class Rendering:
    """One format's rendering of the kind in one vendor style."""

    errors: str
    vendor: str
    chars: int
    """The length of the text a model reads, planted secrets included."""
    text: str
    """That text, each planted secret replaced by a placeholder naming its shape."""
    secrets: int
    """How many planted values the rendering lets through."""


def kind_renderings(kind: str, names: Sequence[str]) -> list[Rendering]:
    """Each format of ``names`` rendering ``kind`` in each vendor style; a UserError for an unknown kind or
    format, or a kind no dispatch fails with (a masking or reporting kind)."""
    describe_kind(kind)  # an unknown kind: one message with a did-you-mean
    record = fault_kind(kind)
    if record.wire is None:
        raise UserError(
            f"faults show {kind} --errors: {kind} is never reported as a failure ({record.stage}): no format "
            "renders it; give a kind a call fails with (fleetchaos faults list)"
        )
    check_formats(names, "faults show --errors")
    secrets = planted(0)
    shapes = [
        (value, f"<{shape}>")
        for shape, values in (
            ("api key", secrets.api_keys),
            ("token", secrets.tokens),
            ("e-mail", secrets.emails),
            ("home path", secrets.home_paths),
            ("internal URL", secrets.internal_urls),
        )
        for value in values
    ]
    out = []
    for name in names:
        error_format = get_format(name, 0)
        for vendor, tool in VENDOR_TOOLS:
            report = AttemptReport(
                task_id=1,
                worker=0,
                start_step=0,
                failed_step=1,
                step_names=("fetch", tool),
                failure=kind,
                retry_after_s=HINT_S if record.retry_after else None,
            )
            observation = error_format.render(report)
            text = observation.rendered_text()
            masked = text
            for value, placeholder in sorted(shapes, key=lambda s: len(s[0]), reverse=True):
                masked = masked.replace(value, placeholder)
            out.append(Rendering(name, vendor, len(text), masked, secrets.count_in(text)))
    return out
