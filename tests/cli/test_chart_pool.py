"""The chart workers: warmed in a forkserver, or forked from the command after it imported the charts in a thread."""

from __future__ import annotations

import sys
import threading
from typing import IO

import fleetchaos.runs.executors as executors
from fleetchaos.cli.chart_pool import CHART_MODULES, chart_pool, preload_charts, runs_fill_cores
from fleetchaos.reports.drawing import Chart, render_png


def stripes(width: int, fill: str, file: IO[bytes]) -> IO[bytes]:
    """A stand-in chart function: writes bytes that depend on its data."""
    file.write(fill.encode() * width)
    return file


def test_runs_fill_the_cores_with_a_worker_per_core(monkeypatch):
    """Local runs fill the cores with as many workers as cores (the default) or more; not with fewer, one or a cluster."""
    monkeypatch.setattr(executors, "default_jobs", lambda: 4)
    assert runs_fill_cores(None, None) and runs_fill_cores(4, None) and runs_fill_cores(6, None)
    assert not runs_fill_cores(3, None) and not runs_fill_cores(1, None)
    assert not runs_fill_cores(None, "tcp://scheduler:8786")


def test_a_pool_after_the_preload_thread_draws_charts():
    """chart_pool joins the preload thread (the charts then imported here) and its workers draw a chart."""
    thread = preload_charts()
    assert isinstance(thread, threading.Thread)
    pool = chart_pool(2, thread)
    try:
        assert pool is not None and not thread.is_alive()
        assert all(module in sys.modules for module in CHART_MODULES)
        chart = Chart("x", "x.png", f"{__name__}:stripes", (2, "x"))
        assert pool.submit(render_png, chart).result(timeout=60) == ("x", b"xx")
    finally:
        if pool is not None:
            pool.shutdown()
    assert chart_pool(1, preload_charts()) is None  # --jobs 1 draws in the command's process
