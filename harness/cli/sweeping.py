"""The ``sweep`` and ``ablation`` commands: arms over parameter grids, and the failure-type field ablation."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from fleetchaos.cli.caching import cache_option
from fleetchaos.cli.chart_pool import chart_pool, warm_chart_workers
from fleetchaos.cli.common import (
    Confidence,
    columns_option,
    determinism_option,
    fixed_width,
    jobs_option,
    make_report_dir,
    nonempty_path,
    param_option,
    quiet_option,
    report_option,
    run_determinism_check,
    scheduler_option,
    seeds_to_run,
    split_names,
    stderr_console,
    stdout_console,
    time_limit_option,
)
from fleetchaos.cli.executing import executor_option
from fleetchaos.errors import UserError
from fleetchaos.names import check_policies

__all__ = ["ablation", "sweep"]


@click.command()
@cache_option
@click.option(
    "--file",
    "sweep_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="a sweep file (YAML/JSON) with scenarios, policies, errors, seeds, params, metric, x",
)
@click.option("--scenario", "scenario_refs", help="comma-separated catalogue names or paths [default: default]")
@param_option
@click.option("--seeds", type=click.IntRange(1, 10_000), help="number of seeds [default: 10]")
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="[default: 1]")
@click.option("--policies", help="comma-separated [default: blind-retry,backoff,structured]")
@click.option("--errors", "formats", help="comma-separated [default: generic,structured]")
@click.option(
    "--metric",
    help="the metric the report draws against the swept parameter; comma-separated for several [default: success_rate]",
)
@click.option(
    "--x", "x_param", metavar="PATH", help="the swept parameter on the curves' x axis [default: the first numeric one]"
)
@jobs_option
@scheduler_option
@executor_option
@click.option("--confidence", type=Confidence(0.5, 0.999), help="[default: 0.95]")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@columns_option
@quiet_option
@report_option
@time_limit_option
@click.option(
    "--history",
    "history_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="run-history store each finished run is written to as it completes "
    "[default: $FLEETCHAOS_HISTORY or fleetchaos-out/history.db]",
)
@click.option("--no-history", is_flag=True, help="do not store runs (a crash or Ctrl-C then keeps nothing)")
@click.option("--resume", is_flag=True, help="continue the same sweep stored in the history: skip the runs it holds")
@determinism_option
def sweep(
    sweep_file: Path | None,
    scenario_refs: str | None,
    params: tuple[str, ...],
    seeds: int | None,
    first_seed: int | None,
    policies: str | None,
    formats: str | None,
    metric: str | None,
    x_param: str | None,
    jobs: int | None,
    scheduler: str | None,
    confidence: float | None,
    as_json: bool,
    report: Path | None,
    history_path: Path | None,
    no_history: bool,
    resume: bool,
    time_limit: float | None = None,
    check_determinism: bool = False,
    columns: tuple[str, ...] | None = None,
    quiet: bool = False,
) -> None:
    """Every policy on every error format over scenarios, parameter grids and seeds.

    Sweep a scenario value with --param PATH=V1,V2,... (repeat for a grid), or give a
    sweep file.  The report (summary.md, report.html) draws --metric against the swept
    parameter, one curve per policy and error format, with confidence bands.  Each finished run is stored in the
    run history as it completes; after Ctrl-C or a crash, --resume runs only the rest.
    """
    warm = warm_chart_workers(None if check_determinism else report, jobs)  # matplotlib loads meanwhile, elsewhere
    from pydantic import ValidationError

    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.runs.sweep import SweepSpec, load_sweep_file, open_group, plan_sweep, run_sweep
    from fleetchaos.scenario.params import parse_param_option

    base = load_sweep_file(sweep_file).model_dump(exclude_unset=True) if sweep_file else {}
    overrides: dict = {}
    if scenario_refs is not None:
        overrides["scenarios"] = list(split_names(scenario_refs))
    if policies is not None:
        overrides["policies"] = list(split_names(policies))
    if formats is not None:
        overrides["errors"] = list(split_names(formats))
    for key, value in (
        ("seeds", seeds),
        ("first_seed", first_seed),
        ("metric", metric),
        ("x", x_param),
        ("confidence", confidence),
    ):
        if value is not None:
            overrides[key] = value
    grid = dict(base.get("params", {}))
    given = set()
    for option in params:
        path, values = parse_param_option(option)
        if path in given:
            raise UserError(f"--param {path}: given twice; put every value in one --param {path}=V1,V2,...")
        given.add(path)
        grid[path] = values
    for key, what in (("scenarios", "--scenario"), ("policies", "--policies"), ("errors", "--errors")):
        if key in overrides and not overrides[key]:
            raise UserError(f"{what}: give at least one")
    try:
        spec = SweepSpec.model_validate({**base, **overrides, "params": grid})
    except ValidationError as exc:
        from fleetchaos.scenario.load import format_validation_error

        source = f"{sweep_file} with the command line's options" if sweep_file else "sweep options"
        raise UserError(format_validation_error(source, exc)) from None
    if resume and no_history:
        raise UserError("--resume reads the run history: drop --no-history")
    plan = plan_sweep(spec)
    if time_limit is not None:
        plan.variants[:] = [replace(v, time_limit_s=time_limit) for v in plan.variants]
    make_report_dir(report)
    if not quiet:
        from fleetchaos.cli.expecting import note_unjudged

        note_unjudged(
            [(v.ref or v.scenario.name, v.scenario) for v in plan.variants],
            "sweep",
            lambda line: click.echo(line, err=True),
            swept=True,
        )
    if check_determinism:
        from fleetchaos.runs.runner import replay_command
        from fleetchaos.scenario.load import check_rows_fit

        for variant in plan.variants:
            check_rows_fit(variant.scenario, "--check-determinism")

        runs = []
        for job in plan.jobs:
            variant = plan.variants[job.variant]
            ref = variant.ref or variant.scenario.name
            policy = variant.policy_spec(job.policy)
            replay = replay_command(ref, policy, job.errors, job.seed, variant.scenario_params)
            runs.append((variant.scenario, policy, job.errors, job.seed, replay))
        run_determinism_check(None, "", [], [], runs=runs)
        return
    err = stderr_console()
    # Connect (or start the local workers) before touching the history, so a cluster that
    # cannot be reached leaves no empty group behind.
    executor = open_executor(jobs, scheduler)
    store = group_id = None
    done: dict = {}
    if not no_history:
        from fleetchaos.gates import history

        try:
            store = history.open_store(history_path)
            group_id, done = open_group(store, plan, resume=resume)
        except BaseException:
            executor.shutdown()
            raise
        if resume and done and not quiet:
            err.print(
                f"resuming sweep {plan.sweep_id} (history group #{group_id}): "
                f"{len(done)} of {len(plan.keys)} runs already stored in {store.path}",
                highlight=False,
            )
        elif resume and not quiet:
            err.print(
                f"nothing of this sweep is stored in {store.path} yet: running all {len(plan.keys)} runs",
                highlight=False,
            )
    todo = len(plan.keys) - len(done)
    finished = 0

    def on_result(_key, result) -> None:
        nonlocal finished
        if store is not None and group_id is not None:  # (opened together)
            store.add_run(group_id, result)
        finished += 1
        advance(1)

    status = "failed"
    try:
        with progress_bar(todo, "sweep", console=err, show=not quiet) as advance:
            result = run_sweep(plan, executor=executor, on_result=on_result, done=done)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        kept = (
            f"; they are stored in {store.path}: run the same command with --resume to finish"
            if store is not None
            else "; nothing was kept (--no-history)"
        )
        err.print(f"interrupted: {finished} of {todo} runs finished{kept}", highlight=False)
        raise  # the command line's handler exits 130 (Ctrl-C) or 143 (SIGTERM)
    finally:
        executor.shutdown()
        if store is not None and group_id is not None:
            store.finish_group(group_id, status)
            store.close()
    if report is not None:
        from fleetchaos.reports.sweep import write_sweep_report

        pool = chart_pool(jobs, warm)  # the curves are drawn side by side
        try:
            written = write_sweep_report(result, report, pool)
        finally:
            if pool is not None:
                pool.shutdown()
        for file in [] if quiet else written:
            err.print(f"wrote {file}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    if quiet:
        return
    from fleetchaos.reports.sweep import sweep_table

    stdout_console().print(sweep_table(result, columns, width=fixed_width()))


@click.command()
@cache_option
@click.option(
    "--scenario", default="field_ablation", show_default=True, help="catalogue name or path to a .yaml/.json file"
)
@click.option(
    "--seeds", type=click.IntRange(1, 10_000), help="number of seeds [default: the scenario's seeds, else 10]"
)
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first seed of the range [default: 1]")
@click.option(
    "--policy",
    default="failure-type-router",
    show_default=True,
    help="built-in name, pkg.module:Policy, or pkg.module:RETRY (a tenacity retry config)",
)
@jobs_option
@scheduler_option
@executor_option
@click.option("--confidence", default=0.95, show_default=True, type=Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@columns_option
@quiet_option
@click.option(
    "--report",
    type=click.Path(file_okay=False),
    callback=nonempty_path,
    help="write ablation.json, ablation.md and ablation.png here",
)
def ablation(
    scenario: str,
    seeds: int | None,
    first_seed: int | None,
    policy: str,
    jobs: int | None,
    scheduler: str | None,
    confidence: float,
    as_json: bool,
    report: Path | None,
    columns: tuple[str, ...] | None = None,
    quiet: bool = False,
) -> None:
    """Field ablation: the failure-type envelope with its fields added one at a time.

    Runs one policy on a bare generic baseline and on each ablation step (failure_type;
    + partial_results; + alternatives; + retry_recommended), all on the same seeds, and
    prints recovery rate, wasted retries and silent failures per step with confidence
    intervals and the paired gain over the previous step (docs/ablation.md).
    """
    import json

    from fleetchaos.runs.ablation import ablation_document, run_ablation
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.scenario.load import load_scenario

    spec = load_scenario(scenario)
    if not quiet:
        from fleetchaos.cli.expecting import note_unjudged

        note_unjudged([(scenario, spec)], "ablation", lambda line: click.echo(line, err=True))
    check_policies((policy,), "--policy")
    make_report_dir(report)
    seed_list = seeds_to_run(spec, seeds, first_seed)
    executor = open_executor(jobs, scheduler)
    try:
        result = run_ablation(
            spec, seed_list, policy=policy, confidence=confidence, scenario_ref=scenario, executor=executor
        )
    finally:
        executor.shutdown()
    doc = ablation_document(result, policy)
    if report is not None:
        from fleetchaos.reports.ablation import write_ablation_report

        for path in write_ablation_report(doc, report):
            if not quiet:
                stderr_console().print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    if quiet:
        return
    from fleetchaos.reports.ablation import ablation_table

    click.echo(ablation_table(doc, columns), nl=False)
