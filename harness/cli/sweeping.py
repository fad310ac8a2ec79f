"""The ``sweep`` and ``ablation`` commands: arms over parameter grids, and the failure-type field ablation.

``sweep`` parses its options, builds a :class:`~fleetchaos.cli.sweep_job.SweepJob`, runs it and renders its result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from fleetchaos.cli.caching import cache_option
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
    scheduler_option,
    seeds_to_run,
    split_names,
    stderr_console,
    stdout_console,
    time_limit_option,
)
from fleetchaos.cli.executing import executor_option
from fleetchaos.names import check_policies

__all__ = ["ablation", "sweep"]


@click.command()
@cache_option
@click.option(
    "--file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="a sweep file (YAML/JSON) with scenarios, policies, errors, seeds, params, metric, x",
)
@click.option("--scenario", "scenario_refs", help="comma-separated catalogue names or paths [default: default]")
@param_option
@click.option("--seeds", type=click.IntRange(1, 10_000), help="number of seeds [default: 10]")
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="[default: 1]")
@click.option("--policies", help="comma-separated [default: blind-retry,backoff,structured]")
@click.option("--errors", help="comma-separated [default: generic,structured]")
@click.option(
    "--metric",
    help="the metric the report draws against the swept parameter; comma-separated for several [default: success_rate]",
)
@click.option("--x", metavar="PATH", help="the swept parameter on the curves' x axis [default: the first numeric one]")
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
    scenario_refs: str | None, policies: str | None, errors: str | None, as_json: bool,
    columns: tuple[str, ...] | None = None, **options: Any,
) -> None:  # fmt: skip
    """Every policy on every error format over scenarios, parameter grids and seeds.

    Sweep a scenario value with --param PATH=V1,V2,... (repeat for a grid), or give a
    sweep file.  The report (summary.md, report.html) draws --metric against the swept
    parameter, one curve per policy and error format, with confidence bands.  Each finished run is stored in the
    run history as it completes; after Ctrl-C or a crash, --resume runs only the rest.
    """
    from fleetchaos.cli.sweep_job import SweepJob

    job = SweepJob(
        scenarios=None if scenario_refs is None else split_names(scenario_refs),
        policies=None if policies is None else split_names(policies),
        errors=None if errors is None else split_names(errors),
        **options,
    )
    result = job.run()
    if result is None:  # --check-determinism: it said what it found
        return
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif not job.quiet:
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
