"""A stored run group as one JSON document: ``fleetchaos history export REF``.

The document a CI can commit and later read back as a baseline (``--baseline FILE``,
``--fleetchaos-baseline FILE``) or as one side of ``fleetchaos history diff``::

    {
      "format": "fleetchaos-history-export",
      "version": 1,
      "group": {"id": 7, "kind": "compare", "scenario": "default", "label": "main",
                "status": "complete", "created_at": "2025-01-31T12:00:00+00:00",
                "meta": {"scenario_hash": "...", "policies": [...], "errors": [...], "seeds": [...], ...}},
      "runs": [<one run's result, as `fleetchaos run --json` prints it>, ...]
    }

``runs`` holds the group's runs arm by arm (in the order each arm first finished), each
arm's by seed; each is the whole stored result (metrics, breakdowns, task sets, replay
command, parameters) without per-task rows, exactly as the history keeps it.  Nothing of
the machine is written: no history path, no environment.

Light to import (the standard library); the store is handed in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from fleetchaos.gates.history_rows import Group, StoredRun

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "export_document", "export_text", "is_export", "seed_ordered"]

#: The ``format`` field that marks an exported group.
EXPORT_FORMAT = "fleetchaos-history-export"
#: The version of the document's shape; a reader refuses a newer one.
EXPORT_VERSION = 1


class _SeededRun(Protocol):
    """What :func:`seed_ordered` reads of a run: its arm (policy, errors), its seed and its id."""

    @property
    def policy(self) -> str: ...
    @property
    def errors(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def id(self) -> int: ...


_Run = TypeVar("_Run", bound=_SeededRun)


def seed_ordered(runs: Iterable[_Run]) -> list[_Run]:
    """Runs arm by arm (in the order each arm first appears), each arm's by seed.

    Parallel runs are stored as they finish; a reader looks for an arm's seeds together.
    Runs are anything with ``policy``, ``errors``, ``seed`` and ``id``.
    """
    runs = list(runs)
    first: dict[tuple[str, str], int] = {}
    for r in runs:
        first.setdefault((r.policy, r.errors), len(first))
    return sorted(runs, key=lambda r: (first[(r.policy, r.errors)], r.seed, r.id))


def is_export(doc: Any) -> bool:
    """Whether a JSON document is an exported group (by its ``format`` field)."""
    return isinstance(doc, dict) and doc.get("format") == EXPORT_FORMAT


def export_document(group: Group, runs: Sequence[StoredRun]) -> dict[str, Any]:
    """The export of ``group`` (a :class:`~fleetchaos.gates.history_rows.Group`) holding ``runs`` (its stored runs).

    Each run's result is read back through its model, so a damaged row is the store's
    :class:`~fleetchaos.errors.UserError`, never a half-written document.
    """
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "group": {
            "id": group.id,
            "kind": group.kind,
            "scenario": group.scenario,
            "label": group.label,
            "status": group.status,
            "created_at": group.created_at,
            "meta": group.meta,
        },
        "runs": [r.result.model_dump(mode="json") for r in seed_ordered(runs)],
    }


def export_text(group: Group, runs: Sequence[StoredRun]) -> str:
    """:func:`export_document` as indented JSON ending with a newline."""
    return json.dumps(export_document(group, runs), indent=2) + "\n"
