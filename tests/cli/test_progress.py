"""The progress bar: each time it shows is named, and it is drawn only into a terminal."""

from __future__ import annotations

import io
import re

from rich.console import Console

from fleetchaos.cli.progress import progress_bar, times_text


class _Tty(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_times_read_elapsed_then_left_each_named():
    """``elapsed 0:00:48, 0:01:31 left``: never ``0:00:48 left 0:01:31``, where the first time is the elapsed one."""
    assert times_text(48.4, 91.0) == "elapsed 0:00:48, 0:01:31 left"
    assert times_text(3725, None) == "elapsed 1:02:05, time left not known yet"


def test_the_bar_on_a_terminal_names_both_times():
    """Drawn on a terminal: the count, then the elapsed time and the time left, each with its word."""
    term = _Tty()
    with progress_bar(4, "sweep", console=Console(file=term, force_terminal=True, width=100)) as advance:
        advance(2)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", term.getvalue())
    assert "2/4 runs," in text
    assert re.search(r"elapsed \d+:\d\d:\d\d, (\d+:\d\d:\d\d left|time left not known yet)", text), text
    assert not re.search(r"\d:\d\d:\d\d left \d", text), text


def test_no_bar_in_a_pipe_even_when_colour_is_forced(monkeypatch):
    """FORCE_COLOR (or TTY_COMPATIBLE=1) asks rich for escape codes; a bar redrawn into a CI log is still noise."""
    for variable, value in (("FORCE_COLOR", "1"), ("TTY_COMPATIBLE", "1")):
        monkeypatch.delenv("FORCE_COLOR", raising=False)
        monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
        monkeypatch.setenv(variable, value)
        log = io.StringIO()
        console = Console(file=log)
        assert console.is_terminal  # what rich itself would go by
        with progress_bar(4, "compare", console=console) as advance:
            advance(2)
        assert log.getvalue() == "", variable


def test_no_bar_on_a_dumb_terminal(monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    term = _Tty()
    with progress_bar(4, "sweep", console=Console(file=term, force_terminal=True)) as advance:
        advance(1)
    assert term.getvalue() == ""
