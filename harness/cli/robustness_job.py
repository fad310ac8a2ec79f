"""What ``fleetchaos robustness`` does, callable from Python, and the flip analysis ``compare --robustness`` adds.

:class:`RobustnessJob` holds the command's options as fields and its orchestration once:
the checks before any run (formats or arms, metric, ranges), the runs at every value of
every varied assumption, the report.  By default it is best against best under every
assumption (:class:`~fleetchaos.cli.best_study.BestStudy`); with ``arms`` it orders fixed
arms.  The click command parses, builds a job, runs it and renders its result.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleetchaos.cli.common import make_report_dir, seeds_to_run, stderr_console
from fleetchaos.cli.job_options import TuneOptions
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.results.models import CompareResult
    from fleetchaos.results.studies import RobustnessResult, SensitivityResult
    from fleetchaos.scenario.load import Scenario

__all__ = ["RobustnessJob", "with_flips"]


@dataclass
class RobustnessJob:
    """``fleetchaos robustness``: what the answer depends on, one assumption varied at a time.

    Each field is the command's option of the same name.  By default best against best on
    ``errors`` (None: the scenario's tuned formats, else generic, status, raw and structured),
    over every assumption of the registry and the load (``only``: those whose path contains
    one of its words), each format's best tuned again by ``tuning`` at every value that can
    change it unless ``retune`` is False; 10 seeds.  With ``arms`` ((policy, error format)
    pairs, at least two) fixed arms are ordered on ``metric`` instead, nothing tuned; 5
    seeds.  ``params`` are ``PATH=V1,V2,...`` ranges to vary instead of the declared ones.
    """

    scenario: str = "default"
    errors: tuple[str, ...] | None = None
    arms: tuple[tuple[str, str], ...] = ()
    params: tuple[str, ...] = ()
    only: tuple[str, ...] = ()
    retune: bool = True
    tuning: TuneOptions = field(default_factory=TuneOptions)
    metric: str | None = None
    seeds: int | None = None
    first_seed: int | None = None
    jobs: int | None = None
    scheduler: str | None = None
    confidence: float = 0.95
    report: Path | None = None

    def run(self) -> SensitivityResult | RobustnessResult:
        """Check every option, then tune and run at each value of each varied assumption."""
        from fleetchaos.cli.best_study import BestStudy
        from fleetchaos.cli.expecting import note_unjudged
        from fleetchaos.cli.progress import progress_bar
        from fleetchaos.runs.executors import open_executor
        from fleetchaos.scenario.load import load_scenario

        spec = load_scenario(self.scenario)
        ranges = self._ranges()
        if self.arms:
            if self.errors is not None or self.only:
                raise UserError("--arm with --errors or --only: fixed arms are ordered over --param ranges; drop one")
            return self._order_arms(spec, ranges)
        if self.metric is not None and self.metric != "success_rate":
            raise UserError(
                f"--metric {self.metric}: best against best is judged on success_rate (prices on cost_usd); "
                "order fixed arms by another metric with --arm"
            )
        study = BestStudy.plan(spec, self.scenario, self.errors, ranges, self.only, self.retune, self.tuning)
        seeds = seeds_to_run(spec, self.seeds if self.seeds is not None else 10, self.first_seed)
        note_unjudged([(self.scenario, spec)], "robustness", _echo_err)  # once the options are valid
        make_report_dir(self.report)
        executor = open_executor(self.jobs, self.scheduler)
        try:
            with progress_bar(study.planned_runs(len(seeds)), "robustness", console=stderr_console()) as advance:
                result = study.run(seeds, executor, self.confidence, lambda _run: advance(1))
        finally:
            executor.shutdown()
        if self.report is not None:
            from fleetchaos.reports.sensitivity import write_sensitivity_report

            for written in write_sensitivity_report(result, self.report):
                stderr_console().print(f"wrote {written}", highlight=False)
        return result

    def _order_arms(self, spec: Scenario, ranges: dict[str, list[Any]]) -> RobustnessResult:
        """``--arm``: every fixed arm at each value of the ranges (the declared ranges without ``params``)."""
        from fleetchaos.cli.expecting import note_unjudged
        from fleetchaos.cli.progress import progress_bar
        from fleetchaos.names import check_formats, check_metric, check_policies
        from fleetchaos.runs.executors import open_executor
        from fleetchaos.runs.robustness import default_ranges, robustness

        arms = list(self.arms)
        if len(arms) < 2:
            raise UserError("--arm: give at least two arms to order (--arm POLICY ERRORS, repeated)")
        if len(set(arms)) != len(arms):
            raise UserError("--arm: an arm is given twice; give each once")
        policies = [check_policies((p,), "--arm")[0] for p, _ in arms]
        check_formats(tuple(dict.fromkeys(e for _, e in arms)), "--arm")
        arms = [(p, e) for p, (_, e) in zip(policies, arms)]
        metric = self.metric or "success_rate"
        check_metric(metric, "--metric")
        ranges = ranges or default_ranges(spec)
        seeds = seeds_to_run(spec, self.seeds if self.seeds is not None else 5, self.first_seed)
        note_unjudged([(self.scenario, spec)], "robustness", _echo_err)  # once the options are valid
        make_report_dir(self.report)
        total = (1 + sum(len(v) for v in ranges.values())) * len(arms) * len(seeds)
        executor = open_executor(self.jobs, self.scheduler)
        try:
            with progress_bar(total, "robustness", console=stderr_console()) as advance:
                result = robustness(
                    spec, arms, seeds, ranges, executor=executor, metric=metric, confidence=self.confidence,
                    scenario_ref=self.scenario, on_result=lambda _run: advance(1),
                )  # fmt: skip
        finally:
            executor.shutdown()
        if self.report is not None:
            from fleetchaos.reports.robustness import write_robustness_report

            for written in write_robustness_report(result, self.report):
                stderr_console().print(f"wrote {written}", highlight=False)
        return result

    def _ranges(self) -> dict[str, list[Any]]:
        """The ``params`` ranges, checked (empty without ``params``)."""
        from fleetchaos.policies.spec import policy_param_name
        from fleetchaos.scenario.params import parse_param_option

        ranges: dict[str, list[Any]] = {}
        for option in self.params:
            path, values = parse_param_option(option)
            if policy_param_name(path) is not None:
                raise UserError(
                    f"--param {option}: robustness varies scenario assumptions; set policy parameters in --arm"
                )
            if path in ranges:
                raise UserError(f"--param {path}: given twice; put every value in one --param {path}=V1,V2,...")
            ranges[path] = values
        return ranges


def with_flips(
    result: CompareResult,
    spec: Scenario,
    scenario_ref: str,
    first_seed: int,
    seeds: int,
    executor: Executor,
    confidence: float,
) -> CompareResult:
    """``result`` with its flip analysis (``compare --robustness``): the two leading arms over the declared ranges.

    The arms are the two ahead on the comparison's lead metric; each assumption of
    :func:`~fleetchaos.runs.robustness.default_ranges` is varied alone on ``seeds`` seeds from
    ``first_seed``.  The report's finding and its Robustness section, and the verdict under the
    terminal table (:func:`fleetchaos.cli.robustness.study_lines`), read what comes back.
    """
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.reports.ordering import summary
    from fleetchaos.results.registry import lead_metrics
    from fleetchaos.runs.robustness import default_ranges, leading_arms, robustness

    metric = lead_metrics(result.closed_loop)[0]
    arms = leading_arms(result.arms, metric)
    ranges = default_ranges(spec)
    if len(arms) < 2 or not ranges:
        stderr_console().print(
            "--robustness: nothing to order (fewer than two arms with a value) or nothing to vary; no flip analysis",
            highlight=False,
        )
        return result
    seed_list = list(range(first_seed, first_seed + seeds))
    total = (1 + sum(len(v) for v in ranges.values())) * len(arms) * len(seed_list)
    with progress_bar(total, "robustness", console=stderr_console()) as advance:
        study = robustness(
            spec, arms, seed_list, ranges, executor=executor, metric=metric, confidence=confidence,
            scenario_ref=scenario_ref, on_result=lambda _run: advance(1),
        )  # fmt: skip
    return result.model_copy(update={"robustness": summary(study)})


def _echo_err(line: str) -> None:
    import click

    click.echo(line, err=True)
