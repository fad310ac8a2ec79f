"""The ``robustness`` command: vary a scenario's main assumptions and show where the ordering of arms flips."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    split_names,
    stderr_console,
    stdout_console,
)
from fleetchaos.cli.executing import executor_option
from fleetchaos.cli.tuning import TUNE_OPTIONS, recorded_options, tune_options, tune_spec
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.results.models import CompareResult
    from fleetchaos.results.studies import SensitivityResult, TunedCompareResult
    from fleetchaos.runs.tune import TuneSpec
    from fleetchaos.scenario.load import Scenario

__all__ = [
    "BestStudy",
    "explicit_tune_options",
    "robustness",
    "study_lines",
    "with_flips",
    "with_study",
    "wrapped",
]


@click.command()
@cache_option
@scenario_option
@click.option(
    "--errors",
    "formats",
    help="best against best on these formats (comma-separated) [default: the scenario's tuned formats, else "
    "generic,status,raw,structured]",
)
@click.option(
    "--arm",
    "arms",
    nargs=2,
    multiple=True,
    metavar="POLICY ERRORS",
    help="order these fixed arms instead of best against best (repeat; at least two; nothing is tuned)",
)
@param_option
@click.option(
    "--only", help="comma-separated words: vary only the assumptions whose path contains one (e.g. partial_batch)"
)
@click.option(
    "--retune/--no-retune",
    default=True,
    show_default=True,
    help="tune each format's best again at every value that can change it (the racing tuner on training seeds); "
    "--no-retune keeps the scenario's own bests at every value",
)
@tune_options
@click.option("--metric", help="--arm only: the metric the arms are ordered by [default: success_rate]")
@click.option("--seeds", type=click.IntRange(1, 10_000), help="seeds per value and arm [default: 10; 5 with --arm]")
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
    formats: str | None,
    arms: tuple[tuple[str, str], ...],
    params: tuple[str, ...],
    only: str | None,
    retune: bool,
    metric: str | None,
    seeds: int | None,
    first_seed: int | None,
    jobs: int | None,
    scheduler: str | None,
    confidence: float,
    as_json: bool,
    report: Path | None,
    **opts: Any,
) -> None:
    """What the answer depends on: vary each assumption over its plausible range, one at a time.

    By default, best against best (each format's own tuned policy, docs/policies.md): every
    assumption of the registry (docs/assumptions.md) and the load, each over its documented
    range, each format's best tuned again at every value that can change it (--no-retune
    keeps the scenario's own).  At each value: the envelope's lead (the best with an
    envelope minus the best without one, paired by seed) and the leading format; prices are
    judged on cost_usd, since they cannot change a success rate.  Prints the tornado's bars
    as a table and names every flip; --report draws the tornado chart.  --param
    PATH=V1,V2,... (repeat) gives ranges instead; --only keeps some assumptions.  With --arm
    (repeat), fixed arms are ordered instead and nothing is tuned.  Runs are not stored in
    the run history.
    """
    from fleetchaos.scenario.load import load_scenario

    spec = load_scenario(scenario)
    ranges = _ranges(params)
    if arms:
        if formats is not None or only is not None:
            raise UserError("--arm with --errors or --only: fixed arms are ordered over --param ranges; drop one")
        _arm_study(spec, scenario, list(arms), ranges, metric or "success_rate", seeds or 5, first_seed, jobs,
                   scheduler, confidence, as_json, report)  # fmt: skip
        return
    if metric is not None and metric != "success_rate":
        raise UserError(
            f"--metric {metric}: best against best is judged on success_rate (prices on cost_usd); "
            "order fixed arms by another metric with --arm"
        )
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.executors import open_executor

    study = BestStudy.plan(spec, scenario, formats, ranges, only, retune, opts, explicit_tune_options())
    seed_list = seeds_to_run(spec, seeds if seeds is not None else 10, first_seed)
    from fleetchaos.cli.expecting import note_unjudged

    note_unjudged([(scenario, spec)], "robustness", lambda line: click.echo(line, err=True))
    make_report_dir(report)
    executor = open_executor(jobs, scheduler)
    try:
        with progress_bar(study.planned_runs(len(seed_list)), "robustness", console=stderr_console()) as advance:
            result = study.run(seed_list, executor, confidence, lambda _run: advance(1))
    finally:
        executor.shutdown()
    if report is not None:
        from fleetchaos.reports.sensitivity import write_sensitivity_report

        for written in write_sensitivity_report(result, report):
            stderr_console().print(f"wrote {written}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    from fleetchaos.reports.sensitivity import study_headline, study_lines, tornado_table

    click.echo(wrapped([study_headline(result)], output_width()))
    stdout_console().print(tornado_table(result, width=fixed_width()))
    click.echo(wrapped(study_lines(result), output_width()))


def _ranges(params: tuple[str, ...]) -> dict[str, list[Any]]:
    from fleetchaos.policies.spec import policy_param_name
    from fleetchaos.scenario.params import parse_param_option

    ranges: dict[str, list[Any]] = {}
    for option in params:
        path, values = parse_param_option(option)
        if policy_param_name(path) is not None:
            raise UserError(f"--param {option}: robustness varies scenario assumptions; set policy parameters in --arm")
        if path in ranges:
            raise UserError(f"--param {path}: given twice; put every value in one --param {path}=V1,V2,...")
        ranges[path] = values
    return ranges


def explicit_tune_options() -> set[str]:
    """The tuning options the current command was given (not left at their defaults)."""
    ctx = click.get_current_context()
    out = set()
    for name in TUNE_OPTIONS:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name != "DEFAULT":
            out.add(name)
    return out


class BestStudy:
    """A best-against-best sensitivity study, planned (every option checked) before anything runs."""

    def __init__(self, spec: Scenario, scenario_ref: str, formats: tuple[str, ...], settings: list, retune: bool,
                 tuning: TuneSpec, best: dict[str, str] | None, source: str):  # fmt: skip
        self.spec, self.scenario_ref, self.formats, self.settings = spec, scenario_ref, formats, settings
        self.retune, self.tuning, self.best, self.source = retune, tuning, best, source

    @classmethod
    def plan(
        cls,
        spec: Scenario,
        scenario_ref: str,
        formats: str | None,
        ranges: dict[str, list[Any]],
        only: str | None,
        retune: bool,
        opts: dict[str, Any],
        explicit: set[str],
        best: dict[str, str] | None = None,
        source: str = "",
    ) -> BestStudy:
        """Check the options and plan the settings; the scenario's shipped bests are used when the search that
        chose them is the study's (``best``: bests already known, e.g. a tuned comparison's)."""
        from fleetchaos.names import check_formats
        from fleetchaos.runs.best import DEFAULT_TUNE_FORMATS, shipped_best
        from fleetchaos.runs.sensitivity import plan_settings
        from fleetchaos.runs.tune import check_tune

        shipped_formats = tuple(spec.tuned.policies) if spec.tuned is not None else ()
        names = split_names(formats) if formats is not None else (shipped_formats or DEFAULT_TUNE_FORMATS)
        check_formats(names, "--errors")
        if opts.get("objective", "success_rate") != "success_rate":
            raise UserError("--objective: best against best is judged on success_rate (prices on cost_usd); drop it")
        shipped = shipped_best(spec, names) if best is None else None
        if shipped is not None and shipped.matches_world:
            recorded = recorded_options(shipped.command)
            if recorded is not None and all(opts.get(k) == recorded.get(k) for k in explicit):
                opts, best, source = {**opts, **recorded}, shipped.best, f"shipped, tuned by `{shipped.command}`"
        tuning = tune_spec(spec, scenario_ref, names[0], (), [], opts)
        for errors in names:
            check_tune(replace(tuning, errors=errors, holdout_seeds=(0,)))
        settings = plan_settings(spec, names, ranges=ranges or None, only=split_names(only) if only else ())
        return cls(spec, scenario_ref, names, settings, retune, tuning, best, source)

    def planned_runs(self, seeds: int) -> int:
        """The most runs the study makes (for a progress bar): every search raced in full, every evaluation."""
        from fleetchaos.runs.tune import check_tune, training_runs_planned

        families = check_tune(replace(self.tuning, holdout_seeds=(0,)))
        per_search = training_runs_planned(self.tuning, len(families) * self.tuning.trials)
        searches = 0 if self.best is not None else len(self.formats)
        evaluations = len(self.formats)
        for s in self.settings:
            changed = len(s.values) - 1
            evaluations += changed * len(s.reaches)
            if self.retune and s.retuned:
                searches += changed * len(s.reaches)
        return searches * per_search + evaluations * seeds

    def run(
        self, seeds: list[int], executor: Executor, confidence: float, on_result: Callable[[Any], None]
    ) -> SensitivityResult:
        """Tune, run and judge (:func:`fleetchaos.runs.sensitivity.sensitivity`)."""
        from fleetchaos.runs.sensitivity import sensitivity

        return sensitivity(
            self.spec, self.formats, seeds, self.settings, tuning=self.tuning, best=self.best, best_source=self.source,
            retune=self.retune, executor=executor, confidence=confidence, scenario_ref=self.scenario_ref,
            on_result=on_result,
        )  # fmt: skip


def _arm_study(
    spec: Scenario,
    scenario: str,
    arms: list[tuple[str, str]],
    ranges: dict[str, list[Any]],
    metric: str,
    seeds: int,
    first_seed: int | None,
    jobs: int | None,
    scheduler: str | None,
    confidence: float,
    as_json: bool,
    report: Path | None,
) -> None:
    """``robustness --arm``: fixed arms at every value of the ranges (the default ranges without --param)."""
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.names import check_formats, check_metric, check_policies
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.runs.robustness import default_ranges
    from fleetchaos.runs.robustness import robustness as run_robustness

    arm_list = list(arms)
    if len(arm_list) < 2:
        raise UserError("--arm: give at least two arms to order (--arm POLICY ERRORS, repeated)")
    if len(set(arm_list)) != len(arm_list):
        raise UserError("--arm: an arm is given twice; give each once")
    policies = [check_policies((p,), "--arm")[0] for p, _ in arm_list]
    check_formats(tuple(dict.fromkeys(e for _, e in arm_list)), "--arm")
    arm_list = [(p, e) for p, (_, e) in zip(policies, arm_list)]
    check_metric(metric, "--metric")
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


def with_study(
    result: TunedCompareResult,
    spec: Scenario,
    scenario_ref: str,
    opts: dict[str, Any],
    first_seed: int,
    seeds: int,
    executor: Executor,
) -> TunedCompareResult:
    """``result`` with what its answer depends on (``compare --robustness`` on best against best).

    The same study as ``fleetchaos robustness`` on the comparison's formats, on ``seeds``
    seeds from ``first_seed``, re-tuned by the search that chose the comparison's bests (the
    scenario's shipped command, or this comparison's tuning options).
    """
    from fleetchaos.cli.progress import progress_bar

    tuning = result.tuning
    formats = ",".join(tuning.best)
    if tuning.source == "shipped":
        study = BestStudy.plan(spec, scenario_ref, formats, {}, None, True, opts, explicit_tune_options())
    else:
        study = BestStudy.plan(spec, scenario_ref, formats, {}, None, True, opts, explicit_tune_options(),
                               best=dict(tuning.best), source="tuned for this comparison")  # fmt: skip
    seed_list = list(range(first_seed, first_seed + seeds))
    with progress_bar(study.planned_runs(len(seed_list)), "robustness", console=stderr_console()) as advance:
        found = study.run(seed_list, executor, result.confidence, lambda _run: advance(1))
    return result.model_copy(update={"sensitivity": found})


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
