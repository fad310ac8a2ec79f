"""The ``run`` and ``compare`` commands: one arm on one seed, and every arm on the same seeds."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fleetchaos.cli.chart_pool import chart_pool, warm_chart_workers
from fleetchaos.cli.common import (
    Confidence,
    apply_single_params,
    determinism_option,
    jobs_option,
    make_report_dir,
    param_option,
    run_determinism_check,
    scenario_option,
    scheduler_option,
    seeds_to_run,
    split_names,
    stderr_console,
    stdout_console,
)
from fleetchaos.cli.history import HistorySession, history_options
from fleetchaos.errors import UserError
from fleetchaos.names import check_formats, check_policies

__all__ = ["compare", "run"]


@click.command()
@scenario_option
@param_option
@click.option("--policy", default="structured", show_default=True, help="built-in name or pkg.module:Policy")
@click.option(
    "--errors",
    default="structured",
    show_default=True,
    help="error format: generic, structured, raw, empty-success, fabricated-defaults, agent-tool-error, "
    "failure-type, subagent-result, tool-envelope or an ablation:... step (docs/formats.md)",
)
@click.option("--seed", default=1, show_default=True, type=click.IntRange(0, 2**63 - 1))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option("--report", type=click.Path(file_okay=False, path_type=Path), help="write a report folder here")
@determinism_option
@history_options
def run(
    scenario: str,
    params: tuple[str, ...],
    policy: str,
    errors: str,
    seed: int,
    as_json: bool,
    report: Path | None,
    check_determinism: bool = False,
    **history_args,
) -> None:
    """Simulate one policy on one error format for one seed.

    The run is appended to the run history; --baseline and --fail-on gate it against a
    stored run group (exit 1 on a regression).
    """
    warm = warm_chart_workers(None if check_determinism else report)  # matplotlib loads meanwhile, elsewhere
    from fleetchaos.runs.runner import run_one, versions
    from fleetchaos.scenario.load import load_scenario

    spec = load_scenario(scenario)
    check_policies((policy,), "--policy")
    check_formats((errors,), "--errors")
    spec, applied = apply_single_params(spec, scenario, params)
    make_report_dir(report)
    if check_determinism:
        run_determinism_check(spec, scenario, [(policy, errors)], [seed])
        return
    session = HistorySession(**history_args)
    session.start("run", spec, {"scenario_ref": scenario, "policies": [policy], "errors": [errors], "seeds": [seed],
                                "params": dict(applied), "versions": versions()})  # fmt: skip
    status = "failed"
    try:
        result = run_one(
            spec, policy, errors, seed, scenario_ref=scenario, keep_tasks=report is not None, params=applied,
            trace=report is not None, trace_label="this run",
        )  # fmt: skip
        result.versions = versions()
        session.add(result)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        session.finish(status)
    if report is not None:
        from fleetchaos.reports import write_run_report

        pool = chart_pool(None, warm)  # its charts are drawn side by side
        try:
            written = write_run_report(result, report, executor=pool)
        finally:
            if pool is not None:
                pool.shutdown()
        for path in written:
            stderr_console().print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2, exclude={"tasks", "timeline", "samples"}))
    else:
        from fleetchaos.reports import run_table

        stdout_console().print(run_table(result))
        click.echo(f"replay: {result.replay}")
    code = session.gate(lambda line: click.echo(line, err=True))
    if code:
        sys.exit(code)


@click.command()
@scenario_option
@click.option(
    "--seeds", type=click.IntRange(1, 10_000), help="number of seeds [default: the scenario's seeds, else 10]"
)
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first seed of the range [default: 1]")
@click.option("--policies", default="blind-retry,backoff,structured", show_default=True, help="comma-separated")
@click.option("--errors", "formats", default="generic,structured", show_default=True, help="comma-separated")
@jobs_option
@scheduler_option
@click.option("--confidence", default=0.95, show_default=True, type=Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option("--report", type=click.Path(file_okay=False, path_type=Path), help="write a report folder here")
@determinism_option
@history_options
def compare(
    scenario: str,
    seeds: int | None,
    first_seed: int | None,
    policies: str,
    formats: str,
    jobs: int | None,
    scheduler: str | None,
    confidence: float,
    as_json: bool,
    report: Path | None,
    check_determinism: bool = False,
    **history_args,
) -> None:
    """Every policy on every error format, on the same seeds (the same faults).

    Each finished run is appended to the run history as it completes; --baseline and
    --fail-on gate the comparison against a stored run group (exit 1 on a regression).
    With --report, the report also gets a per-task CSV and traced runs of the best and
    the worst arm (fleet timeline, error codes over time).
    """
    warm = warm_chart_workers(None if check_determinism else report, jobs)  # matplotlib loads meanwhile, elsewhere
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.runs.runner import compare as run_compare
    from fleetchaos.runs.runner import versions
    from fleetchaos.scenario.load import load_scenario

    spec = load_scenario(scenario)
    policy_names, format_names = split_names(policies), split_names(formats)
    if not policy_names:
        raise UserError("--policies: give at least one policy")
    if not format_names:
        raise UserError("--errors: give at least one error format")
    check_policies(policy_names, "--policies")
    check_formats(format_names, "--errors")
    make_report_dir(report)
    seed_list = seeds_to_run(spec, seeds, first_seed)
    if check_determinism:
        run_determinism_check(spec, scenario, [(p, e) for p in policy_names for e in format_names], seed_list)
        return
    session = HistorySession(**history_args)
    tasks_csv = None
    if report is not None:
        from fleetchaos.reports import TaskCsvWriter

        tasks_csv = TaskCsvWriter(report / "tasks.csv", [(p, e) for p in policy_names for e in format_names])
    session.start("compare", spec, {"scenario_ref": scenario, "policies": list(policy_names), "errors": list(format_names),
                                    "seeds": seed_list, "confidence": confidence, "versions": versions()})  # fmt: skip

    def on_run(run) -> None:
        if tasks_csv is not None:
            tasks_csv.add(run)
        session.add(run)
        advance(1)

    status = "failed"
    executor = open_executor(jobs, scheduler)
    try:
        total = len(seed_list) * len(policy_names) * len(format_names)
        with progress_bar(total, "compare", console=stderr_console()) as advance:
            result = run_compare(
                spec,
                seed_list,
                policies=policy_names,
                formats=format_names,
                confidence=confidence,
                scenario_ref=scenario,
                executor=executor,
                on_result=on_run,
                keep_tasks=report is not None,
                trace=report is not None,
            )
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        where = session.where()
        if where is not None:
            stderr_console().print(f"kept the {session.finished} finished runs in {where}", highlight=False)
        raise
    finally:
        executor.shutdown()
        session.finish(status)
        if tasks_csv is not None and status != "complete":
            tasks_csv.abort()
    if report is not None:
        from concurrent.futures import ThreadPoolExecutor

        from fleetchaos.reports import write_compare_report

        csv_path = tasks_csv.path if tasks_csv is not None and tasks_csv.rows else None
        pool = chart_pool(jobs, warm)
        # The chart workers draw while a thread here sorts tasks.csv into place.
        with ThreadPoolExecutor(1, thread_name_prefix="fleetchaos-tasks-csv") as side:
            closing = side.submit(tasks_csv.close) if tasks_csv is not None else None
            try:
                written = write_compare_report(result, report, tasks_csv=csv_path, executor=pool)
            finally:
                if pool is not None:
                    pool.shutdown()
            if closing is not None:
                closing.result()
        for path in written:
            stderr_console().print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        from fleetchaos.reports import compare_table

        stdout_console().print(compare_table(result))
        if len(seed_list) < 2:
            click.echo("only one seed: no confidence intervals; use --seeds 10 or more to compare arms", err=True)
    code = session.gate(lambda line: click.echo(line, err=True))
    if code:
        sys.exit(code)
