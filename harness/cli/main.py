"""The ``fleetchaos`` command line (click + rich).

Data goes to stdout, messages to stderr.  Exit codes: 0 ok, 1 regression gate failed,
2 invalid input or usage, 3 internal error, 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from fleetchaos.cli.history import HistorySession, history_options
from fleetchaos.errors import UserError
from fleetchaos.names import allow_local_policies, check_formats, check_policies
from fleetchaos.scenario.messages import _did_you_mean

EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


class _Confidence(click.FloatRange):
    """A confidence level in [0.5, 0.999]; unlike click.FloatRange it refuses nan (which passes every bound)."""

    def convert(self, value, param, ctx):
        """The float, or a usage error naming the option."""
        number = super().convert(value, param, ctx)
        if number != number:
            self.fail(f"{value!r} is not a number in the range 0.5<=x<=0.999.", param, ctx)
        return number


def _stdout() -> Console:
    return Console(soft_wrap=False, width=max(160, Console().width))


def _stderr() -> Console:
    return Console(stderr=True, soft_wrap=True)


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _make_report_dir(path: Path | None, option: str = "--report") -> None:
    """Create a report folder before any run starts, so a path that cannot be written is a user error, not a crash."""
    if path is None:
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"{option} {path}: cannot create the report folder ({exc.strerror or exc}); choose another path"
        ) from None


def _apply_single_params(spec, ref: str, options: tuple[str, ...]):
    """Apply ``--param PATH=VALUE`` options that each give exactly one value."""
    from fleetchaos.runs.sweep import scenario_source
    from fleetchaos.scenario.params import apply_params, parse_param_option

    pairs = []
    for option in options:
        path, values = parse_param_option(option)
        if len(values) != 1:
            raise UserError(
                f"--param {option}: run takes one value per parameter; use `fleetchaos sweep` to sweep several"
            )
        pairs.append((path, values[0]))
    return apply_params(spec, pairs, source=scenario_source(ref))


class _Group(click.Group):
    """Turns user errors into one message and exit 2, and crashes into exit 3."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as exc:
            _stderr().print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, markup=True)
            sys.exit(EXIT_USAGE)
        except KeyboardInterrupt:
            _stderr().print("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except Exception as exc:  # an internal error, never a user's mistake
            if os.environ.get("FLEETCHAOS_DEBUG"):
                traceback.print_exc()
            _stderr().print(
                f"[red]internal error:[/red] {type(exc).__name__}: {exc}\n"
                "This is a bug in fleetchaos; set FLEETCHAOS_DEBUG=1 to see the traceback.",
                highlight=False,
            )
            sys.exit(EXIT_INTERNAL)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fleetchaos")
def main() -> None:
    """Chaos and fault injection for fleets of LLM agents.

    Simulates a fleet of orchestrators and workers calling tools that fail, renders each
    failure through an error format, lets recovery policies react, and compares what the
    orchestrator claimed with what really happened.
    """


def _seed_list(spec, seeds: int | None, first_seed: int | None) -> list[int]:
    """The seeds to run: --seeds/--first-seed when given, else the scenario's own seeds, else 1..10."""
    if seeds is None and first_seed is None and spec.seeds:
        return list(spec.seeds)
    first = 1 if first_seed is None else first_seed
    return list(range(first, first + (10 if seeds is None else seeds)))


_scenario_option = click.option(
    "--scenario", default="default", show_default=True, help="catalogue name or path to a .yaml/.json file"
)
_jobs_option = click.option(
    "--jobs", type=click.IntRange(1, 512), help="local worker processes; 1 runs in this process [default: one per core]"
)
_scheduler_option = click.option(
    "--scheduler",
    metavar="tcp://HOST:PORT",
    help="run on a Dask distributed cluster (needs: pip install 'fleetchaos[dask]')",
)
_param_option = click.option(
    "--param",
    "params",
    multiple=True,
    metavar="PATH=V1,V2,...",
    help="set a scenario value by dotted path, e.g. faults[0].probability=0.1 or fleet.workers=50",
)
_determinism_option = click.option(
    "--check-determinism",
    is_flag=True,
    help="only check: run every arm on every seed twice, traced, and compare SHA-256 hashes of the event "
    "logs (exit 0 if identical, 1 naming the arm and seed that differ); nothing is stored",
)


def _check_determinism(spec, scenario_ref: str, arms: list[tuple[str, str]], seeds: list[int], runs=None) -> None:
    """The --check-determinism mode: exit 0 if every arm and seed ran the same twice, else 1.

    ``runs`` (a sweep's ``(scenario, policy, errors, seed, replay)`` tuples) replaces spec x arms x seeds.
    """
    from fleetchaos.runs.determinism import check_determinism, check_runs

    err = _stderr()
    if runs is None:
        mismatches = check_determinism(spec, scenario_ref, arms, seeds)
        runs = len(arms) * len(seeds)
    else:
        mismatches = check_runs(runs)
        runs = len(runs)
    for mismatch in mismatches:
        err.print(f"[red]error:[/red] {escape(mismatch.message())}", highlight=False)
    if mismatches:
        err.print(
            f"determinism check failed: {len(mismatches)} of {runs} runs differ between two runs", highlight=False
        )
        sys.exit(1)
    err.print(f"determinism check passed: {runs} runs, each run twice, identical event logs", highlight=False)


@main.command()
@_scenario_option
@_param_option
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
@_determinism_option
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
    from fleetchaos.runs.runner import run_one, versions
    from fleetchaos.scenario.load import load_scenario

    spec = load_scenario(scenario)
    check_policies((policy,), "--policy")
    check_formats((errors,), "--errors")
    spec, applied = _apply_single_params(spec, scenario, params)
    _make_report_dir(report)
    if check_determinism:
        _check_determinism(spec, scenario, [(policy, errors)], [seed])
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

        for path in write_run_report(result, report):
            _stderr().print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2, exclude={"tasks", "timeline", "samples"}))
    else:
        from fleetchaos.reports import run_table

        _stdout().print(run_table(result))
        click.echo(f"replay: {result.replay}")
    code = session.gate(lambda line: click.echo(line, err=True))
    if code:
        sys.exit(code)


@main.command()
@_scenario_option
@click.option(
    "--seeds", type=click.IntRange(1, 10_000), help="number of seeds [default: the scenario's seeds, else 10]"
)
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first seed of the range [default: 1]")
@click.option("--policies", default="blind-retry,backoff,structured", show_default=True, help="comma-separated")
@click.option("--errors", "formats", default="generic,structured", show_default=True, help="comma-separated")
@_jobs_option
@_scheduler_option
@click.option("--confidence", default=0.95, show_default=True, type=_Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option("--report", type=click.Path(file_okay=False, path_type=Path), help="write a report folder here")
@_determinism_option
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
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.runs.runner import compare as run_compare
    from fleetchaos.runs.runner import versions
    from fleetchaos.scenario.load import load_scenario

    spec = load_scenario(scenario)
    policy_names, format_names = _split(policies), _split(formats)
    if not policy_names:
        raise UserError("--policies: give at least one policy")
    if not format_names:
        raise UserError("--errors: give at least one error format")
    check_policies(policy_names, "--policies")
    check_formats(format_names, "--errors")
    _make_report_dir(report)
    seed_list = _seed_list(spec, seeds, first_seed)
    if check_determinism:
        _check_determinism(spec, scenario, [(p, e) for p in policy_names for e in format_names], seed_list)
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
        with progress_bar(total, "compare", console=_stderr()) as advance:
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
            _stderr().print(f"kept the {session.finished} finished runs in {where}", highlight=False)
        raise
    finally:
        executor.shutdown()
        session.finish(status)
        if tasks_csv is not None and status != "complete":
            tasks_csv.abort()
    if report is not None:
        from fleetchaos.reports import write_compare_report

        csv_path = tasks_csv.close() if tasks_csv is not None else None
        for path in write_compare_report(result, report, tasks_csv=csv_path):
            _stderr().print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        from fleetchaos.reports import compare_table

        _stdout().print(compare_table(result))
        if len(seed_list) < 2:
            click.echo("only one seed: no confidence intervals; use --seeds 10 or more to compare arms", err=True)
    code = session.gate(lambda line: click.echo(line, err=True))
    if code:
        sys.exit(code)


@main.command()
@click.option(
    "--file",
    "sweep_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="a sweep file (YAML/JSON) with scenarios, policies, errors, seeds, params, metric, x",
)
@click.option("--scenario", "scenario_refs", help="comma-separated catalogue names or paths [default: default]")
@_param_option
@click.option("--seeds", type=click.IntRange(1, 10_000), help="number of seeds [default: 10]")
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="[default: 1]")
@click.option("--policies", help="comma-separated [default: blind-retry,backoff,structured]")
@click.option("--errors", "formats", help="comma-separated [default: generic,structured]")
@click.option(
    "--metric",
    help="the metric the report draws against the swept parameter; comma-separated for several [default: recovery_rate]",
)
@click.option(
    "--x", "x_param", metavar="PATH", help="the swept parameter on the curves' x axis [default: the first numeric one]"
)
@_jobs_option
@_scheduler_option
@click.option("--confidence", type=_Confidence(0.5, 0.999), help="[default: 0.95]")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option("--report", type=click.Path(file_okay=False, path_type=Path), help="write a report folder here")
@click.option(
    "--history",
    "history_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="run-history store each finished run is written to as it completes "
    "[default: $FLEETCHAOS_HISTORY or fleetchaos-out/history.db]",
)
@click.option("--no-history", is_flag=True, help="do not store runs (a crash or Ctrl-C then keeps nothing)")
@click.option("--resume", is_flag=True, help="continue the same sweep stored in the history: skip the runs it holds")
@_determinism_option
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
    check_determinism: bool = False,
) -> None:
    """Every policy on every error format over scenarios, parameter grids and seeds.

    Sweep a scenario value with --param PATH=V1,V2,... (repeat for a grid), or give a
    sweep file.  The report draws --metric against the swept parameter, one curve per
    policy and error format, with confidence bands.  Each finished run is stored in the
    run history as it completes; after Ctrl-C or a crash, --resume runs only the rest.
    """
    from pydantic import ValidationError

    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.runs.sweep import SweepSpec, load_sweep_file, open_group, plan_sweep, run_sweep
    from fleetchaos.scenario.params import parse_param_option

    base = load_sweep_file(sweep_file).model_dump(exclude_unset=True) if sweep_file else {}
    overrides: dict = {}
    if scenario_refs is not None:
        overrides["scenarios"] = list(_split(scenario_refs))
    if policies is not None:
        overrides["policies"] = list(_split(policies))
    if formats is not None:
        overrides["errors"] = list(_split(formats))
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
    _make_report_dir(report)
    if check_determinism:
        from fleetchaos.runs.runner import replay_command

        runs = []
        for job in plan.jobs:
            variant = plan.variants[job.variant]
            ref = variant.ref or variant.scenario.name
            replay = replay_command(ref, job.policy, job.errors, job.seed, variant.params)
            runs.append((variant.scenario, job.policy, job.errors, job.seed, replay))
        _check_determinism(None, "", [], [], runs=runs)
        return
    err = _stderr()
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
        if resume and done:
            err.print(
                f"resuming sweep {plan.sweep_id} (history group #{group_id}): "
                f"{len(done)} of {len(plan.keys)} runs already stored in {store.path}",
                highlight=False,
            )
        elif resume:
            err.print(
                f"nothing of this sweep is stored in {store.path} yet: running all {len(plan.keys)} runs",
                highlight=False,
            )
    todo = len(plan.keys) - len(done)
    finished = 0

    def on_result(_key, result) -> None:
        nonlocal finished
        if store is not None:
            store.add_run(group_id, result)
        finished += 1
        advance(1)

    status = "failed"
    try:
        with progress_bar(todo, "sweep", console=err) as advance:
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
        sys.exit(EXIT_INTERRUPTED)
    finally:
        executor.shutdown()
        if store is not None:
            store.finish_group(group_id, status)
            store.close()
    if report is not None:
        from fleetchaos.reports.sweep import write_sweep_report

        for path in write_sweep_report(result, report):
            err.print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    from fleetchaos.reports.sweep import sweep_table

    _stdout().print(sweep_table(result))


@main.command()
@click.option(
    "--scenario", default="field_ablation", show_default=True, help="catalogue name or path to a .yaml/.json file"
)
@click.option(
    "--seeds", type=click.IntRange(1, 10_000), help="number of seeds [default: the scenario's seeds, else 10]"
)
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first seed of the range [default: 1]")
@click.option("--policy", default="failure-type-router", show_default=True, help="built-in name or pkg.module:Policy")
@_jobs_option
@_scheduler_option
@click.option("--confidence", default=0.95, show_default=True, type=_Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option(
    "--report",
    type=click.Path(file_okay=False, path_type=Path),
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
    check_policies((policy,), "--policy")
    _make_report_dir(report)
    seed_list = _seed_list(spec, seeds, first_seed)
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
            _stderr().print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    from fleetchaos.reports.ablation import ablation_table

    click.echo(ablation_table(doc), nl=False)


@main.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="the report folder to write")  # fmt: skip
def report(results: Path, out_dir: Path) -> None:
    """Write a report folder (summary.md, report.html, charts, results.json) from a RESULTS.json.

    RESULTS.json is the results.json of a `run` or `compare` report, or the output of
    `compare --json`.  A tasks.csv beside it is copied into the report.
    """
    from fleetchaos.cli.history import fill_comparisons
    from fleetchaos.reports import write_report

    _make_report_dir(out_dir, "-o")
    try:
        written = write_report(results, out_dir, prepare=fill_comparisons)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    for path in written:
        _stderr().print(f"wrote {path}", highlight=False)


@main.command()
@click.argument("ref", required=False)
@click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path),
              help="the run-history store [default: $FLEETCHAOS_HISTORY or fleetchaos-out/history.db]")  # fmt: skip
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100_000), help="newest groups to list")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def history(ref: str | None, history_path: Path | None, limit: int, as_json: bool) -> None:
    """List stored run groups, or with REF (an id, 'latest' or a label) the runs of one group."""
    from fleetchaos.cli.history import show_history

    show_history(ref, history_path, limit, as_json, _stdout())


@main.group()
def scenarios() -> None:
    """The built-in scenario catalogue."""


@scenarios.command("list")
def scenarios_list() -> None:
    """List catalogue scenarios."""
    import fleetchaos.catalogue as catalogue
    from fleetchaos.scenario.load import load_scenario

    for name in catalogue.names():
        spec = load_scenario(name)
        first = " ".join(spec.description.split())[:100]
        click.echo(f"{name:20s} {first}")


@scenarios.command("show")
@click.argument("name")
def scenarios_show(name: str) -> None:
    """Print a catalogue scenario's file."""
    import fleetchaos.catalogue as catalogue
    from fleetchaos.scenario.load import load_scenario

    load_scenario(name)  # validates, and gives the did-you-mean message for typos
    click.echo(catalogue.path(name).read_text(encoding="utf-8"), nl=False)


@scenarios.command("validate")
@click.argument("files", nargs=-1, required=True)
def scenarios_validate(files: tuple[str, ...]) -> None:
    """Validate scenario files (or catalogue names); exit 0 if all are valid, else 2."""
    from fleetchaos.errors import ScenarioError
    from fleetchaos.scenario.load import load_scenario

    failed = False
    for ref in files:
        try:
            spec = load_scenario(ref)
        except ScenarioError as exc:
            _stderr().print(f"[red]invalid:[/red] {escape(str(exc))}", highlight=False)
            failed = True
        else:
            click.echo(f"ok: {ref} (scenario {spec.name!r}, {len(spec.faults)} faults)")
    if failed:
        sys.exit(EXIT_USAGE)


@main.command()
@click.argument("what", type=click.Choice(["scenario", "envelope"]))
@click.argument("name", required=False)
@click.option("--markdown", is_flag=True, help="print the scenario file reference (docs/scenarios.md) instead")
def schema(what: str, name: str | None, markdown: bool) -> None:
    """Print the JSON Schema of a scenario file or of a structured error envelope.

    ``schema envelope`` prints the AgentToolError envelope; ``schema envelope NAME``
    any of agent-tool-error, failure-type, subagent-result, tool-envelope.
    """
    import json

    if markdown:
        if what != "scenario":
            raise UserError("--markdown: only the scenario reference is available as Markdown")
        from fleetchaos.scenario.docs import render

        click.echo(render(), nl=False)
        return
    if what == "scenario" and name is not None:
        raise UserError(f"schema scenario: takes no NAME (got {name!r}); NAME selects an envelope")
    if what == "scenario":
        from fleetchaos.scenario.load import Scenario

        doc = Scenario.model_json_schema()
    else:
        from fleetchaos.sim.envelopes import ENVELOPES

        if name is not None and name not in ENVELOPES:
            raise UserError(
                f"schema envelope: unknown envelope {name!r} (known: {', '.join(sorted(ENVELOPES))})"
                f"{_did_you_mean(name, ENVELOPES)}"
            )
        doc = ENVELOPES[name or "agent-tool-error"].model_json_schema()
    click.echo(json.dumps(doc, indent=2, sort_keys=True))


@main.group()
def policies() -> None:
    """Recovery policies: built-in, registered by installed packages, or given by import path."""


def _policy_params(info) -> str:
    """A policy's parameters on one line, ``recipe`` for a blocks Policy (its fields are the recipe's parts)."""
    if info.recipe is not None:
        return info.recipe
    return ", ".join(f"{k}={v!r}" for k, v in info.parameters.items()) or "-"


@policies.command("list")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def policies_list(as_json: bool) -> None:
    """List built-in policies and those installed packages register (entry point group fleetchaos.policies).

    Entry points are loaded to describe them; one that cannot be loaded is listed with its
    error, and the list goes on.
    """
    from fleetchaos.policies.registry import ENTRY_POINT, list_policies

    infos = list_policies()
    if as_json:
        import json

        click.echo(json.dumps([i.to_dict() for i in infos], indent=2))
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(title="recovery policies (fleetchaos policies show NAME for details)", show_lines=True, expand=True)
    # Names are what users type: never folded, so the column is as wide as the longest.
    table.add_column("name", no_wrap=True, min_width=max(len(i.name) for i in infos))
    table.add_column("source", overflow="fold", ratio=3)
    table.add_column("description", overflow="fold", ratio=5)
    table.add_column("parameters", overflow="fold", ratio=3)
    for info in infos:
        if info.error is not None:
            description = Text("cannot load: ", style="red") + Text(info.error)
        elif info.shadowed is not None:
            description = Text(f"not used: {info.shadowed}", style="yellow")
        else:
            description = Text(info.description or "(no docstring)")
        source = info.source if info.source != ENTRY_POINT else f"{info.source}: {info.origin}"
        table.add_row(Text(info.name), Text(source), description, Text(_policy_params(info)))
    _stdout().print(table)
    broken = [i.name for i in infos if i.error is not None]
    if broken:
        _stderr().print(f"warning: {len(broken)} entry point(s) cannot be loaded: {', '.join(broken)}; "
                        "`fleetchaos policies show NAME` says why", highlight=False, markup=False)  # fmt: skip


@policies.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def policies_show(name: str, as_json: bool) -> None:
    """Describe one policy: where it comes from, what it does, its parameters and driver attributes.

    NAME is a built-in name, an entry point name, or an import path pkg.module:Name.
    """
    from fleetchaos.policies.registry import DRIVER_ATTRIBUTES, PolicyLookupError, describe_policy, suggest

    allow_local_policies((name,))
    try:
        info = describe_policy(name)
    except PolicyLookupError as exc:
        match = suggest(name) if ":" not in name else None
        hint = f"; did you mean {match!r}?" if match and match != name else ""
        raise UserError(f"policies show: {exc}{hint}") from None
    if as_json:
        import json

        click.echo(json.dumps(info.to_dict(), indent=2))
        return
    out = [f"name:        {info.name}", f"source:      {info.source} ({info.origin})",
           f"description: {info.description or '(no docstring)'}"]  # fmt: skip
    if info.details:
        out += ["", *(f"  {line}" if line else "" for line in info.details.splitlines())]
    if info.recipe is not None:
        out += ["", f"recipe:      {info.recipe}"]
    out += ["", "parameters:" + ("" if info.parameters else " none (not a dataclass, or no fields besides name)")]
    width = max((len(k) for k in info.parameters), default=0)
    out += [f"  {k:<{width}} = {v!r}" for k, v in info.parameters.items()]
    out += ["", "driver attributes:" + ("" if info.driver_attributes else " none (the driver's defaults apply)")]
    for key, value in info.driver_attributes.items():
        shown = value if isinstance(value, str) and value.startswith("method ") else repr(value)
        out.append(f"  {key} = {shown}: {DRIVER_ATTRIBUTES[key]}")
    click.echo("\n".join(out))


@main.group()
def faults() -> None:
    """Fault kinds: what each breaks, how it is reported, and its parameters."""


@faults.command("list")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def faults_list(as_json: bool) -> None:
    """List fault kinds: category, error code, effect on the truth and parameters."""
    from fleetchaos.scenario.fault_catalogue import fault_kinds

    kinds = fault_kinds()
    if as_json:
        import json

        doc = [
            {
                "kind": k.kind,
                "category": k.category,
                "error_code": k.error_code,
                "recoverable": k.recoverable,
                "suggested_action": k.suggested_action,
                "effect": k.effect,
                "parameters": [p.name for p in k.parameters],
            }
            for k in kinds
        ]
        click.echo(json.dumps(doc, indent=2))
        return
    from rich.table import Table

    table = Table(title="fault kinds (fleetchaos faults show KIND for parameter details)", show_lines=True)
    for column in ("kind", "category", "error code", "effect on the truth", "parameters"):
        table.add_column(column, overflow="fold")
    for k in kinds:
        table.add_row(k.kind, k.category, k.error_code, k.effect, ", ".join(p.name for p in k.parameters))
    Console(soft_wrap=False, width=max(140, Console().width)).print(table)


@faults.command("show")
@click.argument("kind")
def faults_show(kind: str) -> None:
    """Show one fault kind: its contract, its effect and every parameter."""
    from rich.table import Table

    from fleetchaos.scenario.fault_catalogue import fault_kind

    k = fault_kind(kind)
    out = Console(soft_wrap=False, width=max(140, Console().width), highlight=False)
    recoverable = "n/a" if k.recoverable is None else str(k.recoverable).lower()
    out.print(f"[bold]{k.kind}[/bold]: {escape(k.summary)}")
    out.print(
        f"error code {k.error_code} | category {k.category} | recoverable {recoverable} | "
        f"suggested action {k.suggested_action}"
    )
    out.print(f"effect on the truth: {escape(k.effect)}")
    table = Table(show_lines=False)
    for column in ("parameter", "type", "default", "allowed", "description"):
        table.add_column(column, overflow="fold")
    for p in k.parameters:
        table.add_row(*(escape(v) for v in (p.name, p.type, p.default, p.allowed, p.description)))
    out.print(table)


@main.command()
@_scenario_option
@_param_option
@click.option("--policy", default="structured", show_default=True, help="built-in name or pkg.module:Policy")
@click.option("--errors", default="structured", show_default=True, help="error format (as for run)")
@click.option("--seed", default=1, show_default=True, type=click.IntRange(0, 2**63 - 1))
@click.option(
    "--task-silent",
    type=click.IntRange(0),
    metavar="N",
    help="the failure: task N of the run ended as a silent failure",
)
@click.option(
    "--property",
    "expression",
    metavar="EXPR",
    help="the failure: a metric comparison that holds on the run, e.g. 'recovery_rate<0.7'",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("test_regression.py"),
    show_default=True,
    help="regression test to write; the minimal scenario goes next to it (.yaml)",
)
@click.option(
    "--max-trials",
    default=500,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="bound on the number of trial runs",
)
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def shrink(
    scenario: str,
    params: tuple[str, ...],
    policy: str,
    errors: str,
    seed: int,
    task_silent: int | None,
    expression: str | None,
    output: Path,
    max_trials: int,
    as_json: bool,
) -> None:
    """Reduce a failing run to a minimal one and write a pytest regression test for it.

    The run is materialised (explicit tasks and fault events), then reduced by delta
    debugging over its fault events and tasks, a shorter horizon, shorter windows and
    fewer workers, keeping each step only if the failure remains.  Prints the minimal
    schedule; writes the minimal scenario and a test that fails while the bug exists.
    """
    import json

    from fleetchaos.scenario.load import load_scenario
    from fleetchaos.testing.shrink import parse_property, regression_test, scenario_yaml
    from fleetchaos.testing.shrink import shrink as do_shrink

    if (task_silent is None) == (expression is None):
        raise UserError("shrink: give exactly one of --task-silent N or --property EXPR")
    prop = parse_property(expression) if expression is not None else None
    spec = load_scenario(scenario)
    check_policies((policy,), "--policy")
    check_formats((errors,), "--errors")
    spec, _applied = _apply_single_params(spec, scenario, params)
    err = _stderr()
    result = do_shrink(
        spec,
        policy,
        errors,
        seed,
        task_silent=task_silent,
        prop=prop,
        max_trials=max_trials,
        progress=lambda line: err.print(line, highlight=False, markup=False),
    )
    yaml_path = output.with_suffix(".yaml")
    output.parent.mkdir(parents=True, exist_ok=True)
    yaml_path.write_text(scenario_yaml(result.scenario), encoding="utf-8")
    output.write_text(regression_test(result, yaml_path.name), encoding="utf-8")
    if as_json:
        click.echo(json.dumps({**result.summary(), "files": [str(yaml_path), str(output)]}, indent=2))
    else:
        click.echo(f"failure: {result.prop.describe()}")
        click.echo(
            f"shrunk in {result.trials} trial runs: {result.original_events} -> {len(result.events)} fault events, "
            f"{result.original_tasks} -> {result.tasks} tasks, {result.original_duration_s:g} -> "
            f"{result.duration_s:g} s, {result.original_workers} -> {result.workers} workers"
        )
        click.echo("minimal schedule:")
        for line in result.schedule_lines() or ["(no fault events)"]:
            click.echo(f"  {line}")
        for note in result.notes:
            click.echo(f"note: {note}")
    err.print(f"wrote {yaml_path}\nwrote {output}", highlight=False, markup=False)


if __name__ == "__main__":  # pragma: no cover
    main()
