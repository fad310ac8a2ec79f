"""Drawing a report's charts, one after another or side by side on an executor.

A chart is a :class:`Chart`: the name of a chart function of :mod:`fleetchaos.reports.charts`
(or of any module-level function taking its data and then a path or binary file, returning
None when it has nothing to draw), its data and the file name it gets.  :func:`draw_charts`
draws them in this process, or, given an executor (the worker pool a command's runs used),
all at once in the pool, each worker rendering its charts into memory and the caller
writing the PNG files: a Dask worker on another machine draws as well as a local one, and
files appear only on the caller's disk.  The function travels by name, so the caller never
imports matplotlib when the pool draws.  A chart's bytes do not depend on where it was
drawn (the Agg backend, no metadata, nothing random), so a report is byte-identical either
way.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Chart", "draw_charts", "render_png"]


@dataclass(frozen=True, slots=True)
class Chart:
    """One chart of a report: the function named ``draw``, called as ``draw(*data, file)``, writes it as PNG."""

    key: str
    """How the report refers to the chart (``recovery``, ``timeline0``, ...)."""
    filename: str
    draw: str
    """The chart function as ``module:function`` (``fleetchaos.reports.charts:recovery_chart``)."""
    data: tuple[Any, ...]


def render_png(chart: Chart) -> tuple[str, bytes | None]:
    """Draw ``chart`` into memory: its key and PNG bytes, or None when it had nothing to draw."""
    module, _, name = chart.draw.partition(":")
    draw = getattr(importlib.import_module(module), name)
    buffer = io.BytesIO()
    drawn = draw(*chart.data, buffer)
    return chart.key, (buffer.getvalue() if drawn is not None else None)


def draw_charts(charts: Sequence[Chart], out_dir: Path, executor: Executor | None = None) -> dict[str, Path]:
    """Draw ``charts`` into ``out_dir``; the files written by chart key, in the order given.

    Without an executor, each chart is drawn here in turn.  With one, every chart is
    submitted at once (a report has a handful) and drawn by whichever worker is free; on
    Ctrl-C or an error the charts not yet started are cancelled and the exception
    propagates (the caller owns the executor and shuts it down).
    """
    drawn: dict[str, bytes | None] = {}
    if executor is None:
        for chart in charts:
            key, png = render_png(chart)
            drawn[key] = png
    else:
        futures = [executor.submit(render_png, chart) for chart in charts]
        try:
            for future in futures:
                key, png = future.result()
                drawn[key] = png
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    made: dict[str, Path] = {}
    for chart in charts:
        png = drawn[chart.key]
        if png is not None:
            path = out_dir / chart.filename
            path.write_bytes(png)
            made[chart.key] = path
    return made
