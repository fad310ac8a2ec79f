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

from fleetchaos.escaping import markdown_cell, markdown_text
from fleetchaos.files import write_text


@dataclass(frozen=True)
class Block:
    """One piece of a report: ``kind`` is h1, h2, h3, p, table, img, ul or pre."""

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


def TABLE(headers: Iterable[str], rows: Iterable[Iterable[str]], align_right: int = 1) -> Block:
    """A table; columns from ``align_right`` on are right-aligned."""
    return Block("table", headers=tuple(headers), rows=tuple(tuple(r) for r in rows), align_right=align_right)


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``, so the text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def to_markdown(blocks: list[Block]) -> str:
    """Render blocks as GitHub-flavoured Markdown; every text is escaped (:func:`fleetchaos.escaping.markdown_text`)."""
    out: list[str] = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out += ["#" * int(b.kind[1]) + " " + markdown_cell(b.text), ""]
        elif b.kind == "p":
            out += [markdown_text(b.text), ""]
        elif b.kind == "ul":
            out += [f"- {markdown_cell(item)}" for item in b.items] + [""]
        elif b.kind == "pre":
            fence = _fence(b.text)
            out += [fence, b.text.rstrip("\n"), fence, ""]
        elif b.kind == "img":
            out += [f"![{markdown_cell(b.items[0])}]({b.text})", ""]
        elif b.kind == "table":
            aligns = ["---:" if b.align_right and i >= b.align_right else "---" for i in range(len(b.headers))]
            out.append("| " + " | ".join(markdown_cell(h) for h in b.headers) + " |")
            out.append("|" + "|".join(aligns) + "|")
            out += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in b.rows]
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", html.escape(text, quote=True))


CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #4f81bd; padding-bottom: .3rem; }
h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
table { border-collapse: collapse; margin: .8rem 0 1.2rem; font-size: .88rem; }
th, td { border: 1px solid #d0d0d0; padding: .3rem .55rem; vertical-align: top; }
th { background: #f0f3f8; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1rem 0 1.8rem; }
figure img { max-width: 100%; border: 1px solid #e3e3e3; }
figcaption { font-size: .85rem; color: #555; }
pre { background: #f6f8fa; padding: .8rem; overflow-x: auto; font-size: .8rem; }
code { background: #f6f8fa; padding: 0 .2rem; font-size: .88em; }
.verdict-better { color: #1a7f37; font-weight: 600; }
.verdict-worse { color: #c0392b; font-weight: 600; }
"""


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
            out.append(f"<p>{_inline(b.text)}</p>")
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
                    if c in ("better", "worse"):
                        cls = f' class="n verdict-{c}"' if cls else f' class="verdict-{c}"'
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
