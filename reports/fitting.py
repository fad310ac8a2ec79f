"""Terminal tables that fit a narrow terminal without breaking a figure across lines.

rich folds a column that does not fit inside its words, so ``$51,479`` could print as
``$51,4`` over ``79``: a different number to a reader.  :func:`fit_table` lays a table
out as built when it fits; else it narrows each figure column to its longest word (a
rate then sits above its interval) and, while that is still too wide, leaves figures out
from the right, for the caption to name (:func:`left_out_note`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

from rich.table import Table

__all__ = ["figure_column", "fit_table", "left_out_note"]

#: Builds a table of the figures given (metric, header); ``left_out`` names the headers left
#: out for width; ``compact``: each figure column as narrow as its longest word.
TableBuilder = Callable[[list[tuple[str, str]], list[str], bool], Table]


def fit_table(build: TableBuilder, shown: Sequence[tuple[str, str]], width: int | None, *, keep: int = 2) -> Table:
    """The table ``build`` makes of ``shown``, fitted into ``width`` columns (None: as built).

    At least ``keep`` figures stay.  In a terminal too narrow even for them, narrowed to
    their longest words, the table is laid out as built and rich folds its cells (figures
    included): cropping a name there would show another name.
    """
    figures = list(shown)
    left_out: list[str] = []
    table = build(figures, left_out, False)
    if width is None or natural_width(table) <= width:
        return table
    table = build(figures, left_out, True)
    while len(figures) > keep and natural_width(table) > width:
        left_out.insert(0, figures.pop()[1])
        table = build(figures, left_out, True)
    if natural_width(table) > width:
        table = build(figures, left_out, False)
    return table


def natural_width(table: Table) -> int:
    """The columns ``table`` takes when nothing limits its width (its caption's lines wrap: not counted)."""
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(width=100_000, file=io.StringIO())
    least, table.min_width = table.min_width, None
    try:
        return Measurement.get(console, console.options, table).maximum
    finally:
        table.min_width = least


def figure_column(table: Table, header: str, cells: Sequence[str], *, compact: bool) -> None:
    """Add a right-aligned figure column; ``compact``: exactly as wide as its longest word."""
    longest = max((len(word) for text in [header, *cells] for word in text.split()), default=1)
    table.add_column(header, justify="right", overflow="fold", width=longest if compact else None)


def left_out_note(left_out: Sequence[str], width: int | None) -> str | None:
    """The caption line naming the figures left out to fit ``width`` columns, or None."""
    if not left_out:
        return None
    return (
        f"left out to fit {width} columns: {', '.join(left_out)} (a wider terminal shows them; --columns picks figures)"
    )
