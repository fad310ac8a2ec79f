"""One arm of a baseline: its stored figures, what they were computed over, and the world they came from.

A :class:`BaselineEntry` is what :mod:`fleetchaos.gates.baseline` reads for each (scenario,
policy, errors) of a stored group or results file: each seed's figures, their task sets,
the arms its ``common_recovery_rate`` was computed over, and the scenario's fingerprints,
which :mod:`fleetchaos.gates.like` checks against the runs gated.  Several entries of one
arm are pooled seed by seed (:func:`pooled`), a comparison's arm winning over single runs
of it (:func:`merge`).

Light to import (the standard library and the regression rule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetchaos.gates.regression import Arm

__all__ = ["BaselineEntry", "merge", "pooled"]


@dataclass
class BaselineEntry:
    """One arm's stored figures: each seed's metrics (when known), their means, and where they came from."""

    scenario: str
    policy: str
    errors: str
    metrics: dict[str, float | None]
    """The mean of each metric over :attr:`seeds`."""
    seeds: list[int]
    origin: str
    from_compare: bool
    per_seed: dict[int, dict[str, float | None]] = field(default_factory=dict)
    """Seed -> that run's metrics; empty when the document kept only means."""
    task_sets: dict[int, dict[str, str]] = field(default_factory=dict)
    """Seed -> that run's task sets (faulted and successful task ids), when the source kept them."""
    arm_set: frozenset[tuple[str, str]] | None = None
    """The arms its stored ``common_recovery_rate`` was computed over: every arm of a comparison's results
    file, the arm alone for a run (the history stores each run as it finishes, on its own)."""
    world: str | None = None
    """The world fingerprint of the scenario it ran (:mod:`fleetchaos.gates.identity`), when the source kept it."""
    fingerprint: str | None = None
    """The scenario fingerprint (the whole validated scenario), when the source kept it."""
    config: dict[str, Any] | None = None
    """The validated scenario it ran, when the source kept it (a comparison's results file): names a difference."""
    params: tuple[str, ...] = ()
    """The ``--param`` values (or sweep point) of its runs, one text per distinct set (several: a sweep's points)."""

    def arm(self, label: str | None = None) -> Arm:
        """The entry as the regression rule's :class:`~fleetchaos.gates.regression.Arm`."""
        label = label or f"{self.policy} on {self.errors}"
        if self.per_seed:
            return Arm(label, self.per_seed, seeds=tuple(sorted(self.per_seed)), task_sets=self.task_sets,
                       arm_set=self.arm_set)  # fmt: skip
        return Arm(label, means=self.metrics, seeds=tuple(self.seeds), arm_set=self.arm_set)


def _mean(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def _average(found: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    """Each metric's mean over several runs' metrics (None where none has a value)."""
    names = dict.fromkeys(k for m in found for k in m)
    return {name: _mean([m.get(name) for m in found]) for name in names}


def pooled(entries: list[BaselineEntry], origin: str | None = None) -> BaselineEntry:
    """Several entries of one arm as one: each seed's figures averaged, and their means."""
    first = entries[0]
    by_seed: dict[int, list[dict[str, float | None]]] = {}
    for e in entries:
        for seed, metrics in e.per_seed.items():
            by_seed.setdefault(seed, []).append(metrics)
    per_seed = {seed: found[0] if len(found) == 1 else _average(found) for seed, found in sorted(by_seed.items())}
    # a seed's task sets are kept only when one run gave it (several runs name different tasks)
    sets = {seed: e.task_sets[seed] for e in entries for seed in e.task_sets if len(by_seed[seed]) == 1}
    metrics = _average([e.metrics for e in entries])
    seeds = sorted({s for e in entries for s in e.seeds})
    if origin is None:
        origin = first.origin if len(entries) == 1 else f"{len(entries)} runs under {Path(first.origin).parent}"
    same = {(e.world, e.fingerprint) for e in entries}
    world, fingerprint = next(iter(same)) if len(same) == 1 else (None, None)
    arm_sets = {e.arm_set for e in entries}
    params = tuple(dict.fromkeys(p for e in entries for p in e.params))
    return BaselineEntry(first.scenario, first.policy, first.errors, metrics, seeds, origin, False, per_seed, sets,
                         next(iter(arm_sets)) if len(arm_sets) == 1 else None, world, fingerprint, None, params)  # fmt: skip


def merge(entries: list[BaselineEntry], origin: str | None = None) -> BaselineEntry:
    """One entry per arm: a comparison wins; several single runs are pooled seed by seed."""
    compares = [e for e in entries if e.from_compare]
    if compares:
        return compares[0]
    return pooled(entries, origin)
