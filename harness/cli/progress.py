"""A progress bar for long work: count, elapsed and time left, on stderr.

Shown only when stderr is a terminal (never in pipes, logs or CI output).  The bar is
drawn by rich in its own refresh thread, started after the executor has its workers, so
no worker process is forked while the thread holds a lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console


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


@contextmanager
def progress_bar(
    total: int, label: str, *, console: Console | None = None, show: bool = True
) -> Iterator[Callable[[int], None]]:
    """Yields ``advance(n=1)``; draws a bar while the block runs if stderr is a terminal (and ``show``: not ``--quiet``)."""
    console = console or Console(stderr=True)
    if not show or not console.is_terminal or total <= 0:
        yield _NoBar().advance
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=total)
        yield _Bar(progress, task).advance
