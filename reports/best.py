"""Best against best in words and tables: each format's best, its lead over the next, the format alone.

One reading of a tuned comparison's :class:`~fleetchaos.results.studies.TuningRecord`
(:mod:`fleetchaos.runs.best`) for the terminal (:func:`best_headline`, :func:`best_table`,
:func:`format_alone_lines`) and for the report (:func:`tuning_blocks`).  The verdict
(best against best, paired by seed) comes first; the same policy on several formats (what
the format alone changes) is a separate, labelled figure.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fleetchaos.reports.cells import metric_cell
from fleetchaos.reports.fitting import fit_columns
from fleetchaos.reports.studies import seed_range
from fleetchaos.results.models import CompareResult
from fleetchaos.results.registry import is_rate
from fleetchaos.results.studies import Gap, TuningRecord

__all__ = [
    "alias",
    "best_headline",
    "best_lines",
    "best_table",
    "difference_text",
    "envelope_line",
    "format_alone_lines",
    "legend_lines",
    "provenance",
    "tuning_blocks",
]

#: The kinds of gap (:mod:`fleetchaos.runs.best`): a format's lead over the next, the envelope's lead, the format alone.
_LEAD, _ENVELOPE, _FORMAT = "lead", "envelope", "format"


def alias(tuning: TuningRecord, policy: str) -> str:
    """``best-for-FORMAT`` for a tuned spec (``best-for-A+B`` when it won on several), else the policy itself."""
    formats = [e for e, p in tuning.best.items() if p == policy]
    return f"best-for-{'+'.join(formats)}" if formats else policy


def difference_text(metric: str, mean: float | None, ci: list[float | None]) -> str:
    """``+7.3 pp [+5.6, +9.0]`` (a rate in percentage points), ``-1,234.5 [-2,000.0, -400.1]`` otherwise."""
    if mean is None:
        return "-"
    lo, hi = ([*ci, None, None])[:2]
    if is_rate(metric):
        text = f"{100 * mean:+.1f} pp"
        return text + (f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo is not None and hi is not None else "")
    text = f"{mean:+,.1f}"
    return text + (f" [{lo:+,.1f}, {hi:+,.1f}]" if lo is not None and hi is not None else "")


def _of(tuning: TuningRecord, kind: str) -> list[Gap]:
    return [g for g in tuning.gaps if g.kind == kind]


def provenance(tuning: TuningRecord) -> str:
    """Where the tuned policies come from: the search run for this comparison, or the scenario's shipped block."""
    seeds = seed_range(tuning.train_seeds)
    if tuning.source == "shipped":
        text = f"each format's policy shipped in the scenario's tuned: block, tuned on training seeds {seeds} by `{tuning.command}`"
        if not tuning.matches_world:
            text += (
                " for another world (the file was edited or --param changed it: not re-tuned here; --tune tunes again)"
            )
        return text
    return (
        f"each format's policy tuned for this comparison on training seeds {seeds} ({tuning.search} search, "
        f"{tuning.trials} trials per family, racing)"
    )


def best_headline(result: CompareResult, tuning: TuningRecord) -> str:
    """What the best-against-best table compares, on which seeds, and where the policies come from."""
    n = len(result.seeds)
    return (
        f"best against best on {tuning.objective}, paired by seed over seeds {seed_range(result.seeds)} "
        f"({n} seed{'s' if n != 1 else ''}, none used in tuning); {provenance(tuning)}:"
    )


def _rows(result: CompareResult, tuning: TuningRecord) -> list[tuple[str, str, str, str]]:
    """(format, policy alias, figure with interval, lead over the next) per format, best first."""
    leads = _of(tuning, _LEAD)
    order = [g.errors for g in leads] + ([leads[-1].reference_errors] if leads else [])
    if not order:
        order = [e for e in tuning.best if any(a.errors == e and a.policy == tuning.best[e] for a in result.arms)]
    by_format = {g.errors: g for g in leads}
    rows = []
    for errors in order:
        arm = result.arm(tuning.best[errors], errors)
        gap = by_format.get(errors)
        lead = (
            f"{difference_text(gap.metric, gap.mean_difference, gap.ci)} over {gap.reference_errors}"
            if gap is not None
            else "-"
        )
        rows.append((errors, alias(tuning, arm.policy), metric_cell(arm, tuning.objective), lead))
    return rows


def best_table(result: CompareResult, tuning: TuningRecord, width: int | None = None) -> Table:
    """Each format's best on its own format, best first, with its lead over the next (paired, with its interval).

    ``width``: the columns it must fit in; the lead is the table's point and is kept, the
    policy's alias is left out first (named in the caption).
    """
    pct = round(result.confidence * 100)
    table = Table(header_style="bold")
    table.add_column("errors")
    table.add_column("best policy", overflow="fold")
    table.add_column(f"{tuning.objective} ({pct}% CI)", justify="right")
    table.add_column("lead over the next (paired)", justify="right", overflow="fold")
    for row in _rows(result, tuning):
        table.add_row(*(Text(cell) for cell in row))
    return fit_columns(table, width, ["best policy"])


def envelope_line(tuning: TuningRecord) -> str:
    """The envelope's lead: the best with an envelope minus the best without one, paired."""
    gaps = _of(tuning, _ENVELOPE)
    if not gaps:
        return ""
    g = gaps[0]
    return (
        f"the envelope's lead: best on {g.errors} minus the best without an envelope (best on {g.reference_errors}): "
        f"{difference_text(g.metric, g.mean_difference, g.ci)}"
    )


def format_alone_lines(tuning: TuningRecord) -> list[str]:
    """The same policy on other formats minus on the format it was tuned for: a separate figure from the verdict."""
    gaps = _of(tuning, _FORMAT)
    if not gaps:
        return []
    lines = ["the format alone (the same policy on another format, minus on the format it was tuned for):"]
    for g in gaps:
        lines.append(
            f"  {alias(tuning, g.policy)} on {g.errors} minus on {g.reference_errors}: "
            f"{difference_text(g.metric, g.mean_difference, g.ci)}"
        )
    return lines


def legend_lines(tuning: TuningRecord) -> list[str]:
    """Each alias and the spec it stands for."""
    seen: dict[str, str] = {}
    for policy in tuning.best.values():
        seen.setdefault(alias(tuning, policy), policy)
    return [f"  {name} = {policy}" for name, policy in seen.items()]


def best_lines(result: CompareResult, tuning: TuningRecord, width: int | None = None) -> tuple[str, Table, list[str]]:
    """What a terminal prints under a tuned comparison: the headline, the table, then the envelope's lead, the
    format alone and the aliases."""
    lines = [line for line in (envelope_line(tuning),) if line]
    lines += format_alone_lines(tuning)
    lines += ["tuned policies:", *legend_lines(tuning)]
    return best_headline(result, tuning), best_table(result, tuning, width), lines


def tuning_blocks(result: object) -> list:
    """The report section of best against best: the verdict table, the envelope's lead, the format alone; []
    without tuning."""
    from fleetchaos.reports.blocks import H2, TABLE, UL, P, literal

    tuning = getattr(result, "tuning", None)
    if not isinstance(tuning, TuningRecord) or not isinstance(result, CompareResult):
        return []
    blocks = [
        H2("Best against best"),
        P(literal(best_headline(result, tuning))),
        TABLE(
            ["errors", "best policy", f"{tuning.objective}", "lead over the next (paired)"],
            [[literal(c) for c in row] for row in _rows(result, tuning)],
            align_right=2,
        ),
    ]
    envelope = envelope_line(tuning)
    if envelope:
        blocks.append(P(literal(envelope[0].upper() + envelope[1:]) + "."))
    alone = format_alone_lines(tuning)
    if alone:
        blocks += [P(literal(alone[0][0].upper() + alone[0][1:])), UL([literal(x.strip()) for x in alone[1:]])]
    blocks += [
        P("The tuned policies:"),
        TABLE(
            ["alias", "policy", "errors", "role"],
            [[alias(tuning, r.policy), f"`{r.policy}`", r.errors, r.role] for r in tuning.roles],
            align_right=4,
        ),
    ]
    return blocks
