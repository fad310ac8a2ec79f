"""Report folders: every chart drawn, byte-identical output, a self-contained HTML page, reports rebuilt from JSON."""

from __future__ import annotations

import base64
import csv
import fcntl
import json
import os
import re
import sys
from pathlib import Path

import patience
import pytest
import yaml
from click.testing import CliRunner

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.reports import dumps, load_results
from fleetchaos.reports.arm_charts import pareto_front
from fleetchaos.results.models import CompareResult

REPO = Path(__file__).resolve().parents[2]

CHARTS = {
    "headline.png",
    "silent_and_wasted.png",
    "failed_retries.png",
    "cost_split.png",
    "cost_vs_success.png",
    "recovery_by_fault_kind.png",
    "time_to_recovery_ecdf.png",
    "timeline_best_success_rate.png",
    "timeline_worst_success_rate.png",
    "error_codes.png",
}


COMPARE = ("compare", "--seeds", "5", "--jobs", "1", "--no-history")


def _small_scenario(root: Path) -> str:
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"] = "small"
    doc["workload"]["tasks_per_day"] = 100
    path = root / "small.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    """A folder shared by the xdist workers: a light scenario and the same comparison reported twice.

    ``a``: compare --report in this process, one run and one chart at a time; ``b``: the
    same command in a fresh process with another hash seed and two worker processes, which
    run the simulations and draw the charts.  Built once per session under a file lock.
    """
    # Under xdist each worker's base folder sits in the session's; alone, the base folder is
    # the session's (its parent is shared by every session, whose stale pair would pass).
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "fleetchaos-report-pair"
    root.mkdir(exist_ok=True)
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "done").exists():
            small = _small_scenario(root)
            result = CliRunner().invoke(main, [*COMPARE, "--scenario", small, "--report", str(root / "a")],
                                        catch_exceptions=False)  # fmt: skip
            assert result.exit_code == 0, result.stderr
            env = {**os.environ, "PYTHONHASHSEED": "12345"}
            pooled = [*COMPARE[:4], "2", *COMPARE[5:]]  # --jobs 2
            proc = patience.run([sys.executable, "-m", "fleetchaos.cli", *pooled, "--scenario", small, "--report",
                                   str(root / "b")], cwd=REPO, env=env, capture_output=True, text=True, cpu_s=300)  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            (root / "done").touch()
    return root


@pytest.fixture(scope="module")
def small(shared) -> str:
    """The default scenario with a light workload (about 100 tasks a day), named 'small'."""
    return str(shared / "small.yaml")


@pytest.fixture(scope="module")
def reports(shared) -> tuple[Path, Path]:
    """The two report folders of the same comparison."""
    return shared / "a", shared / "b"


def test_every_chart_is_drawn_for_a_comparison(reports):
    """A compare report holds every chart, the summary, the HTML page, results.json and tasks.csv."""
    names = {p.name for p in reports[0].iterdir()}
    assert names >= CHARTS
    assert {"summary.md", "report.html", "results.json", "tasks.csv"} <= names
    assert not any(n.endswith(".partial") for n in names)


def test_reports_are_byte_identical_across_runs(reports):
    """Two runs of the same comparison (other process, job count and hash seed) give the same bytes, charts included."""
    first, second = reports
    assert sorted(p.name for p in first.iterdir()) == sorted(p.name for p in second.iterdir())
    for path in first.iterdir():
        assert path.read_bytes() == (second / path.name).read_bytes(), path.name


def test_html_is_self_contained(reports):
    """report.html needs no network: no http(s) reference, no script or stylesheet link, every chart embedded."""
    page = (reports[0] / "report.html").read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page and "<link" not in page
    sources = re.findall(r'src="([^"]*)"', page)
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    for name in CHARTS:
        data = base64.b64encode((reports[0] / name).read_bytes()).decode("ascii")
        assert data in page, name
    assert page.count("<table>") >= 6
    # the finding opens the page; the verdict matrix and the scenario document are collapsed at its end
    assert page.index('<p class="finding">') < page.index("<h2>Headline</h2>") < page.index("<details>")
    appendix = page[page.index("<details>") :]
    assert "Verdicts against the reference arm" in appendix and "tasks_per_day" in appendix
    assert "tasks_per_day" not in page[: page.index("<details>")]


def test_summary_states_scenario_seeds_versions_assumptions_and_verdicts(reports):
    """The Markdown summary states the setup, the modelling assumptions, the verdicts and links every chart."""
    text = (reports[0] / "summary.md").read_text(encoding="utf-8")
    for needle in (
        "Scenario: small",
        "Seeds: 1, 2, 3, 4, 5",
        "fleetchaos 0.1.0",
        "## Headline",
        "## Modelling assumptions",
        "## Appendix: every verdict, pooled rates and the scenario as it ran",
        "### Verdicts against the reference arm",
        "## How to read these figures",
        "### Failed retries by the fault they met",
        '"tasks_per_day": 100',
    ):
        assert needle in text, needle  # fmt: skip
    for name in CHARTS:
        assert f"]({name})" in text
    assert re.search(r"\| (better|worse|inconclusive|no difference) \|", text)
    # the page opens with what it found, then the headline table; the appendix comes last
    assert text.index("On small over 5 seeds:") < text.index("## Headline") < text.index("## Setup")
    assert text.index("## Files and replay") < text.index("## Appendix")


def test_results_json_is_compact_and_faithful(reports):
    """results.json holds exactly the model's values, with traced timelines, and stays small."""
    path = reports[0] / "results.json"
    result = load_results(path)
    assert isinstance(result, CompareResult)
    assert json.loads(path.read_text()) == json.loads(result.model_dump_json())
    assert path.read_text() == dumps(result)
    labels = {t.label for t in result.timelines}
    assert len(result.timelines) == 2 and labels == {"best success rate", "worst success rate"}
    assert path.stat().st_size < 400_000


def test_tasks_csv_has_a_row_per_task_arm_and_seed(reports):
    """tasks.csv holds one row per task of every arm and seed, sorted by arm, seed and task id."""
    result = load_results(reports[0] / "results.json")
    with (reports[0] / "tasks.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:5] == ["policy", "errors", "seed", "id", "template"]
    assert len(rows) == sum(int(sum(a.per_seed["tasks"])) for a in result.arms)
    first_arm = [r for r in rows if (r["policy"], r["errors"]) == (result.arms[0].policy, result.arms[0].errors)]
    assert rows[: len(first_arm)] == first_arm
    keys = [(int(r["seed"]), int(r["id"])) for r in first_arm]
    assert keys == sorted(keys)


def test_run_report_has_timeline_error_codes_and_ecdf(small, tmp_path):
    """run --report draws the run's fleet timeline, error codes over time and time-to-recovery ECDF into a self-contained page."""
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "--scenario", small, "--policy", "blind-retry", "--errors", "generic",
                                       "--seed", "2", "--no-history", "--report", str(out)], catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    names = {p.name for p in out.iterdir()}
    assert {"timeline.png", "error_codes.png", "time_to_recovery_ecdf.png", "report.html", "tasks.csv"} <= names
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count('src="data:image/png;base64,') == 3 and "https://" not in page


def test_report_command_rebuilds_the_same_bytes_without_simpy(reports, tmp_path):
    """`fleetchaos report RESULTS.json -o DIR` in a fresh process rebuilds the folder byte for byte, never importing SimPy."""
    out = tmp_path / "again"
    code = (
        "import sys; from fleetchaos.cli.main import main; "
        f"main(['report', {str(reports[0] / 'results.json')!r}, '-o', {str(out)!r}], standalone_mode=False); "
        "assert 'simpy' not in sys.modules, 'simpy was imported'"
    )
    proc = patience.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, cpu_s=120)
    assert proc.returncode == 0, proc.stderr
    for path in reports[0].iterdir():
        assert path.read_bytes() == (out / path.name).read_bytes(), path.name


def test_pareto_front_by_hand():
    """Of (cost, recovery) points, the front keeps those no other point beats on both, sorted by cost."""
    points = [(70.0, 0.85), (68.0, 0.35), (68.3, 0.35), (66.8, 0.32), (71.0, 0.52), (66.8, 0.30)]
    assert pareto_front(points) == [3, 1, 0]


def test_goodput_over_time_is_recorded_and_drawn_only_when_the_scenario_asks(tmp_path):
    """goodput_bin_s adds a goodput_by_time breakdown and a goodput chart; without it neither appears."""
    from fleetchaos.reports.compare_report import write_compare_report
    from fleetchaos.reports.goodput import goodput_series
    from fleetchaos.runs.runner import compare
    from fleetchaos.scenario.load import load_scenario

    base = load_scenario("crm_sync_403")
    plain = compare(base, [1], policies=("blind-retry",), errors=("structured",))
    assert "goodput_by_time" not in plain.arms[0].breakdowns
    assert "goodput_bin_s" not in plain.scenario_config
    binned = base.model_validate({**base.model_dump(), "goodput_bin_s": 3600})
    result = compare(binned, [1, 2], policies=("blind-retry", "structured"), errors=("structured",))
    counts = result.arms[0].breakdowns["goodput_by_time"]
    assert all(len(k) == 9 for k in counts) and sum(counts.values()) > 0
    xs, ys = goodput_series(counts, 3600.0, 2, binned.duration_s)
    assert len(xs) == int(binned.duration_s // 3600) and abs(sum(ys) * 60 * 2 - sum(
        v for k, v in counts.items() if float(k) < binned.duration_s)) < 1e-6  # fmt: skip
    written = {p.name for p in write_compare_report(result, tmp_path)}
    assert "goodput_over_time.png" in written
    assert "Goodput over time" in (tmp_path / "summary.md").read_text()
