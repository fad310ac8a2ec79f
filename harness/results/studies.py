"""Result models of the studies built on comparisons: tuning policies, best against best, robustness.

Light to import (pydantic and the shared models only).  Floats are rounded like every
other result, so a study serialises to the same bytes whatever the executor.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fleetchaos.results.models import ArmResult, CompareResult, Flip

__all__ = [
    "ArmRole",
    "Flip",
    "Gap",
    "RobustnessPoint",
    "RobustnessResult",
    "TrialRecord",
    "TuneResult",
    "TunedCompareResult",
    "TuningRecord",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrialRecord(_Model):
    """One candidate of a tuning search, judged on the training seeds only."""

    family: str
    policy: str
    """The candidate's canonical spec, e.g. ``backoff(base_s=0.5,cap_s=60.0)``."""
    params: dict[str, Any]
    """The parameters the search set (the family's others keep their defaults)."""
    objective: float | None
    """The objective's mean over the training seeds it ran."""
    per_seed: list[float | None]
    """Its values on the training seeds it ran, in order."""
    seeds: int | None = Field(default=None, exclude_if=lambda seeds: seeds is None)
    """How many training seeds it ran when a race stopped it early (None: every one)."""


class TuneResult(_Model):
    """A tuning search for one scenario and error format: every trial on training seeds, the winners on held-out ones."""

    scenario: str
    errors: str
    objective: str
    """The metric searched for (a registry name), better ``higher_is_better``."""
    higher_is_better: bool
    search: str
    """``random``, ``grid`` or ``tpe`` (optuna's seeded TPE sampler)."""
    sampler_seed: int
    space_version: int
    space: dict[str, dict[str, str]]
    """Each family's searched parameters and their ranges, as the space declares them."""
    train_seeds: list[int]
    holdout_seeds: list[int]
    """Seeds no trial ran on (disjoint from ``train_seeds``): the figures of ``holdout`` come from these only."""
    confidence: float
    trials: list[TrialRecord]
    best: str
    """The winner's spec: the best training objective over every trial (the earliest on a tie)."""
    best_family: str
    holdout: list[ArmResult]
    """The winner, then each other family's best trial, on the held-out seeds, with intervals."""
    params: dict[str, Any] = {}
    """Scenario values set with ``--param`` (already in the scenario every run used)."""
    versions: dict[str, str] = {}
    race: bool = False
    """Candidates raced over the training seeds (:mod:`fleetchaos.runs.racing`) instead of each running all."""
    training_runs: int = 0
    """Training runs the search made."""
    exhaustive_runs: int = 0
    """Training runs every trial on every training seed would have made."""


class ArmRole(_Model):
    """What one arm of a tuned comparison is: the best policy for its own format, or another format's best."""

    policy: str
    errors: str
    role: str
    """``best for ERRORS`` (tuned on this format) or ``same policy as best for OTHER`` (tuned on another)."""
    tuned_for: str
    """The error format the policy was tuned on."""


class Gap(_Model):
    """One paired difference between two arms of a tuned comparison: what part of a gap is format, what part policy."""

    label: str
    """``best per format``, ``same policy: SPEC`` (format only changes) or ``policy on ERRORS`` (policy only changes)."""
    policy: str
    errors: str
    reference_policy: str
    reference_errors: str
    metric: str
    n: int
    mean_difference: float | None
    """Arm minus reference, per seed, averaged."""
    ci: list[float | None]


class TuningRecord(_Model):
    """How the arms of a ``compare --tune`` were chosen: one tuning search per format, on seeds the comparison never uses."""

    objective: str
    search: str
    trials: int
    """Trials per family of each search."""
    train_seeds: list[int]
    best: dict[str, str]
    """Error format -> the spec tuned on it."""
    roles: list[ArmRole]
    gaps: list[Gap] = []
    """The gap between the best arms of the first format and each other one, split into format and policy parts."""


class RobustnessPoint(_Model):
    """Every arm at one value of one varied assumption (the other assumptions at the scenario's own values)."""

    parameter: str
    value: Any
    arms: list[ArmResult]
    difference: float | None
    """Paired difference on the metric: the second arm minus the first (per seed, then averaged)."""
    ci: list[float | None]
    leader: str
    """The arm ahead on the metric at this value (``policy on errors``), or ``tie``."""


class RobustnessResult(_Model):
    """How the ordering of arms holds as the main assumptions vary: each over its declared range, one at a time."""

    scenario: str
    metric: str
    higher_is_better: bool
    arms: list[str]
    """The arms compared, as ``policy on errors``; differences are the second minus the first."""
    seeds: list[int]
    confidence: float
    baseline_leader: str
    """The arm ahead at the scenario's own values."""
    varied: dict[str, list[Any]]
    """Each varied assumption (a dotted scenario path) with the values tried, in order."""
    described: dict[str, str] = {}
    """What a varied path is, in words (``network_blip rate (probability)``), where known."""
    points: list[RobustnessPoint]
    flips: list[Flip]
    """Every place the leader changes, in the order of ``varied``; empty when the ordering holds everywhere."""
    versions: dict[str, str] = {}


class TunedCompareResult(CompareResult):
    """A comparison whose ``best`` arms were tuned per format: a :class:`CompareResult` with its tuning record."""

    tuning: TuningRecord
