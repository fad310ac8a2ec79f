"""The ``fleetchaos`` command line (click + rich).

Data goes to stdout, messages to stderr.  Exit codes: 0 ok, 2 invalid input or usage,
3 internal error, 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import click
from rich.console import Console

from .errors import UserError

EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


def _stdout() -> Console:
    return Console(soft_wrap=False, width=max(160, Console().width))


def _stderr() -> Console:
    return Console(stderr=True, soft_wrap=True)


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _guess(name: str, known) -> str:
    import difflib

    match = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {match[0]!r}?" if match else ""


def _check_formats(names: tuple[str, ...]) -> None:
    from simulated_fleet.formats import FORMATS

    for name in names:
        if name not in FORMATS:
            raise UserError(f"--errors: unknown error format {name!r} (known: {', '.join(sorted(FORMATS))}){_guess(name, FORMATS)}")


def _check_policies(names: tuple[str, ...]) -> None:
    from .policies import POLICIES, get_policy

    for name in names:
        try:
            get_policy(name)
        except LookupError as exc:
            raise UserError(f"--policy: {exc}{_guess(name, POLICIES)}") from None


class _Group(click.Group):
    """Turns user errors into one message and exit 2, and crashes into exit 3."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as exc:
            _stderr().print(f"[red]error:[/red] {exc}", highlight=False, markup=True)
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


_scenario_option = click.option(
    "--scenario", default="default", show_default=True, help="catalogue name or path to a .yaml/.json file"
)


@main.command()
@_scenario_option
@click.option("--policy", default="structured", show_default=True, help="built-in name or pkg.module:Policy")
@click.option("--errors", default="structured", show_default=True, help="error format: generic or structured")
@click.option("--seed", default=1, show_default=True, type=click.IntRange(0, 2**63 - 1))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option("--report", type=click.Path(file_okay=False, path_type=Path), help="write a report folder here")
def run(scenario: str, policy: str, errors: str, seed: int, as_json: bool, report: Path | None) -> None:
    """Simulate one policy on one error format for one seed."""
    from .runner import run_one
    from .scenario import load_scenario

    spec = load_scenario(scenario)
    _check_policies((policy,))
    _check_formats((errors,))
    result = run_one(spec, policy, errors, seed, scenario_ref=scenario, keep_tasks=report is not None)
    if report is not None:
        from reports import write_run_report

        for path in write_run_report(result, report):
            _stderr().print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2, exclude={"tasks"}))
        return
    from reports import run_table

    _stdout().print(run_table(result))
    click.echo(f"replay: {result.replay}")


@main.command()
@_scenario_option
@click.option("--seeds", default=10, show_default=True, type=click.IntRange(1, 10_000), help="number of seeds")
@click.option("--first-seed", default=1, show_default=True, type=click.IntRange(0, 2**62))
@click.option("--policies", default="blind-retry,backoff,structured", show_default=True, help="comma-separated")
@click.option("--errors", "formats", default="generic,structured", show_default=True, help="comma-separated")
@click.option("--jobs", type=click.IntRange(1, 512), help="worker processes [default: one per core]")
@click.option("--confidence", default=0.95, show_default=True, type=click.FloatRange(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option("--report", type=click.Path(file_okay=False, path_type=Path), help="write a report folder here")
def compare(
    scenario: str,
    seeds: int,
    first_seed: int,
    policies: str,
    formats: str,
    jobs: int | None,
    confidence: float,
    as_json: bool,
    report: Path | None,
) -> None:
    """Every policy on every error format, on the same seeds (the same faults)."""
    from .runner import compare as run_compare
    from .runner import default_jobs
    from .scenario import load_scenario

    spec = load_scenario(scenario)
    policy_names, format_names = _split(policies), _split(formats)
    if not policy_names:
        raise UserError("--policies: give at least one policy")
    if not format_names:
        raise UserError("--errors: give at least one error format")
    _check_policies(policy_names)
    _check_formats(format_names)
    seed_list = list(range(first_seed, first_seed + seeds))
    result = run_compare(
        spec,
        seed_list,
        policies=policy_names,
        formats=format_names,
        jobs=jobs or default_jobs(),
        confidence=confidence,
        scenario_ref=scenario,
    )
    if report is not None:
        from reports import write_compare_report

        for path in write_compare_report(result, report):
            _stderr().print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    from reports import compare_table

    _stdout().print(compare_table(result))
    if len(seed_list) < 2:
        click.echo("only one seed: no confidence intervals; use --seeds 10 or more to compare arms", err=True)


@main.group()
def scenarios() -> None:
    """The built-in scenario catalogue."""


@scenarios.command("list")
def scenarios_list() -> None:
    """List catalogue scenarios."""
    import scenarios as catalogue

    from .scenario import load_scenario

    for name in catalogue.names():
        spec = load_scenario(name)
        first = " ".join(spec.description.split())[:100]
        click.echo(f"{name:20s} {first}")


@scenarios.command("show")
@click.argument("name")
def scenarios_show(name: str) -> None:
    """Print a catalogue scenario's file."""
    import scenarios as catalogue

    from .scenario import load_scenario

    load_scenario(name)  # validates, and gives the did-you-mean message for typos
    click.echo(catalogue.path(name).read_text(encoding="utf-8"), nl=False)


@scenarios.command("validate")
@click.argument("files", nargs=-1, required=True)
def scenarios_validate(files: tuple[str, ...]) -> None:
    """Validate scenario files (or catalogue names); exit 0 if all are valid, else 2."""
    from .errors import ScenarioError
    from .scenario import load_scenario

    failed = False
    for ref in files:
        try:
            spec = load_scenario(ref)
        except ScenarioError as exc:
            _stderr().print(f"[red]invalid:[/red] {exc}", highlight=False)
            failed = True
        else:
            click.echo(f"ok: {ref} (scenario {spec.name!r}, {len(spec.faults)} faults)")
    if failed:
        sys.exit(EXIT_USAGE)


@main.command()
@click.argument("what", type=click.Choice(["scenario", "envelope"]))
def schema(what: str) -> None:
    """Print the JSON Schema of a scenario file or of the structured error envelope."""
    import json

    if what == "scenario":
        from .scenario import Scenario

        doc = Scenario.model_json_schema()
    else:
        from simulated_fleet.envelope import AgentToolError

        doc = AgentToolError.model_json_schema()
    click.echo(json.dumps(doc, indent=2, sort_keys=True))


@main.group()
def policies() -> None:
    """Recovery policies."""


@policies.command("list")
def policies_list() -> None:
    """List built-in policies with their parameters."""
    from .policies import POLICIES

    for name, factory in POLICIES.items():
        policy = factory()
        doc = (type(policy).__doc__ or "").strip().splitlines()[0]
        click.echo(f"{name:12s} {doc}\n{'':12s} {policy!r}")


if __name__ == "__main__":  # pragma: no cover
    main()
