"""Charts laid out before savefig (drawn once) give the bytes savefig's own layout pass gives (drawn twice)."""

from __future__ import annotations

import pytest
import yaml

import fleetchaos.catalogue as catalogue
import fleetchaos.reports.charts as charts
from fleetchaos.reports.compare_report import compare_charts
from fleetchaos.reports.drawing import Chart, render_png
from fleetchaos.reports.run_report import run_charts
from fleetchaos.runs.runner import compare, run_one
from fleetchaos.scenario.load import load_scenario


@pytest.fixture(scope="module")
def drawn_charts(tmp_path_factory) -> list[Chart]:
    """Every chart of a small comparison's report (timelines included) and of a traced run's report."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"], doc["workload"]["tasks_per_day"] = "small", 150
    path = tmp_path_factory.mktemp("layout") / "small.yaml"
    path.write_text(yaml.safe_dump(doc))
    scenario = load_scenario(str(path))
    result = compare(scenario, [1, 2], trace=True)
    run = run_one(scenario, "structured", "generic", 1, trace=True)
    return [*compare_charts(result), *run_charts(run)]


def test_a_chart_laid_out_first_is_the_chart_savefig_lays_out(drawn_charts, monkeypatch):
    """Chart by chart, the PNG bytes are the same whether save_png lays the figure out or savefig does."""
    fast = [render_png(chart)[1] for chart in drawn_charts]
    assert sum(png is not None for png in fast) >= 12
    monkeypatch.setattr(charts, "lay_out", lambda fig, dpi: None)  # savefig lays the figure out itself
    for chart, png in zip(drawn_charts, fast):
        assert render_png(chart)[1] == png, chart.filename
