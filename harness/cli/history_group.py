"""The ``history`` command group: list stored groups (``history [REF]``), ``diff``, ``export`` and ``prune``.

``fleetchaos history`` and ``fleetchaos history REF`` list, as they always did (the
``show`` subcommand, run when the first word is not a subcommand); ``history diff A B``
compares two groups or results files (:mod:`fleetchaos.cli.history_diff`), ``history
export REF`` writes a group as JSON (:mod:`fleetchaos.gates.export`), and ``history
prune`` removes old groups (:mod:`fleetchaos.gates.prune`), listing them first and
deleting only with ``--yes``.  Every subcommand reads or changes only the history store,
which is recognised before it is opened for writing.
"""

from __future__ import annotations

from pathlib import Path

import click

from fleetchaos.cli.common import fixed_width, stderr_console, stdout_console
from fleetchaos.cli.history_diff import diff
from fleetchaos.cli.reporting import history as show
from fleetchaos.errors import UserError

__all__ = ["history"]

_HISTORY_HELP = "the run-history store [default: $FLEETCHAOS_HISTORY or fleetchaos-out/history.db]"


class _ListingByDefault(click.Group):
    """A group whose first word, when it is not a subcommand (a REF, an option, nothing), goes to ``show``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Route ``history [REF] [OPTIONS]`` to ``history show [REF] [OPTIONS]``."""
        help_only = bool(args) and args[0] in ctx.help_option_names
        if not help_only and (not args or args[0] not in self.commands):
            args = ["show", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_ListingByDefault)
def history() -> None:
    """The run history: list groups, diff two of them, export one, prune old ones.

    `fleetchaos history` lists stored run groups (newest first) and `fleetchaos history REF`
    the runs of one (REF: an id 7 or #7, 'latest' or a label; `history show REF` for a
    label that is also a subcommand's name).  See each subcommand's --help.
    """


@click.command()
@click.argument("ref")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="write the JSON to this file [default: stdout]")  # fmt: skip
@click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path), help=_HISTORY_HELP)
def export(ref: str, out: Path | None, history_path: Path | None) -> None:
    """Write the runs of the stored group REF as one JSON document.

    The document (format fleetchaos-history-export, docs/cli.md) holds the group's
    identity, status and record (scenario fingerprint, arms, seeds) and every run's whole
    result without per-task rows.  It is read back as a baseline (--baseline FILE,
    --fleetchaos-baseline FILE) and as a side of `fleetchaos history diff`, so a CI can
    commit it.
    """
    from fleetchaos.files import write_text
    from fleetchaos.gates import history as store_module
    from fleetchaos.gates.export import export_text

    with store_module.open_store(history_path, create=False, readonly=True) as store:
        group = store.resolve(ref)
        text = export_text(group, store.runs(group.id))
    if out is None:
        click.echo(text, nl=False)
        return
    if out.is_dir():
        raise UserError(f"-o {out}: a folder; give a file name, e.g. {out / 'baseline.json'}")
    write_text(out, text)
    stderr_console().print(f"wrote {out} (group {group.ref}, {group.runs} runs)", markup=False, highlight=False)


@click.command()
@click.option("--keep", type=click.IntRange(0, 1_000_000), metavar="N",
              help="keep the N newest groups of each scenario; remove older ones")  # fmt: skip
@click.option("--before", metavar="DATE",
              help="remove groups created before DATE (YYYY-MM-DD or an ISO date and time, UTC)")  # fmt: skip
@click.option("--yes", is_flag=True, help="remove them (without it, only list what would be removed)")
@click.option("--history", "history_path", type=click.Path(dir_okay=False, path_type=Path), help=_HISTORY_HELP)
def prune(keep: int | None, before: str | None, yes: bool, history_path: Path | None) -> None:
    """Remove old run groups from the history (a dry run listing them unless --yes).

    A group is removed when every rule given says so (--keep N per scenario, --before
    DATE).  A running group (a command may still write to it) and the newest group of each
    label (what --baseline LABEL names) are always kept.  Only the history store is
    changed; a file that is not one is refused untouched.
    """
    from rich.table import Table

    from fleetchaos.escaping import one_line, rich_text
    from fleetchaos.gates import history as store_module
    from fleetchaos.gates.prune import parse_before, plan_prune

    cutoff = parse_before(before) if before is not None else None
    if keep is None and cutoff is None:
        raise UserError("history prune: give --keep N (groups per scenario) and/or --before DATE")
    with store_module.open_store(history_path, create=False, readonly=not yes) as store:
        plan = plan_prune(store.groups(), keep=keep, before=cutoff)
        removed = store.remove_groups([g.id for g in plan.remove]) if yes and plan.remove else 0
        path = store.path
    out, err = stdout_console(), stderr_console()
    if plan.remove:
        verb = "removed" if yes else "would remove"
        table = Table(title=rich_text(f"{verb}: {len(plan.remove)} group(s), {plan.runs} run(s) from {path}"),
                      header_style="bold")  # fmt: skip
        for column in ("ref", "created (UTC)", "kind", "scenario", "label", "status", "runs"):
            table.add_column(column, justify="right" if column == "runs" else "left")
        for g in plan.remove:
            cells = (
                g.ref,
                g.created_at.replace("+00:00", "").replace("T", " "),
                g.kind,
                g.scenario,
                g.label or "",
                g.status,
                str(g.runs),
            )
            table.add_row(*(rich_text(one_line(c, 200)) for c in cells))
        from fleetchaos.reports.fitting import fit_columns

        out.print(fit_columns(table, fixed_width(), ["runs", "status", "kind", "created (UTC)"]))
    else:
        out.print(rich_text(f"nothing to remove from {path}"))
    for g, why in plan.kept:
        out.print(rich_text(one_line(f"kept {g.ref} ({g.scenario}): {why}", 400)))
    if plan.remove and not yes:
        err.print("dry run: nothing was removed; run again with --yes to remove them", highlight=False)
    elif yes and plan.remove:
        err.print(f"removed {len(plan.remove)} group(s) and {removed} run(s)", highlight=False)


history.add_command(show, "show")
history.add_command(diff, "diff")
history.add_command(export, "export")
history.add_command(prune, "prune")
