"""Every terminal table in 60, 72, 80 and 100 columns: names whole, lines within the width, what was left out named.

A name (a policy, an error format, an arm, a metric, a parameter, a fault kind) folded or cut
(``structu…``, ``blind-ret`` over ``ry``) reads as another name; a figure left out is said in
the caption.  The compare table keeps success, recovery on the common set, silent failures
and the cost per run in 80 columns (an arm can lead at hundreds of times the cost).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.reports.best import best_table
from fleetchaos.reports.robustness import robustness_table
from fleetchaos.reports.sensitivity import tornado_table
from fleetchaos.results.models import ArmResult, CompareResult
from fleetchaos.results.studies import RobustnessPoint, RobustnessResult

WIDTHS = (60, 72, 80, 100)


def _run(*args: str, columns: int):
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": str(columns)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _check(out: str, columns: int, names: list[str]) -> set[str]:
    """Lines within ``columns``; no ellipsis; each name printed whole (a name with spaces may wrap at them).

    Returns the headers the caption says were left out.
    """
    lines = out.splitlines()
    assert max(map(len, lines)) <= columns, f"a line wider than {columns}:\n{out}"
    assert "…" not in out, out
    tokens = set(re.findall(r"[^\s│┃]+", out))
    for name in names:
        for word in name.split():
            assert word in tokens, f"{word!r} of {name!r} broken or missing at {columns} columns:\n{out}"
    caption = " ".join(out.split())
    found = re.search(r"left out to fit \d+ columns: (.*?) \(a wider terminal", caption)
    return set(found.group(1).split(", ")) if found else set()


@pytest.fixture(scope="module")
def stored(tmp_path_factory, small):
    """A history with one comparison of the small scenario (three policies on two formats, two seeds)."""
    folder = tmp_path_factory.mktemp("narrow")
    history = str(folder / "h.db")
    out = CliRunner().invoke(
        main,
        ["compare", "--scenario", small, "--seeds", "2", "--jobs", "1", "--history", history,
         "--report", str(folder / "report")],
        catch_exceptions=False,
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    return history, str(folder / "report")


ARMS = ["blind-retry", "backoff", "structured", "generic"]


@pytest.mark.parametrize("columns", WIDTHS)
def test_compare_keeps_success_recovery_silent_failures_and_cost_from_72_columns(stored, columns):
    """The cost per run is one of the lead columns: 72 and 80 columns show it; 60 names what it left out."""
    from fleetchaos.reports.results_io import load_results
    from fleetchaos.reports.tables import compare_table

    _, report = stored
    result = load_results(Path(report) / "results.json")
    out = _printed(compare_table(result, width=columns), columns)
    left_out = _check(out, columns, ARMS)
    lines = out.splitlines()
    header = " ".join(lines[next(i for i, line in enumerate(lines) if "policy" in line) - 2 :][:4])  # its lines
    if columns >= 72:
        assert all(word in header for word in ("success", "common", "silent", "cost/run")), header
    else:
        assert "success" in header and "common" in header
    for figure in ("silent", "cost/run", "failed", "wasted"):
        assert figure in header or figure in left_out, f"{figure} neither shown nor named at {columns}"


@pytest.mark.parametrize("columns", WIDTHS)
def test_history_diff_list_and_show_keep_names_whole(stored, columns):
    history, report = stored
    metrics = ["success_rate", "common_recovery_rate", "silent_failure_rate", "wasted_retries", "failed_retries"]
    diff = _run("history", "diff", "latest", report, "--history", history, columns=columns)
    left_out = _check(diff, columns, ["blind-retry on generic", "structured on structured", *metrics])
    assert {"vs", "too", "few", "seeds"} <= set(diff.split())  # the verdict (two seeds: too few) always shows
    assert left_out <= {"pairs", "A", "B", "95% interval"}
    if columns >= 100:
        assert "interval" in diff
    listing = _run("history", "--history", history, columns=columns)
    _check(listing, columns, ["compare", "small"])
    show = _run("history", "latest", "--history", history, columns=columns)
    left_out = _check(show, columns, ARMS)
    assert "success" in show and left_out <= {"wasted retries", "failed retries", "recovery", "run", "cost (USD)"}


def _arm(policy: str, errors: str, success: float) -> ArmResult:
    return ArmResult(policy=policy, errors=errors, metrics={"success_rate": success},
                     ci={"success_rate": [success - 0.05, success + 0.05]}, per_seed={}, breakdowns={})  # fmt: skip


def _robustness() -> RobustnessResult:
    points = []
    for value, (a, b) in zip((0.0, 0.01, 0.02, 0.04), ((0.7, 0.9), (0.72, 0.88), (0.75, 0.85), (0.8, 0.79))):
        diff = b - a
        points.append(RobustnessPoint(
            parameter="fleet.misread_probability", value=value,
            arms=[_arm("blind-retry", "generic", a), _arm("structured", "structured", b)],
            difference=diff, ci=[diff - 0.03, diff + 0.03], leader="structured on structured" if b > a else "blind-retry on generic",
        ))  # fmt: skip
    return RobustnessResult(
        scenario="default", metric="success_rate", higher_is_better=True,
        arms=["blind-retry on generic", "structured on structured"], seeds=[1, 2, 3], confidence=0.95,
        baseline_leader="structured on structured", varied={"fleet.misread_probability": [0.0, 0.01, 0.02, 0.04]},
        described={"fleet.misread_probability": "how often a model misreads an error"}, points=points, flips=[],
    )  # fmt: skip


def _printed(table, columns: int) -> str:
    from rich.console import Console

    console = Console(width=columns, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(table)
    return console.export_text()


@pytest.mark.parametrize("columns", WIDTHS)
def test_the_robustness_table_keeps_parameter_value_and_leader_whole(columns):
    out = _printed(robustness_table(_robustness(), width=columns), columns)
    left_out = _check(out, columns, ["fleet.misread_probability", "structured on structured", "blind-retry on generic"])
    assert "leader" in out and "0.04" in out
    assert left_out <= {"blind-retry on generic", "structured on structured", "interval", "difference"}
    if columns >= 80:
        assert "difference" in out


@pytest.mark.parametrize("columns", WIDTHS)
def test_best_against_best_and_the_tornado_keep_their_names_whole(columns):
    from fleetchaos.results.studies import SensitivityResult, Setting
    from fleetchaos.runs.best import tuning_record
    from fleetchaos.runs.sensitivity import flips_of, point, tornado_bars

    best = {"generic": "backoff(base_s=0.5,cap_s=20.0)", "structured": "structured(max_retries=4,retry_budget=12)"}

    def arm(policy: str, errors: str, values: list[float]) -> ArmResult:
        mean = sum(values) / len(values)
        return ArmResult(policy=policy, errors=errors, metrics={"success_rate": mean},
                         ci={"success_rate": [mean - 0.01, mean + 0.01]}, per_seed={"success_rate": values},
                         breakdowns={})  # fmt: skip

    arms = [arm(best["generic"], "generic", [0.80, 0.82]), arm(best["structured"], "structured", [0.90, 0.93])]
    result = CompareResult(scenario="default", seeds=[1, 2], confidence=0.95, arms=arms)
    tuning = tuning_record(result, best, objective="success_rate", train_seeds=[101, 102])
    out = _printed(best_table(result, tuning, width=columns), columns)
    _check(out, columns, ["structured", "generic", "over"])
    paths = {"fleet.providers[0].admission": ["refuse", "queue"], "fleet.usd_per_silent_failure": [60.0, 480.0]}
    settings = [Setting(parameter=p, values=v, own=v[0], metric="cost_usd" if "usd" in p else "success_rate",
                        retuned="usd" not in p, reaches=["generic", "structured"]) for p, v in paths.items()]  # fmt: skip
    points = [
        point(p, value, s.metric, arms, 0.95) for s in settings for p, value in ((s.parameter, v) for v in s.values)
    ]
    study = SensitivityResult(scenario="default", errors=["generic", "structured"], seeds=[1, 2], confidence=0.95,
                              retune=True, baseline=point("", None, "success_rate", arms, 0.95), settings=settings,
                              points=points, flips=flips_of(points), bars=tornado_bars(settings, points))  # fmt: skip
    out = _printed(tornado_table(study, width=columns), columns)
    _check(out, columns, list(paths))


@pytest.mark.parametrize("columns", WIDTHS)
def test_fault_and_policy_listings_keep_names_and_codes_whole(columns):
    faults = _run("faults", "list", columns=columns)
    left_out = _check(faults, columns, ["network_blip", "rate_limit", "timeout"])
    assert "NETWORK_UNREACHABLE" in faults or "error code" in left_out
    policies = _run("policies", "list", columns=columns)
    _check(policies, columns, ["blind-retry", "backoff", "structured"])
