"""What ``fleetchaos robustness`` does, callable from Python, and the study ``compare --robustness`` adds.

:class:`RobustnessJob` holds the command's options as fields and its orchestration once:
the checks before any run (arms, metric, ranges), the runs at every value of every varied
assumption, the report.  The click command parses, builds a job, runs it and renders its
result.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fleetchaos.cli.common import make_report_dir, seeds_to_run, stderr_console
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.results.models import CompareResult
    from fleetchaos.results.studies import RobustnessResult
    from fleetchaos.scenario.load import Scenario

__all__ = ["DEFAULT_ARMS", "RobustnessJob", "with_flips"]

#: The arms ordered unless told otherwise: (policy, error format).
DEFAULT_ARMS: tuple[tuple[str, str], ...] = (("blind-retry", "generic"), ("structured", "structured"))


@dataclass
class RobustnessJob:
    """``fleetchaos robustness``: vary the main assumptions one at a time and find where the arms' order flips.

    Each field is the command's option of the same name: ``arms`` are (policy, error format)
    pairs (empty: :data:`DEFAULT_ARMS`), ``params`` the ``PATH=V1,V2,...`` ranges to vary
    (empty: the declared ranges of :func:`~fleetchaos.runs.robustness.default_ranges`).
    """

    scenario: str = "default"
    arms: tuple[tuple[str, str], ...] = ()
    params: tuple[str, ...] = ()
    metric: str = "success_rate"
    seeds: int = 5
    first_seed: int | None = None
    jobs: int | None = None
    scheduler: str | None = None
    confidence: float = 0.95
    report: Path | None = None

    def run(self) -> RobustnessResult:
        """Check every option, then run every arm at each value of each varied assumption."""
        from fleetchaos.cli.expecting import note_unjudged
        from fleetchaos.cli.progress import progress_bar
        from fleetchaos.names import check_formats, check_metric, check_policies
        from fleetchaos.runs.executors import open_executor
        from fleetchaos.runs.robustness import robustness
        from fleetchaos.scenario.load import load_scenario

        spec = load_scenario(self.scenario)
        arms = list(self.arms) or list(DEFAULT_ARMS)
        if len(arms) < 2:
            raise UserError("--arm: give at least two arms to order (--arm POLICY ERRORS, repeated)")
        if len(set(arms)) != len(arms):
            raise UserError("--arm: an arm is given twice; give each once")
        policies = [check_policies((p,), "--arm")[0] for p, _ in arms]
        check_formats(tuple(dict.fromkeys(e for _, e in arms)), "--arm")
        arms = [(p, e) for p, (_, e) in zip(policies, arms)]
        check_metric(self.metric, "--metric")
        ranges = self._ranges(spec)
        seeds = seeds_to_run(spec, self.seeds, self.first_seed)
        note_unjudged([(self.scenario, spec)], "robustness", _echo_err)  # once the options are valid
        make_report_dir(self.report)
        total = (1 + sum(len(v) for v in ranges.values())) * len(arms) * len(seeds)
        executor = open_executor(self.jobs, self.scheduler)
        try:
            with progress_bar(total, "robustness", console=stderr_console()) as advance:
                result = robustness(
                    spec, arms, seeds, ranges, executor=executor, metric=self.metric, confidence=self.confidence,
                    scenario_ref=self.scenario, on_result=lambda _run: advance(1),
                )  # fmt: skip
        finally:
            executor.shutdown()
        if self.report is not None:
            from fleetchaos.reports.robustness import write_robustness_report

            for written in write_robustness_report(result, self.report):
                stderr_console().print(f"wrote {written}", highlight=False)
        return result

    def _ranges(self, spec: Scenario) -> dict[str, list]:
        """The assumptions to vary and their values: ``params``, else the scenario's declared ranges."""
        from fleetchaos.policies.spec import policy_param_name
        from fleetchaos.runs.robustness import default_ranges
        from fleetchaos.scenario.params import parse_param_option

        ranges = {}
        for option in self.params:
            path, values = parse_param_option(option)
            if policy_param_name(path) is not None:
                raise UserError(
                    f"--param {option}: robustness varies scenario assumptions; set policy parameters in --arm"
                )
            if path in ranges:
                raise UserError(f"--param {path}: given twice; put every value in one --param {path}=V1,V2,...")
            ranges[path] = values
        return ranges or default_ranges(spec)


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
