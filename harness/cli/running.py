"""The ``run`` and ``compare`` commands: one arm on one seed, and every arm on the same seeds."""

from __future__ import annotations

import atexit
import gc
import sys
import threading
from pathlib import Path
from typing import Any

import click

from fleetchaos.cli.caching import cache_option
from fleetchaos.cli.chart_pool import chart_pool, preload_charts, runs_fill_cores, warm_chart_workers
from fleetchaos.cli.common import (
    Confidence,
    apply_single_params,
    columns_option,
    determinism_option,
    fixed_width,
    jobs_option,
    make_report_dir,
    policies_with_params,
    policy_param_options,
    quiet_option,
    report_option,
    run_determinism_check,
    run_determinism_option,
    scenario_option,
    scheduler_option,
    seeds_to_run,
    single_param_option,
    split_names,
    stderr_console,
    stdout_console,
    time_limit_option,
    traces_option,
)
from fleetchaos.cli.executing import executor_option
from fleetchaos.cli.expecting import ExpectGates, no_expect_option
from fleetchaos.cli.history import HistorySession, check_resume, history_options, start_compare
from fleetchaos.cli.tuning import TUNE_OPTIONS, best_arms, tune_options
from fleetchaos.errors import UserError
from fleetchaos.names import check_formats

__all__ = ["compare", "run"]


def _trace_folder(folder: Path | None, spec):
    """The ``--traces`` folder as a writer of OTLP JSON files, or None without the option."""
    if folder is None:
        return None
    from fleetchaos.traces.otlp_write import TraceFolder

    return TraceFolder(folder, spec.name)


def _echo_err(line: str) -> None:
    click.echo(line, err=True)


def _print_traces(traces, quiet: bool = False) -> None:
    for summary in [] if traces is None or quiet else traces.written:
        stderr_console().print(
            f"wrote {summary.path} ({summary.traces} traces, {summary.spans} spans, OTLP JSON)", highlight=False
        )


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
    expect = ExpectGates(spec, scenario, [(given, policy, errors)], hint="name it with --policy and --errors",
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
    session.expect_arms([(policy, errors)])  # a baseline with nothing to compare is refused before the run
    session.start("run", spec, {"scenario_ref": scenario, "policies": [policy], "errors": [errors], "seeds": [seed],
                                "params": dict(applied), "versions": versions()})  # fmt: skip
    status = "failed"
    try:
        traces = _trace_folder(traces_dir, spec)
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
    _print_traces(traces, quiet)
    if as_json:
        click.echo(result.model_dump_json(indent=2, exclude={"tasks", "timeline", "samples"}))
    elif not quiet:
        from fleetchaos.reports import run_table

        stdout_console().print(run_table(result, columns))
        click.echo(f"replay: {result.replay}")
    code = max(expect.gate(_echo_err), session.gate(_echo_err))  # the scenario's gates first, then the baseline's
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
    default="blind-retry,backoff,structured",
    show_default=True,
    help="comma-separated; 'best' is the policy tuned on each format (see --tune)",
)
@click.option("--errors", "formats", default="generic,structured", show_default=True, help="comma-separated")
@click.option(
    "--tune",
    "tune_arms",
    is_flag=True,
    help="best against best: tune a policy per format on training seeds (the tune options below), then run each "
    "tuned policy on every format; replaces the default --policies with 'best', or adds it to yours",
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
    help="then vary the scenario's main assumptions one at a time (the ranges of `fleetchaos robustness`) on "
    "this many seeds, and state in the report and the finding where the two leading arms swap places",
)
@traces_option
@determinism_option
@click.option(
    "--resume", is_flag=True, help="continue this comparison stored in the history: run only the runs it lacks"
)
@no_expect_option
@history_options
def compare(
    scenario: str,
    params: tuple[str, ...],
    seeds: int | None,
    first_seed: int | None,
    policies: str,
    formats: str,
    tune_arms: bool,
    jobs: int | None,
    scheduler: str | None,
    confidence: float,
    as_json: bool,
    report: Path | None,
    wide: bool = False,
    columns: tuple[str, ...] | None = None,
    quiet: bool = False,
    robustness_seeds: int | None = None,
    time_limit: float | None = None,
    traces_dir: Path | None = None,
    check_determinism: bool = False,
    resume: bool = False,
    no_expect: bool = False,
    **history_args: Any,
) -> None:
    """Every policy on every error format, on the same seeds (the same faults).

    Each finished run is appended to the run history as it completes; --baseline and
    --fail-on gate the comparison against a stored run group (exit 1 on a regression),
    and the scenario's expect: gates are judged on every arm they name (exit 1 when one fails).
    With --report, the report also gets a per-task CSV and traced runs of the best and
    the worst arm (fleet timeline, error codes over time); --traces writes those traced
    runs as OTLP JSON.  After Ctrl-C or a crash, the same command with --resume runs only the rest.
    """
    charts = None if check_determinism else report
    # matplotlib loads meanwhile: in a forkserver, or here once the runs' workers are started
    # when they fill every core (chart_pool.py says why).
    busy = charts is not None and runs_fill_cores(jobs, scheduler)
    warm: bool | threading.Thread = warm_chart_workers(None if busy else charts, jobs)
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.best import BEST
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.runs.runner import compare as run_compare
    from fleetchaos.runs.runner import versions
    from fleetchaos.scenario.load import check_rows_fit, load_scenario

    tune_opts = {k: history_args.pop(k) for k in TUNE_OPTIONS}
    if wide and columns is not None:
        raise UserError("--wide with --columns: --wide shows every figure, --columns the ones named; give one")
    spec = load_scenario(scenario)
    policy_names, format_names = split_names(policies), split_names(formats)
    if tune_arms and BEST not in policy_names:
        source = click.get_current_context().get_parameter_source("policies")
        given = source is not None and source.name != "DEFAULT"
        policy_names = (*policy_names, BEST) if given else (BEST,)
    tuning = BEST in policy_names
    typed = policy_names  # as typed: an expect: gate may name an arm so
    if not policy_names:
        raise UserError("--policies: give at least one policy")
    if not format_names:
        raise UserError("--errors: give at least one error format")
    scenario_params, policy_params = policy_param_options(params, "compare")
    if tuning and policy_params:
        raise UserError("--param policy.*: with 'best' arms, give parameters in each named policy's spec instead")
    named = tuple(p for p in policy_names if p != BEST)
    named = policies_with_params(named, policy_params, "--policies") if named else ()
    policy_names = tuple(BEST if p == BEST else named[sum(q != BEST for q in policy_names[:i])]
                         for i, p in enumerate(policy_names))  # fmt: skip
    check_formats(format_names, "--errors")
    spec, applied = apply_single_params(spec, scenario, scenario_params, "compare")
    arms = [(t, p, e) for t, p in zip(typed, policy_names) for e in format_names]
    expect = ExpectGates(spec, scenario, arms, hint="add its policy to --policies and its format to --errors",
                         skip=no_expect or check_determinism,
                         allow_policy_errors=history_args.get("allow_policy_errors", False))  # fmt: skip
    if report is not None or check_determinism:
        check_rows_fit(spec, "--report" if report is not None else "--check-determinism")
    make_report_dir(report)
    make_report_dir(traces_dir, "--traces")
    seed_list = seeds_to_run(spec, seeds, first_seed)
    if robustness_seeds is not None and check_determinism:
        raise UserError("--robustness with --check-determinism: check determinism on its own, then compare")
    if check_determinism and tuning:
        raise UserError("--check-determinism with --tune: tune first, then check the tuned specs by name")
    check_resume(resume, history_args, tuning, check_determinism)
    base = best = tune_executor = None
    if tuning:
        tune_executor = open_executor(jobs, scheduler)  # kept for the comparison's own runs
        try:
            policy_names, base, best = best_arms(
                spec, scenario, applied, policy_names, format_names, seed_list, tune_opts, tune_executor
            )
        except BaseException:
            tune_executor.shutdown()
            raise
    if check_determinism:
        run_determinism_check(spec, scenario, [(p, e) for p in policy_names for e in format_names], seed_list)
        return
    session = HistorySession(**history_args)
    session.expect_arms((p, e) for p in policy_names for e in format_names)  # before any run of the comparison
    # Connect (or start the local workers) before touching the history, so a cluster that
    # cannot be reached leaves no group behind.
    executor = tune_executor if tune_executor is not None else open_executor(jobs, scheduler)
    if busy:
        warm = preload_charts()  # the runs' workers are forked: this process may run a second thread
    tasks_csv = None
    try:
        if report is not None:
            from fleetchaos.reports import TaskCsvWriter

            tasks_csv = TaskCsvWriter(report / "tasks.csv", [(p, e) for p in policy_names for e in format_names])
        meta = {"scenario_ref": scenario, "policies": list(policy_names), "errors": list(format_names),
                "seeds": seed_list, "confidence": confidence, "versions": versions()}  # fmt: skip
        if applied:
            meta["params"] = dict(applied)
        if best is not None:
            meta["tuned"] = dict(best)
        done = start_compare(session, spec, meta, (policy_names, format_names, seed_list, applied), resume)
        if done and tasks_csv is not None:  # stored runs keep no per-task rows: a partial tasks.csv would mislead
            tasks_csv.abort()
            tasks_csv.partial.unlink(missing_ok=True)
            why = f"{len(done)} runs come from the history, which keeps no per-task rows"
            stderr_console().print(
                f"{tasks_csv.path} is not written: {why}; compare without --resume for it",
                markup=False,
                highlight=False,
            )
            tasks_csv = None
    except BaseException:
        executor.shutdown()
        session.finish("failed")
        raise

    def on_run(run) -> None:
        if tasks_csv is not None:
            tasks_csv.add(run)
        session.add(run)
        advance(1)

    status = "failed"
    traces = _trace_folder(traces_dir, spec)
    try:
        total = len(seed_list) * len(policy_names) * len(format_names) - len(done)
        with progress_bar(total, "compare", console=stderr_console(), show=not quiet) as advance:
            result = run_compare(
                spec,
                seed_list,
                policies=policy_names,
                formats=format_names,
                confidence=confidence,
                scenario_ref=scenario,
                executor=executor,
                on_result=on_run,
                task_csv=report is not None,
                trace=report is not None or traces is not None,
                on_trace=None if traces is None else traces.write,
                params=applied,
                time_limit_s=time_limit,
                done=done,
            )
        if base is not None and best is not None:
            from fleetchaos.results.studies import TunedCompareResult
            from fleetchaos.runs.best import tuning_record, with_aliases

            result = TunedCompareResult(**dict(with_aliases(result, best)), tuning=tuning_record(result, base, best))
        if robustness_seeds is not None:
            from fleetchaos.cli.robustness import with_flips

            result = with_flips(result, spec, scenario, seed_list[0], robustness_seeds, executor, confidence)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        where = session.where()
        if where is not None:
            kept = f"kept the {session.finished + session.restored} finished runs in {where}"
            stderr_console().print(f"{kept}; the same command with --resume finishes it", markup=False, highlight=False)
        raise
    finally:
        executor.shutdown()
        session.finish(status)
        if tasks_csv is not None and status != "complete":
            tasks_csv.abort()
    expect.judge_compare(result)
    if report is not None:
        from concurrent.futures import ThreadPoolExecutor

        from fleetchaos.reports import write_compare_report

        csv_path = tasks_csv.path if tasks_csv is not None and tasks_csv.rows else None
        pool = chart_pool(jobs, warm)
        # The chart workers draw while a thread here puts tasks.csv together.
        with ThreadPoolExecutor(1, thread_name_prefix="fleetchaos-tasks-csv") as side:
            closing = side.submit(tasks_csv.close) if tasks_csv is not None else None
            try:
                written = write_compare_report(result, report, tasks_csv=csv_path, executor=pool)
            finally:
                if pool is not None:
                    pool.shutdown()
            if closing is not None:
                closing.result()
        # Everything is written.  The collector's last passes when the interpreter exits would
        # walk every object the report left (the results, matplotlib's caches): 0.2 s for
        # nothing, since they die with the process.  Frozen at exit, they are skipped.
        atexit.register(gc.freeze)
        for path in [] if quiet else written:
            stderr_console().print(f"wrote {path}", highlight=False)
    _print_traces(traces, quiet)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif not quiet:
        from fleetchaos.reports import compare_table

        stdout_console().print(compare_table(result, wide=wide, columns=columns, width=fixed_width()))
        if result.robustness is not None:
            from fleetchaos.cli.common import output_width
            from fleetchaos.cli.robustness import study_lines, wrapped

            click.echo(wrapped(study_lines(result), output_width()))
        from fleetchaos.results.studies import TunedCompareResult

        if isinstance(result, TunedCompareResult):
            from fleetchaos.reports.studies import gap_headline, gap_table

            click.echo(gap_headline(result.tuning))
            stdout_console().print(gap_table(result.tuning, fixed_width()))
        if len(seed_list) < 2:
            click.echo("only one seed: no confidence intervals; use --seeds 10 or more to compare arms", err=True)
    code = max(expect.gate(_echo_err), session.gate(_echo_err))  # the scenario's gates first, then the baseline's
    if code:
        sys.exit(code)
