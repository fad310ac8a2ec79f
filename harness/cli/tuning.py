"""The ``tune`` command, and the tuning options ``compare --tune`` shares with it: parse, build a
:class:`~fleetchaos.cli.tune_job.TuneJob`, render."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fleetchaos.cli.caching import cache_option
from fleetchaos.cli.common import (
    Confidence,
    jobs_option,
    param_option,
    scenario_option,
    scheduler_option,
    split_names,
    stdout_console,
)
from fleetchaos.cli.executing import executor_option
from fleetchaos.cli.job_options import TuneOptions, split_options

if TYPE_CHECKING:
    from fleetchaos.cli.tune_job import TuneJob

__all__ = ["command_line", "recorded_options", "tune", "tune_options"]

#: The tuning options a command leaves at their defaults (left out of its command line).
_DEFAULT_TUNING = TuneOptions()


def tune_options(func: Callable) -> Callable:
    """The search options of ``tune`` (and of ``compare --tune``): families, space, search, trials, seeds, objective."""
    options = [
        click.option(
            "--families",
            callback=lambda _ctx, _param, value: split_names(value) if value else (),
            help="comma-separated policy families to search [default: every family of the space]",
        ),
        click.option(
            "--space",
            "space_file",
            type=click.Path(dir_okay=False, path_type=Path),
            help="a search space file (YAML/JSON) [default: the built-in space, docs/policies.md]",
        ),
        click.option(
            "--search",
            type=click.Choice(["random", "grid", "tpe"]),
            default="random",
            show_default=True,
            help="seeded random search, a grid, or optuna's seeded TPE sampler (pip install 'fleetchaos[tune]')",
        ),
        click.option(
            "--trials",
            type=click.IntRange(1, 1000),
            default=8,
            show_default=True,
            help="candidates per family, its defaults included (random, tpe)",
        ),
        click.option(
            "--grid-points", type=click.IntRange(1, 20), default=3, show_default=True, help="values per range (grid)"
        ),
        click.option(
            "--train-seeds", type=click.IntRange(1, 1000), default=5, show_default=True, help="number of training seeds"
        ),
        click.option(
            "--first-train-seed",
            type=click.IntRange(0, 2**62),
            default=1_000_001,
            show_default=True,
            help="first training seed (held-out seeds must not overlap)",
        ),
        click.option(
            "--objective",
            default="success_rate",
            show_default=True,
            help="the metric the search optimises (a registry metric with a direction)",
        ),
        click.option("--sampler-seed", type=click.IntRange(0, 2**62), default=0, show_default=True),
        click.option(
            "--race/--no-race",
            default=True,
            show_default=True,
            help="race candidates seed by seed, stopping those already behind (paired); --no-race runs every "
            "candidate on every training seed",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.command()
@cache_option
@scenario_option
@param_option
@click.option(
    "--errors",
    default="generic",
    show_default=True,
    help="the error format to tune for; several, comma-separated, are tuned one after another and give the "
    "scenario's tuned: block",
)
@tune_options
@click.option("--seeds", type=click.IntRange(1, 10_000), help="held-out seeds [default: the scenario's seeds, else 10]")
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first held-out seed [default: 1]")
@jobs_option
@scheduler_option
@executor_option
@click.option("--confidence", default=0.95, show_default=True, type=Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document (a list of them for several formats)")
@click.option(
    "--report",
    type=click.Path(file_okay=False, path_type=Path),
    help="write results.json and summary.md (a folder per format for several)",
)
def tune(as_json: bool, **options: Any) -> None:
    """Search policy families and their parameters for one scenario and error format (or several).

    Every candidate runs on the training seeds only; the best one overall, and each
    family's best, then run on the held-out seeds, and their figures (with intervals) come
    from those alone.  Prints the winner's spec, its figures and the compare command that
    repeats them, then the scenario's tuned: block (each format's winner, this command and
    the world's fingerprint), which makes them compare's best against best.  Runs are not
    stored in the run history.
    """
    from fleetchaos.cli.tune_job import TuneJob

    job = TuneJob(tuning=split_options(TuneOptions, options), **options)
    results = job.run_each()
    if as_json:
        docs = [r.model_dump_json(indent=2) for r in results]
        click.echo(docs[0] if len(docs) == 1 else "[\n" + ",\n".join(docs) + "\n]")
        return
    from fleetchaos.reports.studies import best_lines, tune_headline, tune_table

    for result in results:
        click.echo(tune_headline(result))
        stdout_console().print(tune_table(result))
        click.echo("\n".join(best_lines(result)))
        click.echo("")
    click.echo("the scenario's tuned: block (compare runs best against best from it):")
    click.echo(job.tuned_block(results, command_line(job)))


def command_line(job: TuneJob) -> str:
    """``job`` as the ``fleetchaos tune`` command with every option that decides the winners (defaults left out)."""
    import dataclasses
    import shlex

    flags = {p.name: p for p in tune.params if isinstance(p, click.Option)}
    words = ["fleetchaos", "tune", "--scenario", job.scenario]
    for param in job.params:
        words += ["--param", param]
    if job.errors != "generic":
        words += ["--errors", job.errors]
    for one in dataclasses.fields(TuneOptions):
        value = getattr(job.tuning, one.name)
        if value == getattr(_DEFAULT_TUNING, one.name):
            continue
        option = flags[one.name]
        flag = max(option.opts, key=len)
        if option.is_flag:
            words.append(flag if value else max(option.secondary_opts, key=len))
        else:
            words += [flag, ",".join(value) if isinstance(value, tuple) else str(value)]
    return shlex.join(words)


def recorded_options(command: str) -> TuneOptions | None:
    """The tuning options of a recorded ``fleetchaos tune`` command (a ``tuned:`` block's), or None if it does
    not parse as one."""
    import shlex

    from fleetchaos.cli.job_options import split_options

    words = shlex.split(command)
    if words[:2] != ["fleetchaos", "tune"]:
        return None
    try:
        ctx = tune.make_context("tune", words[2:], resilient_parsing=False)
    except (click.ClickException, click.exceptions.Exit):
        return None
    return split_options(TuneOptions, dict(ctx.params))
