"""Option groups several jobs share: the run history and gate of ``run`` and ``compare``, and the tuning search.

Each field is named as the command line's option (``--fail-on`` is ``fail_on``), so a click
command builds one from the keyword arguments its options arrive as (:func:`split_options`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from fleetchaos.gates.rule import DEFAULT_EVIDENCE

__all__ = ["HistoryOptions", "TuneOptions", "split_options"]


@dataclass(frozen=True)
class HistoryOptions:
    """Where runs are stored and what they are gated against (``--history`` ... ``--allow-partial-baseline``)."""

    history_path: Path | None = None
    no_history: bool = False
    label: str | None = None
    baseline_ref: str | None = None
    fail_on: tuple[str, ...] = ()
    evidence: str = DEFAULT_EVIDENCE
    fail_on_new: bool = False
    allow_policy_errors: bool = False
    allow_partial_baseline: bool = False


@dataclass(frozen=True)
class TuneOptions:
    """How a policy is searched for (``tune``, and the ``best`` arms of ``compare --tune``): docs/policies.md."""

    families: tuple[str, ...] = ()
    """Policy families to search (empty: every family of the space)."""
    space_file: Path | None = None
    """A search space file (None: the built-in space)."""
    search: str = "random"
    trials: int = 8
    grid_points: int = 3
    train_seeds: int = 5
    first_train_seed: int = 1_000_001
    objective: str = "success_rate"
    sampler_seed: int = 0
    race: bool = True
    """Race candidates seed by seed, stopping those already behind (False: every candidate on every training seed)."""


_Group = TypeVar("_Group", HistoryOptions, TuneOptions)


def split_options(group: type[_Group], options: dict[str, Any]) -> _Group:
    """Take ``group``'s fields out of a command's keyword arguments (``options`` keeps the rest)."""
    return group(**{f.name: options.pop(f.name) for f in dataclasses.fields(group) if f.name in options})
