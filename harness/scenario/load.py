"""Scenarios: a named, described world, loaded from the catalogue or a YAML/JSON file."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator, model_serializer, model_validator

import fleetchaos.catalogue as catalogue
from fleetchaos.errors import ScenarioError
from fleetchaos.files import FileTooLargeError, StrictJsonError, loads_json, read_text_bounded
from fleetchaos.scenario._yaml import MAX_DEPTH, YamlLimitError, load_yaml
from fleetchaos.scenario.expect import Expectation, check_arm_pattern
from fleetchaos.scenario.tuned import TunedPolicies
from fleetchaos.seeds import seeds_problem
from fleetchaos.sim.config import DAY_S, WorldSpec
from fleetchaos.sim.fault_specs import FAULT_MODELS
from fleetchaos.sim.workload import explicit_task_count

MAX_FILE_BYTES = 1_000_000

# Sizes one machine can simulate (measured on a run of the default world scaled to
# 200,000 tasks / 1.08M tool calls: ~1.5 KB of resident memory per task record with its
# verdict, ~47 us of CPU per tool call).  A plain run streams its records into running
# totals, but a report, a determinism check or a shrink keeps one per task, so
# 5M tasks is ~7.5 GB per run: two runs side by side (one per core of a 2-core, 24 GiB
# machine) still fit.  Tool calls cost time: 100M calls is ~80 minutes for ONE run of
# one arm on one seed, and a 6-arm, 10-seed comparison is 60 runs.
MAX_TASKS = 5_000_000
MAX_TOOL_CALLS = 100_000_000
# Fault schedules are realised before a run, per run: recurring windows (rate-limit ones
# included), burst phases and random node events cost ~1.3 us (windows) to ~13 us (burst
# phases) each to build and ~110 bytes each to hold, so 1M of them is up to ~13 s and
# ~110 MB per run.  Lookups during the run are binary searches, so their number does not
# slow a call down (10,000 rate-limit windows: the default day runs in 31 ms as with 100).
MAX_SCHEDULE_SPANS = 1_000_000
# A run that keeps a row per task (a report, a determinism check, a shrink) holds them all
# until it ends, and a traced run keeps every dispatch and fault of the run: measured on
# the default day scaled to 20,000 and 60,000 tasks with `run --report`, 13.7 KB per task
# with the structured policy and 47.8 KB with retry-fixed (19 retries per call at worst).
# That is assumed, against 4 GB per run (two runs side by side on a 2-core machine), to refuse before it starts a
# world too big to keep.  It is an estimate, not a bound: a task's cost grows with its retries (a policy retrying
# every failure up to fleet.max_actions_per_task kept about 3.3 times as much), so a run that keeps its tasks also
# counts what it keeps as it goes and stops past 4 GB (fleetchaos.runs.limits.check_kept).
REPORT_BYTES_PER_TASK = 48_000
MAX_REPORT_BYTES = 4_000_000_000
MAX_REPORT_TASKS = MAX_REPORT_BYTES // REPORT_BYTES_PER_TASK


def _occurrences(windows, horizon_s: float) -> int:
    """How many spans a list of (recurring) windows expands to over the horizon."""
    total = 0
    for w in windows:
        if w.every_s is None:
            total += 1
        elif w.start_s < horizon_s:
            total += math.ceil((horizon_s - w.start_s) / w.every_s)
    return total


def estimated_schedule(world: WorldSpec) -> list[tuple[int, int]]:
    """(fault index, schedule spans) each fault realises per run.

    Counts recurring windows, burst phases and random node events (per targeted worker
    where the plan keeps them per worker), with swarm parameters at the top of their range.
    """
    horizon = world.duration_s
    days = horizon / DAY_S
    out = []
    for index, fault in enumerate(world.faults):

        def value(name, fault=fault):
            swarm = fault.swarm or {}
            return swarm[name][1] if name in swarm else getattr(fault, name)

        workers = getattr(fault, "workers", None)
        targets = len(workers) if workers else world.fleet.workers
        windows = _occurrences(getattr(fault, "windows", ()), horizon)
        if fault.kind == "rate_limit":
            spans = windows + round(value("per_day") * days)
        elif fault.kind in ("latency_spike", "schema_drift"):
            spans = max(windows, 1) * targets
        else:
            spans = windows
        if hasattr(fault, "per_worker_per_day"):
            spans += math.ceil(value("per_worker_per_day") * days * targets) + len(getattr(fault, "events", ()))
        burst = getattr(fault, "burst", None)
        if burst is not None:
            phases = horizon / (burst.mean_good_s + burst.mean_bad_s)
            spans += math.ceil(phases * (targets if burst.scope == "worker" else 1))
        out.append((index, spans))
    return out


def estimated_size(world: WorldSpec) -> tuple[float, float]:
    """(tasks, tool calls) a run of ``world`` makes without faults (retries add calls).

    Open loop: ``tasks_per_day`` over the horizon (or the explicit arrivals).  Closed
    loop: at most one task per client per think time plus one network round trip, the
    rate of tasks that fail fast (a failing fleet finishes tasks sooner, so clients send
    more: the mean task duration would underestimate it up to 46x).  Tool calls: one per
    item of every step, weighted over the templates; retries add up to ~19x more (the
    worst preset, retry-fixed), which the run's wall-clock limit allows for.
    """
    workload = world.workload
    weights = [t.weight for t in workload.templates]
    total = sum(weights)
    calls_per_task = sum(w * sum(s.fan_out for s in t.steps) for w, t in zip(weights, workload.templates)) / total
    if workload.arrivals is not None:
        tasks = float(explicit_task_count(workload, world.fleet.workers))
    elif workload.clients is not None:
        rtt = 2.0 * world.fleet.network_latency.mean_s
        tasks = workload.clients * world.duration_s / (workload.think.mean_s + rtt)
        if workload.arrival_schedule is not None:  # open-loop tasks on top of the clients
            tasks += workload.arrival_schedule.mean_per_s(world.duration_s) * world.duration_s
    elif workload.arrival_schedule is not None:
        tasks = workload.arrival_schedule.mean_per_s(world.duration_s) * world.duration_s
    else:
        tasks = workload.tasks_per_day * world.duration_s / DAY_S
    return tasks, tasks * calls_per_task


class Scenario(WorldSpec):
    """A world plus what it is for: the unit users name on the command line."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How hypothesis prints a falsifying world: its YAML, ready to paste, inside the call that reads it."""
        printer.text('parse_scenario("""\n' + to_yaml(self) + '""", "world.yaml")')

    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", description="what the scenario models")
    reveals: str = Field(default="", description="what the scenario is meant to reveal")
    seeds: list[int] | None = Field(
        default=None,
        min_length=1,
        max_length=10_000,
        description="the seeds compare and ablation run when --seeds and --first-seed are not given",
    )
    goodput_bin_s: float | None = Field(
        default=None,
        gt=0,
        le=86_400,
        description="record goodput over time in bins of this many seconds (tasks that really completed and were "
        "reported complete, by the instant they ended) and draw it per arm in the report",
    )
    expect: list[Expectation] = Field(
        default=[],
        max_length=100,
        description="acceptance criteria judged after run and compare (exit 1 when one fails) and by the pytest "
        "plugin: see the expect[] section",
    )
    arms: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="the arms (POLICY/ERRORS, either part *) the expect: gates that name no arm judge; without it "
        "they judge the arm that leads the headline (run and a test judge their one arm)",
    )
    tuned: TunedPolicies | None = Field(
        default=None,
        description="each error format's policy tuned for this world and how (see the tuned section): what "
        "compare runs best against best without --tune",
    )

    @model_serializer(mode="wrap")
    def _omit_absent_settings(self, handler):
        # Without these settings a scenario dumps as before they existed: results stay byte-identical.
        data = handler(self)
        if isinstance(data, dict):
            if self.goodput_bin_s is None:
                data.pop("goodput_bin_s", None)
            if not self.expect:
                data.pop("expect", None)
            if self.tuned is None:
                data.pop("tuned", None)
            if self.arms is None:
                data.pop("arms", None)
        return data

    @field_validator("arms")
    @classmethod
    def _arm_patterns(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [check_arm_pattern(a) for a in value]

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, value: list[int] | None) -> list[int] | None:
        problem = None if value is None else seeds_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _fits_one_machine(self) -> Scenario:
        tasks, calls = estimated_size(self)
        days = self.duration_s / DAY_S
        if self.workload.clients is not None and self.workload.arrivals is None:
            how = f"{self.workload.clients} closed-loop clients over {days:g} days"
            fix = "fewer workload.clients, a longer workload.think, or a shorter duration_s"
        elif self.workload.arrival_schedule is not None and self.workload.arrivals is None:
            how = f"workload.arrival_schedule over {days:g} days"
            fix = "lower tasks_per_hour in workload.arrival_schedule.points or a shorter duration_s"
        else:
            how = f"workload.tasks_per_day {self.workload.tasks_per_day:,.0f} x {days:g} days"
            fix = "a lower workload.tasks_per_day or a shorter duration_s"
        if tasks > MAX_TASKS:
            raise ValueError(
                f"workload: about {tasks:,.0f} tasks ({how}) is more than one machine can simulate: "
                f"the limit is {MAX_TASKS:,} tasks per run; "
                f"use {fix}, or split it into several scenarios"
            )
        if calls > MAX_TOOL_CALLS:
            raise ValueError(
                f"workload: about {calls:,.0f} tool calls ({tasks:,.0f} tasks x {calls / tasks:.1f} calls each) "
                f"is more than one machine can simulate: the limit is {MAX_TOOL_CALLS:,} tool calls per run "
                f"(~80 minutes of CPU for one run); use {fix}, fewer fan-out items, or split it into several scenarios"
            )
        schedule = estimated_schedule(self)
        spans = sum(s for _, s in schedule)
        if spans > MAX_SCHEDULE_SPANS:
            index = max(schedule, key=lambda row: row[1])[0]
            raise ValueError(
                f"faults[{index}]: the fault schedule expands to about {spans:,} windows, burst phases and events "
                f"per run, more than one machine can schedule: the limit is {MAX_SCHEDULE_SPANS:,} "
                "(~13 s and ~110 MB to build for every run); use longer every_s or burst phases, fewer events "
                "per day, or a shorter duration_s"
            )
        return self


def check_rows_fit(scenario: WorldSpec, why: str) -> None:
    """Refuse, before it starts, a run that keeps a row per task (``why``: a report, a determinism check)
    and would not fit in memory: about :data:`REPORT_BYTES_PER_TASK` per task (measured), at most
    :data:`MAX_REPORT_BYTES` per run."""
    tasks, _ = estimated_size(scenario)
    if tasks > MAX_REPORT_TASKS:
        raise ScenarioError(
            f"{why}: about {tasks:,.0f} tasks per run, each kept in memory with its trace (up to "
            f"{REPORT_BYTES_PER_TASK // 1000} KB a task, measured): about {tasks * REPORT_BYTES_PER_TASK / 1e9:,.1f} GB, "
            f"more than the {MAX_REPORT_BYTES / 1e9:g} GB a run may use; the limit is {MAX_REPORT_TASKS:,} tasks; "
            "run without it (a plain run streams its tasks), or lower workload.tasks_per_day or duration_s"
        )


def format_validation_error(source: str, exc: ValidationError, text: str | None = None) -> str:
    """One line per problem: file, field path, value, rule, a fix where we know one, and the
    line of a YAML file (``text``) where the problem is.

    Errors of a :class:`Scenario` are resolved against its models, so unknown names get a
    "did you mean" among the names valid at that place (see :mod:`fleetchaos.scenario.messages`).
    """
    from fleetchaos.scenario.messages import format_errors

    line_of = None
    if text is not None and not source.endswith(".json"):
        from fleetchaos.scenario._yaml import line_finder

        line_of = line_finder(text)
    return format_errors(source, exc, Scenario if exc.title == Scenario.__name__ else None, line_of)


_TAGS = frozenset(FAULT_MODELS)


def _depth(data) -> int:
    """How deeply lists and mappings nest in a loaded document (iteratively: no recursion)."""
    deepest = 0
    stack = [(data, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_document(
    text: str, source: str, what: str = "scenario", needs: str = "a scenario needs at least a name (name: my_world)"
) -> dict:
    """A YAML or JSON document as a mapping, within the size, depth and YAML limits.

    ``what`` names the kind of file in messages; ``needs`` says what an empty one lacks.
    Every problem is a :class:`ScenarioError` naming ``source``, the place and the fix.
    """
    if len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES:
        raise ScenarioError(f"{source}: file is larger than {MAX_FILE_BYTES} bytes; {what} files are small documents")
    try:
        data = loads_json(text, nonfinite=True) if source.endswith(".json") else load_yaml(text)
    except (YamlLimitError, StrictJsonError) as exc:
        raise ScenarioError(f"{source}: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: nested too deeply to be a {what} file") from None
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        first = " ".join(str(exc).split())
        if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None and exc.problem:
            mark = exc.problem_mark
            context = f" ({exc.context})" if exc.context else ""
            fix = (
                f"{what} files hold plain data only: remove the tag"
                if "constructor for the tag" in str(exc.problem)
                else "check the indentation, quotes and brackets there"
            )
            first = f"line {mark.line + 1}, column {mark.column + 1}: {exc.problem}{context}; {fix}"
        raise ScenarioError(f"{source}: not valid {'JSON' if source.endswith('.json') else 'YAML'}: {first}") from None
    except (ValueError, OverflowError) as exc:  # a scalar the parser cannot turn into a value (huge int, bad date)
        detail = " ".join(str(exc).split())[:200]
        raise ScenarioError(
            f"{source}: not valid {'JSON' if source.endswith('.json') else 'YAML'}: a value cannot be read ({detail}); "
            "write plain numbers and quote anything else"
        ) from None
    if _depth(data) > MAX_DEPTH:
        raise ScenarioError(f"{source}: nested deeper than {MAX_DEPTH} levels; {what} files are shallow documents")
    if data is None:
        raise ScenarioError(f"{source}: (top level): expected a mapping of fields, but the file is empty; {needs}")
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: (top level): expected a mapping of fields, got {type(data).__name__}")
    return data


def parse_scenario(text: str, source: str) -> Scenario:
    """Validate a YAML or JSON document into a Scenario."""
    data = parse_document(text, source)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(source, exc, text)) from None
    except ValueError as exc:
        raise ScenarioError(f"{source}: {exc}") from None


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    """A scenario as a plain document for YAML or JSON (defaults left out, each fault's kind kept, name first)."""
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    data["faults"] = [{"kind": f.kind, **f.model_dump(mode="json", exclude_defaults=True)} for f in scenario.faults]
    first: dict[str, Any] = {k: data.pop(k) for k in ("name", "description") if k in data}
    return {**first, **data}


def to_yaml(scenario: Scenario) -> str:
    """A scenario as YAML text, ready to paste into a scenario file; :func:`parse_scenario` reads it back unchanged."""
    return yaml.safe_dump(scenario_document(scenario), sort_keys=False, width=100)


def load_scenario(ref: str) -> Scenario:
    """A catalogue scenario by name, or a scenario file by path."""
    names = catalogue.names()
    if ref in names:
        return parse_scenario(catalogue.path(ref).read_text(encoding="utf-8"), f"scenarios/{ref}.yaml")
    path = Path(ref)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        try:
            text = read_text_bounded(path, MAX_FILE_BYTES, what="scenario file")
        except FileNotFoundError:
            raise ScenarioError(f"{ref}: no such file") from None
        except FileTooLargeError as exc:
            raise ScenarioError(f"{exc}; scenario files are small documents") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"{ref}: cannot read: {exc}") from None
        return parse_scenario(text, str(path))
    guess = difflib.get_close_matches(ref, names, n=1)
    hint = f"; did you mean {guess[0]!r}?" if guess else ""
    raise ScenarioError(
        f"--scenario: unknown scenario {ref!r} (catalogue: {', '.join(names)}; or give a .yaml path){hint}"
    )


def scenario_hash(scenario: Scenario) -> str:
    """A stable digest of a validated scenario (its canonical JSON), 16 hex digits.

    What stored groups and sweeps record of the scenario they ran, and what the suite's
    run cache keys on: the same scenario gives the same digest in every command.
    """
    text = json.dumps(scenario.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
