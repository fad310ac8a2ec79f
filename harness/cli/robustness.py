"""The ``robustness`` command: vary a scenario's main assumptions and show where the ordering of arms flips.

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
    stdout_console,
)

if TYPE_CHECKING:
    from fleetchaos.results.models import CompareResult
from fleetchaos.cli.executing import executor_option

__all__ = ["robustness", "study_lines", "wrapped"]


@click.command()
@cache_option
@scenario_option
@click.option(
    "--arm",
    "arms",
    nargs=2,
    multiple=True,
    metavar="POLICY ERRORS",
    help="an arm to order (repeat; at least two) [default: blind-retry generic, structured structured]",
)
@param_option
@click.option("--metric", default="success_rate", show_default=True, help="the metric the arms are ordered by")
@click.option("--seeds", type=click.IntRange(1, 10_000), default=5, show_default=True, help="seeds per value and arm")
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
    """Vary the main assumptions one at a time and show where the ordering of the arms holds and flips.

    Without --param, the declared ranges: every fault's rate, the misread probability, the
    load and the cost of a refused request (docs/policies.md); with --param PATH=V1,V2,...
    (repeat), those ranges instead.  Each value runs every arm on the same seeds; the table
    and chart show the paired difference (second arm minus first) and the leader, and the
    flips name the values on each side.  Runs are not stored in the run history.
    """
    from fleetchaos.cli.robustness_job import RobustnessJob

    result = RobustnessJob(**options).run()
    if as_json:
        click.echo(result.model_dump_json(indent=2))
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
