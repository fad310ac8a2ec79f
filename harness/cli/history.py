"""Command-line plumbing shared by ``run`` and ``compare``: the run history and the regression gate.

``history_options`` adds ``--history``, ``--no-history``, ``--label``, ``--baseline``,
``--fail-on``, ``--evidence`` and the gate's switches (``--fail-on-new``,
``--allow-policy-errors``, ``--allow-partial-baseline``) to a command; :class:`HistorySession` hands them to the one gate session
(:class:`fleetchaos.gates.session.GateSession`), which checks the gate specs and resolves
the baseline *before* anything runs, stores each finished run as it arrives, marks the
group complete or interrupted, and finally checks the new runs against the baseline.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from fleetchaos.escaping import one_line, rich_text
from fleetchaos.gates.rule import DEFAULT_EVIDENCE, EVIDENCE_MODES
from fleetchaos.gates.session import COMMAND, EXIT_GATE, GateSession
from fleetchaos.results.registry import is_rate

if TYPE_CHECKING:
    pass

__all__ = [
    "EXIT_GATE",
    "HistorySession",
    "fill_comparisons",
    "history_options",
    "in_seed_order",
    "show_history",
]


def history_options(command: Callable) -> Callable:
    """Add the history and gate options to a click command (they arrive as keyword arguments)."""
    options = [
        click.option(
            "--history",
            "history_path",
            type=click.Path(dir_okay=False, path_type=Path),
            help="run-history store each finished run is appended to "
            "[default: $FLEETCHAOS_HISTORY or fleetchaos-out/history.db]",
        ),
        click.option("--no-history", is_flag=True, help="do not store the runs"),
        click.option("--label", help="a name for this group of runs in the history (usable as --baseline LABEL)"),
        click.option(
            "--baseline",
            "baseline_ref",
            metavar="REF",
            help="compare with a stored run group (its id 7 or #7, 'latest', or a label; see `fleetchaos history`), "
            "a results.json, a report folder, or a group exported by `fleetchaos history export`",
        ),
        click.option(
            "--fail-on",
            "fail_on",
            multiple=True,
            metavar="METRIC:THRESHOLD",
            help="exit 1 when METRIC is worse than the baseline by more than THRESHOLD, seed by seed, with "
            "an explicit unit: success_rate:-2% (relative), success_rate:-2pp (percentage points), "
            "wasted_retries:+5 (in the metric's unit); repeatable (docs/metrics.md, The gate rule)",
        ),
        click.option(
            "--evidence",
            type=click.Choice(EVIDENCE_MODES),
            default=DEFAULT_EVIDENCE,
            show_default=True,
            help="with --fail-on: 'weak' lets the mean change decide; 'decisive' also fails a pass whose "
            "interval of the change straddles the allowance",
        ),
        click.option(
            "--fail-on-new",
            is_flag=True,
            help="with --baseline: fail on arms the baseline does not have (default: they are reported as new)",
        ),
        click.option(
            "--allow-policy-errors",
            is_flag=True,
            help="with --baseline or the scenario's expect: gates: let runs whose policy errored pass the gates "
            "(default: they fail them)",
        ),
        click.option(
            "--allow-partial-baseline",
            is_flag=True,
            help="with --baseline: accept a group that is not complete (killed, interrupted); the gate says what it lacks",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


class HistorySession(GateSession):
    """The gate session of ``run`` and ``compare``, built from :func:`history_options`' arguments."""

    def __init__(
        self,
        history_path: Path | None,
        no_history: bool,
        label: str | None,
        baseline_ref: str | None,
        fail_on: tuple[str, ...],
        evidence: str = DEFAULT_EVIDENCE,
        fail_on_new: bool = False,
        allow_policy_errors: bool = False,
        allow_partial_baseline: bool = False,
    ):
        super().__init__(
            COMMAND,
            baseline_ref=baseline_ref,
            fail_on=fail_on,
            history_path=history_path,
            store=not no_history,
            label=label,
            fail_on_new=fail_on_new,
            allow_policy_errors=allow_policy_errors,
            allow_partial_baseline=allow_partial_baseline,
            evidence=evidence,
        )


def fill_comparisons(result: object) -> object:
    """Add paired verdicts to a comparison loaded from an older results file that has none."""
    from fleetchaos.results.models import CompareResult

    if isinstance(result, CompareResult) and not result.comparisons and len(result.arms) > 1:
        from fleetchaos.runs.runner import paired_comparisons

        lengths = {len(v) for a in result.arms for v in a.per_seed.values()}
        if lengths == {len(result.seeds)}:
            result = result.model_copy(update={"comparisons": paired_comparisons(result.arms, result.confidence)})
    return result


def _listed(meta: dict, key: str) -> list:
    """A list stored in a group's meta, or [] when it is missing or not a list."""
    value = meta.get(key)
    return value if isinstance(value, list) else []


def _fmt(metrics: dict, name: str) -> str:
    value = metrics.get(name)
    if value is None:
        return "-"
    if is_rate(name):
        return f"{100 * value:.1f}%"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"  # a count reads as a whole number


def show_history(ref: str | None, history_path: Path | None, limit: int, as_json: bool, console: Console) -> None:
    """Print the stored groups (newest first), or the runs of the group ``ref`` names."""
    import json

    from rich.table import Table

    from fleetchaos.cli.common import fixed_width
    from fleetchaos.gates import history
    from fleetchaos.reports.fitting import fit_columns

    store = history.open_store(history_path, create=False, readonly=True)
    try:
        if ref is None:
            groups = store.groups(limit=limit)
            if as_json:
                doc = [
                    {"id": g.id, "kind": g.kind, "scenario": g.scenario, "label": g.label, "status": g.status,
                     "created_at": g.created_at, "runs": g.runs, "meta": g.meta}
                    for g in groups
                ]  # fmt: skip
                click.echo(json.dumps({"history": str(store.path), "groups": doc}, indent=2))
                return
            table = Table(title=rich_text(f"run groups in {store.path} (newest first)"), header_style="bold")
            for column in ("ref", "created (UTC)", "kind", "scenario", "label", "status", "runs", "arms", "seeds"):
                table.add_column(column, justify="right" if column in ("runs",) else "left")
            for g in groups:
                policies, errors, seeds = (_listed(g.meta, key) for key in ("policies", "errors", "seeds"))
                seed_text = (f"{seeds[0]}..{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])) if seeds else "-"
                cells: tuple[str, ...] = (g.ref, g.created_at.replace("+00:00", "").replace("T", " "), g.kind, g.scenario, g.label or "", g.status,
                         str(g.runs), f"{len(policies)} x {len(errors)}", seed_text)  # fmt: skip
                table.add_row(*(rich_text(one_line(c, 200)) for c in cells))  # stored text is data, never markup
            console.print(
                fit_columns(table, fixed_width(), ["arms", "runs", "seeds", "status", "kind", "created (UTC)"])
            )
            if not groups:
                click.echo("no run groups stored yet", err=True)
            return
        group = store.resolve(ref)
        runs = in_seed_order(store.runs(group.id))
        if as_json:
            doc = [
                {"id": r.id, "key": r.key, "scenario": r.scenario, "policy": r.policy, "errors": r.errors, "seed": r.seed,
                 "params": r.params, "metrics": r.metrics, "created_at": r.created_at}
                for r in runs
            ]  # fmt: skip
            click.echo(json.dumps({"group": group.id, "kind": group.kind, "label": group.label, "runs": doc}, indent=2))
            return
        title = f"group {group.ref} ({group.kind} of {group.scenario}, {group.status}, {group.created_at})"
        table = Table(title=rich_text(title), header_style="bold")
        columns = ("run", "policy", "errors", "seed", "success", "recovery", "silent fail", "failed retries",
                   "wasted retries", "cost (USD)")  # fmt: skip
        for column in columns:
            table.add_column(column, justify="right" if column not in ("policy", "errors") else "left")
        for r in runs:
            m = r.metrics
            cells = (str(r.id), r.policy, r.errors, str(r.seed), _fmt(m, "success_rate"), _fmt(m, "recovery_rate"),
                     _fmt(m, "silent_failure_rate"), _fmt(m, "failed_retries"), _fmt(m, "wasted_retries"),
                     _fmt(m, "cost_usd"))  # fmt: skip
            table.add_row(*(rich_text(one_line(c, 200)) for c in cells))
        console.print(
            fit_columns(
                table,
                fixed_width(),
                ["wasted retries", "failed retries", "recovery", "run", "cost (USD)", "silent fail"],
            )
        )
    finally:
        store.close()


def in_seed_order(runs: list) -> list:
    """A group's runs arm by arm (in the order each arm first finished), each arm's by seed.

    Parallel runs are stored as they finish; a reader looks for an arm's seeds together.
    The one ordering, shared with ``history export``: :func:`fleetchaos.gates.export.seed_ordered`.
    """
    from fleetchaos.gates.export import seed_ordered

    return seed_ordered(runs)
