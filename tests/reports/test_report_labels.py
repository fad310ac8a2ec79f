"""Report labels: undefined means drawn as "n/a" (no bar), one definition of a rate, constants in report text."""

from __future__ import annotations

import sys
from pathlib import Path

import patience
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from fleetchaos.reports import cells, compare_report, notes
from fleetchaos.reports import sweep as sweep_report
from fleetchaos.reports.ablation import ablation_chart
from fleetchaos.reports.arm_charts import lead_chart, pareto_chart
from fleetchaos.reports.charts import (
    SPIKE_MIN_COUNT,
    SPIKE_SD,
    bar_with_ci,
    error_codes_chart,
)
from fleetchaos.reports.tables import display_kind
from fleetchaos.results.models import ArmResult, CompareResult, SweepEntry, SweepResult
from fleetchaos.results.registry import METRICS, RATES, is_rate
from fleetchaos.results.stats import MIN_SEEDS

REPO = Path(__file__).resolve().parents[2]


def _arm(policy: str, errors: str, recovery: float | None, ci: list[float | None]) -> ArmResult:
    return ArmResult(
        policy=policy,
        errors=errors,
        metrics={"recovery_rate": recovery, "success_rate": recovery, "cost_usd": 1.0, "escalation_rate": 0.05},
        ci={"recovery_rate": ci, "success_rate": ci, "cost_usd": [0.5, 1.5], "escalation_rate": [0.01, 0.09]},
        per_seed={},
        breakdowns={},
    )


def _compare(seeds: int = 3) -> CompareResult:
    return CompareResult(
        scenario="quiet",
        seeds=list(range(1, seeds + 1)),
        confidence=0.95,
        arms=[
            _arm("blind-retry", "generic", None, [None, None]),  # no task was faulted: recovery undefined
            _arm("structured", "structured", 0.5, [0.4, 0.6]),
        ],
    )


def _bars(ax) -> list[Rectangle]:
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def test_undefined_mean_draws_no_bar_and_reads_n_a():
    """An arm whose mean is None gets no bar and the label "n/a", never a 0.0 bar labelled as a value."""
    ax = Figure().subplots()
    bar_with_ci(ax, _compare(), "recovery_rate", 100.0)
    bars = _bars(ax)
    assert [(round(b.get_x() + b.get_width() / 2), b.get_height()) for b in bars] == [(1, 50.0)]
    labels = {round(t.xy[0]): t.get_text() for t in ax.texts}
    assert labels == {0: "n/a", 1: "50.0"}
    assert "0.0" not in labels.values()
    lo, hi = ax.get_xlim()
    assert lo < -0.4 and hi > 1.4  # the empty slot stays in view, as wide as a drawn bar's


def test_all_means_undefined_draws_no_bars():
    """With no arm defined the chart still draws: every arm reads "n/a"."""
    result = _compare()
    result.arms[1] = _arm("structured", "structured", None, [None, None])
    ax = Figure().subplots()
    bar_with_ci(ax, result, "recovery_rate", 100.0)
    assert _bars(ax) == []
    assert [t.get_text() for t in ax.texts] == ["n/a", "n/a"]


def test_headline_chart_with_an_undefined_arm_is_byte_stable(tmp_path):
    """The headline chart of a result with an undefined arm is written, and the same bytes twice."""
    a = lead_chart(_compare(), tmp_path / "a.png")
    b = lead_chart(_compare(), tmp_path / "b.png")
    assert a.read_bytes() == b.read_bytes()


def _ablation_doc() -> dict:
    step = {
        "metrics": {"common_recovery_rate": 0.5, "success_rate": 0.9, "wasted_retries": 3.0, "silent_failure_rate": 0.01},
        "ci": {"common_recovery_rate": [0.4, 0.6], "success_rate": [0.8, 0.95], "wasted_retries": [2.0, 4.0],
               "silent_failure_rate": [0.0, 0.02]},
    }  # fmt: skip
    undefined = {
        "metrics": {"common_recovery_rate": None, "success_rate": 1.0, "wasted_retries": 0.0, "silent_failure_rate": 0.0},
        "ci": {"common_recovery_rate": [None, None], "success_rate": [1.0, 1.0], "wasted_retries": [0.0, 0.0],
               "silent_failure_rate": [0.0, 0.0]},
    }  # fmt: skip
    return {"scenario": "quiet", "seeds": [1, 2, 3], "policy": "p",
            "steps": [{"format": "generic", **undefined}, {"format": "ablation:failure_type", **step}]}  # fmt: skip


def test_ablation_chart_draws_no_bar_for_an_undefined_mean(tmp_path, monkeypatch):
    """The ablation chart's recovery panel has no bar for the undefined step and says "n/a"; a defined 0 is still a bar."""
    figures = []
    real_savefig = Figure.savefig

    def keep(fig, *args, **kwargs):
        figures.append(fig)
        return real_savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    path = ablation_chart(_ablation_doc(), tmp_path / "a.png")
    assert path.read_bytes() == ablation_chart(_ablation_doc(), tmp_path / "b.png").read_bytes()
    recovery, _success, wasted, _silent = figures[0].axes
    assert [(round(b.get_x() + b.get_width() / 2), b.get_height()) for b in _bars(recovery)] == [(1, 50.0)]  # in %
    assert sorted((round(t.xy[0]), t.get_text()) for t in recovery.texts) == [(0, "n/a"), (1, "50.0%")]
    assert len(_bars(wasted)) == 2  # 0.0 is a value, drawn as one: a bar, its label, and a mark at zero
    assert sorted((round(t.xy[0]), t.get_text()) for t in wasted.texts) == [(0, "0"), (1, "3")]
    assert [c.get_gid() for c in wasted.collections if c.get_gid()] == ["zero-bar"]
    assert recovery.get_xlim() == pytest.approx(wasted.get_xlim())  # the undefined step keeps its slot


def test_cost_axis_names_every_part_of_cost_usd(tmp_path, monkeypatch):
    """The Pareto chart's cost axis names tokens, tool calls and paged human hours, as cost_usd sums them."""
    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: figures.append(fig))
    result = _compare()
    result.arms[0] = _arm("blind-retry", "generic", 0.25, [0.2, 0.3])
    pareto_chart(result, tmp_path / "c.png")
    label = figures[0].axes[0].get_xlabel()
    assert "tokens" in label and "tool calls" in label and "human" in label
    text = " ".join(notes.ASSUMPTIONS)
    assert "Until the simulator counts pages itself" not in text
    assert "human" in next(a for a in notes.ASSUMPTIONS if a.startswith("Costs are modelled"))


def test_rates_are_harness_rates_and_format_as_percentages():
    """Every rate metric is one of the registry's RATES; the terminal, report and sweep tables show each in percent."""
    assert set(RATES) == {name for name in METRICS if name.endswith("_rate")}
    for metric in RATES:
        assert is_rate(metric) and display_kind(metric) == "pct"
        arm = ArmResult(
            policy="p", errors="e", metrics={metric: 0.5}, ci={metric: [0.4, 0.6]}, per_seed={}, breakdowns={}
        )
        assert cells.metric_cell(arm, metric) == "50.0% [40.0, 60.0]"
    for metric in ("wasted_retries", "cost_usd", "human_pages_per_day"):
        assert not is_rate(metric) and display_kind(metric) == "num"


def test_reports_import_rates_without_simpy():
    """The rate definition reports use does not pull in SimPy (a report is rebuilt from JSON without it)."""
    code = "import sys, reports, fleetchaos.reports.sweep, reports.ablation; assert 'simpy' not in sys.modules"
    proc = patience.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, cpu_s=120)
    assert proc.returncode == 0, proc.stderr


def _sweep() -> SweepResult:
    entry = SweepEntry(
        scenario="default", params={"fleet.workers": 10}, policy="structured", errors="generic",
        metrics={"recovery_rate": 0.5, "escalation_rate": 0.05, "data_loss_rate": 0.1, "silent_failure_rate": 0.01,
                 "wasted_retries": 3.0},
        ci={"recovery_rate": [0.4, 0.6], "escalation_rate": [0.03, 0.07], "data_loss_rate": [0.05, 0.15],
            "silent_failure_rate": [0.0, 0.02], "wasted_retries": [2.0, 4.0]},
        per_seed={}, breakdowns={},
    )  # fmt: skip
    return SweepResult(scenarios=["default"], grid={"fleet.workers": [10]}, policies=["structured"], errors=["generic"],
                       seeds=[1, 2], confidence=0.95, metric="escalation_rate,data_loss_rate", x="fleet.workers",
                       entries=[entry])  # fmt: skip


def test_sweep_tables_format_escalation_rate_as_a_percentage():
    """escalation_rate (and data_loss_rate) read as percentages in the sweep's terminal table and Markdown, as in compare reports."""
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(sweep_report.sweep_table(_sweep()))
    text = console.export_text()
    assert "5.0% [3.0, 7.0]" in text and "10.0% [5.0, 15.0]" in text
    md = sweep_report.sweep_markdown(_sweep(), None)
    assert "| 5.0% [3.0, 7.0] | 10.0% [5.0, 15.0] |" in md
    assert "| 0.1 ±" not in md and "3.0 ±1.0" in md  # a count keeps its symmetric half-width


def test_sweep_curve_of_a_rate_is_in_percent(tmp_path, monkeypatch):
    """The curve of escalation_rate is drawn in percent, like the other rates."""
    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: figures.append(fig))
    sweep_report.curve_chart(_sweep(), tmp_path / "c.png", "escalation_rate")
    ax = figures[0].axes[0]
    assert ax.get_ylabel() == "escalation_rate (%)"
    assert list(ax.lines[0].get_ydata()) == [5.0]


def test_report_text_follows_the_statistics_constants():
    """The seed threshold and the spike rule in report text are the ones the statistics use."""
    reading = " ".join(notes.READING_NOTES)
    assert f"fewer than {MIN_SEEDS} paired seeds" in reading
    few = compare_report.compare_blocks(_compare(seeds=MIN_SEEDS - 1))
    enough = compare_report.compare_blocks(_compare(seeds=MIN_SEEDS))
    assert any("too few to name a winner" in b.text for b in few)
    assert not any("too few to name a winner" in b.text for b in enough)
    assert (SPIKE_SD, SPIKE_MIN_COUNT) == (3.0, 5)


def test_spike_legend_states_the_rule_the_markers_use(tmp_path, monkeypatch):
    """The error-code chart's spike legend quotes the k and minimum count the spike markers were found with."""
    from fleetchaos.results.models import Timeline

    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: figures.append(fig))
    t = Timeline(label="best", policy="p", errors="generic", seed=1, replay="", workers=1, duration_s=86400.0,
                 end_s=90000.0, disk_full=[[]], key_expiries=[[]], rate_windows=[], dispatches=[],
                 faults=[(100.0, 0, "timeout", "TIMEOUT", "tool")], actions=[])  # fmt: skip
    error_codes_chart([t], tmp_path / "e.png")
    texts = [t.get_text() for t in figures[0].legends[0].get_texts()]
    assert f"spike: bin above mean + {SPIKE_SD:g} sd of its code, and at least {SPIKE_MIN_COUNT}" in texts
