"""Escaping for each output medium: text from scenarios, labels and policies is data, never markup.

Every string a user or a policy controls (scenario names and descriptions, labels,
policy names and recipes, policy error messages, swept values) can reach a Markdown
page, an HTML page, a CSV file or the terminal.  Each medium has one helper here, and
every writer uses it for every piece of text it did not write itself:

* :func:`markdown_text`: Markdown text (``summary.md``): no raw HTML survives (``<``,
  ``>`` and ``&`` become entities), and no link can be formed (``](``, a leading ``[``
  and ``]:`` are escaped), so a ``javascript:`` URL stays text; :func:`markdown_cell`
  the same on one line, for a heading, a list item or a table cell;
* :func:`html_text`: HTML text and attribute values (``report.html``);
* :func:`csv_cell`: a CSV cell that a spreadsheet will not run as a formula (a string
  starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
  ``'``);
* :func:`terminal_text`: text for a terminal: control characters (``ESC``, which starts
  every escape sequence, the other C0 and C1 controls, ``DEL``) and the bidirectional
  overrides that reorder what a line shows are written out as ``\x1b``, ``\u202e``...,
  so no sequence in a name moves the cursor, clears the screen, sets the window title or
  hides text; the command line's consoles pass every string they print through it;
* :func:`rich_text`: a string for a Rich console or table that is printed as it is
  (Rich markup such as ``[/]`` or ``[link=...]`` is not interpreted, control characters
  are written out);
* :func:`one_line`: a bounded, single-line version of any text, for messages (control
  characters written out).

Light to import: the standard library and :mod:`fleetchaos.sim.terminal` only (Rich is imported by
:func:`rich_text` when called).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from fleetchaos.sim.terminal import UNSAFE_FOR_TERMINALS, terminal_text

if TYPE_CHECKING:  # Rich is imported when a Text is made
    from rich.text import Text

__all__ = [
    "FORMULA_PREFIXES",
    "UNSAFE_FOR_TERMINALS",
    "csv_cell",
    "csv_row",
    "html_text",
    "markdown_cell",
    "markdown_text",
    "one_line",
    "rich_text",
    "terminal_text",
]

#: First characters that make a spreadsheet treat a cell as a formula (OWASP's list).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def markdown_text(text: str) -> str:
    """``text`` for a Markdown page: control characters written out, HTML-significant characters as entities, link
    syntax escaped.

    Code spans written with backticks still render as code; inside one the escapes show
    literally, which only matters for a span holding ``<``, ``&`` or ``](``.
    """
    out = terminal_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = out.replace("](", "]\\(").replace("]:", "\\]:")
    if out.startswith("["):
        out = "\\" + out
    return out


def markdown_cell(text: str) -> str:
    """``text`` for one Markdown line or table cell: :func:`markdown_text` on one line, ``|`` escaped."""
    return markdown_text(" ".join(str(text).splitlines())).replace("|", "\\|")


def html_text(text: str) -> str:
    """``text`` for HTML element content or a quoted attribute value (control characters written out)."""
    return html.escape(terminal_text(text), quote=True)


def csv_cell(value: Any) -> Any:
    """A CSV cell value that no spreadsheet evaluates: strings starting with a formula prefix get a leading ``'``.

    Numbers (and anything not a string) are returned unchanged, so ``-1.5`` stays a number.
    A carriage return becomes a line feed (``\r\n`` one line feed): the csv module quotes a
    field holding a line feed, but writes a bare carriage return unquoted, which splits the
    row for every reader. Other control characters are written out (:func:`terminal_text`).
    """
    if isinstance(value, str):
        if value.startswith(FORMULA_PREFIXES):
            value = "'" + value
        if "\r" in value:
            value = value.replace("\r\n", "\n").replace("\r", "\n")
        value = terminal_text(value)
    return value


def csv_row(row: dict[str, Any]) -> dict[str, Any]:
    """Every cell of a CSV row through :func:`csv_cell`."""
    return {key: csv_cell(value) for key, value in row.items()}


def rich_text(text: str) -> Text:
    """``text`` as a Rich ``Text``: printed as it is, markup and all, control characters written out."""
    from rich.text import Text

    return Text(terminal_text(text))


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (whitespace runs as one space, control characters written out), at most ``limit``
    characters."""
    flat = terminal_text(" ".join(str(text)[: 4 * limit].split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
