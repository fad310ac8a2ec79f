"""Result models shared by the runner, the CLI and the reports.

Light to import (pydantic only): ``reports`` reads these without pulling in SimPy.
Floats are rounded to 6 decimals so a result serialises to the same bytes everywhere.
"""

from __future__ import annotations

from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from fleetchaos.escaping import UNSAFE_FOR_TERMINALS, terminal_text

DIGITS = 6

#: Most per-task values an arm keeps per sample (evenly spaced order statistics beyond that).
SAMPLE_LIMIT = 2000


@overload
def rounded(value: float) -> float: ...
@overload
def rounded(value: float | None) -> float | None: ...
def rounded(value: float | None) -> float | None:
    """A float rounded for stable output (None stays None)."""
    return None if value is None else round(float(value), DIGITS)


def _written_out(value: Any) -> Any:
    """``value`` (plain data) with every string's terminal control characters written out; the same object when it
    holds none (:func:`fleetchaos.escaping.terminal_text`)."""
    if isinstance(value, str):
        return terminal_text(value) if UNSAFE_FOR_TERMINALS.search(value) else value
    if isinstance(value, dict):
        if any(isinstance(v, (str, dict, list, tuple)) for v in value.values()) or any(
            isinstance(k, str) and UNSAFE_FOR_TERMINALS.search(k) for k in value
        ):
            return {_written_out(k): _written_out(v) for k, v in value.items()}
        return value
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (str, dict, list, tuple)) for v in value):
            cleaned = [_written_out(v) for v in value]
            if any(a is not b for a, b in zip(cleaned, value)):
                return type(value)(cleaned)
        return value
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_control_characters(cls, value: Any, info: ValidationInfo) -> Any:
        # Names, codes and messages reach terminals, charts and pages: a results file (or a policy's text) holding
        # an escape sequence is read with it written out (\x1b[2J), never acted on.  Per-task rows are left to
        # their writers (tasks.csv cells and report tables escape them), as they are many.
        return value if info.field_name == "tasks" else _written_out(value)


class Timeline(_Model):
    """What the fleet did during one traced run: the raw data of the timeline and error-code charts.

    Times are simulated seconds.  ``disk_full[w]`` and ``key_expiries[w]`` are worker
    ``w``'s scheduled faults, ``rate_windows`` the fleet-wide API rate cuts
    ``(start_s, end_s, capacity_factor)``; the event lists come from the run's trace.
    """

    label: str
    policy: str
    errors: str
    seed: int
    replay: str
    workers: int = Field(ge=1, le=1000)
    """The fleet's workers (at most 1000, as a scenario's ``fleet.workers``): charts draw a lane per worker."""
    duration_s: float
    """The horizon: tasks arrive until then."""
    end_s: float
    """When the simulation stopped (the horizon plus the drain limit); spans are clipped to it."""
    disk_full: list[list[tuple[float, float]]]
    key_expiries: list[list[float]]
    rate_windows: list[tuple[float, float, float]]
    dispatches: list[tuple[float, int, int, int]]
    """(time_s, worker, task_id, attempt number): attempt 1 is the first dispatch, later ones are retries."""
    faults: list[tuple[float, int, str, str, str]]
    """(time_s, worker, fault kind, error code, tool): one per faulted call."""
    actions: list[tuple[float, int, int, str]]
    """(time_s, worker, task_id, action): every recovery action other than a plain Retry."""
    crashes: list[list[tuple[float, float]]] = []
    """Per worker: (down_s, back_s) spans in which the worker was crashed."""
    partitions: list[tuple[float, float, list[int] | None]] = []
    """(start_s, end_s, workers cut off, None for all) of each network partition span."""


class Proportion(_Model):
    """A task-level proportion pooled over seeds, with its Wilson interval."""

    successes: int
    trials: int
    rate: float | None
    low: float | None
    high: float | None


class ExpectationResult(_Model):
    """One ``expect:`` gate of the scenario judged on one arm: what was compared with the bound, and the verdict."""

    gate: int
    """The gate's position in the scenario's ``expect`` list (``expect[0]`` is the first)."""
    metric: str
    rule: str
    """``at_least`` or ``at_most``."""
    bound: float
    statistic: str
    """``mean`` or ``every_seed`` (:mod:`fleetchaos.scenario.expect`)."""
    arm: str | None
    """The gate's ``arm`` as the scenario wrote it; None when it judges the scenario's arms (or the headline's best)."""
    policy: str
    """The arm judged (empty when no arm of the command matched the gate, which fails it)."""
    errors: str
    value: float | None
    """The figure compared with the bound; None when the runs gave none (which fails the gate)."""
    seeds: int
    """How many seeds gave the figure a value."""
    worst_seed: int | None = None
    """The seed with the worst value on the bound's side (the one to replay); None without a value."""
    passed: bool
    evidence: str = ""
    """The verdict's evidence by the one gate rule (:mod:`fleetchaos.gates.rule`): ``decisive``, ``weak`` or
    ``missing``."""
    mode: str = "weak"
    """The evidence the gate asked for: ``weak`` (the mean decides) or ``decisive``."""
    note: str = ""
    """How the figure was made, the evidence in words, and why the verdict is not the plain comparison."""


class RunResult(_Model):
    """One policy on one error format, one scenario, one seed."""

    scenario: str
    policy: str
    errors: str
    seed: int
    metrics: dict[str, float | None]
    breakdowns: dict[str, dict[str, int]]
    fault_schedule: list[str]
    replay: str
    tasks: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    """Swept scenario parameters applied to this run (dotted path -> value); empty outside sweeps."""
    samples: dict[str, list[float]] = {}
    """Per-task values behind the distribution metrics (``time_to_recovery_s``, ``steps_to_recovery``), sorted."""
    timeline: Timeline | None = None
    versions: dict[str, str] = {}
    recipe: str = ""
    """The policy's repr: its parameters, or the flattened recipe of a composed policy."""
    """Versions of fleetchaos and its simulation libraries, when the run stands alone (``fleetchaos run``)."""
    mode: str = Field(default="sim", exclude_if=lambda mode: mode == "sim")
    """``sim`` for a simulated run, ``real`` for the team's real code under the same schedule
    (:mod:`fleetchaos.real`); left out of a simulated run's JSON, which keeps its bytes."""
    misread_probability: float | None = None
    """The chance the orchestrator read a reported failure as a success in this run: the
    scenario's ``misread_probability`` times the format's misread factor, at most 1 (an
    assumption reports state)."""
    policy_name: str = ""
    """The policy's own name (its ``name`` attribute), which reports show for the arm."""
    task_sets: dict[str, str] = {}
    """Ids of the run's faulted and of its truly successful tasks (``faulted``, ``succeeded``), each a
    base64 bitmap (:mod:`fleetchaos.results.common_set`): what recovery on a common set needs.
    Empty in a closed-loop scenario, whose arms run different tasks."""
    expectations: list[ExpectationResult] = Field(default=[], exclude_if=lambda gates: not gates)
    """The scenario's ``expect:`` gates judged on this run (``fleetchaos run``); left out of the JSON when
    the scenario has none, which keeps its bytes."""
    _tasks_csv: tuple[str, int] | None = PrivateAttr(default=None)

    @property
    def tasks_csv(self) -> tuple[str, int] | None:
        """The run's per-task rows as tasks.csv lines without the header, and how many rows they are.

        Set by ``run_one(..., task_csv=True)``; never serialised: it travels with the result
        from the worker that ran it to the command writing the comparison's tasks.csv,
        which drops it once written.
        """
        return self._tasks_csv

    @tasks_csv.setter
    def tasks_csv(self, lines: tuple[str, int] | None) -> None:
        self._tasks_csv = lines


class ArmResult(_Model):
    """One arm of a comparison (a policy on an error format) across seeds."""

    policy: str
    errors: str
    metrics: dict[str, float | None]
    ci: dict[str, list[float | None]]
    per_seed: dict[str, list[float | None]]
    breakdowns: dict[str, dict[str, int]]
    pooled: dict[str, Proportion] = {}
    """Task-level rates pooled over every seed (recovered / faulted tasks, ...), with Wilson intervals."""
    recipe: str = ""
    """The policy's repr, as its runs recorded it."""
    policy_name: str = ""
    """The policy's own name (its ``name`` attribute: a preset's name for an import path or a spec)."""
    alias: str = Field(default="", exclude_if=lambda alias: not alias)
    """How reports name the policy when its spec is too long to read (``best-for-generic`` for a
    policy ``compare --tune`` tuned on generic errors; the report's legend gives the spec); left
    out of the JSON when empty."""
    samples: dict[str, list[float]] = {}
    """Per-task values pooled over seeds, sorted; at most :data:`SAMPLE_LIMIT` order statistics each."""
    misread_probability: float | None = None
    """The chance this arm's orchestrator read a reported failure as a success (its runs' value)."""
    task_sets: list[dict[str, str]] = Field(default=[], exclude_if=lambda sets: not sets)
    """Each seed's task sets (:attr:`RunResult.task_sets`), in the order of the comparison's seeds: what a
    regression gate against this file needs to recompute ``common_recovery_rate`` on the arms both sides ran.
    Empty (and left out of the JSON) in a closed-loop scenario and outside comparisons."""


class Comparison(_Model):
    """One arm against the reference arm on one metric: paired per-seed differences and a verdict."""

    policy: str
    errors: str
    reference_policy: str
    reference_errors: str
    metric: str
    higher_is_better: bool | None
    n: int
    mean_difference: float | None
    ci: list[float | None]
    verdict: str


class Flip(_Model):
    """Where the ordering of two arms on a metric reverses as one scenario parameter is varied."""

    parameter: str
    """The varied parameter (a dotted path into the scenario, as ``--param`` names it)."""
    metric: str
    ahead: str
    """The arm ahead at ``holds_at`` (``policy on errors``)."""
    behind: str
    """The arm it falls behind at ``flips_at``."""
    holds_at: Any
    """The last value tried where ``ahead`` is still ahead."""
    flips_at: Any
    """The first value tried where ``behind`` is ahead instead."""


class Robustness(_Model):
    """What a flip analysis varied and where the ordering of the arms flipped (the conclusion reads it)."""

    varied: dict[str, list[Any]]
    """Each varied parameter (dotted path) with the values tried, in order."""
    flips: list[Flip] = []
    arms: list[str] = []
    """The two arms ordered (``policy on errors``); differences are the second minus the first."""
    metric: str = ""
    leader: str = ""
    """The arm ahead at the scenario's own values (``tie`` when neither is)."""
    leaders: dict[str, list[str]] = {}
    """Each varied parameter's leader at each value tried, in the order of ``varied`` (``tie`` when neither)."""
    clear: dict[str, list[bool]] = {}
    """Each varied parameter: whether the lead at each value is clear (its interval excludes no difference)."""
    seeds: int = 0
    """Seeds per value and arm."""


class CompareResult(_Model):
    """Every arm of a comparison on the same scenario and seeds."""

    scenario: str
    seeds: list[int]
    confidence: float
    arms: list[ArmResult]
    description: str = ""
    versions: dict[str, str] = {}
    comparisons: list[Comparison] = []
    timelines: list[Timeline] = []
    scenario_config: dict[str, Any] = {}
    """The validated scenario the comparison ran, so a report states every modelling parameter."""
    closed_loop: bool = False
    """The scenario's clients submit as their tasks end, so each arm runs its own tasks: the
    comparison leads with goodput per day instead of rates on shared tasks
    (:func:`fleetchaos.results.registry.lead_metrics`)."""
    robustness: Robustness | None = None
    """Where the ordering of the arms holds and flips as scenario assumptions vary; None
    when no flip analysis was run (the report's conclusion says so)."""
    expectations: list[ExpectationResult] = Field(default=[], exclude_if=lambda gates: not gates)
    """The scenario's ``expect:`` gates judged on each arm they apply to; left out of the JSON when the
    scenario has none, which keeps its bytes."""

    def arm(self, policy: str, errors: str) -> ArmResult:
        """The arm of ``policy`` on ``errors``."""
        for a in self.arms:
            if a.policy == policy and a.errors == errors:
                return a
        raise KeyError(f"no arm {policy} on {errors}")


class SweepEntry(ArmResult):
    """One arm (policy on error format) at one point of a sweep: a scenario with parameters."""

    scenario: str
    params: dict[str, Any]


class SweepResult(_Model):
    """Every arm at every point of a sweep, each across the same seeds."""

    scenarios: list[str]
    grid: dict[str, list[Any]]
    """Each swept parameter (dotted path) with its values, in sweep order."""
    policies: list[str]
    errors: list[str]
    seeds: list[int]
    confidence: float
    metric: str
    """The metric the report draws against the swept parameter."""
    x: str | None = None
    """The swept parameter the report's curves are drawn against."""
    entries: list[SweepEntry]
    versions: dict[str, str] = {}
    scenario_configs: dict[str, dict[str, Any]] = {}
    """Each scenario of the sweep by name, validated, before the swept values were applied: what the
    report states as run, and where it reads the kind of a swept fault (``faults[0]`` is a ``network_blip``)."""
