"""The report page model: blocks (headings, paragraphs, tables, images, lists) and their two renderings.

A report is first built as a list of blocks; the same blocks render to Markdown
(``summary.md``, which links the PNG files beside it) and to HTML (``report.html``, with
every chart embedded as a base64 PNG and inline CSS, so it opens offline).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fleetchaos.files import write_text


@dataclass(frozen=True)
class Block:
    """One piece of a report: ``kind`` is h1, h2, h3, p, table, img, ul, pre, or details/end_details
    around a part the HTML page collapses (an appendix)."""

    kind: str
    text: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    items: tuple[str, ...] = ()
    align_right: int = 0
    """Table columns from this index on are numeric (right-aligned); 0 for none."""


def H1(text: str) -> Block:
    """A level-1 heading."""
    return Block("h1", text)


def H2(text: str) -> Block:
    """A level-2 heading."""
    return Block("h2", text)


def H3(text: str) -> Block:
    """A level-3 heading."""
    return Block("h3", text)


def P(text: str) -> Block:
    """A paragraph (``code`` in backticks is kept as code)."""
    return Block("p", text)


def UL(items: Iterable[str]) -> Block:
    """A bulleted list."""
    return Block("ul", items=tuple(items))


def PRE(text: str) -> Block:
    """A preformatted block."""
    return Block("pre", text)


def IMG(file: str, alt: str) -> Block:
    """A chart: a PNG file name beside the report."""
    return Block("img", file, items=(alt,))


def DETAILS(summary: str) -> Block:
    """The start of a collapsed part (``<details>`` in HTML, a level-2 heading in Markdown), up to :func:`END_DETAILS`."""
    return Block("details", summary)


def END_DETAILS() -> Block:
    """The end of the part :func:`DETAILS` opened."""
    return Block("end_details")


#: Characters Markdown gives a meaning to inside a paragraph or a table cell.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]()|#~])")
#: Characters that would open raw HTML in Markdown: written as entities, so no renderer sees a tag.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def literal(text: str) -> str:
    """``text`` (a policy's or a scenario's name, anything from a user) to be read as it is in block text.

    Markdown punctuation (link brackets and parentheses included) is backslash-escaped and
    ``&``, ``<``, ``>`` become entities, so summary.md shows it literally and no renderer
    sees a tag or a link; the HTML page reads both back and escapes the text for HTML
    (:func:`to_html`).
    """
    text = "".join(_ENTITIES.get(c, c) for c in text)
    return _MD_SPECIAL.sub(r"\\\1", text)


def TABLE(headers: Iterable[str], rows: Iterable[Iterable[str]], align_right: int = 1) -> Block:
    """A table; columns from ``align_right`` on are right-aligned."""
    return Block("table", headers=tuple(headers), rows=tuple(tuple(r) for r in rows), align_right=align_right)


def _md_cell(text: str) -> str:
    # A pipe already escaped by literal() stays as it is; any other would split the cell.
    return re.sub(r"(?<!\\)\|", r"\\|", text).replace("\n", " ")


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``, so the text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def to_markdown(blocks: list[Block]) -> str:
    """Render blocks as GitHub-flavoured Markdown.

    Text from users reaches blocks through :func:`literal` (Markdown punctuation, link
    syntax and raw HTML escaped), so it is rendered as it is here; a preformatted block
    gets a fence longer than any backtick run inside it.
    """
    out: list[str] = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out += ["#" * int(b.kind[1]) + " " + _md_cell(b.text), ""]
        elif b.kind == "p":
            out += [b.text, ""]
        elif b.kind == "ul":
            out += [f"- {_md_cell(item)}" for item in b.items] + [""]
        elif b.kind == "pre":
            fence = _fence(b.text)
            out += [fence, b.text.rstrip("\n"), fence, ""]
        elif b.kind == "img":
            out += [f"![{_md_cell(b.items[0])}]({b.text})", ""]
        elif b.kind == "details":
            out += ["## " + _md_cell(b.text), ""]
        elif b.kind == "table":
            aligns = ["---:" if b.align_right and i >= b.align_right else "---" for i in range(len(b.headers))]
            out.append("| " + " | ".join(_md_cell(h) for h in b.headers) + " |")
            out.append("|" + "|".join(aligns) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


_CODE = re.compile(r"(?<!\\)`([^`\\]+)`")  # a code span; an escaped backtick (literal text) opens none
_UNESCAPE = re.compile(r"\\([\\`*_\[\]()<>|#~])")
_ENTITY = re.compile(r"&(amp|lt|gt);")


def _unescape(text: str) -> str:
    """Markdown backslash escapes and :func:`literal`'s three entities read back to the characters they stand for."""
    return _ENTITY.sub(lambda m: {"amp": "&", "lt": "<", "gt": ">"}[m.group(1)], _UNESCAPE.sub(r"\1", text))


_BOLD = re.compile(r"(?<!\\)\*\*(.+?)(?<!\\)\*\*")  # **strong**; an escaped star (literal text) opens none


def _plain(text: str) -> str:
    """Text outside code spans: **strong** kept, Markdown backslash escapes read, everything else escaped."""
    out = []
    last = 0
    for m in _BOLD.finditer(text):
        out.append(html.escape(_unescape(text[last : m.start()]), quote=True))
        strong = html.escape(_unescape(m.group(1)), quote=True)
        out.append(f"<strong>{strong}</strong>")
        last = m.end()
    out.append(html.escape(_unescape(text[last:]), quote=True))
    return "".join(out)


def _inline(text: str) -> str:
    """Block text as HTML: `code` spans kept as code, **strong** as strong, Markdown backslash escapes read,
    everything escaped."""
    out = []
    last = 0
    for m in _CODE.finditer(text):
        out.append(_plain(text[last : m.start()]))
        out.append(f"<code>{html.escape(m.group(1), quote=True)}</code>")
        last = m.end()
    out.append(_plain(text[last:]))
    return "".join(out)


CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #4f81bd; padding-bottom: .3rem; }
h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
table { border-collapse: collapse; margin: .8rem 0 1.2rem; font-size: .84rem; display: block; overflow-x: auto; }
th, td { border: 1px solid #d0d0d0; padding: .28rem .45rem; vertical-align: top; }
th { background: #f0f3f8; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td:first-child { white-space: nowrap; }
td.verdict { white-space: normal; min-width: 7.5rem; }
tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1rem 0 1.8rem; }
figure img { max-width: 100%; border: 1px solid #e3e3e3; }
figcaption { font-size: .85rem; color: #555; }
pre { background: #f6f8fa; padding: .8rem; overflow-x: auto; font-size: .8rem; }
code { background: #f6f8fa; padding: 0 .2rem; font-size: .88em; }
.verdict-better { color: #1a7f37; font-weight: 600; }
.verdict-worse { color: #c0392b; font-weight: 600; }
p.finding { font-size: 1.05rem; background: #f4f8fc; border-left: 4px solid #4f81bd; padding: .7rem 1rem; }
details { margin-top: 2.2rem; }
details > summary { cursor: pointer; font-size: 1.3rem; font-weight: 600; border-bottom: 1px solid #ddd; }
"""


#: The words a verdict cell ends with (fleetchaos.results.stats.VERDICTS, and the reference arm's own row).
_VERDICT_WORDS = ("better", "worse", "inconclusive", "no difference", "too few seeds", "no direction", "reference")


def to_html(blocks: list[Block], title: str, images: dict[str, bytes]) -> str:
    """Render blocks as one self-contained HTML page; every ``img`` block is embedded from ``images``."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
    ]
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append(f"<{b.kind}>{_inline(b.text)}</{b.kind}>")
        elif b.kind == "p":
            cls = f' class="{b.items[0]}"' if b.items else ""
            out.append(f"<p{cls}>{_inline(b.text)}</p>")
        elif b.kind == "details":
            out.append(f"<details><summary>{_inline(b.text)}</summary>")
        elif b.kind == "end_details":
            out.append("</details>")
        elif b.kind == "ul":
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>")
        elif b.kind == "pre":
            out.append(f"<pre>{html.escape(b.text)}</pre>")
        elif b.kind == "img":
            data = base64.b64encode(images[b.text]).decode("ascii")
            alt = html.escape(b.items[0], quote=True)
            out.append(
                f'<figure><img alt="{alt}" src="data:image/png;base64,{data}"><figcaption>{alt}</figcaption></figure>'
            )
        elif b.kind == "table":
            head = "".join(f"<th>{_inline(h)}</th>" for h in b.headers)
            body = []
            for row in b.rows:
                cells = []
                for i, c in enumerate(row):
                    cls = ' class="n"' if b.align_right and i >= b.align_right else ""
                    # a cell may end with its verdict ("+9.8 pp [+5.9, +13.8] better"): coloured, and free to wrap
                    verdict = next((v for v in _VERDICT_WORDS if c.endswith(v)), None)
                    if verdict is not None:
                        classes = (["n"] if cls else []) + ["verdict"]
                        if verdict in ("better", "worse"):
                            classes.append(f"verdict-{verdict}")
                        cls = f' class="{" ".join(classes)}"'
                    cells.append(f"<td{cls}>{_inline(c)}</td>")
                body.append("<tr>" + "".join(cells) + "</tr>")
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def write_pages(out_dir: Path, blocks: list[Block], title: str, made: dict[str, Path]) -> list[Path]:
    """Write ``blocks`` as summary.md (charts linked) and report.html (the ``made`` charts embedded); both paths."""
    summary = write_text(out_dir / "summary.md", to_markdown(blocks))
    images = {p.name: p.read_bytes() for p in made.values()}
    page = write_text(out_dir / "report.html", to_html(blocks, title, images))
    return [summary, page]
