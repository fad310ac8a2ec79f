"""Sweeps: every policy on every error format, over scenarios, parameter grids and seeds.

A sweep is planned first (every scenario loaded, every parameter applied and validated,
every run given a stable key) and only then run, so a mistake anywhere in the grid is
reported before any simulation starts.  Runs go to any ``concurrent.futures.Executor``
(see :mod:`fleetchaos.runs.executors`); each finished run is handed to a callback at once (to
write it to the run history), and runs whose key a store already holds are not run
again (``--resume``).  The aggregate is computed from the runs in plan order, so it is
the same whatever the executor, the job count, or how often the sweep was resumed.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fleetchaos.errors import UserError
from fleetchaos.names import DEFAULT_ERRORS, DEFAULT_POLICIES, check_formats, check_metric, check_policies
from fleetchaos.policies.spec import policy_param_name
from fleetchaos.results.common_set import apply_common_sets
from fleetchaos.results.models import RunResult, SweepEntry, SweepResult
from fleetchaos.scenario.params import ParamError, apply_params, format_value, grid_points, parse_path
from fleetchaos.seeds import seeds_problem

if TYPE_CHECKING:
    from fleetchaos.gates.history import HistoryStore

DEFAULT_METRIC = "success_rate"


class SweepSpec(BaseModel):
    """What to sweep, as written in a sweep file (YAML or JSON) or given on the command line.

    ``seeds`` is a count (seeds ``first_seed .. first_seed + seeds - 1``) or an explicit
    list.  ``params`` maps a dotted path into the scenario document to the values to
    sweep.  ``metric`` is drawn against ``x`` (default: the first swept parameter whose
    values are all numbers); several metrics may be given comma-separated
    (``tool_calls,makespan_s``), each with its own curves and table column.
    """

    # strict: a quoted number (``confidence: "0.9"``) is refused as in a scenario file, not coerced.
    model_config = ConfigDict(extra="forbid", strict=True)

    scenarios: list[str] = Field(default_factory=lambda: ["default"], min_length=1)
    policies: list[str] = Field(default_factory=lambda: list(DEFAULT_POLICIES), min_length=1)
    errors: list[str] = Field(default_factory=lambda: list(DEFAULT_ERRORS), min_length=1)
    seeds: int | list[int] = 10
    first_seed: int = Field(default=1, ge=0, le=2**62)
    params: dict[str, list[Any]] = Field(default_factory=dict)
    metric: str = DEFAULT_METRIC
    x: str | None = None
    confidence: float = Field(default=0.95, ge=0.5, le=0.999)

    def metric_names(self) -> list[str]:
        """The metrics to draw, in the order given (``metric`` split at commas)."""
        return [m.strip() for m in self.metric.split(",") if m.strip()]

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds_shape(cls, value: Any) -> Any:
        # One message for a value that is neither member of the union (rather than one per member).
        if isinstance(value, bool) or not isinstance(value, (int, list, tuple)):
            shown = repr(value) if isinstance(value, str) else str(value).lower()
            raise ValueError(
                f"expected a count from 1 to 10000 or a list of seeds, got {shown}; "
                "write a plain number (without quotes) or a list such as [1, 2, 3]"
            )
        return value

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: int | list[int]) -> int | list[int]:
        if isinstance(value, int):
            if not 1 <= value <= 10_000:
                raise ValueError(f"seeds: expected a count from 1 to 10000 or a list of seeds, got {value}")
        else:
            if not value:
                raise ValueError("seeds: the list is empty; give at least one seed")
            problem = seeds_problem(value)
            if problem is not None:
                raise ValueError(f"seeds: {problem}")
        return value

    @field_validator("params")
    @classmethod
    def _params(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for path, values in value.items():
            if not values:
                raise ValueError(f"params.{path}: no values; give at least one")
        return value

    def seed_list(self) -> list[int]:
        """The seeds every arm runs on, in order."""
        if isinstance(self.seeds, int):
            return list(range(self.first_seed, self.first_seed + self.seeds))
        return list(self.seeds)


def load_sweep_file(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file; a user error names the file, field and fix."""
    from fleetchaos.files import FileTooLargeError, read_text_bounded
    from fleetchaos.scenario.load import MAX_FILE_BYTES, format_validation_error, parse_document

    source = str(path)
    try:
        text = read_text_bounded(path, MAX_FILE_BYTES, what="sweep file")
    except FileNotFoundError:
        raise UserError(f"--file {source}: no such file") from None
    except FileTooLargeError as exc:
        raise UserError(f"--file {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--file {source}: cannot read: {exc}") from None
    data = parse_document(
        text, source, "sweep", "give at least one field (scenarios, policies, errors, seeds, params, ...)"
    )
    try:
        return SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise UserError(format_validation_error(source, exc, text)) from None


def scenario_source(ref: str) -> str:
    """How error messages name the file of a scenario reference."""
    import fleetchaos.catalogue as catalogue

    return f"scenarios/{ref}.yaml" if ref in catalogue.names() else ref


@dataclass
class SweepPlan:
    """A validated sweep: its variants (scenario x grid point), its runs and their keys."""

    spec: SweepSpec
    scenario_names: list[str]
    grid: dict[str, list[Any]]
    """Each swept path with its values as validated (``0`` for a float field becomes ``0.0``)."""
    x: str | None
    variants: list[Any]
    """:class:`fleetchaos.runs.variant.Variant` per (scenario, grid point)."""
    jobs: list[Any]
    """:class:`fleetchaos.runs.variant.RunJob` per run, ordered by variant, policy, format, seed."""
    keys: list[str]
    """The run-history key of each job (:func:`fleetchaos.gates.history.run_key`)."""
    sweep_id: str
    """A stable id of the whole sweep, from the scenario hashes, grid, arms and seeds (the same when resumed)."""
    seeds: list[int] = field(default_factory=list)
    scenario_digests: list[str] = field(default_factory=list)
    """:func:`scenario_hash` of each base scenario, in ``scenario_names`` order."""
    policies: tuple[str, ...] = ()
    """The policies' canonical specs (``backoff(cap_s=5.0)`` for ``backoff(cap_s=5)``), in ``spec.policies`` order."""
    base_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each base scenario's validated document (before swept values), by scenario name."""


def _numeric(values: list[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


#: Most scenario variants (grid points x scenarios) a sweep plans: each is a validated scenario
#: held until the sweep ends (measured: a 64k-point grid of the default day took 2.2 GB,
#: ~34 KB a point, before its first run), so 4,096 is ~140 MB.
MAX_GRID_POINTS = 4096
#: Most runs one sweep makes (variants x policies x formats x seeds).
MAX_SWEEP_RUNS = 200_000


def check_grid_size(spec: SweepSpec, seeds: int) -> None:
    """Refuse a grid too big to plan, before any scenario is built: the figures and the fix."""
    points = math.prod(len(values) for values in spec.params.values()) * len(spec.scenarios)
    runs = points * len(spec.policies) * len(spec.errors) * seeds
    if points > MAX_GRID_POINTS:
        raise UserError(
            f"--param: the grid has {points:,} points ({' x '.join(str(len(v)) for v in spec.params.values())} values"
            f" x {len(spec.scenarios)} scenario(s)); a sweep plans at most {MAX_GRID_POINTS:,} (each point is a "
            "scenario held in memory, ~34 KB measured); sweep fewer values, or split the grid into several sweeps"
        )
    if runs > MAX_SWEEP_RUNS:
        raise UserError(
            f"the sweep would make {runs:,} runs ({points:,} points x {len(spec.policies)} policies x "
            f"{len(spec.errors)} formats x {seeds} seeds); a sweep makes at most {MAX_SWEEP_RUNS:,}; "
            "sweep fewer values, arms or seeds, or split it into several sweeps"
        )


def plan_sweep(spec: SweepSpec) -> SweepPlan:
    """Load every scenario and apply every grid point; all user mistakes surface here."""
    from fleetchaos.gates.history import run_key
    from fleetchaos.runs.variant import RunJob, Variant
    from fleetchaos.scenario.load import load_scenario, scenario_hash

    if not spec.metric_names():
        raise UserError("--metric: empty; give a metric name such as recovery_rate (comma-separated for several)")
    for name in spec.metric_names():
        check_metric(name, "--metric")
    policies = check_policies(spec.policies, "--policies")
    check_formats(spec.errors, "--errors")
    for path in spec.params:
        parse_path(path)
    policy_grid = {p: v for p, v in spec.params.items() if policy_param_name(p) is not None}
    policy_points = _policy_points(policies, policy_grid)
    if len(set(spec.scenarios)) != len(spec.scenarios):
        raise UserError(f"--scenario: {', '.join(spec.scenarios)} names one scenario twice")
    if spec.x is not None and spec.x not in spec.params:
        swept = ", ".join(spec.params) or "none"
        raise UserError(f"--x {spec.x}: not a swept parameter (swept: {swept}); add --param {spec.x}=... or drop --x")
    seeds = spec.seed_list()
    check_grid_size(spec, len(seeds))
    points = grid_points({p: v for p, v in spec.params.items() if p not in policy_grid})
    variants: list[Variant] = []
    names: list[str] = []
    scenario_digests: list[str] = []
    base_configs: dict[str, dict[str, Any]] = {}
    grid: dict[str, list[Any]] = {}
    for ref in spec.scenarios:
        base = load_scenario(ref)
        if base.name in names:
            raise UserError(f"--scenario {ref}: another scenario of this sweep is also named {base.name!r}; rename one")
        names.append(base.name)
        base_configs[base.name] = base.model_dump(mode="json")
        digest = scenario_hash(base)
        scenario_digests.append(digest)
        seen: dict[tuple, tuple] = {}
        for point in points:
            scenario, canonical = apply_params(base, point, source=scenario_source(ref))
            marker = tuple((p, json.dumps(v, sort_keys=True)) for p, v in canonical)
            if marker in seen:
                given = ", ".join(f"{p}={format_value(v)}" for p, v in seen[marker])
                raise ParamError(
                    f"--param: {given} and {', '.join(f'{p}={format_value(v)}' for p, v in point)} "
                    f"are the same point once validated; give each value once"
                )
            seen[marker] = point
            for policy_point in policy_points:
                variants.append(Variant(scenario, ref, canonical + policy_point).with_policy_specs(policies))
        if not grid and spec.params:
            # The grid as validated, read from the first scenario's points.
            width = len(points) * len(policy_points)
            for i, path in enumerate([p for p in spec.params if p not in policy_grid] + list(policy_grid)):
                values: list[Any] = []
                for v in variants[-width:]:
                    value = v.params[i][1]
                    if value not in values:
                        values.append(value)
                grid[path] = values
    x = spec.x
    if x is None:
        x = next((p for p, vals in grid.items() if _numeric(vals)), next(iter(grid), None))
    jobs = [
        RunJob(v, policy, errors, seed)
        for v in range(len(variants))
        for policy in policies
        for errors in spec.errors
        for seed in seeds
    ]
    keys = [
        run_key(variants[j.variant].scenario.name, j.policy, j.errors, j.seed, dict(variants[j.variant].params))
        for j in jobs
    ]
    ident = json.dumps(
        [scenario_digests, list(grid.items()), list(policies), spec.errors, seeds], separators=(",", ":")
    )
    sweep_id = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]
    return SweepPlan(
        spec, names, grid, x, variants, jobs, keys, sweep_id, seeds, scenario_digests, policies, base_configs
    )


def _policy_points(policies: tuple[str, ...], grid: dict[str, list[Any]]) -> list[tuple[tuple[str, Any], ...]]:
    """Every point of the policy parameters' grid, values as the first policy validates them.

    Each point must apply to every policy of the sweep (a run is every arm at every point);
    a policy without one of the parameters is a user error naming it and the fix.
    """
    from fleetchaos.policies.registry import PolicyLookupError, with_params
    from fleetchaos.policies.spec import parse_spec

    points = grid_points(grid)
    if not grid:
        return points
    out = []
    for point in points:
        pairs = [(policy_param_name(p) or "", tuple(v) if isinstance(v, list) else v) for p, v in point]
        validated: tuple[tuple[str, Any], ...] = ()
        for policy in policies:
            try:
                spec = parse_spec(with_params(policy, pairs))
            except PolicyLookupError as exc:
                given = ", ".join(f"{p}={format_value(v)}" for p, v in point)
                raise UserError(
                    f"--param {given}: {exc}; sweep a policy parameter over policies that all have it "
                    "(or set it per policy in its spec, e.g. --policies 'backoff(base_s=0.5)')"
                ) from None
            if not validated:
                values = dict(spec.params)
                validated = tuple((p, values[policy_param_name(p) or ""]) for p, _ in point)
        out.append(validated)
    return out


SWEEP_KIND = "sweep"


def open_group(store: HistoryStore, plan: SweepPlan, *, resume: bool) -> tuple[int, dict[str, RunResult]]:
    """The history group this sweep writes to, and the runs it already holds (by key).

    With ``resume``, the newest stored group of the same sweep (same scenario hashes,
    grid, arms and seeds: :attr:`SweepPlan.sweep_id`) is continued, whatever its status
    (``running`` after a ``kill -9``, ``interrupted`` after Ctrl-C).  Otherwise, or when
    there is none, a new group is started.  ``store`` is a
    :class:`fleetchaos.gates.history.HistoryStore`.
    """
    if resume:
        wanted = set(plan.keys)
        for group in store.groups():
            if group.kind == SWEEP_KIND and group.meta.get("sweep_id") == plan.sweep_id:
                done = {r.key: r.result for r in store.runs(group.id) if r.key in wanted}
                store.finish_group(group.id, "running")  # running again until it completes
                return group.id, done
    meta = {
        "sweep_id": plan.sweep_id,
        "scenario_hashes": dict(zip(plan.scenario_names, plan.scenario_digests)),
        "grid": plan.grid,
        "policies": list(plan.policies),
        "errors": list(plan.spec.errors),
        "seeds": plan.seeds,
        "runs": len(plan.keys),
    }
    group_id = store.new_group(SWEEP_KIND, ", ".join(plan.scenario_names), meta=meta)
    return group_id, {}


def run_sweep(
    plan: SweepPlan,
    *,
    executor: Executor,
    on_result: Callable[[str, RunResult], None] | None = None,
    done: Mapping[str, RunResult] | None = None,
) -> SweepResult:
    """Run every job of ``plan`` not already in ``done`` (by key), then aggregate.

    ``on_result(key, result)`` is called in this thread as each run finishes.  Ctrl-C or
    an error stops the executor and propagates; runs already handed on stay handed.
    """
    from fleetchaos.runs.runner import run_jobs

    done = done or {}
    results: list[RunResult | None] = [done.get(k) for k in plan.keys]
    todo = [i for i, r in enumerate(results) if r is None]

    def finished(index: int, result: RunResult) -> None:
        job_index = todo[index]
        results[job_index] = result
        if on_result is not None:
            on_result(plan.keys[job_index], result)

    if todo:
        run_jobs(plan.variants, [plan.jobs[i] for i in todo], executor=executor, on_result=finished)
    return summarise(plan, results)  # type: ignore[arg-type]  # every slot is filled by now


def summarise(plan: SweepPlan, results: list[RunResult]) -> SweepResult:
    """Aggregate the runs of a plan (in plan order) into one entry per point and arm."""
    from fleetchaos.runs.runner import aggregate, versions

    spec = plan.spec
    apply_common_sets(results)  # recovery on the tasks faulted in any arm, per point and seed
    by_arm: dict[tuple[int, str, str], list[RunResult]] = {}
    for job, result in zip(plan.jobs, results):
        by_arm.setdefault((job.variant, job.policy, job.errors), []).append(result)
    entries = []
    for (v, policy, errors), runs in by_arm.items():
        arm = aggregate(policy, errors, runs, spec.confidence)
        variant = plan.variants[v]
        entries.append(SweepEntry(**arm.model_dump(), scenario=variant.scenario.name, params=dict(variant.params)))
    return SweepResult(
        scenarios=plan.scenario_names,
        grid=plan.grid,
        policies=list(plan.policies),
        errors=list(spec.errors),
        seeds=plan.seeds,
        confidence=spec.confidence,
        metric=",".join(spec.metric_names()),
        x=plan.x,
        entries=entries,
        versions=versions(),
        scenario_configs=dict(plan.base_configs),
    )
