"""Bounded reading of trace files, and the one error a bad trace file gives.

Lines are read with a length cap, so a file with no newline (``/dev/zero``, a binary
blob, one giant line) costs at most the cap before it is refused; nothing reads a whole
file into memory except a single pretty-printed JSON document, itself capped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from fleetchaos.errors import UserError
from fleetchaos.files import open_input

#: The longest line a trace file may have (a collector's export batch is one line).
MAX_LINE_BYTES = 64 * 1024 * 1024

#: The largest single (pretty-printed, multi-line) JSON document read whole.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


class TraceFileError(UserError):
    """A trace file that cannot be read: the message names the file, line, field, value, rule and fix."""


def shown(value: Any, limit: int = 80) -> str:
    """A value as it appears in a message: its repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def problem(
    source: str, line: int | None, field: str | None, rule: str, value: Any = None, fix: str = ""
) -> TraceFileError:
    """One message: ``FILE: line N: FIELD: RULE (got VALUE); FIX``."""
    where = f"{source}: line {line}" if line is not None else source
    if field:
        where += f": {field}"
    got = "" if value is None else f" (got {shown(value)})"
    return TraceFileError(f"{where}: {rule}{got}" + (f"; {fix}" if fix else ""))


def open_binary(path: Path, source: str) -> BinaryIO:
    """``path`` opened for reading bytes, or a :class:`TraceFileError` saying why not."""

    try:
        return open_input(path, what="trace file")  # a named pipe is not waited on
    except IsADirectoryError:
        raise problem(source, None, None, "is a folder, not a trace file", fix="give the file itself") from None
    except FileNotFoundError:
        raise problem(source, None, None, "no such file", fix="check the path") from None
    except PermissionError:
        raise problem(source, None, None, "cannot be read (permission denied)", fix="check its permissions") from None
    except OSError as exc:
        raise problem(source, None, None, f"cannot be read ({exc.strerror or exc})") from None


def lines(stream: BinaryIO, source: str, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line, each at most ``max_line_bytes`` long, decoded as UTF-8."""
    number = 0
    while True:
        raw = stream.readline(max_line_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_line_bytes:
            raise problem(
                source,
                number,
                None,
                f"line is longer than {max_line_bytes:,} bytes (the limit for one line)",
                fix="a trace file has one record or one export batch per line; split the batches smaller "
                "(or check that this is a trace file at all)",
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise problem(
                source, number, None, f"not UTF-8 text (byte {exc.start + 1})", fix="trace files are UTF-8 JSON or CSV"
            ) from None
        if "\x00" in text:
            raise problem(
                source, number, None, "contains NUL bytes", fix="trace files are text: is this the right file?"
            )
        yield number, text


def read_document(stream: BinaryIO, source: str, head: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    """The rest of a multi-line JSON document whose first lines are ``head``, within ``max_bytes``."""
    rest = stream.read(max_bytes + 1 - len(head.encode("utf-8")))
    if len(head.encode("utf-8")) + len(rest) > max_bytes:
        raise problem(
            source,
            None,
            None,
            f"a multi-line JSON document larger than {max_bytes:,} bytes",
            fix="write one export request per line (the OpenTelemetry Collector file exporter's form), "
            "which is read line by line with no size limit on the file",
        )
    try:
        return head + rest.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise problem(source, None, None, f"not UTF-8 text (byte {exc.start + 1} after the first line)") from None
