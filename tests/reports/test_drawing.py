"""Charts drawn in this process or on an executor: the same files, in the report's order, nothing for an empty chart."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from fleetchaos.reports.drawing import Chart, Drawing, draw_charts, render_png
from fleetchaos.runs.executors import LocalProcessExecutor, SerialExecutor


def stripes(width: int, fill: str, file: IO[bytes]) -> IO[bytes]:
    """A stand-in chart function: writes bytes that depend on its data."""
    file.write(fill.encode() * width)
    return file


DRAWN: list[str] = []


def logged(name: str, file: IO[bytes]) -> IO[bytes]:
    """A stand-in chart function that notes when it is drawn."""
    DRAWN.append(name)
    file.write(name.encode())
    return file


def nothing(file: IO[bytes]) -> None:
    """A stand-in chart function with nothing to draw."""
    return None


CHARTS = [
    Chart("b", "b.png", f"{__name__}:stripes", (3, "b")),
    Chart("empty", "empty.png", f"{__name__}:nothing", ()),
    Chart("a", "a.png", f"{__name__}:stripes", (5, "a")),
]


def _folder(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir()}


def test_a_chart_renders_into_memory_by_name():
    """render_png imports the named function, calls it with its data and a buffer, and returns key and bytes."""
    assert render_png(CHARTS[0]) == ("b", b"bbb")
    assert render_png(CHARTS[1]) == ("empty", None)


def test_charts_drawn_here_or_in_a_pool_give_the_same_files_in_order(tmp_path):
    """In process, on the serial executor and on two worker processes: the same files; made keeps the charts' order."""
    folders = {}
    for name, executor in (("here", None), ("serial", SerialExecutor()), ("pool", LocalProcessExecutor(2))):
        out = tmp_path / name
        out.mkdir()
        try:
            made = draw_charts(CHARTS, out, executor)
        finally:
            if executor is not None:
                executor.shutdown()
        assert list(made) == ["b", "a"]
        assert made == {"b": out / "b.png", "a": out / "a.png"}
        folders[name] = _folder(out)
    assert folders["here"] == folders["serial"] == folders["pool"] == {"b.png": b"bbb", "a.png": b"aaaaa"}


def test_a_drawing_is_under_way_on_its_executor_while_the_caller_works(tmp_path):
    """With an executor the charts are submitted when the Drawing is made; without one, drawn when it is written."""
    charts = [Chart("one", "one.png", f"{__name__}:logged", ("one",))]
    DRAWN.clear()
    drawing = Drawing(charts, SerialExecutor())
    DRAWN.append("caller")
    assert drawing.write(tmp_path) == {"one": tmp_path / "one.png"}
    assert DRAWN == ["one", "caller"]
    DRAWN.clear()
    drawing = Drawing(charts)
    DRAWN.append("caller")
    drawing.write(tmp_path)
    assert DRAWN == ["caller", "one"]
