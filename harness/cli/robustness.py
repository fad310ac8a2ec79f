"""The ``robustness`` command: vary a scenario's main assumptions and show where the ordering of arms flips."""

from __future__ import annotations

from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fleetchaos.cli.caching import cache_option
from fleetchaos.cli.common import (
    Confidence,
    fixed_width,
    jobs_option,
    make_report_dir,
    output_width,
    param_option,
    scenario_option,
    scheduler_option,
    seeds_to_run,
    stderr_console,
    stdout_console,
)
from fleetchaos.cli.executing import executor_option
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.results.models import CompareResult
    from fleetchaos.scenario.load import Scenario

__all__ = ["robustness", "study_lines", "with_flips", "wrapped"]

DEFAULT_ARMS = (("blind-retry", "generic"), ("structured", "structured"))


@click.command()
@cache_option
@scenario_option
@click.option(
    "--arm",
    "arms",
    nargs=2,
    multiple=True,
    metavar="POLICY ERRORS",
    help="an arm to order (repeat; at least two) [default: blind-retry generic, structured structured]",
)
@param_option
@click.option("--metric", default="success_rate", show_default=True, help="the metric the arms are ordered by")
@click.option("--seeds", type=click.IntRange(1, 10_000), default=5, show_default=True, help="seeds per value and arm")
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first seed [default: 1]")
@jobs_option
@scheduler_option
@executor_option
@click.option("--confidence", default=0.95, show_default=True, type=Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option(
    "--report", type=click.Path(file_okay=False, path_type=Path), help="write results.json, a chart and pages here"
)
def robustness(
    scenario: str,
    arms: tuple[tuple[str, str], ...],
    params: tuple[str, ...],
    metric: str,
    seeds: int,
    first_seed: int | None,
    jobs: int | None,
    scheduler: str | None,
    confidence: float,
    as_json: bool,
    report: Path | None,
) -> None:
    """Vary the main assumptions one at a time and show where the ordering of the arms holds and flips.

    Without --param, the declared ranges: every fault's rate, the misread probability, the
    load and the cost of a refused request (docs/policies.md); with --param PATH=V1,V2,...
    (repeat), those ranges instead.  Each value runs every arm on the same seeds; the table
    and chart show the paired difference (second arm minus first) and the leader, and the
    flips name the values on each side.  Runs are not stored in the run history.
    """
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.names import check_formats, check_metric, check_policies
    from fleetchaos.policies.spec import policy_param_name
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.runs.robustness import default_ranges
    from fleetchaos.runs.robustness import robustness as run_robustness
    from fleetchaos.scenario.load import load_scenario
    from fleetchaos.scenario.params import parse_param_option

    spec = load_scenario(scenario)
    arm_list = list(arms) or list(DEFAULT_ARMS)
    if len(arm_list) < 2:
        raise UserError("--arm: give at least two arms to order (--arm POLICY ERRORS, repeated)")
    if len(set(arm_list)) != len(arm_list):
        raise UserError("--arm: an arm is given twice; give each once")
    policies = [check_policies((p,), "--arm")[0] for p, _ in arm_list]
    check_formats(tuple(dict.fromkeys(e for _, e in arm_list)), "--arm")
    arm_list = [(p, e) for p, (_, e) in zip(policies, arm_list)]
    check_metric(metric, "--metric")
    ranges = {}
    for option in params:
        path, values = parse_param_option(option)
        if policy_param_name(path) is not None:
            raise UserError(f"--param {option}: robustness varies scenario assumptions; set policy parameters in --arm")
        if path in ranges:
            raise UserError(f"--param {path}: given twice; put every value in one --param {path}=V1,V2,...")
        ranges[path] = values
    if not ranges:
        ranges = default_ranges(spec)
    seed_list = seeds_to_run(spec, seeds, first_seed)
    from fleetchaos.cli.expecting import note_unjudged

    note_unjudged(
        [(scenario, spec)], "robustness", lambda line: click.echo(line, err=True)
    )  # once the options are valid
    make_report_dir(report)
    total = (1 + sum(len(v) for v in ranges.values())) * len(arm_list) * len(seed_list)
    executor = open_executor(jobs, scheduler)
    try:
        with progress_bar(total, "robustness", console=stderr_console()) as advance:
            result = run_robustness(
                spec, arm_list, seed_list, ranges, executor=executor, metric=metric, confidence=confidence,
                scenario_ref=scenario, on_result=lambda _run: advance(1),
            )  # fmt: skip
    finally:
        executor.shutdown()
    if report is not None:
        from fleetchaos.reports.robustness import write_robustness_report

        for written in write_robustness_report(result, report):
            stderr_console().print(f"wrote {written}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    from fleetchaos.reports.robustness import flip_lines, robustness_table

    stdout_console().print(robustness_table(result, width=fixed_width()))
    click.echo(wrapped(flip_lines(result), output_width()))


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
    terminal table (:func:`study_lines`), read what comes back.
    """
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.reports.ordering import summary
    from fleetchaos.results.registry import lead_metrics
    from fleetchaos.runs.robustness import default_ranges, leading_arms
    from fleetchaos.runs.robustness import robustness as run_robustness

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
        study = run_robustness(
            spec, arms, seed_list, ranges, executor=executor, metric=metric, confidence=confidence,
            scenario_ref=scenario_ref, on_result=lambda _run: advance(1),
        )  # fmt: skip
    return result.model_copy(update={"robustness": summary(study)})


def study_lines(result: CompareResult) -> list[str]:
    """What ``compare --robustness`` found, for under the terminal table: the arms ordered, then the verdict."""
    study = result.robustness
    if study is None:
        return []
    if len(study.arms) == 2:
        seeds = f", {study.seeds} seed{'s' if study.seeds != 1 else ''} per value" if study.seeds else ""
        head = (
            f"robustness of {study.arms[0]} against {study.arms[1]} ({study.metric}{seeds}, "
            "one assumption varied at a time):"
        )
    else:
        head = "robustness (one assumption varied at a time):"
    from fleetchaos.reports.ordering import ordering_lines

    return [head, *(f"  {line}" for line in ordering_lines(study))]


def wrapped(lines: list[str], width: int) -> str:
    """``lines`` wrapped at ``width`` columns (never inside a word), each continuation indented under its line."""
    import textwrap

    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        out.append(textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False))
    return "\n".join(out)
