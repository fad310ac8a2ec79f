"""The ``shrink`` command: reduce a failing run to a minimal one and write a regression test for it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from fleetchaos.cli.common import apply_single_params, param_option, scenario_option, stderr_console
from fleetchaos.errors import UserError
from fleetchaos.files import write_text
from fleetchaos.names import check_formats, check_policies

__all__ = ["check_outputs", "shrink"]


def check_outputs(output: Path, scenario_ref: str, *, force: bool) -> Path:
    """Check, before any trial runs, that the test and its scenario can be written; returns the scenario's path.

    The test must be a ``.py`` file; neither file may be the input scenario (whatever
    ``--force`` says); an existing file is replaced only with ``force``; the folder must
    be creatable and writable.
    """
    if output.suffix != ".py":
        raise UserError(f"-o {output}: the regression test must be a .py file (its scenario goes beside it as .yaml)")
    yaml_path = output.with_suffix(".yaml")
    source = Path(scenario_ref)
    for target in (output, yaml_path):
        if source.exists() and target.exists() and target.resolve() == source.resolve():
            raise UserError(f"-o {output}: would overwrite the input scenario {scenario_ref}; choose another name")
        if target.exists() and not force:
            raise UserError(f"-o {output}: {target} exists; choose another name, or pass --force to replace it")
        if target.exists() and not target.is_file():
            raise UserError(f"-o {output}: {target} exists and is not a file; choose another name")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=output.parent):
            pass
    except OSError as exc:
        raise UserError(
            f"-o {output}: cannot write into {output.parent} ({exc.strerror or exc}); choose a writable folder"
        ) from None
    return yaml_path


@click.command()
@scenario_option
@param_option
@click.option(
    "--policy",
    default="structured",
    show_default=True,
    help="built-in name, pkg.module:Policy, or pkg.module:RETRY (a tenacity retry config)",
)
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
@click.option("--force", is_flag=True, help="replace the test and scenario files if they exist")
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
    force: bool = False,
) -> None:
    """Reduce a failing run to a minimal one and write a pytest regression test for it.

    The run is materialised (explicit tasks and fault events), then reduced by delta
    debugging over its fault events and tasks, a shorter horizon, shorter windows and
    fewer workers, keeping each step only if the failure remains.  Prints the minimal
    schedule; writes the minimal scenario and a test that fails while the bug exists.
    """
    import json

    from fleetchaos.scenario.load import check_rows_fit, load_scenario
    from fleetchaos.testing.shrink import parse_property, regression_test, scenario_yaml
    from fleetchaos.testing.shrink import shrink as do_shrink

    if (task_silent is None) == (expression is None):
        raise UserError("shrink: give exactly one of --task-silent N or --property EXPR")
    prop = parse_property(expression) if expression is not None else None
    spec = load_scenario(scenario)
    check_policies((policy,), "--policy")
    check_formats((errors,), "--errors")
    spec, _applied = apply_single_params(spec, scenario, params)
    check_rows_fit(spec, "shrink")
    yaml_path = check_outputs(output, scenario, force=force)
    err = stderr_console()
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
    write_text(yaml_path, scenario_yaml(result.scenario))
    write_text(output, regression_test(result, yaml_path.name))
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
