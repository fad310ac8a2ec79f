"""The worker processes a command's report charts are drawn on, started so they cost the command little.

Importing matplotlib takes a third of a second, as long as the command's own start-up, and
a report's charts take a second or two more.  A command that will write a report calls
:func:`warm_chart_workers` first thing: on Linux a forkserver starts at once and imports
the chart module (and matplotlib) in the background while the command loads the
simulation and runs; :func:`chart_pool` later forks the chart workers from it, so they
start in milliseconds with everything loaded, and the charts are drawn side by side.
Elsewhere the pool's workers import the charts themselves.  With ``--jobs 1`` the charts
are drawn in the command's own process, as its runs were.

When the command's own workers keep every core busy meanwhile (a comparison with one
process per core, the default), a forkserver would take its share of a core from them for
a second interpreter that imports the command and the charts again; then
:func:`preload_charts` imports the chart module in a thread of the command itself, once
its workers are started (only what it lacks: about half the CPU time), and the chart
workers are forked from the command afterwards.
"""

from __future__ import annotations

import importlib
import threading
from concurrent.futures import Executor
from pathlib import Path

__all__ = [
    "CHART_MODULES",
    "MAX_CHART_WORKERS",
    "chart_pool",
    "preload_charts",
    "runs_fill_cores",
    "warm_chart_workers",
]

#: What a chart worker needs loaded: the chart functions (and so matplotlib and the result models).
CHART_MODULES = ("fleetchaos.reports.charts",)
#: A report draws at most eight charts; more workers would wait.
MAX_CHART_WORKERS = 8


def warm_chart_workers(report: Path | None, jobs: int | None = None) -> bool:
    """With a report to draw on more than one process, start the chart workers' forkserver now; True if started."""
    if report is None or jobs == 1:
        return False
    from fleetchaos.runs.executors import warm_forkserver

    return warm_forkserver(CHART_MODULES)


def runs_fill_cores(jobs: int | None, scheduler: str | None) -> bool:
    """Whether a command's local runs keep every core busy: one worker process per core, or more."""
    if scheduler is not None or jobs == 1:
        return False
    from fleetchaos.runs.executors import default_jobs

    return (jobs or default_jobs()) >= default_jobs()


def preload_charts() -> threading.Thread:
    """Import the chart module in a thread of this process; :func:`chart_pool` joins it before forking.

    Start it once the command's worker processes are running: a process is forked only
    while it runs one thread (:func:`fleetchaos.runs.executors.start_method`).
    """

    def load() -> None:
        for module in CHART_MODULES:
            try:
                importlib.import_module(module)
            except Exception:  # chart_pool imports it again in the command's thread, which reports it
                return

    thread = threading.Thread(target=load, name="fleetchaos-chart-preload")
    thread.start()
    return thread


def chart_pool(jobs: int | None, warm: bool | threading.Thread) -> Executor | None:
    """The local pool to draw a report's charts on: ``jobs`` workers (default one per core), None with ``--jobs 1``.

    ``warm`` says :func:`warm_chart_workers` started the forkserver, so the workers are
    forked from it, or is the thread of :func:`preload_charts`, joined here, so they are
    forked from this process.
    """
    if isinstance(warm, threading.Thread):
        warm.join()
        warm = False
    if jobs == 1:
        return None
    from fleetchaos.runs.executors import LocalProcessExecutor, default_jobs

    workers = min(MAX_CHART_WORKERS, default_jobs() if jobs is None else jobs)
    return LocalProcessExecutor(workers, CHART_MODULES, method="forkserver" if warm else None)
