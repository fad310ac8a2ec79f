"""Tables and summaries of tuning results (best against best is :mod:`fleetchaos.reports.best`)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table
from rich.text import Text

from fleetchaos.reports.cells import metric_cell
from fleetchaos.reports.fitting import fit_columns
from fleetchaos.reports.results_io import dumps
from fleetchaos.results.registry import HEADLINE_METRICS, is_rate
from fleetchaos.results.studies import TuneResult

__all__ = [
    "best_lines",
    "seed_range",
    "tune_headline",
    "tune_markdown",
    "tune_table",
    "write_tune_report",
]


def seed_range(seeds: list[int]) -> str:
    """``1-10`` for consecutive seeds, else the list."""
    if seeds and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ", ".join(map(str, seeds))


def _family_rows(result: TuneResult) -> list[tuple[str, str, str, str]]:
    """(family, training objective, held-out objective with interval, spec) per family, the winner first."""
    best_of: dict[str, tuple[float | None, str]] = {}
    for trial in result.trials:
        held = best_of.get(trial.family)
        better = held is None or (
            trial.objective is not None
            and (
                held[0] is None or (trial.objective > held[0] if result.higher_is_better else trial.objective < held[0])
            )
        )
        if better:
            best_of[trial.family] = (trial.objective, trial.policy)
    held_out = {arm.policy: arm for arm in result.holdout}
    rows = []
    for family, (objective, policy) in sorted(best_of.items(), key=lambda kv: kv[1][1] != result.best):
        arm = held_out.get(policy)
        rows.append(
            (
                family,
                _value(result.objective, objective),
                metric_cell(arm, result.objective) if arm is not None else "-",
                policy,
            )
        )
    return rows


def _value(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if is_rate(metric) else f"{value:,.2f}"


def tune_headline(result: TuneResult) -> str:
    """One sentence: what was searched, on which seeds, and which seeds are held out."""
    return _headline(result)


def _headline(result: TuneResult) -> str:
    return (
        f"tune {result.scenario} on {result.errors} errors: {len(result.space)} families, {len(result.trials)} "
        f"candidates ({result.search} search, sampler seed {result.sampler_seed}, space v{result.space_version}); "
        f"objective {result.objective} on training seeds {seed_range(result.train_seeds)}; "
        f"held out: seeds {seed_range(result.holdout_seeds)}, which no candidate ran on"
        + (
            f"; raced: {result.training_runs} of {result.exhaustive_runs} training runs made "
            f"({result.exhaustive_runs - result.training_runs} saved)"
            if result.race
            else ""
        )
    )


def tune_table(result: TuneResult, width: int | None = None) -> Table:
    """Each family's best candidate: its training objective, its held-out figure with interval, its spec.

    ``width``: the columns it must fit in (a terminal's); the training figure is left out first,
    then the held-out one, named in the caption; family names and specs stay whole.
    """
    pct = round(result.confidence * 100)
    table = Table(header_style="bold")
    table.add_column("family")
    table.add_column("train", justify="right")
    table.add_column(f"held out ({pct}% CI)", justify="right")
    table.add_column("best candidate", overflow="fold")
    for i, row in enumerate(_family_rows(result)):
        table.add_row(*(Text(cell) for cell in row), style="bold" if i == 0 else None)
    return fit_columns(table, width, ["train", f"held out ({pct}% CI)"])


def best_lines(result: TuneResult) -> list[str]:
    """The winner, its parameters and its held-out headline figures with intervals, and the command that repeats them."""
    arm = result.holdout[0]
    lines = [f"best: {result.best}", f"held out on seeds {seed_range(result.holdout_seeds)}:"]
    for metric in dict.fromkeys([result.objective, *HEADLINE_METRICS]):
        lines.append(f"  {metric}: {metric_cell(arm, metric)}")
    seeds = result.holdout_seeds
    consecutive = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    extra = "".join(f" --param {p}={json.dumps(v)}" for p, v in result.params.items())
    if consecutive:
        lines.append(
            f"repeat: fleetchaos compare --scenario {result.scenario}{extra} --policies '{result.best}' "
            f"--errors {result.errors} --seeds {len(seeds)} --first-seed {seeds[0]}"
        )
    return lines


def tune_markdown(result: TuneResult) -> str:
    """summary.md of a tuning search."""
    out = [f"# Tuning: {result.scenario} on {result.errors} errors", "", _headline(result) + ".", ""]
    out += ["| family | train | held out | best candidate |", "|---|---:|---:|---|"]
    out += [f"| {f} | {t} | {h} | `{p}` |" for f, t, h, p in _family_rows(result)]
    out += ["", *(f"    {line}" if line.startswith("  ") else line for line in best_lines(result)), ""]
    out += ["## Search space", ""]
    for family, dims in result.space.items():
        ranges = ", ".join(f"`{name}` {text}" for name, text in dims.items()) or "defaults only"
        out.append(f"* `{family}`: {ranges}")
    return "\n".join(out) + "\n"


def write_tune_report(result: TuneResult, out_dir: Path) -> list[Path]:
    """results.json and summary.md of a tuning search."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / "results.json"
    results.write_text(dumps(result), encoding="utf-8")
    summary = out_dir / "summary.md"
    summary.write_text(tune_markdown(result), encoding="utf-8")
    return [results, summary]
