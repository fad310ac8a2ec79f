"""``fleetchaos calibrate TRACES... -o scenario.yaml``: fit a scenario to a team's tool-call traces."""

from __future__ import annotations

from pathlib import Path

import click

from fleetchaos.cli.common import make_report_dir, stderr_console
from fleetchaos.errors import UserError

__all__ = ["calibrate"]


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="the scenario file to write (YAML)")  # fmt: skip
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
              help="write a fit report here (observed against one simulated run of the fitted scenario)")  # fmt: skip
@click.option("--policy", default="backoff", show_default=True, help="policy of the report's simulated run")
@click.option("--errors", default="generic", show_default=True, help="error format of the report's simulated run")
@click.option("--seed", default=1, show_default=True, type=click.IntRange(0, 2**63 - 1), help="seed of that run")
def calibrate(
    traces: tuple[Path, ...],
    output: Path,
    fmt: str,
    codes: Path | None,
    name: str,
    worker_keys: tuple[str, ...],
    bin_s: float,
    report: Path | None,
    policy: str,
    errors: str,
    seed: int,
) -> None:
    """Fit a scenario to tool-call traces (OTLP JSON, or the plain JSONL/CSV form).

    Fits the arrival profile by hour of day, task templates from the tool sequences,
    per-tool call durations, per-tool and per-worker fault rates, windows of elevated
    error rates (change-point detection) and persistent faults (runs of identical
    failures), and writes them as a scenario whose comments give each value's
    provenance.  Failures whose codes the mapping does not know are listed, never
    dropped in silence.  See docs/calibration.md.
    """
    from fleetchaos.names import check_formats, check_policies
    from fleetchaos.traces.codes import load_code_map
    from fleetchaos.traces.otlp_read import DEFAULT_WORKER_KEYS

    if not name.strip() or len(name) > 100:
        raise UserError(f"--name {name!r}: give a name of 1 to 100 characters")
    code_map = load_code_map(codes)
    if report is not None:
        check_policies((policy,), "--policy")
        check_formats((errors,), "--errors")
        make_report_dir(report)
    if output.exists() and output.is_dir():
        raise UserError(f"-o {output}: is a folder; give the scenario file's path")
    from fleetchaos.calibrate.fit import calibrate as fit
    from fleetchaos.calibrate.yaml_out import to_yaml
    from fleetchaos.scenario.load import parse_scenario

    err = stderr_console()
    result = fit(
        traces, fmt=fmt, codes=code_map, name=name, bin_s=bin_s, worker_keys=worker_keys or DEFAULT_WORKER_KEYS
    )
    text = to_yaml(result)
    scenario = parse_scenario(text, str(output))  # what is written must load and run
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"-o {output}: cannot write ({exc.strerror or exc}); choose another path") from None
    stats = result.stats
    err.print(
        f"read {stats.spans:,} spans: {stats.tool_calls:,} tool calls of {len(result.calls.task_ids):,} tasks "
        f"({stats.skipped:,} other spans skipped)",
        highlight=False,
        markup=False,
    )
    for text_, count in sorted(stats.notes.items()):
        err.print(f"note: {text_} ({count:,} times)", highlight=False, markup=False)
    for what, count in result.unmapped:
        err.print(
            f"warning: unmapped failure: {what}: {count:,} calls (map it with --codes)", highlight=False, markup=False
        )
    for note in result.notes:
        err.print(f"not fitted: {note}", highlight=False, markup=False)
    err.print(
        f"wrote {output} ({len(scenario.workload.templates)} templates, {len(scenario.faults)} faults)",
        highlight=False,
        markup=False,
    )
    if report is not None:
        from fleetchaos.calibrate.report import write_fit_report

        for path in write_fit_report(result, scenario, report, policy=policy, errors=errors, seed=seed):
            err.print(f"wrote {path}", highlight=False, markup=False)
