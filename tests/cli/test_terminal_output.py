"""Terminal output: tables fit COLUMNS or the terminal (a stable width in pipes), --columns, --quiet, whole counts."""

from __future__ import annotations

import re
import sys

import pytest
from click.testing import CliRunner

from fleetchaos.cli import common
from fleetchaos.cli.main import main


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Invoke the CLI in a temporary folder; ``columns`` sets COLUMNS for that call only."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLEETCHAOS_HISTORY", raising=False)

    def invoke(*args: str, columns: int | None = None):
        env = {"COLUMNS": str(columns)} if columns is not None else {}
        return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)

    return invoke


def test_the_width_is_columns_then_the_terminal_then_a_fixed_pipe_width(monkeypatch):
    """COLUMNS wins (in a pipe too); a terminal gives its own width, narrow or wide; a pipe gets PIPE_WIDTH."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    assert common.output_width() == common.PIPE_WIDTH == 160
    assert common.output_width(140) == 140
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(common.shutil, "get_terminal_size", lambda fallback: __import__("os").terminal_size((87, 40)))
    assert common.output_width() == 87 and common.stdout_console().width == 87  # no forced 160 columns
    monkeypatch.setenv("COLUMNS", "100")
    assert common.output_width() == 100
    monkeypatch.setenv("COLUMNS", "wide")  # not a number: ignored
    assert common.output_width() == 87


def test_a_pipe_prints_a_wide_table_whole_and_a_narrow_one_as_it_is(monkeypatch):
    """Piped, a table wider than PIPE_WIDTH widens the console instead of folding; with COLUMNS it folds."""
    from rich.table import Table

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    table = Table("name", "figure")
    table.add_row("x" * 200, "1")
    console = common.stdout_console()
    with console.capture() as captured:
        console.print(table)
    assert "x" * 200 in captured.get() and console.width > common.PIPE_WIDTH
    listing = common.stdout_console(140, fit=False)
    assert listing.width == 140
    with listing.capture() as captured:
        listing.print(table)
    assert max(map(len, captured.get().splitlines())) <= 140
    monkeypatch.setenv("COLUMNS", "100")
    console = common.stdout_console()
    with console.capture() as captured:
        console.print(table)
    assert max(map(len, captured.get().splitlines())) <= 100


def test_compare_fits_100_columns_and_folds_into_60(cli, small):
    """At COLUMNS=100 the headline table fits with names whole; at 60 it folds to fit; piped it is printed whole."""
    args = ("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--no-history")
    hundred = cli(*args, columns=100)
    assert hundred.exit_code == 0, hundred.output
    lines = hundred.stdout.splitlines()
    assert max(map(len, lines)) <= 100
    assert any("blind-retry" in line and "generic" in line for line in lines)
    sixty = cli(*args, columns=60).stdout.splitlines()
    assert max(map(len, sixty)) <= 60
    assert not any("…" in line for line in sixty)  # cells fold onto more lines, no figure is cut
    assert any("│ blind-retry │ structured │" in line for line in sixty)  # names whole: figures give way first
    wide = cli(*args, "--wide").stdout.splitlines()  # piped, no COLUMNS: as wide as the table, nothing folded
    assert max(map(len, wide)) > common.PIPE_WIDTH
    assert any("own-set rec." in line and "escalations" in line and "steps to rec." in line for line in wide)
    assert sum("│ blind-retry │" in line for line in wide) == 2 and not any("…" in line for line in wide)
    assert cli(*args, "--wide").stdout == "\n".join(wide) + "\n"  # the same text every time


def test_columns_choose_the_metrics_and_counts_are_whole(cli, small):
    """run and compare show the metrics --columns names, in its order; counts read as integers."""
    run = cli("run", "--scenario", small, "--no-history", "--columns", "tool_calls,success_rate")
    assert run.exit_code == 0, run.output
    rows = [line for line in run.stdout.splitlines() if "│" in line and "metric" not in line]
    assert [row.split("│")[1].strip() for row in rows] == ["tool_calls", "success_rate"]
    assert rows[0].split("│")[2].strip().replace(",", "").isdigit()  # a count: no ".0"
    compare = cli("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--no-history",
                  "--policies", "structured", "--columns", "escalations,wasted_retries")  # fmt: skip
    assert compare.exit_code == 0, compare.output
    header = next(line for line in compare.stdout.splitlines() if "policy" in line)
    assert header.index("escalations") < header.index("wasted")
    assert "success" not in header and "more figures: --wide" not in compare.stdout
    row = next(line for line in compare.stdout.splitlines() if line.startswith("│ structured"))
    # means of counts: whole numbers, one decimal only for a fraction below 10 (as count_text writes them)
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*|\d\.\d", cell.strip()) for cell in row.split("│")[3:-1])


def test_an_unknown_column_is_a_usage_error_listing_the_metrics(cli, small):
    """--columns with a name not in the registry: exit 2, the name, the valid names; nothing runs."""
    result = cli("compare", "--scenario", small, "--no-history", "--columns", "success_rate,sucess")
    assert result.exit_code == 2
    assert "--columns: unknown metric 'sucess'" in result.stderr and "common_recovery_rate" in result.stderr
    assert "Traceback" not in result.stderr and not result.stdout
    both = cli("compare", "--scenario", small, "--no-history", "--wide", "--columns", "tasks")
    assert both.exit_code == 2 and "--wide with --columns" in both.stderr


def test_quiet_prints_only_the_verdict(cli, small, tmp_path):
    """--quiet: no table, no replay line, no list of files; a gate's verdict still reaches stderr with its exit code."""
    quiet = cli("run", "--scenario", small, "--quiet", "--report", str(tmp_path / "r"), "--label", "base")
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""
    assert (tmp_path / "r" / "report.html").is_file()
    worse = cli("run", "--scenario", small, "--policy", "blind-retry", "--errors", "generic", "--quiet",
                "--baseline", "base", "--fail-on", "success_rate:-1%")  # fmt: skip
    assert worse.exit_code == 1 and worse.stdout == ""
    assert "success_rate" in worse.stderr and "exit 1" in worse.stderr
    compare = cli("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--no-history", "-q")
    assert compare.exit_code == 0 and compare.stdout == "" and compare.stderr == ""


def test_sweep_and_ablation_take_columns_and_quiet(cli, small):
    """sweep and ablation: --columns picks the table's metrics, --quiet prints nothing on success."""
    grid = ("sweep", "--scenario", small, "--param", "faults[0].probability=0,0.3", "--policies", "structured",
            "--errors", "structured", "--seeds", "2", "--jobs", "1", "--no-history")  # fmt: skip
    shown = cli(*grid, "--columns", "tasks,wasted_retries")
    assert shown.exit_code == 0, shown.output
    header = next(line for line in shown.stdout.splitlines() if "scenario" in line)
    assert header.index("tasks") < header.index("wasted_retries") and "success" not in header
    assert cli(*grid, "--quiet").stdout == ""
    ablation = cli("ablation", "--seeds", "1", "--jobs", "1", "--columns", "success_rate,tool_calls")
    assert ablation.exit_code == 0, ablation.output
    assert "| step | format | success rate | tool_calls | recovery gain |" in ablation.stdout
    assert cli("ablation", "--seeds", "1", "--jobs", "1", "--quiet").stdout == ""


@pytest.mark.parametrize("columns", [60, 72, 80, 86, 92])
def test_a_narrow_terminal_never_breaks_a_figure_and_names_what_it_left_out(cli, small, columns):
    """Every figure and header word of the piped (unlimited) table appears whole in a narrow terminal's table,
    or its column is named as left out; the lines fit the width."""
    args = ("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--no-history")
    whole = cli(*args).stdout.splitlines()  # piped: as wide as it needs, nothing folded
    narrow = cli(*args, columns=columns).stdout
    assert max(map(len, narrow.splitlines())) <= columns
    header_cells = [c.strip() for c in next(line for line in whole if "policy" in line).split("┃")[1:-1]]
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in whole if line.startswith("│")]
    caption = " ".join(narrow.split())  # the caption's lines wrap: read it as one text
    left_out = re.search(r"left out to fit \d+ columns: (.*?) \(", caption)
    dropped = set(left_out.group(1).split(", ")) if left_out else set()
    if columns <= 72:  # the small scenario's eight columns need about 86 with each figure above its interval
        assert dropped
    cells = re.findall(r"[^\s│┃]+", narrow)  # every word printed inside the narrow table
    for i, head in enumerate(header_cells[2:], start=2):
        if head in dropped:
            continue
        for word in [*head.split(), *(w for row in rows for w in row[i].split())]:
            assert word in cells, f"{word!r} of column {head!r} broken or missing at {columns} columns"
    assert len(header_cells) - 2 - len(dropped) >= 2  # the lead figures always stay


def test_a_sweep_in_80_columns_keeps_its_figures_whole(cli, small):
    """The sweep table in 80 columns: names whole, no figure broken, the figures it left out named."""
    args = ("sweep", "--scenario", small, "--param", "faults[0].probability=0,0.2", "--seeds", "1", "--jobs", "1")
    args += ("--policies", "structured", "--no-history")
    whole = cli(*args).stdout
    narrow = cli(*args, columns=80).stdout
    assert max(map(len, narrow.splitlines())) <= 80
    assert "│ structured │ structured │" in narrow  # names are never folded
    figures = re.findall(r"\d[\d,.]*%", whole)
    caption = " ".join(narrow.split())
    assert "left out to fit 80 columns:" in caption
    shown = re.findall(r"\d[\d,.]*%", narrow)
    assert shown and set(shown) <= set(figures)  # every figure printed is a whole figure of the wide table


@pytest.mark.parametrize("columns", [46, 56, 74])
def test_a_very_narrow_sweep_keeps_its_parameter_column(cli, small, columns):
    """However narrow, the sweep table keeps a column for the swept values (folded, never collapsed to nothing)."""
    args = ("sweep", "--scenario", small, "--param", "faults[0].probability=0,0.2", "--seeds", "1", "--jobs", "1")
    out = cli(*args, "--policies", "structured", "--no-history", columns=columns).stdout
    assert max(map(len, out.splitlines())) <= columns
    assert "params" in out and "faults" in out


def test_names_stay_whole_when_even_the_lead_figures_do_not_fit(cli, small):
    """With long policy specs in 60 columns the names print whole (the figures fold instead), never cropped."""
    policies = "backoff(base_s=0.5,cap_s=10),backoff(base_s=0.5,cap_s=20)"
    args = ("compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--no-history")
    out = cli(*args, "--policies", policies, "--errors", "structured", columns=60).stdout
    assert max(map(len, out.splitlines())) <= 60
    assert "backoff(base_s=0.5,cap_s=10.0)" in out and "backoff(base_s=0.5,cap_s=20.0)" in out
    assert "│ structured │" in out
