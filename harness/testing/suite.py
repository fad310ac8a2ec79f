"""Scenario runs for test suites: one arm on several seeds, with every figure's interval.

:func:`run_scenario` is what the pytest plugin's fixture calls, and it works the same
outside pytest.  Its :class:`ScenarioResult` gives each metric as an
:class:`~fleetchaos.gates.assertions.Estimate` (the mean over seeds with a Student-t interval, or
a Wilson interval for a proportion of one seed's tasks), the seeds, and the
``fleetchaos run`` command that replays each seed.

Importing this module is light (pydantic only); the simulation is imported when a
scenario is run.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from fleetchaos.errors import UserError
from fleetchaos.gates.assertions import Estimate
from fleetchaos.gates.session import policy_error_count
from fleetchaos.names import check_formats, check_policies
from fleetchaos.results.models import CompareResult, ExpectationResult, RunResult
from fleetchaos.results.registry import HEADLINE_METRICS, POOLED_RATES, direction
from fleetchaos.results.stats import DEFAULT_CONFIDENCE, mean_ci, rate_ci, wilson
from fleetchaos.seeds import MAX_SEED, seeds_problem

if TYPE_CHECKING:
    from fleetchaos.gates.like import RunsIdentity
    from fleetchaos.scenario.expect import Expectation
    from fleetchaos.scenario.load import Scenario

__all__ = [
    "DEFAULT_SEEDS",
    "HEADLINE",
    "PROPORTIONS",
    "ScenarioRef",
    "ScenarioResult",
    "load_ref",
    "resolve_seeds",
    "run_scenario",
    "save_scenario",
]

#: Seeds a scenario test runs when it does not say (seeds 1..5).
DEFAULT_SEEDS = 5

#: Proportions of tasks: metric -> (numerator, denominator) keys of a run's ``task_counts``
#: breakdown.  Runs without that breakdown fall back to ``rate x denominator metric``.
PROPORTIONS = POOLED_RATES

#: The headline figures (the registry's), with True when higher is better.
HEADLINE: dict[str, bool | None] = {name: direction(name) for name in HEADLINE_METRICS}

ScenarioRef = Union["Scenario", str, Path]


def resolve_seeds(seeds: int | Iterable[int] | None, first: int | None = None) -> list[int]:
    """The seed list of a run.

    ``seeds`` is a count (seeds ``1..n``) or an explicit list; ``first`` (the
    ``--fleetchaos-seed`` option) replaces them by as many consecutive seeds starting there.
    """
    if seeds is None:
        seeds = DEFAULT_SEEDS
    if isinstance(seeds, bool):
        raise UserError(f"seeds: expected a count or a list of seeds, got {seeds!r}")
    if isinstance(seeds, int):
        if not 1 <= seeds <= 10_000:
            raise UserError(f"seeds: a count must be between 1 and 10000, got {seeds}")
        out = list(range(1, seeds + 1))
    else:
        try:
            out = list(seeds)
        except TypeError:
            raise UserError(f"seeds: expected a count or a list of seeds, got {seeds!r}") from None
        if not out:
            raise UserError("seeds: give at least one seed")
        problem = seeds_problem(out)
        if problem is not None:
            raise UserError(f"seeds: {problem}")
    if first is not None:
        if not 0 <= first <= MAX_SEED - len(out):
            raise UserError(f"--fleetchaos-seed: must be between 0 and {MAX_SEED - len(out)}, got {first}")
        out = list(range(first, first + len(out)))
    return out


def _clip(metric: str, low: float | None, high: float | None) -> tuple[float | None, float | None]:
    """Keep an interval inside the metric's range: [0, 1] for proportions, >= 0 otherwise."""
    if low is None or high is None:
        return low, high
    top = 1.0 if metric in PROPORTIONS else float("inf")
    return max(0.0, low), min(top, high)


def _count(run: RunResult, metric: str) -> tuple[int, int] | None:
    """(successes, trials) of a proportion in one run; None when its denominator is empty."""
    num_key, den_key = PROPORTIONS[metric]
    counts = run.breakdowns.get("task_counts")
    if counts and den_key in counts:
        den = int(counts[den_key])
        return (int(counts.get(num_key, 0)), den) if den else None
    den_metric = "faulted_tasks" if den_key == "faulted" else "tasks"
    den_value = run.metrics.get(den_metric)
    rate = run.metrics.get(metric)
    if not den_value or rate is None:
        return None
    return round(rate * den_value), round(den_value)


@dataclass(frozen=True)
class ScenarioResult:
    """One policy on one error format, one scenario, several seeds: figures with intervals.

    ``runs`` are the per-seed results in seed order; ``replay`` the command that replays each.
    Metric attributes (``recovery_rate``, ``silent_failure_rate``, ``wasted_retries`` ...)
    are :class:`~fleetchaos.gates.assertions.Estimate` objects to pass to
    :func:`~fleetchaos.gates.assertions.assert_rate`.
    """

    scenario: str
    scenario_ref: str
    policy: str
    errors: str
    seeds: tuple[int, ...]
    runs: tuple[RunResult, ...]
    confidence: float = DEFAULT_CONFIDENCE
    scenario_digest: str = ""
    """The scenario's content digest (:func:`~fleetchaos.scenario.load.scenario_hash`)."""
    replay_prefix: str = ""
    """What each replay command needs before it to run from a shell (``PYTHONPATH=lib ``), if anything."""

    expect: tuple[Expectation, ...] = ()
    """The scenario's ``expect:`` gates (its acceptance criteria), as its file declares them."""
    scenario_config: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The validated scenario as JSON: what its report states as run and what a baseline's fingerprint is checked against."""

    @property
    def identity(self) -> RunsIdentity:
        """What these runs ran (the scenario's name, fingerprints and validated JSON), for the baseline gate."""
        from fleetchaos.gates.like import RunsIdentity

        return RunsIdentity.of(self.scenario_config or {"name": self.scenario})

    @cached_property
    def expectations(self) -> list[ExpectationResult]:
        """The scenario's ``expect:`` gates that apply to this arm, judged on its runs by the rule the CLI uses.

        Gates for other arms (named by the gate, or the scenario's ``arms``) are not this run's to
        judge (a test runs one arm). Policy errors are judged by the test itself
        (``allow_policy_errors``), not here.
        """
        if not self.expect or not self.runs:
            return []
        from fleetchaos.gates.expect import judge

        arm = self.to_compare_result().arms[0]
        names = {arm.policy: frozenset({self.policy, arm.policy})}
        return judge(self.expect, [arm], self.seeds, confidence=self.confidence, names=names,
                     scenario_arms=self.scenario_config.get("arms"), allow_policy_errors=True,
                     unmatched_fail=False)  # fmt: skip

    def expect_failures(self) -> list[str]:
        """A test failure message for each ``expect:`` gate this arm failed, naming the command replaying its worst seed."""
        from fleetchaos.gates.expect import failure_message

        replays = {r.seed: r.replay for r in self.runs}
        return [failure_message(r, self.scenario_ref, replays) for r in self.expectations if not r.passed]

    @property
    def replay(self) -> tuple[str, ...]:
        """The ``fleetchaos run`` command of each seed, in seed order (with :attr:`replay_prefix`)."""
        return tuple(self.replay_prefix + r.replay for r in self.runs)

    @property
    def label(self) -> str:
        """``scenario X, policy P, errors E`` for messages."""
        return f"scenario {self.scenario_ref}, policy {self.policy}, errors {self.errors}"

    @property
    def metric_names(self) -> list[str]:
        """Names of the metrics every run reports."""
        return list(self.runs[0].metrics) if self.runs else []

    def per_seed(self, metric: str) -> dict[int, float | None]:
        """Seed -> the metric's value in that seed's run."""
        self._check(metric)
        return {r.seed: r.metrics.get(metric) for r in self.runs}

    def _check(self, metric: str) -> None:
        if metric not in self.metric_names:
            known = ", ".join(self.metric_names)
            raise KeyError(f"unknown metric {metric!r} (known: {known})")

    @property
    def policy_errors(self) -> tuple[int, str]:
        """(tasks given up because the policy errored, over every seed; the most frequent message)."""
        counts = [policy_error_count(r) for r in self.runs]
        total = sum(n for n, _ in counts)
        first = next((m for n, m in sorted(counts, key=lambda c: -c[0]) if m), "")
        return total, first

    def _estimate(self, metric: str, value, low, high, method: str) -> Estimate:
        low, high = _clip(metric, low, high)
        errors, first_error = self.policy_errors
        return Estimate(
            metric=metric,
            value=value,
            low=low,
            high=high,
            confidence=self.confidence,
            method=method,
            seeds=self.seeds,
            per_seed=tuple(r.metrics.get(metric) for r in self.runs),
            replay=self.replay,
            label=self.label,
            policy_errors=errors,
            policy_error=first_error,
        )

    def metric(self, metric: str) -> Estimate:
        """The metric across seeds: mean of the per-seed values with a Student-t interval.

        With one seed that has a value, a proportion gets the Wilson interval of that run's
        tasks, and a count gets no interval.  Seeds where the metric is undefined (a
        recovery rate with no faulted task) are left out; if every seed is, the value is None.
        """
        self._check(metric)
        values = [r.metrics.get(metric) for r in self.runs]
        present = [(r, v) for r, v in zip(self.runs, values) if v is not None]
        if not present:
            return self._estimate(metric, None, None, None, f"undefined in all {len(values)} seeds")
        skipped = len(values) - len(present)
        note = f"; {skipped} seed(s) undefined, left out" if skipped else ""
        if len(present) >= 2:
            if metric in PROPORTIONS:  # an interval that stays inside [0, 1]
                trials = [None if (c := _count(r, metric)) is None else c[1] for r in self.runs]
                mean, low, high = rate_ci(values, trials, self.confidence)
                if low is not None:
                    method = f"t-interval on the logit scale across {len(present)} seeds{note}"
                    return self._estimate(metric, mean, low, high, method)
            mean, low, high = mean_ci(values, self.confidence)
            return self._estimate(metric, mean, low, high, f"Student-t across {len(present)} seeds{note}")
        run, value = present[0]
        counts = _count(run, metric) if metric in PROPORTIONS else None
        if counts is not None:
            low, high = wilson(counts[0], counts[1], self.confidence)
            return self._estimate(metric, value, low, high, f"Wilson over {counts[1]} tasks of seed {run.seed}{note}")
        return self._estimate(metric, value, None, None, f"one seed ({run.seed}){note}")

    def pooled(self, metric: str) -> Estimate:
        """A proportion pooled over the tasks of every seed, with its Wilson interval.

        Treats tasks as independent trials, which they are only roughly (tasks of one day
        share its faults); :meth:`metric` (across seeds) is the safer default.
        """
        if metric not in PROPORTIONS:
            raise KeyError(f"{metric!r} is not a proportion of tasks (pooled figures: {', '.join(PROPORTIONS)})")
        successes = trials = 0
        for run in self.runs:
            counts = _count(run, metric)
            if counts is not None:
                successes += counts[0]
                trials += counts[1]
        if trials == 0:
            return self._estimate(metric, None, None, None, "no tasks in the denominator in any seed")
        low, high = wilson(successes, trials, self.confidence)
        return self._estimate(
            metric, successes / trials, low, high, f"Wilson over {trials} tasks pooled from {len(self.runs)} seeds"
        )

    @property
    def recovery_rate(self) -> Estimate:
        """Recovered tasks / faulted tasks, across seeds."""
        return self.metric("recovery_rate")

    @property
    def silent_failure_rate(self) -> Estimate:
        """Tasks claimed successful whose work did not complete / tasks, across seeds."""
        return self.metric("silent_failure_rate")

    @property
    def success_rate(self) -> Estimate:
        """Tasks fully done and claimed successful / tasks, across seeds."""
        return self.metric("success_rate")

    @property
    def wasted_retries(self) -> Estimate:
        """Retries sent while the previous failure's cause still held, per run, across seeds."""
        return self.metric("wasted_retries")

    @property
    def redone_steps(self) -> Estimate:
        """Executions of steps that had already taken effect, per run, across seeds."""
        return self.metric("redone_steps")

    @property
    def duplicate_side_effects(self) -> Estimate:
        """Extra commits of non-idempotent side effects, per run, across seeds."""
        return self.metric("duplicate_side_effects")

    @property
    def escalations(self) -> Estimate:
        """Tasks handed to a human, per run, across seeds."""
        return self.metric("escalations")

    def to_compare_result(self) -> CompareResult:
        """The runs as a one-arm comparison (what the report writers and baselines read)."""
        from fleetchaos.runs.arm_stats import with_task_sets
        from fleetchaos.runs.runner import aggregate, versions

        return CompareResult(
            scenario=self.scenario,
            seeds=list(self.seeds),
            confidence=self.confidence,
            arms=[
                with_task_sets(aggregate(self.policy, self.errors, list(self.runs), self.confidence), list(self.runs))
            ],
            versions=versions(),
            scenario_config=dict(self.scenario_config),
        )


def save_scenario(scenario: Scenario, folder: Path) -> Path:
    """Write ``scenario`` as JSON into ``folder`` (named by its content) and return the path.

    This is how a scenario built in code gets a file that ``fleetchaos run`` can replay.
    """
    text = scenario.model_dump_json(indent=2) + "\n"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in scenario.name)[:40] or "scenario"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{safe}-{digest}.json"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def _display_path(path: Path) -> str:
    """A path as short as it can be from the current directory."""
    path = path.resolve()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def load_ref(scenario: ScenarioRef, save_dir: Path | None = None) -> tuple[Scenario, str]:
    """(the scenario, the ``--scenario`` value that replays it).

    A catalogue name replays by name, a file by its path, and a scenario object by its
    catalogue name when it equals that catalogue entry, else by a JSON copy written into
    ``save_dir`` (default ``./fleetchaos-out/scenarios``).
    """
    import fleetchaos.catalogue as catalogue
    from fleetchaos.scenario.load import Scenario, load_scenario

    if isinstance(scenario, Scenario):
        if scenario.name in catalogue.names() and load_scenario(scenario.name) == scenario:
            return scenario, scenario.name
        path = save_scenario(scenario, save_dir or Path("fleetchaos-out") / "scenarios")
        return scenario, shlex.quote(_display_path(path))
    if isinstance(scenario, Path):
        return load_scenario(str(scenario)), shlex.quote(_display_path(scenario))
    if isinstance(scenario, str):
        spec = load_scenario(scenario)
        if scenario in catalogue.names():
            return spec, scenario
        return spec, shlex.quote(_display_path(Path(scenario)))
    raise UserError(
        f"scenario: expected a catalogue name, a path to a .yaml/.json file or a Scenario, got {type(scenario).__name__}"
    )


def _check_arm(policy: str, errors: str) -> None:
    if not isinstance(policy, str):
        raise UserError(f"policy: give a built-in name or an import path 'pkg.module:Policy', got {policy!r}")
    check_policies((policy,), "policy")
    check_formats((errors,), "errors")


def run_scenario(
    scenario: ScenarioRef,
    *,
    policy: str = "structured",
    errors: str = "structured",
    seeds: int | Iterable[int] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    keep_tasks: bool = False,
    save_dir: Path | None = None,
    cache: MutableMapping[Any, RunResult] | None = None,
    replay_prefix: str = "",
    run_cache: Any = None,
) -> ScenarioResult:
    """Run ``policy`` on ``errors`` over ``scenario`` for each seed.

    ``scenario`` is a catalogue name, a path to a scenario file, or a
    :class:`~fleetchaos.scenario.load.Scenario`.  ``seeds`` is a count (seeds ``1..n``, default 5) or
    a list.  ``cache`` (any dict) reuses runs already simulated with the same scenario
    content, arm and seed: a run is a pure function of these; ``run_cache`` (a
    :class:`~fleetchaos.runs.cache.RunCache`) reuses them across sessions, byte for byte
    (by default, the run cache in use, if any).  ``replay_prefix`` goes before
    each replay command the result names (see :attr:`ScenarioResult.replay_prefix`).
    """
    from fleetchaos.runs.cache import active_cache, using_cache
    from fleetchaos.runs.runner import run_one

    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.5 <= confidence < 1.0:
        raise UserError(f"confidence: must be a level in [0.5, 1) such as 0.95, got {confidence!r}")
    spec, ref = load_ref(scenario, save_dir)
    if keep_tasks:
        from fleetchaos.scenario.load import check_rows_fit

        check_rows_fit(spec, "--fleetchaos-report")
    seed_list = resolve_seeds(seeds)
    _check_arm(policy, errors)
    from fleetchaos.scenario.load import scenario_hash

    content = scenario_hash(spec)
    runs = []
    for seed in seed_list:
        key = (content, ref, policy, errors, seed, keep_tasks)
        run = cache.get(key) if cache is not None else None
        if run is None:
            with using_cache(run_cache if run_cache is not None else active_cache()):
                run = run_one(spec, policy, errors, seed, scenario_ref=ref, keep_tasks=keep_tasks)
            if cache is not None:
                cache[key] = run
        runs.append(run)
    return ScenarioResult(
        scenario=spec.name,
        scenario_ref=ref,
        policy=policy,
        errors=errors,
        seeds=tuple(seed_list),
        runs=tuple(runs),
        confidence=confidence,
        expect=tuple(getattr(spec, "expect", ())),
        scenario_digest=content,
        replay_prefix=replay_prefix,
        scenario_config=spec.model_dump(mode="json"),
    )
