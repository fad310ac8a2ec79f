"""The rows of the run history as Python objects: a group, a run, and the checks that read them.

A history is a file a user can edit or damage; every cell read back is checked (text where
text belongs, JSON objects where JSON is stored, finite numbers for metrics), so a damaged
row is one :class:`~fleetchaos.errors.UserError` naming the store, the row and the field,
never a crash.  :mod:`fleetchaos.gates.history` (the store) re-exports :class:`Group` and
:class:`StoredRun`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.results.models import RunResult

__all__ = ["Group", "StoredRun", "group_of", "stored_run_of"]


@dataclass(frozen=True, slots=True)
class Group:
    """One stored command invocation: a run, a comparison or a sweep."""

    id: int
    kind: str
    scenario: str
    label: str | None
    status: str
    created_at: str
    meta: dict[str, Any]
    runs: int

    @property
    def ref(self) -> str:
        """How to name this group on the command line (``--baseline``)."""
        return f"#{self.id}"


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One stored run: its identity, metrics and whole result (without per-task rows)."""

    id: int
    group_id: int
    key: str
    scenario: str
    policy: str
    errors: str
    seed: int
    params: dict[str, Any]
    metrics: dict[str, float | None]
    created_at: str
    result_json: str = field(repr=False)

    @property
    def result(self) -> RunResult:
        """The stored :class:`RunResult`."""
        from pydantic import ValidationError

        try:
            return RunResult.model_validate_json(self.result_json)
        except (ValidationError, ValueError) as exc:
            raise UserError(
                f"run {self.id} of group #{self.group_id}: its stored result cannot be read ({type(exc).__name__}); "
                "the history is damaged (edited by hand?); pass another --history PATH"
            ) from None


def _damaged(path: Path, what: str, why: str) -> UserError:
    return UserError(
        f"{path}: {what}: {why}; the history is damaged (edited by hand?); "
        "pass another --history PATH, or name another group"
    )


def _text(value: Any, path: Path, what: str, field: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _damaged(path, what, f"{field} is not text")
    return value


def _json_field(text: Any, path: Path, what: str, field: str, kind: type) -> Any:
    try:
        value = json.loads(text) if isinstance(text, (str, bytes)) else None
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, kind):
        raise _damaged(path, what, f"its {field} is not a JSON {'object' if kind is dict else kind.__name__}")
    return value


def group_of(row: Sequence[Any], path: Path) -> Group:
    """A stored group from its row; a damaged cell is a UserError naming the store, the group and the field."""
    what = f"group {row[0]!r}"
    if not isinstance(row[0], int) or not isinstance(row[7], int):
        raise _damaged(path, what, "its id is not a number")
    return Group(
        id=row[0],
        kind=_text(row[1], path, what, "kind"),
        scenario=_text(row[2], path, what, "scenario"),
        label=_text(row[3], path, what, "label", optional=True),
        status=_text(row[4], path, what, "status"),
        created_at=_text(row[5], path, what, "created_at"),
        meta=_json_field(row[6], path, what, "meta", dict),
        runs=row[7],
    )


def stored_run_of(r: Sequence[Any], path: Path) -> StoredRun:
    """A stored run from its row; a damaged cell is a UserError naming the store, the run and the field."""
    what = f"run {r[0]!r} of group {r[1]!r}"
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (r[0], r[1], r[6])):
        raise _damaged(path, what, "its id, group or seed is not a whole number")
    metrics = _json_field(r[8], path, what, "metrics", dict)
    if not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
               for v in metrics.values()):  # fmt: skip
        raise _damaged(path, what, "its metrics are not finite numbers")
    return StoredRun(
        id=r[0],
        group_id=r[1],
        key=_text(r[2], path, what, "key"),
        scenario=_text(r[3], path, what, "scenario"),
        policy=_text(r[4], path, what, "policy"),
        errors=_text(r[5], path, what, "errors"),
        seed=r[6],
        params=_json_field(r[7], path, what, "params", dict),
        metrics=metrics,
        created_at=_text(r[9], path, what, "created_at"),
        result_json=_text(r[10], path, what, "result"),
    )
