"""``fleetchaos history diff A B``: two stored groups or results files, paired by seed, without running anything.

The pairing and the statistics are :mod:`fleetchaos.gates.diff`; this module reads the
options and prints: warnings on stderr, the table of paired differences and the list of
what could not be paired on stdout (or one JSON document with ``--json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from fleetchaos.cli.common import Confidence, fixed_width, split_names, stderr_console, stdout_console
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from rich.table import Table

    from fleetchaos.gates.diff import Diff

__all__ = ["diff", "diff_table", "unpaired_lines"]


def _num(value: float) -> str:
    """A mean of seconds or money: whole from 100, one decimal from 1, else 3 digits."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 1 else f"{value:.3g}"


def _plain(metric, value: float) -> str:
    """A count as every terminal table writes it (:func:`~fleetchaos.reports.tables.count_text`); else :func:`_num`."""
    from fleetchaos.reports.tables import count_text, is_count

    return count_text(value) if is_count(metric.metric) else _num(value)


def _value(metric, value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}%" if metric.unit == "proportion" else _plain(metric, value)


def _change(metric, value: float | None) -> str:
    if value is None:
        return "-"
    if metric.unit == "proportion":
        return f"{100 * value:+.1f} pp"
    return ("+" if value >= 0 else "") + _plain(metric, value)


def _interval(metric, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "-"
    return f"[{_change(metric, low)}, {_change(metric, high)}]"


def diff_table(result: Diff, width: int | None = None) -> Table:
    """The paired differences as a Rich table: one row per arm and metric.

    ``width``: the columns it must fit in (a terminal's); the pairs, then A's and B's means,
    then the interval are left out first, and the caption names them (names stay whole).
    """
    from rich.table import Table

    from fleetchaos.escaping import one_line, rich_text

    level = f"{100 * result.confidence:g}%"
    table = Table(title=rich_text("B against A, paired by seed (B - A)"), header_style="bold")
    for column in ("arm", "metric", "A", "B", "B - A", f"{level} interval", "pairs", "B vs A"):
        table.add_column(column, justify="left" if column in ("arm", "metric", "B vs A") else "right")
    for arm in result.arms:
        for i, m in enumerate(arm.metrics):
            unit = "" if m.unit in ("proportion", "") else f" ({m.unit})"
            cells = (arm.label if i == 0 else "", m.metric + unit, _value(m, m.a_mean), _value(m, m.b_mean),
                     _change(m, m.difference), _interval(m, m.low, m.high), str(m.pairs), m.verdict)  # fmt: skip
            table.add_row(*(rich_text(one_line(c, 200)) for c in cells))  # names are data, never markup
    from fleetchaos.reports.fitting import fit_columns

    return fit_columns(table, width, ["pairs", "A", "B", f"{level} interval"])


def unpaired_lines(result: Diff) -> list[str]:
    """What could not be paired, one line each: arms only one side ran, seeds only one side ran, metric notes."""
    from fleetchaos.gates.assertions import seeds_text
    from fleetchaos.gates.diff import NOT_COMPARABLE, NOT_PAIRED

    lines = [f"only in {u.side}: {u.label} (seeds {seeds_text(u.seeds)}): not compared" for u in result.unpaired]
    for arm in result.arms:
        for side, seeds in (("A", arm.only_a), ("B", arm.only_b)):
            if seeds:
                lines.append(f"{arm.label}: seeds only in {side}: {seeds_text(seeds)} (not paired)")
        lines += [f"{arm.label}: {note}" for note in arm.notes]
        lines += [f"{arm.label}: {m.metric}: {m.verdict}: {m.note}" for m in arm.metrics
                  if m.note and m.verdict in (NOT_PAIRED, NOT_COMPARABLE)]  # fmt: skip
    return lines


@click.command()
@click.argument("a")
@click.argument("b")
@click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path),
              help="the run-history store groups are read from "
              "[default: $FLEETCHAOS_HISTORY or fleetchaos-out/history.db]")  # fmt: skip
@click.option("--metric", "metric_names", metavar="NAMES",
              help="comma-separated metrics to compare [default: the headline metrics]")  # fmt: skip
@click.option("--confidence", default=0.95, show_default=True, type=Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def diff(a: str, b: str, history_path: Path | None, metric_names: str | None, confidence: float, as_json: bool) -> None:
    """Compare two stored groups or results files, paired by seed, without running anything.

    A and B are each a history group (7, #7, latest, a label), a results.json (of run,
    compare or sweep), a report folder, or a group exported by `fleetchaos history export`.
    For each arm (policy on error format) both have, and each headline metric: the mean of
    A and of B over the seeds both ran, the paired difference B - A with its interval, the
    number of pairs and B's verdict against A.  Arms and seeds only one side has are listed;
    sides that ran different scenarios are warned about.
    """
    import json

    from fleetchaos.gates.diff import diff_sides
    from fleetchaos.gates.diff_sides import load_side
    from fleetchaos.names import check_metric
    from fleetchaos.results.registry import HEADLINE_METRICS

    metrics = HEADLINE_METRICS if metric_names is None else split_names(metric_names)
    if not metrics:
        raise UserError("--metric: give at least one metric name, e.g. success_rate")
    for name in metrics:
        check_metric(name, "--metric")
    side_a = load_side(a, history_path, "A")
    side_b = load_side(b, history_path, "B")
    result = diff_sides(side_a, side_b, metrics=tuple(dict.fromkeys(metrics)), confidence=confidence)
    err = stderr_console()
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/yellow] {_escaped(warning)}", highlight=False)
    for note in result.notes:
        err.print(f"note: {_escaped(note)}", highlight=False)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    from fleetchaos.escaping import one_line, rich_text

    out = stdout_console()
    lines = [f"A: {side_a.source}", f"B: {side_b.source}"]
    for line in lines:
        out.print(rich_text(one_line(line, 1000)))  # paths, labels and names are data: no markup, no control codes
    if result.arms:
        out.print(diff_table(result, fixed_width()))
    else:
        out.print("no arm in common: nothing is paired")
    for line in unpaired_lines(result):
        out.print(rich_text(one_line(line, 1000)))


def _escaped(text: str) -> str:
    from rich.markup import escape

    from fleetchaos.escaping import one_line

    return escape(one_line(text, 1000))
