"""Every chart of every report kind, drawn and read back: real tick labels, no overlapping text, no red-green.

Each chart of a comparison (traced, with goodput), a sweep, an ablation, a robustness study
and a real-code run is drawn through its report's own path (:func:`render_png`) and then
drawn once more through a renderer that records what it paints:

* every string painted: never mathtext source (``$``, ``\\mathdefault``), which is what a
  log axis prints when mathtext is off, and never parsed as mathtext;
* every text box (its window extent): inside the figure, and overlapping no other;
* every colour painted: grey, or one of the palette's (Okabe and Ito's) or its colormap's;
  an image's colormap is the palette's; and in every legend two entries that differ by
  colour alone stay apart for protanopia and deuteranopia (Machado, Oliveira and
  Fernandes 2009, full severity; CIE76 distance in CIELAB at least :data:`APART`).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import yaml
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.offsetbox import DrawingArea
from matplotlib.patches import Patch
from matplotlib.path import Path as MplPath
from matplotlib.text import Text

import fleetchaos.catalogue as catalogue
from fleetchaos.reports import palette
from fleetchaos.reports.charts import plain_text
from fleetchaos.reports.compare_report import compare_charts
from fleetchaos.reports.drawing import Chart, render_png
from fleetchaos.reports.run_report import run_charts
from fleetchaos.results.models import ArmResult, CompareResult, SweepEntry, SweepResult
from fleetchaos.results.studies import RobustnessPoint, RobustnessResult, SensitivityResult, Setting
from fleetchaos.runs.runner import compare, run_one
from fleetchaos.scenario.load import Scenario, load_scenario

#: The least CIE76 distance at which two colours of a legend count as apart (Okabe and Ito's closest pair, orange
#: and yellow for a deuteranope, are 17 apart; tab10's red and green 7).
APART = 15.0

#: Machado, Oliveira and Fernandes (2009), severity 1.0, applied to linear RGB.
CVD = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
}  # fmt: skip

#: Colours a chart may paint besides greys: the palette's and its colormap's.
ALLOWED = [to_rgba(c)[:3] for c in (*palette.CATEGORICAL, palette.BLACK, palette.GREY)] + [
    tuple(c[:3]) for c in colormaps[palette.SEQUENTIAL](np.linspace(0, 1, 256))
]


# -- the charts of each report kind ---------------------------------------------------------


def _small(tmp_path: Path) -> Scenario:
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"], doc["workload"]["tasks_per_day"] = "small", 150
    doc["goodput_bin_s"] = 3600
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_scenario(str(path))


def _sweep() -> SweepResult:
    entries = []
    for policy, errors in (("blind-retry", "generic"), ("structured", "structured"), ("backoff", "generic")):
        for x in (0.0, 0.05, 0.1, 0.2):
            success = 0.9 - x * (2.0 if policy != "structured" else 0.5)
            entries.append(SweepEntry(
                scenario="default", params={"faults[0].probability": x, "fleet.workers": 10}, policy=policy,
                errors=errors, metrics={"success_rate": success, "wasted_retries": 100 * x},
                ci={"success_rate": [success - 0.05, success + 0.05], "wasted_retries": [50 * x, 150 * x]},
                per_seed={}, breakdowns={},
            ))  # fmt: skip
    return SweepResult(
        scenarios=["default"], policies=["blind-retry", "structured", "backoff"], errors=["generic", "structured"],
        seeds=[1, 2, 3], confidence=0.95, metric="success_rate,wasted_retries",
        grid={"faults[0].probability": [0.0, 0.05, 0.1, 0.2], "fleet.workers": [10]}, x="faults[0].probability",
        entries=entries,
        scenario_configs={"default": {"faults": [{"kind": "network_blip", "probability": 0.02}]}},
    )  # fmt: skip


def _ablation() -> dict:
    steps = []
    fields = ("generic", "ablation:failure_type", "ablation:+partial_results", "ablation:+alternatives",
              "ablation:+retry_recommended")  # fmt: skip
    for i, fmt in enumerate(fields):
        recovery = 0.0 if i == 0 else 0.2 * i
        steps.append({
            "format": fmt,
            "metrics": {"common_recovery_rate": recovery, "success_rate": 0.5 + 0.1 * i,
                        "wasted_retries": 40.0 - 10 * i, "silent_failure_rate": 0.2 / (i + 1)},
            "ci": {"common_recovery_rate": [recovery, recovery + 0.01], "success_rate": [0.4, 0.95],
                   "wasted_retries": [10.0, 50.0], "silent_failure_rate": [0.0, 0.3]},
            "gain": {} if i == 0 else {"common_recovery_rate": {"mean": 0.2, "ci": [0.1, 0.3]}},
        })  # fmt: skip
    return {"scenario": "field_ablation", "seeds": [1, 2, 3, 4], "policy": "failure-type-router", "steps": steps}


def _robustness() -> RobustnessResult:
    def arm(policy: str, errors: str, value: float) -> ArmResult:
        return ArmResult(policy=policy, errors=errors, metrics={"success_rate": value},
                         ci={"success_rate": [value - 0.04, value + 0.04]}, per_seed={}, breakdowns={})  # fmt: skip

    points = []
    for path, values in (("faults[0].probability", [0.0, 0.01, 0.02, 0.04, 0.08]),
                         ("fleet.misread_probability", [0.0, 0.025, 0.05, 0.1, 0.2]),
                         ("workload.tasks_per_day", [600.0, 1200.0, 2400.0]),
                         ("fleet.api_reject_cost", [0.0, 0.5, 1.0])):  # fmt: skip
        for i, value in enumerate(values):
            a, b = 0.7 - 0.02 * i, 0.8 - 0.06 * i
            points.append(RobustnessPoint(
                parameter=path, value=value, arms=[arm("blind-retry", "generic", a), arm("structured", "structured", b)],
                difference=b - a, ci=[b - a - 0.05, b - a + 0.05],
                leader="structured on structured" if b > a else "blind-retry on generic",
            ))  # fmt: skip
    return RobustnessResult(
        scenario="default", metric="success_rate", higher_is_better=True,
        arms=["blind-retry on generic", "structured on structured"], seeds=[1, 2, 3], confidence=0.95,
        baseline_leader="structured on structured",
        varied={p: [pt.value for pt in points if pt.parameter == p] for p in dict.fromkeys(pt.parameter for pt in points)},
        described={"faults[0].probability": "network_blip rate", "fleet.misread_probability": "misread probability"},
        points=points, flips=[],
    )  # fmt: skip


def _sensitivity() -> SensitivityResult:
    """A study with both panels, every kind of marker, a list-valued range and long paths."""
    from fleetchaos.runs.sensitivity import flips_of, point, tornado_bars

    def arm(errors: str, value: float, metric: str) -> ArmResult:
        return ArmResult(policy=f"{errors}-best", errors=errors, metrics={"success_rate": 0.8, metric: value},
                         ci={metric: [value - 0.01, value + 0.01]}, per_seed={metric: [value, value + 0.01]},
                         breakdowns={})  # fmt: skip

    ranges = {
        "fleet.partial_batch": ["failed", "ok", "count"],
        "fleet.checkpoints": [False, True],
        "fleet.providers[0].admission": ["refuse", "queue"],
        "fleet.providers[0].servers": [1, 2, 4],
        "fleet.providers[0].slowdown": [[], [{"in_flight": 1, "factor": 1.0}, {"in_flight": 12, "factor": 2.0}]],
        "faults[5].omit_partial_success": [0.0, 0.05, 0.2, 0.5],
        "fleet.call_timeout_s": [60.0, 180.0, 600.0],
        "workload.tasks_per_day": [600.0, 1200.0, 2400.0],
        "fleet.page_handling.mean_s": [300.0, 1800.0, 7200.0, 21600.0],
        "fleet.usd_per_silent_failure": [60.0, 480.0, 1920.0],
    }
    settings, points = [], []
    for n, (path, values) in enumerate(ranges.items()):
        metric = "cost_usd" if "usd" in path or "page" in path else "success_rate"
        settings.append(Setting(parameter=path, values=values, own=values[0], metric=metric, retuned=metric != "cost_usd",
                                reaches=["status", "structured"]))  # fmt: skip
        for i, value in enumerate(values):
            lead = (0.08 - 0.05 * i * (n % 3)) if metric == "success_rate" else -300.0 * (i + 1)
            base = 0.8 if metric == "success_rate" else 5000.0
            points.append(point(path, value, metric, [arm("status", base, metric), arm("structured", base + lead, metric)],
                                0.95))  # fmt: skip
    baseline = point("", None, "success_rate", [arm("status", 0.8, "success_rate"), arm("structured", 0.88, "success_rate")],
                     0.95)  # fmt: skip
    return SensitivityResult(scenario="default", errors=["status", "structured"], seeds=[1, 2], confidence=0.95,
                             retune=True, baseline=baseline, settings=settings, points=points,
                             flips=flips_of(points), bars=tornado_bars(settings, points))  # fmt: skip


def _real_runs(seeds: list[int]) -> list:
    import fleetchaos
    from fleetchaos.real import InjectedFault, run_real

    @fleetchaos.tool("fetch")
    def fetch(task_id: int) -> str:
        return f"data-{task_id}"

    def agent(task, rt):
        for _ in range(6):
            try:
                return fetch(task.id) and "success"
            except InjectedFault:
                continue
        return "failed"

    spec = Scenario.model_validate({
        "name": "real-charts", "duration_s": 7200,
        "fleet": {"orchestrators": 1, "workers": 2, "api_burst": 1000},
        "workload": {"templates": [{"name": "notes", "steps": [{"tool": "fetch", "duration": {"mean_s": 2, "cv": 0}}]}],
                     "arrivals": [{"at_s": 10.0 * i, "template": "notes"} for i in range(30)]},
        "faults": [{"kind": "network_blip", "probability": 0.4}],
    })  # fmt: skip
    return [run_real(spec, agent, seed=seed).result for seed in seeds]


@pytest.fixture(scope="module")
def charts(tmp_path_factory) -> list[Chart]:
    """Every chart of each report kind: comparison (traced, goodput), run, sweep, ablation, robustness, real code."""
    from fleetchaos.reports.sweep_chart import chart_name
    from fleetchaos.runs.arm_stats import aggregate

    scenario = _small(tmp_path_factory.mktemp("charts"))
    result = compare(scenario, [1, 2], trace=True)
    run = run_one(scenario, "structured", "generic", 1, trace=True)
    sweep = _sweep()
    real = _real_runs([1, 2])
    real_compare = CompareResult(scenario="real-charts", seeds=[1, 2], confidence=0.95,
                                 arms=[aggregate("agent", "structured", real, 0.95)])  # fmt: skip
    return [
        *compare_charts(result),
        *run_charts(run),
        *(Chart(m, chart_name(m), "fleetchaos.reports.sweep_chart:metric_curve", (sweep, m)) for m in ("success_rate", "wasted_retries")),
        Chart("ablation", "ablation.png", "fleetchaos.reports.ablation:ablation_chart", (_ablation(),)),
        Chart("robustness", "robustness.png", "fleetchaos.reports.robustness:robustness_chart", (_robustness(),)),
        Chart("tornado", "tornado.png", "fleetchaos.reports.tornado:tornado_chart", (_sensitivity(),)),
        *(Chart(f"real-{c.key}", c.filename, c.draw, c.data) for c in run_charts(real[0])),
        *(Chart(f"real-{c.key}", c.filename, c.draw, c.data) for c in compare_charts(real_compare)),
    ]  # fmt: skip


# -- what a renderer paints -------------------------------------------------------------------


class Painted:
    """What one drawing of a figure painted: strings with their text artists, and colours."""

    def __init__(self, fig: Figure, dpi: float):
        fig.set_dpi(dpi)
        renderer = FigureCanvasAgg(fig).get_renderer()
        self.renderer = renderer
        self.size = (renderer.width, renderer.height)
        self.texts: list[tuple[str, object, bool]] = []
        self.colours: list[tuple[float, ...]] = []
        draw_text, draw_path, draw_markers = renderer.draw_text, renderer.draw_path, renderer.draw_markers
        draw_collection, draw_mesh = renderer.draw_path_collection, renderer.draw_quad_mesh

        def edge(gc) -> None:
            if gc.get_linewidth() > 0:
                self._colour(gc.get_rgb(), gc.get_alpha())

        def text(gc, x, y, s, prop, angle, ismath=False, mtext=None):
            self.texts.append((s, mtext, bool(ismath)))
            self._colour(gc.get_rgb(), gc.get_alpha())
            return draw_text(gc, x, y, s, prop, angle, ismath, mtext)

        def path(gc, p, transform, rgb_face=None):
            edge(gc)
            self._colour(rgb_face, gc.get_alpha())
            return draw_path(gc, p, transform, rgb_face)

        def markers(gc, marker_path, marker_trans, p, trans, rgb_face=None):
            edge(gc)
            codes = marker_path.codes
            if codes is not None and MplPath.CLOSEPOLY in codes:  # a line marker (an error bar's cap) fills nothing
                self._colour(rgb_face, gc.get_alpha())
            return draw_markers(gc, marker_path, marker_trans, p, trans, rgb_face)

        def collection(gc, *args, **kwargs):
            for colour in [*args[5], *args[6]]:  # face and edge colours
                self._colour(colour, None)
            return draw_collection(gc, *args, **kwargs)

        def mesh(gc, *args, **kwargs):
            for colour in args[6]:  # face colours
                self._colour(colour, None)
            return draw_mesh(gc, *args, **kwargs)

        renderer.draw_text, renderer.draw_path, renderer.draw_markers = text, path, markers
        renderer.draw_path_collection, renderer.draw_quad_mesh = collection, mesh
        self.artists: list[Text] = []  # every text artist drawn (a multi-line one paints each line without its artist)
        draw_artist = Text.draw

        def artist(text_artist, r):
            if text_artist.get_visible() and text_artist.get_text().strip():
                self.artists.append(text_artist)
            return draw_artist(text_artist, r)

        with plain_text(), mock.patch.object(Text, "draw", artist):
            fig.draw(renderer)

    def _colour(self, rgb, alpha) -> None:
        if rgb is None:
            return
        rgba = to_rgba(rgb)
        if (alpha if alpha is not None else rgba[3]) > 0 and rgba[3] > 0:
            self.colours.append(rgba[:3])


def _painted(chart: Chart) -> list[tuple[Figure, Painted]]:
    """Draw ``chart`` as its report does, and again through a recording renderer at the PNG's resolution."""
    saved: list[tuple[Figure, float]] = []
    savefig = Figure.savefig

    def keep(fig, fname, *args, **kwargs):
        saved.append((fig, kwargs["dpi"]))
        return savefig(fig, fname, *args, **kwargs)

    with mock.patch.object(Figure, "savefig", keep):
        _, png = render_png(chart)
    if png is None:  # nothing to draw (a comparison without traced runs has no timeline)
        return []
    return [(fig, Painted(fig, dpi)) for fig, dpi in saved]


def _linear(rgb) -> np.ndarray:
    c = np.asarray(rgb, float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(linear_rgb: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear_rgb
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _seen(rgba: tuple[float, ...], vision: str | None) -> np.ndarray:
    """The CIELAB colour ``rgba`` (over white) is seen as with ``vision`` (None: typical)."""
    over_white = np.array(rgba[:3]) * rgba[3] + (1 - rgba[3])
    linear = _linear(over_white)
    return _lab(np.clip(CVD[vision] @ linear, 0, 1) if vision else linear)


def _entry(area: DrawingArea) -> tuple[tuple, tuple[float, ...]]:
    """A legend entry's (what tells it apart besides colour: markers, dash patterns, hatches; its colour)."""
    features: list[tuple] = []
    colours: list[tuple[float, ...]] = []
    for artist in area.get_children():
        if isinstance(artist, Line2D):
            dashes = artist._unscaled_dash_pattern[1]  # "--" names every dash pattern; the pattern tells them apart
            marker = str(artist.get_marker())
            features.append(("line", marker, str(artist.get_linestyle()), tuple(dashes or ())))
            face = artist.get_markerfacecolor()
            filled = marker not in ("None", "none", "", "|", "_") and str(face).lower() != "none"
            colours.append(to_rgba(face if filled else artist.get_color()))
        elif isinstance(artist, Patch):
            features.append(("patch", artist.get_hatch() or ""))
            colours.append(tuple(artist.get_facecolor()))
        elif hasattr(artist, "get_facecolor"):
            features.append((type(artist).__name__,))
    return tuple(features), (colours[-1] if colours else (0.0, 0.0, 0.0, 1.0))


# -- the checks ------------------------------------------------------------------------------


def test_the_checks_find_what_they_look_for():
    """The checks see the defects they are for: raw mathtext on a log axis, overlapping labels, red against green."""
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.plot([10, 1000], [1, 2], color="#d62728", label="a")
    ax.plot([10, 1000], [2, 1], color="#2ca02c", label="b")
    ax.set_xscale("log")
    ax.text(0.5, 0.5, "one label", transform=ax.transAxes)
    ax.text(0.52, 0.5, "another label", transform=ax.transAxes)
    ax.legend()
    painted = Painted(fig, 100)
    assert any("mathdefault" in s for s, _, _ in painted.texts)  # matplotlib's own log labels, mathtext off
    assert _overlaps(painted)
    assert _apart_in_legends(fig) != []
    assert not all(_allowed(c) for c in painted.colours)


def _overlaps(painted: Painted) -> list[tuple[str, str]]:
    boxes = {id(a): (a.get_text(), a.get_window_extent(painted.renderer)) for a in painted.artists}
    found = []
    for (a, box_a), (b, box_b) in itertools.combinations(boxes.values(), 2):
        width = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        height = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if width > 1 and height > 1:
            found.append((a, b))
    return found


def _outside(painted: Painted) -> list[str]:
    width, height = painted.size
    out = []
    for artist in painted.artists:
        box = artist.get_window_extent(painted.renderer)
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            out.append(artist.get_text())
    return out


def _allowed(rgb: tuple[float, ...]) -> bool:
    if max(rgb) - min(rgb) < 0.03:  # a grey
        return True
    return any(max(abs(a - b) for a, b in zip(rgb, c)) < 0.01 for c in ALLOWED)


def _apart_in_legends(fig: Figure) -> list[str]:
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
    close = []
    for legend in legends:
        areas = [box for box in legend.findobj(DrawingArea) if box is not legend]
        assert len(areas) == len(legend.get_texts())
        entries = [(_entry(area), t.get_text()) for area, t in zip(areas, legend.get_texts())]
        for ((kind_a, colour_a), a), ((kind_b, colour_b), b) in itertools.combinations(entries, 2):
            if kind_a != kind_b:
                continue  # told apart by marker, line style or hatch
            for vision in (None, *CVD):
                distance = float(np.linalg.norm(_seen(colour_a, vision) - _seen(colour_b, vision)))
                if distance < APART:
                    close.append(f"{a!r} and {b!r}: {distance:.0f} apart for {vision or 'typical vision'}")
    return close


def test_every_chart_reads_right(charts):
    """Real tick labels, no raw mathtext, no text overlapping or cut at the edge, palette colours, no red-green."""
    problems = []
    drawn = set()
    for chart in charts:
        for fig, painted in _painted(chart):
            drawn.add(chart.key)
            name = chart.filename
            strings = [s for s, _, _ in painted.texts]
            problems += [f"{name}: mathtext source {s!r}" for s in strings if "$" in s or "mathdefault" in s]
            problems += [f"{name}: parsed as mathtext {s!r}" for s, _, ismath in painted.texts if ismath]
            problems += [f"{name}: {a!r} overlaps {b!r}" for a, b in _overlaps(painted)]
            problems += [f"{name}: {s!r} cut at the figure's edge" for s in _outside(painted)]
            odd = sorted({tuple(round(v, 3) for v in c) for c in painted.colours if not _allowed(c)})
            problems += [f"{name}: colour {c} is not the palette's" for c in odd]
            for image in fig.findobj(AxesImage):
                if image.get_cmap().name != palette.SEQUENTIAL:
                    problems.append(f"{name}: colormap {image.get_cmap().name}")
            problems += [f"{name}: {line}" for line in _apart_in_legends(fig)]
    everything = {"headline", "silent_and_wasted", "failed_retries", "cost_split", "cost_vs_success", "heatmap", "ecdf",
                  "goodput", "provider_load0", "timeline0", "timeline1", "error_codes", "timeline", "success_rate",
                  "wasted_retries", "ablation", "robustness", "tornado", "real-ecdf", "real-headline",
                  "real-cost_split"}  # fmt: skip
    assert everything <= drawn, everything - drawn
    assert not problems, "\n".join(problems)


def test_a_log_axis_reads_in_plain_numbers(charts):
    """The time-to-recovery axis reads 10, 100, 1,000 (as matplotlib's mathtext would have rendered 10^1, ...)."""
    ecdf = next(c for c in charts if c.filename == "time_to_recovery_ecdf.png")
    ((fig, _),) = _painted(ecdf)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert labels and all(label.replace(",", "").isdigit() for label in labels), labels
    assert {int(label.replace(",", "")) for label in labels} <= {10**k for k in range(-3, 8)}
