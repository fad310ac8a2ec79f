"""Result models of the studies built on comparisons: tuning policies, best against best, robustness.

Light to import (pydantic and the shared models only).  Floats are rounded like every
other result, so a study serialises to the same bytes whatever the executor.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from fleetchaos.results.models import ArmResult, CompareResult, Flip

__all__ = [
    "ArmRole",
    "Flip",
    "Gap",
    "RobustnessPoint",
    "RobustnessResult",
    "SensitivityFlip",
    "SensitivityPoint",
    "SensitivityResult",
    "Setting",
    "TornadoBar",
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
    """One paired difference between two arms of best against best (:mod:`fleetchaos.runs.best`)."""

    kind: str = ""
    """``lead`` (a format's best minus the next best format's best), ``envelope`` (the best with an envelope
    minus the best without one) or ``format`` (the same policy on another format minus on its own)."""
    label: str
    """The difference in words."""
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
    """How the best arms were chosen: one tuning search per format, on seeds the comparison never uses."""

    objective: str
    search: str = ""
    """The search (``random``, ``grid``, ``tpe``) when tuned for this comparison; shipped: in ``command``."""
    trials: int = 0
    """Trials per family of each search (0: shipped, see ``command``)."""
    train_seeds: list[int]
    best: dict[str, str]
    """Error format -> the spec tuned on it."""
    roles: list[ArmRole]
    gaps: list[Gap] = []
    """Each format's lead over the next, the envelope's lead and the same policy on other formats, paired."""
    source: str = "tuned"
    """``tuned`` (searched for this comparison) or ``shipped`` (the scenario's ``tuned:`` block)."""
    command: str = ""
    """The command that chose shipped policies (provenance)."""
    matches_world: bool = True
    """Whether shipped policies were tuned for this very world (its fingerprint; a ``--param`` changes it)."""


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


class Setting(_Model):
    """One assumption a sensitivity study varied: its path, range, the scenario's value, and how it was judged."""

    parameter: str
    """The ``--param`` path (one provider's, one fault rule's)."""
    described: str = ""
    """What it is, in words."""
    values: list[Any]
    """The values tried, in the range's order (the scenario's own among them)."""
    own: Any
    """The scenario's own value."""
    metric: str
    """``success_rate``, or ``cost_usd`` for a price (which cannot change a success rate)."""
    retuned: bool
    """Whether each format's best was tuned again at each value (never for a price)."""
    reaches: list[str]
    """The formats the setting can change; the others' runs are the scenario's own at every value."""
    skipped: list[str] = []
    """Values of the registry's range this scenario's rules refuse, each with the rule (``60: not below the call
    timeout 10 s``); a range given with ``--param`` is never trimmed, it is refused."""


class SensitivityPoint(_Model):
    """Best against best at one value of one assumption (the others at the scenario's values)."""

    parameter: str
    value: Any
    metric: str
    arms: list[ArmResult]
    """Each format's best at this value, on its own format (the figures the study reads, per seed)."""
    retuned: list[str] = []
    """The formats whose best was tuned again at this value."""
    versus: list[str]
    """[the format with an envelope, the format without one] whose bests the difference compares."""
    difference: float | None
    """The best with an envelope minus the best without one, on ``metric``, paired by seed."""
    ci: list[float | None]
    leader: str
    """The format whose best leads on ``metric`` (``tie`` when two lead)."""
    lead_ci: list[float | None] = [None, None]
    """The leader minus the runner-up, paired: whether the lead is clear."""


class SensitivityFlip(Flip):
    """Where the winning format changes between neighbouring values of one assumption."""

    reverses: bool = False
    """The envelope's lead changes sign there (the best with an envelope and the best without one swap)."""


class TornadoBar(_Model):
    """One assumption's swing of the envelope's lead over its range: a bar of the tornado chart."""

    parameter: str
    metric: str
    low_value: Any
    high_value: Any
    """The ends of the range."""
    at_low: float | None
    at_high: float | None
    """The difference at each end."""
    least: float | None
    most: float | None
    """The smallest and largest difference over every value tried (the bar's extent)."""
    own_value: Any
    at_own: float | None
    """The scenario's own value and the difference there."""
    width: float
    """``most - least``: how much the assumption moves the answer (bars are sorted by it)."""


class SensitivityResult(_Model):
    """What best against best depends on: each assumption varied over its plausible range, one at a time."""

    scenario: str
    errors: list[str] = Field(validation_alias=AliasChoices("errors", "formats"))
    """The error formats whose bests meet (the same name as a comparison's ``errors``; files written before
    the name was unified say ``formats``, which still reads)."""
    seeds: list[int]
    confidence: float
    metric: str = "success_rate"
    """The study's metric (a price's setting is judged on ``cost_usd`` instead: see each :class:`Setting`)."""
    retune: bool
    """Each format's best tuned again at every value that can change it (False: the scenario's own bests)."""
    tuning: dict[str, Any] = {}
    """How the bests were tuned: training seeds, search, trials, racing, and where the scenario's own came from."""
    baseline: SensitivityPoint
    """Best against best at the scenario's own values."""
    settings: list[Setting]
    points: list[SensitivityPoint]
    flips: list[SensitivityFlip]
    bars: list[TornadoBar]
    """One per setting, widest first within each metric."""
    runs: dict[str, int] = {}
    """Runs made: ``training`` (the searches), ``evaluation`` (the bests on the study's seeds), ``reused``
    (arms a setting cannot change, taken from the scenario's own)."""
    versions: dict[str, str] = {}


class TunedCompareResult(CompareResult):
    """A comparison whose ``best`` arms were tuned per format: a :class:`CompareResult` with its tuning record."""

    tuning: TuningRecord
    sensitivity: SensitivityResult | None = Field(default=None, exclude_if=lambda study: study is None)
    """What the answer depends on (``compare --robustness``): best against best over each assumption's range."""
