"""The ``report`` and ``history`` commands: a report folder from a results file, and the stored run groups."""

from __future__ import annotations

from pathlib import Path

import click

from fleetchaos.cli.common import make_report_dir, stderr_console, stdout_console
from fleetchaos.errors import UserError

__all__ = ["history", "report"]


@click.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="the report folder to write")  # fmt: skip
def report(results: Path, out_dir: Path) -> None:
    """Write a report folder (summary.md, report.html, charts, results.json) from a RESULTS.json.

    RESULTS.json is the results.json of a `run`, `compare` or `sweep` report (or their
    --json output), or the ablation.json of an `ablation` report; a report folder stands
    for the file inside it.  A tasks.csv beside a comparison's results is copied along.
    """
    from fleetchaos.cli.history import fill_comparisons
    from fleetchaos.reports import write_report

    make_report_dir(out_dir, "-o")
    try:
        written = write_report(results, out_dir, prepare=fill_comparisons)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    for path in written:
        stderr_console().print(f"wrote {path}", highlight=False)


@click.command()
@click.argument("ref", required=False)
@click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path),
              help="the run-history store [default: $FLEETCHAOS_HISTORY or fleetchaos-out/history.db]")  # fmt: skip
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100_000), help="newest groups to list")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def history(ref: str | None, history_path: Path | None, limit: int, as_json: bool) -> None:
    """List stored run groups, or with REF (an id, 'latest' or a label) the runs of one group."""
    from fleetchaos.cli.history import show_history

    show_history(ref, history_path, limit, as_json, stdout_console())
