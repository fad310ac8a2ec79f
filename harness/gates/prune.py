"""Which stored run groups ``fleetchaos history prune`` removes: the plan, decided before anything is deleted.

A group is removed when every rule given says so: ``--keep N`` (it is older than the N
newest groups of its scenario) and ``--before DATE`` (it was created before that date).
Some groups are never removed, whatever the rules:

* a ``running`` group: a command may still be writing to it (a group left ``running`` by a
  killed sweep can be finished with ``sweep --resume``);
* the newest group of each label: it is what ``--baseline LABEL`` names.

Light to import (the standard library and the row types); the store does the deleting
(:meth:`fleetchaos.gates.history.HistoryStore.remove_groups`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fleetchaos.errors import UserError
from fleetchaos.gates.history_rows import Group

__all__ = ["PrunePlan", "parse_before", "plan_prune"]


@dataclass
class PrunePlan:
    """The groups to remove, and the groups the rules named but that are kept (with why)."""

    remove: list[Group] = field(default_factory=list)
    """The groups to delete, newest first."""
    kept: list[tuple[Group, str]] = field(default_factory=list)
    """(group, reason) of groups the rules selected but that are kept."""

    @property
    def runs(self) -> int:
        """How many stored runs the groups to remove hold."""
        return sum(g.runs for g in self.remove)


def parse_before(text: str) -> datetime:
    """``--before DATE``: ``2025-01-31`` or an ISO date and time (UTC unless it says otherwise)."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(
            f"--before {text!r}: not a date; give YYYY-MM-DD or an ISO date and time (2025-01-31T12:00, UTC)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _created(group) -> datetime | None:
    try:
        when = datetime.fromisoformat(group.created_at)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def plan_prune(groups: Sequence[Group], *, keep: int | None = None, before: datetime | None = None) -> PrunePlan:
    """The groups of ``groups`` (newest first, as :meth:`HistoryStore.groups` lists them) that the rules remove.

    At least one rule must be given.  A group whose creation time cannot be read is never
    removed by ``before``.
    """
    if keep is None and before is None:
        raise UserError("history prune: give --keep N (groups per scenario) and/or --before DATE")
    plan = PrunePlan()
    seen: dict[str, int] = {}
    newest_label: set[int] = set()
    labels: set[str] = set()
    for g in groups:  # newest first
        if g.label is not None and g.label not in labels:
            labels.add(g.label)
            newest_label.add(g.id)
    for g in groups:
        rank = seen.get(g.scenario, 0)
        seen[g.scenario] = rank + 1
        selected = True
        if keep is not None and rank < keep:
            selected = False
        if before is not None:
            created = _created(g)
            if created is None or created >= before:
                selected = False
        if not selected:
            continue
        if g.status == "running":
            plan.kept.append((g, "running: a command may still be writing to it"))
        elif g.id in newest_label:
            plan.kept.append((g, f"the newest group labelled {g.label!r} (what --baseline {g.label} names)"))
        else:
            plan.remove.append(g)
    return plan
