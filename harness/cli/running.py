"""The ``run`` and ``compare`` commands: one arm on one seed, and every arm on the same seeds.

``compare`` parses its options, builds a :class:`~fleetchaos.cli.compare_job.CompareJob`, runs
it and renders what it gives.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from fleetchaos.cli.caching import cache_option
from fleetchaos.cli.chart_pool import chart_pool, warm_chart_workers
from fleetchaos.cli.common import (
    Confidence,
    apply_single_params,
    columns_option,
    determinism_option,
    echo_err,
    fixed_width,
    jobs_option,
    make_report_dir,
    output_width,
    policies_with_params,
    policy_param_options,
    quiet_option,
    report_option,
    run_determinism_check,
    run_determinism_option,
    scenario_option,
    scheduler_option,
    single_param_option,
    split_names,
    stderr_console,
    stdout_console,
    time_limit_option,
    traces_option,
)
from fleetchaos.cli.compare_job import CompareJob, CompareOutcome, print_traces, trace_folder
from fleetchaos.cli.executing import executor_option
from fleetchaos.cli.expecting import ExpectGates, no_expect_option
from fleetchaos.cli.history import HistorySession, history_options
from fleetchaos.cli.job_options import HistoryOptions, TuneOptions, split_options
from fleetchaos.cli.tuning import tune_options
from fleetchaos.errors import UserError
from fleetchaos.gates.like import RunsIdentity
from fleetchaos.names import check_formats

__all__ = ["compare", "run"]


@click.command()
@cache_option
@scenario_option
@single_param_option
@click.option(
    "--policy",
    default="structured",
    show_default=True,
    help="built-in name, pkg.module:Policy, or pkg.module:RETRY (a tenacity retry config)",
)
@click.option(
    "--errors",
    default="structured",
    show_default=True,
    help="error format: generic, structured, raw, empty-success, fabricated-defaults, agent-tool-error, "
    "failure-type, subagent-result, tool-envelope, an ablation:... step, an installed format's name, or "
    "pkg.module:Format (docs/formats.md)",
)
@click.option("--seed", default=1, show_default=True, type=click.IntRange(0, 2**63 - 1))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@columns_option
@quiet_option
@report_option
@time_limit_option
@traces_option
@run_determinism_option
@no_expect_option
@history_options
def run(
    scenario: str,
    params: tuple[str, ...],
    policy: str,
    errors: str,
    seed: int,
    as_json: bool,
    report: Path | None,
    traces_dir: Path | None = None,
    time_limit: float | None = None,
    check_determinism: bool = False,
    columns: tuple[str, ...] | None = None,
    quiet: bool = False,
    no_expect: bool = False,
    **history_args: Any,
) -> None:
    """Simulate one policy on one error format for one seed.

    The run is appended to the run history; --baseline and --fail-on gate it against a
    stored run group (exit 1 on a regression), and the scenario's expect: gates are
    judged on it (exit 1 when one fails).
    """
    warm = warm_chart_workers(None if check_determinism else report)  # matplotlib loads meanwhile, elsewhere
    from fleetchaos.runs.runner import run_one, versions
    from fleetchaos.scenario.load import check_rows_fit, load_scenario

    spec = load_scenario(scenario)
    scenario_params, policy_params = policy_param_options(params)
    given = policy
    (policy,) = policies_with_params((policy,), policy_params, "--policy")
    check_formats((errors,), "--errors")
    spec, applied = apply_single_params(spec, scenario, scenario_params)
    expect = ExpectGates(spec, scenario, [(given, policy, errors)], hint=None,
                         skip=no_expect or check_determinism,
                         allow_policy_errors=history_args.get("allow_policy_errors", False))  # fmt: skip
    if report is not None or check_determinism:
        check_rows_fit(spec, "--report" if report is not None else "--check-determinism")
    make_report_dir(report)
    make_report_dir(traces_dir, "--traces")
    if check_determinism:
        run_determinism_check(spec, scenario, [(policy, errors)], [seed])
        return
    session = HistorySession(**history_args)
    session.plan(RunsIdentity.of(spec.model_dump(mode="json"), applied), [(policy, errors)], [seed])  # before the run
    session.start("run", spec, {"scenario_ref": scenario, "policies": [policy], "errors": [errors], "seeds": [seed],
                                "params": dict(applied), "versions": versions()})  # fmt: skip
    status = "failed"
    try:
        traces = trace_folder(traces_dir, spec)
        result = run_one(
            spec, policy, errors, seed, scenario_ref=scenario, keep_tasks=report is not None, params=applied,
            trace=report is not None or traces is not None, trace_label="this run", time_limit_s=time_limit,
            on_trace=None if traces is None else lambda output: traces.write(policy, errors, seed, output),
        )  # fmt: skip
        result.versions = versions()
        session.add(result)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        session.finish(status)
    expect.judge_run(result)
    if report is not None:
        from fleetchaos.reports import write_run_report

        pool = chart_pool(None, warm)  # its charts are drawn side by side
        try:
            written = write_run_report(result, report, executor=pool)
        finally:
            if pool is not None:
                pool.shutdown()
        for path in [] if quiet else written:
            stderr_console().print(f"wrote {path}", highlight=False)
    print_traces(traces, quiet)
    if as_json:
        click.echo(result.model_dump_json(indent=2, exclude={"tasks", "timeline", "samples"}))
    elif not quiet:
        from fleetchaos.reports import run_table

        stdout_console().print(run_table(result, columns))
        click.echo(f"replay: {result.replay}")
    code = max(expect.gate(echo_err), session.gate(echo_err))  # the scenario's gates first, then the baseline's
    if code:
        sys.exit(code)


@click.command()
@cache_option
@scenario_option
@single_param_option
@click.option(
    "--seeds", type=click.IntRange(1, 10_000), help="number of seeds [default: the scenario's seeds, else 10]"
)
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first seed of the range [default: 1]")
@click.option(
    "--policies",
    help="comma-separated; 'best' is the policy tuned on each format (the scenario's tuned: block, or --tune) "
    "[default: best against best when the scenario ships tuned policies, else blind-retry,backoff,structured]",
)
@click.option(
    "--errors",
    help="comma-separated [default: the scenario's tuned formats; with --tune generic,status,raw,structured; "
    "else generic,structured]",
)
@click.option(
    "--tune",
    is_flag=True,
    help="best against best: tune a policy per format on training seeds (the tune options below) instead of "
    "using the scenario's tuned: block; without --policies, each tuned policy on its format and the first "
    "format's on every format; with --policies, 'best' is added to them and every policy runs on every format",
)
@tune_options
@jobs_option
@scheduler_option
@executor_option
@click.option("--confidence", default=0.95, show_default=True, type=Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@report_option
@time_limit_option
@click.option("--wide", is_flag=True, help="the terminal table shows every figure, not only the 100-column headline")
@columns_option
@quiet_option
@click.option(
    "--robustness",
    "robustness_seeds",
    type=click.IntRange(1, 10_000),
    metavar="SEEDS",
    help="then vary the scenario's assumptions one at a time (the ranges of `fleetchaos robustness`) on this many "
    "seeds: best against best re-tuned at each value when the arms are best against best, else the two leading "
    "arms; the report and the finding state where the answer flips",
)
@traces_option
@determinism_option
@click.option(
    "--resume", is_flag=True, help="continue this comparison stored in the history: run only the runs it lacks"
)
@no_expect_option
@history_options
def compare(
    policies: str | None, errors: str | None, as_json: bool, wide: bool, columns: tuple[str, ...] | None, no_expect: bool,
    traces_dir: Path | None, **options: Any,
) -> None:  # fmt: skip
    """Every policy on every error format, on the same seeds (the same faults).

    Without --policies, on a scenario that ships tuned policies (its tuned: block, as the
    default scenario does), best against best: each format's tuned policy on its format,
    the first format's on every format, and weak reference arms (--tune tunes them again).
    Each finished run is appended to the run history as it completes; --baseline and
    --fail-on gate the comparison against a stored run group (exit 1 on a regression),
    and the scenario's expect: gates are judged on every arm they name (exit 1 when one fails).
    With --report, the report also gets a per-task CSV and traced runs of the best and
    the worst arm (fleet timeline, error codes over time); --traces writes those traced
    runs as OTLP JSON.  After Ctrl-C or a crash, the same command with --resume runs only the rest.
    """
    if wide and columns is not None:
        raise UserError("--wide with --columns: --wide shows every figure, --columns the ones named; give one")
    job = CompareJob(
        policies=split_names(policies) if policies is not None else None,
        errors=split_names(errors) if errors is not None else None,
        expect=not no_expect,
        traces=traces_dir,
        tuning=split_options(TuneOptions, options),
        history=split_options(HistoryOptions, options),
        **options,
    )
    outcome = job.run()
    if outcome is None:  # --check-determinism: it said what it found
        return
    if as_json:
        click.echo(outcome.result.model_dump_json(indent=2))
    elif not job.quiet:
        _print_comparison(outcome, wide, columns)
    code = outcome.gate(echo_err)  # the scenario's gates first, then the baseline's
    if code:
        sys.exit(code)


def _print_comparison(outcome: CompareOutcome, wide: bool, columns: tuple[str, ...] | None) -> None:
    """The terminal table, the robustness verdict, best against best and its study, and a warning for one seed."""
    from fleetchaos.reports import compare_table
    from fleetchaos.results.studies import TunedCompareResult

    result = outcome.result
    stdout_console().print(compare_table(result, wide=wide, columns=columns, width=fixed_width()))
    if result.robustness is not None:
        from fleetchaos.cli.robustness import study_lines, wrapped

        click.echo(wrapped(study_lines(result), output_width()))
    if isinstance(result, TunedCompareResult):
        from fleetchaos.cli.robustness import wrapped
        from fleetchaos.reports.best import best_lines

        head, table, lines = best_lines(result, result.tuning, fixed_width())
        click.echo(wrapped([head], output_width()))
        stdout_console().print(table)
        click.echo(wrapped(lines, output_width()))
        if result.sensitivity is not None:
            from fleetchaos.reports import sensitivity as study

            click.echo(wrapped([study.study_headline(result.sensitivity)], output_width()))
            stdout_console().print(study.tornado_table(result.sensitivity, width=fixed_width()))
            click.echo(wrapped(study.study_lines(result.sensitivity), output_width()))
    if len(outcome.seeds) < 2:
        click.echo("only one seed: no confidence intervals; use --seeds 10 or more to compare arms", err=True)
