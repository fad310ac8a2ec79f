"""``fleetchaos calibrate TRACES... -o scenario.yaml``: fit a scenario to a team's tool-call traces, and check the fit."""

from __future__ import annotations

from pathlib import Path

import click

from fleetchaos.cli.common import jobs_option, make_report_dir, stderr_console
from fleetchaos.errors import UserError

__all__ = ["calibrate"]

#: The files ``--report DIR`` writes.
REPORT_FILES = ("summary.md", "report.html", "latency_ecdf.png", "errors_by_hour.png")

#: Exit code of a fitted scenario that misses its fit check (as a failed gate).
EXIT_MISFIT = 1


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="the scenario file to write (YAML); never one of the inputs")  # fmt: skip
@click.option("--force", is_flag=True, help="replace the -o file and the report's files if they exist")
@click.option("--format", "fmt", type=click.Choice(["auto", "otlp", "jsonl", "csv"]), default="auto",
              show_default=True, help="the traces' format (auto: by the file's content, .csv by its name)")  # fmt: skip
@click.option("--codes", type=click.Path(dir_okay=False, path_type=Path),
              help="a mapping of your error codes and HTTP statuses to fault kinds, on top of the defaults")  # fmt: skip
@click.option("--name", default="calibrated", show_default=True, help="the scenario's name")
@click.option("--worker-attribute", "worker_keys", multiple=True, metavar="KEY",
              help="the span or resource attribute naming the worker (repeatable, first found wins) "
              "[default: fleetchaos.worker, service.instance.id, host.name]")  # fmt: skip
@click.option("--bin-s", type=click.FloatRange(1, 86_400), default=60.0, show_default=True,
              help="time bin of the search for windows of elevated error rates (seconds)")  # fmt: skip
@click.option("--report", type=click.Path(file_okay=False, path_type=Path),
              help="write a fit report here (observed against the first simulated day, and the fit check)")  # fmt: skip
@click.option("--check-seeds", type=click.IntRange(0, 1000), default=10, show_default=True,
              help="simulated days of the fit check (0: no check)")  # fmt: skip
@click.option("--allow-misfit", is_flag=True, help="exit 0 even when the fitted scenario misses its fit check")
@click.option("--policy", default="backoff", show_default=True,
              help="policy of the simulated days (the one closest to how your fleet recovers)")  # fmt: skip
@click.option("--errors", default="generic", show_default=True, help="error format of the simulated days")
@click.option("--seed", default=1, show_default=True, type=click.IntRange(0, 2**63 - 1),
              help="seed of the first simulated day (the report's); the others follow it")  # fmt: skip
@jobs_option
def calibrate(
    traces: tuple[Path, ...],
    output: Path,
    force: bool,
    fmt: str,
    codes: Path | None,
    name: str,
    worker_keys: tuple[str, ...],
    bin_s: float,
    report: Path | None,
    check_seeds: int,
    allow_misfit: bool,
    policy: str,
    errors: str,
    seed: int,
    jobs: int | None,
) -> None:
    """Fit a scenario to tool-call traces (OTLP JSON, or the plain JSONL/CSV form), and check the fit.

    Fits the arrival profile by hour of day, task templates from the tool sequences,
    per-tool call durations, per-tool and per-worker fault rates, windows of elevated
    error rates (change-point detection) and persistent faults (runs of identical
    failures), and writes them as a scenario whose comments give each value's
    provenance.  Failures whose codes the mapping does not know are listed, never
    dropped in silence.  Then the fit check: the scenario is simulated on --check-seeds
    days, and a fault kind whose share of the traces' calls is not a plausible day of it
    is a miss, printed, with exit code 1 unless --allow-misfit.  The -o file is never one
    of the inputs and an existing one is replaced only with --force.  See docs/calibration.md.
    """
    from fleetchaos.files import check_targets
    from fleetchaos.names import check_formats, check_policies
    from fleetchaos.traces.codes import load_code_map
    from fleetchaos.traces.otlp_read import DEFAULT_WORKER_KEYS

    if not name.strip() or len(name) > 100:
        raise UserError(f"--name {name!r}: give a name of 1 to 100 characters")
    if check_seeds == 1:
        raise UserError(
            "--check-seeds 1: the check needs the spread of two simulated days or more; give 2 or more, or 0"
        )
    from fleetchaos.traces.read import trace_files

    inputs = {file: "trace file" for path in traces for file in trace_files(path)}  # a folder: its trace files
    if codes is not None:
        inputs[codes] = "--codes"
    targets = {output: "-o"}
    if report is not None:
        make_report_dir(report)
        targets.update({report / file: "--report" for file in REPORT_FILES})
    check_targets(targets, inputs=inputs, force=force)
    code_map = load_code_map(codes)
    if report is not None or check_seeds:
        check_policies((policy,), "--policy")
        check_formats((errors,), "--errors")
    from fleetchaos.calibrate.fit import calibrate as fit
    from fleetchaos.calibrate.yaml_out import to_yaml
    from fleetchaos.files import write_text
    from fleetchaos.scenario.load import MAX_FILE_BYTES, check_rows_fit, parse_scenario

    err = stderr_console()
    result = fit(
        traces, fmt=fmt, codes=code_map, name=name, bin_s=bin_s, worker_keys=worker_keys or DEFAULT_WORKER_KEYS
    )
    text = to_yaml(result)
    size = len(text.encode("utf-8"))
    if size > MAX_FILE_BYTES:
        raise UserError(
            f"-o {output}: the fitted scenario would be {size:,} bytes, more than the {MAX_FILE_BYTES:,} a scenario "
            f"file may have ({len(result.templates)} templates, {len(result.latency)} tools); calibrate from the "
            "traces of fewer kinds of task"
        )
    scenario = parse_scenario(text, str(output))  # what is written must load and run
    days_wanted = [seed + i for i in range(max(check_seeds, 1 if report is not None else 0))]
    if days_wanted:  # each simulated day is a traced run, kept whole in memory: refused before anything is written
        check_rows_fit(scenario, "the fit check's simulated days (--check-seeds 0 skips them) and --report")
    try:
        write_text(output, text)
    except OSError as exc:
        raise UserError(f"-o {output}: cannot write ({exc.strerror or exc}); choose another path") from None
    stats = result.stats

    def say(line: str) -> None:
        err.print(line, highlight=False, markup=False)

    say(
        f"read {stats.spans:,} spans: {stats.tool_calls:,} tool calls of {len(result.calls.task_ids):,} tasks "
        f"({stats.skipped:,} other spans skipped"
        + (f", {stats.duplicates:,} duplicate spans dropped" if stats.duplicates else "")
        + ")"
    )
    for text_, count in sorted(stats.notes.items()):
        say(f"note: {text_} ({count:,} times)")
    for what, count in result.unmapped:
        say(f"warning: unmapped failure: {what}: {count:,} calls (map it with --codes)")
    for note in result.notes:
        say(f"not fitted: {note}")
    say(f"wrote {output} ({len(scenario.workload.templates)} templates, {len(scenario.faults)} faults)")
    days = _simulate(scenario, policy, errors, days_wanted, jobs) if days_wanted else []
    check = None
    if check_seeds:
        from fleetchaos.calibrate.fit import NOT_FITTED
        from fleetchaos.calibrate.verdict import fit_check
        from fleetchaos.traces.codes import FAULT_KINDS

        check = fit_check(
            result.calls, [d.calls for d in days], days_wanted, frozenset(FAULT_KINDS) - NOT_FITTED.keys()
        )
    if report is not None:
        from fleetchaos.calibrate.report import write_fit_report

        written = write_fit_report(result, scenario, report, policy=policy, errors=errors, day=days[0], check=check)
        for path in written:
            say(f"wrote {path}")
    if check is not None:
        _verdict(check, output, policy, errors, allow_misfit, say)


def _simulate(scenario, policy: str, errors: str, seeds: list[int], jobs: int | None) -> list:
    from fleetchaos.calibrate.verdict import simulate_days
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.executors import default_jobs, open_executor

    executor = open_executor(min(jobs or default_jobs(), len(seeds)))
    try:
        with progress_bar(len(seeds), "fit check", console=stderr_console()) as advance:
            return simulate_days(scenario, policy, errors, seeds, executor, on_day=lambda _day: advance(1))
    finally:
        executor.shutdown()


def _verdict(check, output: Path, policy: str, errors: str, allow_misfit: bool, say) -> None:
    from fleetchaos.calibrate.verdict import ALPHA

    days = len(check.seeds)
    if check.idle_days:
        say(
            f"fit check: MISSES: {check.idle_days} of {days} simulated days of the fitted scenario made no tool call, "
            f"where the traces have {check.observed_calls:,}: its arrival rate (fitted over the traces' time span) is "
            "too low to check anything; look at the traces' timestamps, or set workload.tasks_per_day by hand"
        )
        if allow_misfit:
            say("--allow-misfit: exit 0")
            return
        raise SystemExit(EXIT_MISFIT)
    quantiles = f"so does each of {len(check.latencies)} tool duration quantiles (p50 and p90 of successful calls)"
    if not check.kinds and check.fits:
        say(
            f"fit check: fits: no call failed, in the traces or on {days} simulated days (--policy {policy} --errors "
            f"{errors}), and {quantiles}"
        )
        return
    if check.fits:
        say(
            f"fit check: fits: each of {len(check.kinds)} fault kinds' share of the traces' calls lies within its "
            f"{100 * (1 - ALPHA):g}% interval over {days} simulated days (--policy {policy} --errors {errors}), and "
            f"{quantiles}"
        )
        return
    if check.misses:
        say(
            f"fit check: MISSES: the fitted scenario does not fail its calls as the traces did, on {len(check.misses)} "
            f"fault kind(s) ({days} simulated days, --policy {policy} --errors {errors}):"
        )
    for kind in check.misses:
        say(f"  {kind.describe()}")
    if check.latency_misses:
        say(
            f"fit check: MISSES: the fitted scenario's calls do not take as long as the traces' on "
            f"{len(check.latency_misses)} tool duration quantile(s) ({days} simulated days; successful calls):"
        )
        for quantile in check.latency_misses:
            say(f"  {quantile.describe()}")
        say(
            "  a duration fit is a log-normal per tool: a tool whose durations are not one (two populations, "
            "queueing at a busy provider) misses here; see the fit report's latency chart"
        )
    if any(k.fitted for k in check.misses):
        say(
            "  the simulated days recover as --policy and --errors say: give the ones closest to how your fleet "
            "recovers (its retries change how often calls fail); if they are, the fit itself is off for that kind"
        )
    unfitted = [k.kind for k in check.misses if not k.fitted]
    if unfitted:
        say(
            f"  {', '.join(unfitted)}: calibration does not fit this kind; declare it by hand in {output} "
            "(docs/calibration.md), or the scenario fails less than your fleet does"
        )
    if allow_misfit:
        say("--allow-misfit: exit 0")
        return
    raise SystemExit(EXIT_MISFIT)
