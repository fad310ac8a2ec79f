"""A progress bar for long work: count, then ``elapsed 0:00:48, 0:01:31 left``, on stderr.

Shown only when stderr is a terminal: the stream itself says so (``isatty``), so an
environment that asks rich for colour (``FORCE_COLOR``, ``TTY_COMPATIBLE``) in a pipe, a
log or CI output gets no bar redrawn line after line.  The bar is drawn by rich in its
own refresh thread, started after the executor has its workers, so no worker process is
forked while the thread holds a lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import Task
    from rich.text import Text

__all__ = ["clock", "progress_bar", "times_text"]


class _NoBar:
    def advance(self, n: int = 1) -> None:
        """Nothing to draw."""


class _Bar:
    def __init__(self, progress, task) -> None:
        self._progress = progress
        self._task = task

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more finished runs."""
        self._progress.advance(self._task, n)


def clock(seconds: float) -> str:
    """``0:01:31``: whole seconds as hours, minutes and seconds."""
    return str(timedelta(seconds=max(0, int(seconds))))


def times_text(elapsed: float | None, left: float | None) -> str:
    """``elapsed 0:00:48, 0:01:31 left``: each time named, so neither reads as the other."""
    text = f"elapsed {clock(elapsed or 0.0)}"
    return f"{text}, {clock(left)} left" if left is not None else f"{text}, time left not known yet"


def on_terminal(console: Console) -> bool:
    """Whether ``console`` writes to a terminal: its stream says so, whatever the environment asks of rich."""
    if not console.is_terminal or console.is_dumb_terminal:
        return False
    isatty = getattr(console.file, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


@contextmanager
def progress_bar(
    total: int, label: str, *, console: Console | None = None, show: bool = True
) -> Iterator[Callable[[int], None]]:
    """Yields ``advance(n=1)``; draws a bar while the block runs if stderr is a terminal (and ``show``: not ``--quiet``)."""
    console = console or Console(stderr=True)
    if not show or total <= 0 or not on_terminal(console):
        yield _NoBar().advance
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn
    from rich.text import Text

    class TimesColumn(ProgressColumn):
        """``elapsed 0:00:48, 0:01:31 left``."""

        def render(self, task: Task) -> Text:
            finished = task.finished_time if task.finished else None
            return Text(times_text(finished if finished is not None else task.elapsed, task.time_remaining))

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs,"),
        TimesColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=total)
        yield _Bar(progress, task).advance
