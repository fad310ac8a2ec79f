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

__all__ = ["figure_column", "fit_columns", "fit_table", "left_out_note"]

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


def left_out_note(left_out: Sequence[str], width: int | None, hint: str = "--columns picks figures") -> str | None:
    """The caption line naming the figures left out to fit ``width`` columns (``hint``: how else to see them), or None."""
    if not left_out:
        return None
    more = f"; {hint}" if hint else ""
    return f"left out to fit {width} columns: {', '.join(left_out)} (a wider terminal shows them{more})"


def fit_columns(table: Table, width: int | None, leave_out: Sequence[str] = (), hint: str = "") -> Table:
    """``table`` laid out in ``width`` columns with every word whole (None: as built); returns it.

    Where the table is wider, its widest columns wrap at their spaces first, never narrower
    than their longest word (a column that must not wrap keeps its whole width); while even
    that is too wide, the columns headed by ``leave_out`` are left out, in that order, and
    the caption names them (:func:`left_out_note`, with ``hint``).  Cropping or folding a name would show
    another name.  In a terminal too narrow even then, the table stays as built and rich folds its
    cells (never an ellipsis: every character is printed).
    """
    if width is None or natural_width(table) <= width:
        return table
    left_out: list[str] = []
    queue = [name for name in leave_out if name in _headers(table)]
    while True:
        widths = _word_widths(table, width)
        if widths is not None:
            for column, column_width in zip(table.columns, widths):
                column.width, column.ratio = column_width, None  # these widths, not shares of the terminal
            table.expand = False
            break
        if not queue:
            for column in table.columns:  # too narrow even so: rich folds, and hides nothing behind an ellipsis
                column.overflow = "fold" if column.overflow == "ellipsis" else column.overflow
            break
        name = queue.pop(0)
        table.columns = [c for c in table.columns if _header(c) != name]
        left_out.append(name)
    note = left_out_note(left_out, width, hint)
    if note is not None:
        from rich.text import Text

        caption = table.caption
        lines = [caption if isinstance(caption, Text) else Text(str(caption))] if caption else []
        table.caption = Text("\n").join([*lines, Text(note)])
        table.caption_justify = "left"
    return table


def _header(column) -> str:
    header = column.header
    return header.plain if hasattr(header, "plain") else str(header)


def _headers(table: Table) -> list[str]:
    return [_header(c) for c in table.columns]


def _word_widths(table: Table, width: int) -> list[int] | None:
    """Each column's width so that ``table`` fits ``width`` with no word broken, or None when it cannot.

    The widest column that can still wrap gives up a column at a time, down to its longest word.
    """
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(width=100_000, file=io.StringIO())
    options = console.options
    naturals, least = [], []
    for column in table.columns:
        cells = [column.header, *column.cells]
        spans = [Measurement.get(console, options, cell) for cell in cells if cell != ""]
        natural = max((span.maximum for span in spans), default=1)
        naturals.append(natural)
        least.append(natural if column.no_wrap else max((span.minimum for span in spans), default=1))
    for column in table.columns:
        column.width = None
    overhead = natural_width(table) - sum(naturals)
    widths = list(naturals)
    excess = sum(widths) + overhead - width
    while excess > 0:
        can_wrap = [i for i, w in enumerate(widths) if w > least[i]]
        if not can_wrap:
            return None
        widest = max(can_wrap, key=lambda i: (widths[i], -i))
        widths[widest] -= 1
        excess -= 1
    return widths
