"""The ``robustness`` command: what the answer depends on, each assumption varied over its range, flips named.

The command parses, builds a :class:`~fleetchaos.cli.robustness_job.RobustnessJob` and renders its result.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fleetchaos.cli.caching import cache_option
from fleetchaos.cli.common import (
    Confidence,
    fixed_width,
    jobs_option,
    output_width,
    param_option,
    scenario_option,
    scheduler_option,
    split_names,
    stdout_console,
)
from fleetchaos.cli.executing import executor_option
from fleetchaos.cli.job_options import TuneOptions, split_options
from fleetchaos.cli.tuning import tune_options

if TYPE_CHECKING:
    from fleetchaos.results.models import CompareResult

__all__ = ["robustness", "study_lines", "wrapped"]


@click.command()
@cache_option
@scenario_option
@click.option(
    "--errors",
    callback=lambda _ctx, _param, value: split_names(value) if value is not None else None,
    help="best against best on these formats (comma-separated) [default: the scenario's tuned formats, else "
    "generic,status,raw,structured]",
)
@click.option(
    "--arm",
    "arms",
    nargs=2,
    multiple=True,
    metavar="POLICY ERRORS",
    help="order these fixed arms instead of best against best (repeat; at least two; nothing is tuned)",
)
@param_option
@click.option(
    "--only",
    callback=lambda _ctx, _param, value: split_names(value) if value else (),
    help="comma-separated words: vary only the assumptions whose path contains one (e.g. partial_batch)",
)
@click.option(
    "--retune/--no-retune",
    default=True,
    show_default=True,
    help="tune each format's best again at every value that can change it (the racing tuner on training seeds); "
    "--no-retune keeps the scenario's own bests at every value",
)
@tune_options
@click.option("--metric", help="--arm only: the metric the arms are ordered by [default: success_rate]")
@click.option("--seeds", type=click.IntRange(1, 10_000), help="seeds per value and arm [default: 10; 5 with --arm]")
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first seed [default: 1]")
@jobs_option
@scheduler_option
@executor_option
@click.option("--confidence", default=0.95, show_default=True, type=Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option(
    "--report", type=click.Path(file_okay=False, path_type=Path), help="write results.json, a chart and pages here"
)
def robustness(as_json: bool, **options: Any) -> None:
    """What the answer depends on: vary each assumption over its plausible range, one at a time.

    By default, best against best (each format's own tuned policy, docs/policies.md): every
    assumption of the registry (docs/assumptions.md) and the load, each over its documented
    range, each format's best tuned again at every value that can change it (--no-retune
    keeps the scenario's own).  At each value: the envelope's lead (the best with an
    envelope minus the best without one, paired by seed) and the leading format; prices are
    judged on cost_usd, since they cannot change a success rate.  Prints the tornado's bars
    as a table and names every flip; --report draws the tornado chart.  --param
    PATH=V1,V2,... (repeat) gives ranges instead; --only keeps some assumptions.  With --arm
    (repeat), fixed arms are ordered instead and nothing is tuned.  Runs are not stored in
    the run history.
    """
    from fleetchaos.cli.robustness_job import RobustnessJob
    from fleetchaos.results.studies import SensitivityResult

    result = RobustnessJob(tuning=split_options(TuneOptions, options), **options).run()
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    if isinstance(result, SensitivityResult):
        from fleetchaos.reports.sensitivity import study_headline, tornado_table
        from fleetchaos.reports.sensitivity import study_lines as sensitivity_lines

        click.echo(wrapped([study_headline(result)], output_width()))
        stdout_console().print(tornado_table(result, width=fixed_width()))
        click.echo(wrapped(sensitivity_lines(result), output_width()))
        return
    from fleetchaos.reports.robustness import flip_lines, robustness_table

    stdout_console().print(robustness_table(result, width=fixed_width()))
    click.echo(wrapped(flip_lines(result), output_width()))


def study_lines(result: CompareResult) -> list[str]:
    """What ``compare --robustness`` found, for under the terminal table: the arms ordered, then the verdict."""
    study = result.robustness
    if study is None:
        return []
    if len(study.arms) == 2:
        seeds = f", {study.seeds} seed{'s' if study.seeds != 1 else ''} per value" if study.seeds else ""
        head = (
            f"robustness of {study.arms[0]} against {study.arms[1]} ({study.metric}{seeds}, "
            "one assumption varied at a time):"
        )
    else:
        head = "robustness (one assumption varied at a time):"
    from fleetchaos.reports.ordering import ordering_lines

    return [head, *(f"  {line}" for line in ordering_lines(study))]


def wrapped(lines: list[str], width: int) -> str:
    """``lines`` wrapped at ``width`` columns (never inside a word), each continuation indented under its line."""
    import textwrap

    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        out.append(textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False))
    return "\n".join(out)
