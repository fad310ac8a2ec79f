"""The sweep's page and curves: coinciding lines stay visible, the x axis names the fault's kind, HTML is escaped."""

from __future__ import annotations

import re

from fleetchaos.reports.sweep import sweep_markdown, sweep_table, write_sweep_report
from fleetchaos.reports.sweep_chart import (
    COINCIDING_DASHES,
    coincidences,
    curve_figure,
    curve_panels,
    marker_size,
    param_label,
)
from fleetchaos.results.models import SweepEntry, SweepResult

CONFIG = {"faults": [{"kind": "network_blip", "probability": 0.1}, {"kind": "disk_full"}, {"kind": "disk_full"}]}


def _entry(policy: str, errors: str, x: float, success: float, **extra) -> SweepEntry:
    return SweepEntry(
        scenario=extra.pop("scenario", "s"), params={"faults[0].probability": x}, policy=policy, errors=errors,
        metrics={"success_rate": success, "wasted_retries": 44.8, "tasks": 208.0},
        ci={"success_rate": [success - 0.05, success + 0.05], "wasted_retries": [20.0, 70.0], "tasks": [186.0, 230.0]},
        per_seed={}, breakdowns={}, **extra,
    )  # fmt: skip


def _sweep(**changes) -> SweepResult:
    """blind-retry and backoff on generic errors have the same success at every point; structured differs."""
    entries = []
    for x, base in ((0.0, 0.9), (0.2, 0.6), (0.5, 0.2)):
        entries += [
            _entry("blind-retry", "generic", x, base),
            _entry("backoff", "generic", x, base),  # coincides with blind-retry on generic
            _entry("structured", "generic", x, base + 0.05),
        ]
    fields = dict(scenarios=["s"], grid={"faults[0].probability": [0.0, 0.2, 0.5]},
                  policies=["blind-retry", "backoff", "structured"], errors=["generic"], seeds=[1, 2, 3],
                  confidence=0.95, metric="success_rate", x="faults[0].probability", entries=entries,
                  scenario_configs={"s": CONFIG})  # fmt: skip
    return SweepResult(**{**fields, **changes})


def test_the_x_axis_names_a_swept_fault_by_its_kind():
    """faults[0].probability reads as the fault's kind; a repeated kind keeps its index; other paths stay as given."""
    assert param_label("faults[0].probability", {"s": CONFIG}) == "network_blip probability"
    assert param_label("faults[2].fill_fraction", {"s": CONFIG}) == "disk_full (faults[2]) fill_fraction"
    other = {"faults": [{"kind": "timeout"}]}
    assert param_label("faults[0].probability", {"a": CONFIG, "b": other}) == "network_blip/timeout probability"
    assert param_label("fleet.workers", {"s": CONFIG}) == "fleet.workers"
    assert param_label("faults[7].probability", {"s": CONFIG}) == "faults[7].probability"  # no such fault
    assert param_label("faults[0].probability", {}) == "faults[0].probability"  # results of an older version
    fig = curve_figure(_sweep())
    assert fig.axes[0].get_xlabel() == "network_blip probability"
    assert "against network_blip probability" in fig.get_suptitle()


def test_coinciding_lines_are_found_and_both_stay_visible():
    """The second of two equal lines is drawn on top with hollow, larger markers and a broken line, and its legend
    entry says which line it coincides with; a line of its own is drawn as before."""
    (panel,) = curve_panels(_sweep(), "success_rate")
    lines = {line.label: line for line in panel.lines}
    assert lines["backoff on generic"].coincides_with == "blind-retry on generic"
    assert lines["backoff on generic"].layer == 1
    assert lines["blind-retry on generic"].layer == 0 and not lines["structured on generic"].coincides_with
    assert coincidences([panel]) == {"backoff on generic": "coincides with blind-retry on generic"}
    fig = curve_figure(_sweep())
    drawn = {line.get_gid(): line for line in fig.axes[0].lines}
    below, above = drawn["blind-retry on generic"], drawn["backoff on generic"]
    assert list(below.get_ydata()) == list(above.get_ydata())  # the same values, both drawn
    assert above.get_markerfacecolor() == "none" and above.get_markersize() == marker_size(1) > below.get_markersize()
    assert above.get_marker() != below.get_marker() and above.get_zorder() > below.get_zorder()
    # matplotlib names any dash pattern "--": the pattern itself is the broken line's own (on, off) rhythm
    assert above._unscaled_dash_pattern == (2.0, COINCIDING_DASHES) != below._unscaled_dash_pattern
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "backoff on generic (coincides with blind-retry on generic)" in legend
    assert "structured on generic" in legend


def test_a_line_equal_in_some_panels_only_says_where():
    """With a panel per scenario, a coincidence in one of two panels is named as such."""
    result = _sweep(scenarios=["s", "t"])
    for x, base in ((0.0, 0.9), (0.2, 0.6), (0.5, 0.2)):
        result.entries += [
            _entry("blind-retry", "generic", x, base, scenario="t"),
            _entry("backoff", "generic", x, base - 0.1, scenario="t"),
            _entry("structured", "generic", x, base + 0.05, scenario="t"),
        ]
    notes = coincidences(curve_panels(result, "success_rate"))
    assert notes == {"backoff on generic": "coincides with blind-retry on generic in 1 of 2 panels"}


def test_sweep_report_is_a_page_like_compares_with_every_name_escaped(tmp_path):
    """report.html embeds the curve and states setup, coincidences, every point and the scenario as run; names from
    users are text in HTML and Markdown, never markup."""
    hostile = "<script>alert(1)</script>|[x](y)"
    result = _sweep()
    for e in result.entries:
        if e.policy == "structured":
            e.policy = hostile
    result.policies[2] = hostile
    result.scenario_configs = {"s": {**CONFIG, "description": "</pre><b>bold</b>"}}
    written = {p.name for p in write_sweep_report(result, tmp_path)}
    assert written == {"results.json", "curve_success_rate.png", "summary.md", "report.html"}
    page = (tmp_path / "report.html").read_text()
    assert page.count('<img alt="success_rate against network_blip probability') == 1
    assert 'src="data:image/png;base64,' in page
    assert "backoff on generic coincides with blind-retry on generic" in page
    assert "network_blip probability (faults[0].probability; the curves&#x27; x axis)" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;|[x](y)" in page
    assert "<b>bold</b>" not in page and "&lt;/pre&gt;&lt;b&gt;bold&lt;/b&gt;" in page  # the scenario as it ran
    assert re.search(r"<details><summary>Appendix: the scenario as it ran</summary>", page)
    md = (tmp_path / "summary.md").read_text()
    assert "<script>" not in md and r"&lt;script&gt;alert\(1\)&lt;/script&gt;\|\[x\]\(y\)" in md
    assert md == sweep_markdown(result, ["curve_success_rate.png"])


def test_sweep_terminal_table_prints_counts_as_whole_numbers_and_takes_columns():
    """Counts read as integers with a whole half-width; --columns picks the metrics shown."""
    from rich.console import Console

    console = Console(width=250, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed with the console
    console.print(sweep_table(_sweep(metric="success_rate,wasted_retries")))
    text = console.export_text()
    assert "45 ±25" in text and "44.8" not in text and "90.0% [85.0, 95.0]" in text
    console = Console(width=250, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(sweep_table(_sweep(), columns=("tasks",)))
    text = console.export_text()
    header = next(line for line in text.splitlines() if "scenario" in line)
    assert "tasks" in header and "success" not in header and "208 ±22" in text
