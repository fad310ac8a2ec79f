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

import functools
import importlib
import io
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetchaos.files import atomic_write
from fleetchaos.runs.cache import active_cache

__all__ = ["Chart", "Drawing", "draw_charts", "render_png"]


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
    from fleetchaos.reports.charts import plain_text  # in the worker: only it imports matplotlib

    module, _, name = chart.draw.partition(":")
    draw = getattr(importlib.import_module(module), name)
    buffer = io.BytesIO()
    with plain_text():  # a `$` in a user's name is text, never mathtext
        drawn = draw(*chart.data, buffer)
    return chart.key, (buffer.getvalue() if drawn is not None else None)


class Drawing:
    """Charts on their way: submitted to an executor at once, written by :meth:`write`.

    Between the two the caller can do its own work (write the results file, sort the
    per-task CSV) while the workers draw.  Without an executor nothing happens until
    :meth:`write`, which then draws each chart here in turn.  On Ctrl-C or an error,
    :meth:`cancel` (or :meth:`write` itself) cancels the charts not yet started; the
    caller owns the executor and shuts it down.
    """

    def __init__(self, charts: Sequence[Chart], executor: Executor | None = None):
        self.charts = list(charts)
        # A chart drawn before from the same data by the same code is taken from the run cache.
        self._cache = active_cache()
        self._keys = [chart_key(chart) for chart in self.charts] if self._cache is not None else []
        self._cached = {i: png for i, key in enumerate(self._keys) if key and (png := _cached_png(self._cache, key))}
        self._futures = (
            {i: executor.submit(render_png, c) for i, c in enumerate(self.charts) if i not in self._cached}
            if executor is not None
            else None
        )

    def write(self, out_dir: Path) -> dict[str, Path]:
        """Wait for the charts and write their PNGs into ``out_dir``; the files by chart key, in the charts' order."""
        drawn: dict[str, bytes | None] = {}
        try:
            for index, chart in enumerate(self.charts):
                if index in self._cached:
                    png: bytes | None = None if self._cached[index] == _NOTHING else self._cached[index]
                    drawn[chart.key] = png
                    continue
                key, png = render_png(chart) if self._futures is None else self._futures[index].result()
                drawn[key] = png
                cache_key = self._keys[index] if self._cache is not None else None
                if self._cache is not None and cache_key:
                    self._cache.put_blob(cache_key, _NOTHING if png is None else png)
        except BaseException:
            self.cancel()
            raise
        made: dict[str, Path] = {}
        for chart in self.charts:
            png = drawn[chart.key]
            if png is not None:
                path = out_dir / chart.filename
                with atomic_write(path, "wb") as fh:  # never a half-written PNG, never through a symlink
                    fh.write(png)
                made[chart.key] = path
        return made

    def cancel(self) -> None:
        """Cancel the charts not yet started."""
        for future in (self._futures or {}).values():
            future.cancel()


#: What the cache holds for a chart that had nothing to draw (a PNG never starts with it).
_NOTHING = b"nothing to draw"


def chart_key(chart: Chart) -> str | None:
    """The run-cache key of a chart's PNG: its function, its data, the report code and matplotlib's version.

    None when its data hold a type :func:`_canonical` does not know (then it is drawn every time).
    """
    import hashlib
    import json

    try:
        text = json.dumps([chart.draw, _canonical(chart.data)], separators=(",", ":"), allow_nan=True)
    except TypeError:
        return None
    digest = hashlib.sha256(_report_code().encode())
    digest.update(text.encode())
    return "png:" + digest.hexdigest()


def _canonical(value: Any) -> Any:
    """``value`` as plain JSON data that tells apart every two values a chart could draw differently."""
    import dataclasses

    from pydantic import BaseModel

    if value is None or isinstance(value, (bool, int, float, str)):
        return [type(value).__name__, value]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_canonical(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[_canonical(k), _canonical(v)] for k, v in value.items()]]
    if isinstance(value, BaseModel):  # its JSON is exact: every field, floats in full, by the class's own schema
        cls = type(value)
        return [
            f"{cls.__module__}.{cls.__qualname__}",
            value.model_dump_json(),
            _canonical(value.__pydantic_private__ or {}),
        ]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return [f"{type(value).__module__}.{type(value).__qualname__}", _canonical(fields)]
    raise TypeError(f"no canonical form for {type(value).__qualname__}")


@functools.cache
def _report_code() -> str:
    from fleetchaos.runs.cache_key import code_digest, source_digest

    return f"{code_digest()}:{source_digest([Path(__file__).parent])}:{_version('matplotlib')}"


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "-"


def _cached_png(cache: Any, key: str) -> bytes | None:
    return cache.get_blob(key)


def draw_charts(charts: Sequence[Chart], out_dir: Path, executor: Executor | None = None) -> dict[str, Path]:
    """Draw ``charts`` into ``out_dir`` (on ``executor``, side by side, if given); the files written by chart key."""
    return Drawing(charts, executor).write(out_dir)
