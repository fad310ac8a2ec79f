"""The shape of one assumption a headline rests on (:mod:`fleetchaos.scenario.assumptions` holds the table): its
scenario path, the group it belongs to, what it decides, why its default, and its plausible range.

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["GROUPS", "PATH_PART", "Assumption"]

#: The groups of :data:`ASSUMPTIONS`, in the order docs/assumptions.md gives them.
GROUPS = (
    "What a failure reveals",
    "Partial work",
    "Envelopes that lie",
    "Provider and client",
    "Costs",
    "The model's recovery",
)

#: ``fleet.providers[].servers``: ``[]`` is every element of a list; ``faults[wrong_envelope]``
#: every fault rule of that kind.
PATH_PART = re.compile(r"([a-z_0-9]+)(?:\[([a-z_]*)\])?$")


@dataclass(frozen=True, slots=True)
class Assumption:
    """One setting that can move an outcome: where it is, what it decides, why its default, its range."""

    path: str
    """The scenario path: ``fleet.partial_batch``, ``fleet.providers[].admission`` (every provider),
    ``faults[wrong_envelope].misclassify`` (every rule of that kind)."""
    group: str
    decides: str
    """What outcome it decides, in one sentence."""
    reason: str
    """The source or the argument for its default (and for the headline's value, when that differs)."""
    values: tuple[Any, ...]
    """Its plausible range: the values a sensitivity study tries (the default among them)."""

    def location(self) -> tuple[str | int, ...]:
        """The path as a validation location through the first element of each list (a tag for a fault kind)."""
        loc: list[str | int] = []
        for piece in self.path.split("."):
            match = PATH_PART.match(piece)
            if match is None:
                raise ValueError(f"assumption path {self.path!r}: {piece!r} is not name, name[] or name[kind]")
            loc.append(match.group(1))
            if match.group(2) is not None:
                loc.append(0)
                if match.group(2):
                    loc.append(match.group(2))
        return tuple(loc)
