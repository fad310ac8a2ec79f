"""Command-line plumbing shared by ``run`` and ``compare``: the run history and the regression gate.

``history_options`` adds ``--history``, ``--no-history``, ``--label``, ``--baseline`` and
``--fail-on`` to a command; :class:`HistorySession` does what they ask: it checks the
gate specs and resolves the baseline *before* anything runs (so a typo costs nothing),
stores each finished run as it arrives, marks the group complete or interrupted, and
finally checks the new runs against the baseline.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from fleetchaos.errors import UserError
from fleetchaos.results.models import RunResult
from fleetchaos.results.registry import GATED_METRICS, is_rate

#: Exit code of a command whose regression gate failed.
EXIT_GATE = 1

#: Metrics compared (never failing) when --baseline is given without --fail-on: the registry's gated ones.
INFO_METRICS = tuple(GATED_METRICS)


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
            help="compare with a stored run group: its id (7 or #7), 'latest', or a label; see `fleetchaos history`",
        ),
        click.option(
            "--fail-on",
            "fail_on",
            multiple=True,
            metavar="METRIC:THRESHOLD",
            help="exit 1 when METRIC is worse than the baseline by more than THRESHOLD: "
            "relative (recovery_rate:-2%) or absolute (recovery_rate:-0.02); repeatable",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


class HistorySession:
    """One command's use of the history: store runs, then gate them against a baseline."""

    def __init__(
        self,
        history_path: Path | None,
        no_history: bool,
        label: str | None,
        baseline_ref: str | None,
        fail_on: tuple[str, ...],
    ):
        from fleetchaos.gates import history
        from fleetchaos.gates.regression import parse_fail_ons

        self.rules = parse_fail_ons(fail_on)
        if self.rules and baseline_ref is None:
            raise UserError(
                "--fail-on needs --baseline REF: the stored run group to compare with (see `fleetchaos history`)"
            )
        if label is not None and not label.strip():
            raise UserError("--label: give a non-empty name")
        if label is not None and (label.strip().lstrip("#").isdigit() or label.strip() == "latest"):
            raise UserError(f"--label {label!r}: a label cannot be a number or 'latest' (those name groups by id)")
        self.label = label.strip() if label else None
        self.baseline_group = None
        self.baseline_runs: list[RunResult] = []
        if baseline_ref is not None:  # resolved first: a bad reference creates nothing and runs nothing
            with history.open_store(history_path, create=False) as reader:
                self.baseline_group = reader.resolve(baseline_ref)
                self.baseline_runs = [r.result for r in reader.runs(self.baseline_group.id)]
            if not self.baseline_runs:
                raise UserError(
                    f"--baseline {baseline_ref}: group {self.baseline_group.ref} holds no runs; pick another (see `fleetchaos history`)"
                )
        self.store = None if no_history else history.open_store(history_path)
        self.path = None if self.store is None else self.store.path
        self.group_id: int | None = None
        self.runs: list[RunResult] = []  # kept for the gate, only when there is a baseline
        self.finished = 0

    def start(self, kind: str, spec, meta: dict[str, Any]) -> None:
        """Open the group this command's runs are stored in."""
        if self.store is None:
            return
        from fleetchaos.scenario.load import scenario_hash

        meta = {"scenario_hash": scenario_hash(spec), **meta}
        self.group_id = self.store.new_group(kind, spec.name, label=self.label, meta=meta)

    def add(self, result: RunResult) -> None:
        """Store one finished run (in its own transaction), and keep it for the gate if there is one."""
        self.finished += 1
        if self.baseline_group is not None:
            self.runs.append(result.model_copy(update={"tasks": [], "timeline": None, "samples": {}}))
        if self.store is not None and self.group_id is not None:
            self.store.add_run(self.group_id, result)

    def finish(self, status: str) -> None:
        """Mark the group complete, interrupted or failed, and close the store."""
        if self.store is None:
            return
        if self.group_id is not None:
            self.store.finish_group(self.group_id, status)
        self.store.close()
        self.store = None

    def where(self) -> str | None:
        """'group #N in PATH' for messages, or None without a history."""
        if self.group_id is None or self.path is None:
            return None
        return f"history group #{self.group_id} in {self.path}"

    def gate(self, echo: Callable[[str], None]) -> int:
        """Check the runs against the baseline; print one line per check; 1 if any regressed, else 0."""
        if self.baseline_group is None:
            return 0
        from fleetchaos.gates.regression import FailOn, check

        rules = self.rules or [FailOn(m, math.inf, False, m) for m in INFO_METRICS]
        checks = check(rules, self.runs, self.baseline_runs, self.baseline_group.ref)
        failed = [c for c in checks if c.failed]
        for c in checks:
            echo(c.line())
        if failed:
            echo(f"{len(failed)} regression(s) against baseline {self.baseline_group.ref}: exit {EXIT_GATE}")
            return EXIT_GATE
        return 0


def fill_comparisons(result):
    """Add paired verdicts to a comparison loaded from an older results file that has none."""
    from fleetchaos.results.models import CompareResult

    if isinstance(result, CompareResult) and not result.comparisons and len(result.arms) > 1:
        from fleetchaos.runs.runner import paired_comparisons

        lengths = {len(v) for a in result.arms for v in a.per_seed.values()}
        if lengths == {len(result.seeds)}:
            result = result.model_copy(update={"comparisons": paired_comparisons(result.arms, result.confidence)})
    return result


def _fmt(metrics: dict, name: str) -> str:
    value = metrics.get(name)
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if is_rate(name) else f"{value:,.1f}"


def show_history(ref: str | None, history_path: Path | None, limit: int, as_json: bool, console) -> None:
    """Print the stored groups (newest first), or the runs of the group ``ref`` names."""
    import json

    from rich.table import Table

    from fleetchaos.gates import history

    store = history.open_store(history_path, create=False)
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
            table = Table(title=f"run groups in {store.path} (newest first)", header_style="bold")
            for column in ("ref", "created (UTC)", "kind", "scenario", "label", "status", "runs", "arms", "seeds"):
                table.add_column(column, justify="right" if column in ("runs",) else "left")
            for g in groups:
                policies, formats = g.meta.get("policies", []), g.meta.get("errors", [])
                seeds = g.meta.get("seeds", [])
                seed_text = (f"{seeds[0]}..{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])) if seeds else "-"
                table.add_row(g.ref, g.created_at.replace("+00:00", ""), g.kind, g.scenario, g.label or "", g.status,
                              str(g.runs), f"{len(policies)} x {len(formats)}", seed_text)  # fmt: skip
            console.print(table)
            if not groups:
                click.echo("no run groups stored yet", err=True)
            return
        group = store.resolve(ref)
        runs = store.runs(group.id)
        if as_json:
            doc = [
                {"id": r.id, "key": r.key, "scenario": r.scenario, "policy": r.policy, "errors": r.errors, "seed": r.seed,
                 "params": r.params, "metrics": r.metrics, "created_at": r.created_at}
                for r in runs
            ]  # fmt: skip
            click.echo(json.dumps({"group": group.id, "kind": group.kind, "label": group.label, "runs": doc}, indent=2))
            return
        title = f"group {group.ref} ({group.kind} of {group.scenario}, {group.status}, {group.created_at})"
        table = Table(title=title, header_style="bold")
        for column in ("run", "policy", "errors", "seed", "recovery", "silent fail", "wasted retries", "cost (USD)"):
            table.add_column(column, justify="right" if column not in ("policy", "errors") else "left")
        for r in runs:
            m = r.metrics
            table.add_row(str(r.id), r.policy, r.errors, str(r.seed), _fmt(m, "recovery_rate"),
                          _fmt(m, "silent_failure_rate"), _fmt(m, "wasted_retries"), _fmt(m, "cost_usd"))  # fmt: skip
        console.print(table)
    finally:
        store.close()
