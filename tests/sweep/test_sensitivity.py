"""What the answer depends on: the settings varied, what each can reach, flips and tornado bars by hand, the commands."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from click.testing import CliRunner

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.results.models import ArmResult
from fleetchaos.results.studies import Setting
from fleetchaos.runs.executors import SerialExecutor
from fleetchaos.runs.runner import run_one
from fleetchaos.runs.sensitivity import flips_of, plan_settings, point, reaches, tornado_bars
from fleetchaos.runs.tune import TuneSpec, search, search_many
from fleetchaos.scenario.load import load_scenario, parse_scenario
from fleetchaos.scenario.params import apply_params
from fleetchaos.scenario.tuned import world_fingerprint

FORMATS = ["generic", "status", "raw", "structured"]


def test_the_default_study_varies_every_assumption_the_issue_names_over_its_range():
    scenario = load_scenario("default")
    settings = {s.parameter: s for s in plan_settings(scenario, FORMATS)}
    for path in ("fleet.partial_batch", "fleet.checkpoints", "faults[5].misclassify", "faults[5].omit_partial_success",
                 "fleet.providers[0].admission", "fleet.providers[0].servers", "fleet.call_timeout_s",
                 "fleet.page_handling.mean_s", "fleet.usd_per_silent_failure", "fleet.usd_per_undone_task",
                 "workload.tasks_per_day", "fleet.misread_factor.status", "fleet.misread_probability"):  # fmt: skip
        assert path in settings, path
    assert settings["fleet.partial_batch"].values == ["failed", "ok", "count"]
    assert settings["fleet.partial_batch"].reaches == ["generic", "status", "raw"]
    assert settings["faults[5].omit_partial_success"].reaches == ["structured"]
    assert settings["fleet.misread_factor.status"].reaches == ["status"]
    assert "fleet.misread_factor.tool_envelope" not in settings  # no format of the study reads it
    # every result costs result_tokens (no spread): a call made again returns as many, redrawn or not
    assert "fleet.model.result_tokens_repeat" not in settings
    pressure = {s.parameter: s for s in plan_settings(load_scenario("context_pressure"), FORMATS)}
    assert pressure["fleet.model.result_tokens_repeat"].values == ["same", "redrawn"]
    assert settings["fleet.providers[0].admission"].own == "refuse"
    assert settings["workload.tasks_per_day"].values == [600.0, 1200.0, 2400.0]
    for path, setting in settings.items():
        assert setting.own in setting.values, path
        cost = path.startswith(("fleet.usd_", "fleet.model.usd_", "fleet.page_handling"))
        assert (setting.metric, setting.retuned) == (("cost_usd", False) if cost else ("success_rate", True)), path
    only = plan_settings(scenario, FORMATS, only=["admission", "servers"])
    assert [s.parameter for s in only] == ["fleet.providers[0].admission", "fleet.providers[0].servers"]


def test_a_registry_value_a_scenario_refuses_is_left_out_and_said_but_a_given_one_stops_the_study():
    """retry_collapse times calls out at 10 s: the registry's late-reply cuts of 60 and 120 s cannot be below it, so
    its study keeps the scenario's own (no cut) and says why it was not varied; the same values given with
    --param are the user's and refuse the study."""
    from fleetchaos.errors import UserError
    from fleetchaos.reports.sensitivity import study_lines
    from fleetchaos.scenario.params import ParamError

    scenario = load_scenario("retry_collapse")
    assert scenario.fleet.call_timeout_s == 10
    (late,) = [s for s in plan_settings(scenario, ["generic", "structured"]) if s.parameter == "fleet.late_reply_s"]
    assert late.values == [None]
    why = (
        "the client gives up at the call timeout, so no reply arrives later than it; "
        "set late_reply_s below call_timeout_s, or drop one"
    )
    assert late.skipped == [
        f"60.0 (fleet.late_reply_s 60 is not below fleet.call_timeout_s 10: {why})",
        f"120.0 (fleet.late_reply_s 120 is not below fleet.call_timeout_s 10: {why})",
    ]
    with pytest.raises((ParamError, UserError), match="not below fleet.call_timeout_s 10"):
        plan_settings(scenario, ["generic", "structured"], ranges={"fleet.late_reply_s": [5.0, 60.0]})
    default = {s.parameter: s for s in plan_settings(load_scenario("default"), FORMATS)}
    assert default["fleet.late_reply_s"].skipped == [] and default["fleet.late_reply_s"].values == [None, 60.0, 120.0]

    study = SimpleNamespace(flips=[], points=[], bars=[], settings=[late], baseline=SimpleNamespace(leader="tie"))
    assert study_lines(study) == [  # the fields study_lines reads
        "fleet.late_reply_s: left out, this scenario's rules refuse 60.0 (fleet.late_reply_s 60 is not below "
        f"fleet.call_timeout_s 10: {why}), 120.0 (fleet.late_reply_s 120 is not below fleet.call_timeout_s 10: "
        f"{why}). It was not varied here."
    ]


@pytest.fixture(scope="module")
def light(tmp_path_factory) -> str:
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"], doc["workload"]["tasks_per_day"] = "light", 120
    path = tmp_path_factory.mktemp("light") / "light.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize(
    ("path", "value"),
    [("fleet.partial_batch", "ok"), ("fleet.misread_factor.generic", 2.0), ("faults[5].omit_partial_success", 0.5),
     ("faults[5].misclassify", 0.5), ("fleet.misread_factor.structured", 1.0)],
)  # fmt: skip
def test_a_setting_leaves_the_formats_it_cannot_reach_exactly_as_they_were(light, path, value):
    """What the study takes from the scenario's own runs instead of making them again is, run by run, the same."""
    scenario = load_scenario(light)
    varied, _ = apply_params(scenario, [(path, value)], source=light)
    reached = reaches(scenario, path, FORMATS)
    assert reached and set(reached) != set(FORMATS)
    for errors in FORMATS:
        for policy in ("blind-retry", "structured"):
            for seed in (1, 2):
                own = run_one(scenario, policy, errors, seed).metrics
                changed = run_one(varied, policy, errors, seed).metrics
                if errors not in reached:
                    assert changed == own, (path, errors, policy, seed)


def _arm(errors: str, values: list[float], metric: str = "success_rate") -> ArmResult:
    mean = statistics.fmean(values)
    return ArmResult(policy=f"{errors}-best", errors=errors, metrics={metric: mean}, ci={metric: [mean, mean]},
                     per_seed={metric: values}, breakdowns={})  # fmt: skip


def test_a_point_compares_the_best_with_an_envelope_and_the_best_without_one_by_hand():
    arms = [
        _arm("generic", [0.70, 0.72, 0.74]),
        _arm("status", [0.80, 0.81, 0.79]),
        _arm("structured", [0.85, 0.84, 0.89]),
    ]
    p = point("x", 1, "success_rate", arms, 0.95)
    assert p.versus == ["structured", "status"] and p.leader == "structured"
    assert p.difference == pytest.approx(statistics.fmean([0.05, 0.03, 0.10]))
    behind = [
        _arm("generic", [0.70, 0.72, 0.74]),
        _arm("status", [0.90, 0.91, 0.92]),
        _arm("structured", [0.85, 0.84, 0.89]),
    ]
    q = point("x", 2, "success_rate", behind, 0.95)
    assert q.leader == "status" and q.difference == pytest.approx(statistics.fmean([-0.05, -0.07, -0.03]))
    assert q.lead_ci[0] > 0  # status ahead of structured on every seed by 0.03 to 0.07


def test_flips_and_bars_by_hand():
    def at(parameter: str, value, lead: str, d: float) -> object:
        return point(parameter, value, "success_rate",
                     [_arm("status", [0.8, 0.8]), _arm("structured", [0.8 + d, 0.8 + d + (0.001 if lead else 0)])],
                     0.95)  # fmt: skip

    points = [at("a", 0, "s", 0.05), at("a", 1, "s", 0.02), at("a", 2, "s", -0.04),
              at("b", "x", "s", 0.05), at("b", "y", "s", 0.09)]  # fmt: skip
    flips = flips_of(points)
    assert [(f.parameter, f.ahead, f.behind, f.holds_at, f.flips_at, f.reverses) for f in flips] == [
        ("a", "best on structured", "best on status", 1, 2, True),
    ]
    settings = [
        Setting(parameter="a", values=[0, 1, 2], own=1, metric="success_rate", retuned=True, reaches=FORMATS),
        Setting(parameter="b", values=["x", "y"], own="x", metric="success_rate", retuned=True, reaches=FORMATS),
    ]
    bars = tornado_bars(settings, points)
    assert [b.parameter for b in bars] == ["a", "b"]  # a spans 0.0905 (-0.0395 to 0.0505), b 0.04
    a = bars[0]
    assert (a.low_value, a.high_value, a.own_value) == (0, 2, 1)
    assert a.at_low == pytest.approx(0.0505) and a.at_high == pytest.approx(-0.0395)
    assert (a.least, a.most) == (pytest.approx(-0.0395), pytest.approx(0.0505)) and a.width == pytest.approx(0.09)
    assert a.at_own == pytest.approx(0.0205)


def test_searches_raced_together_choose_what_each_chooses_alone(light):
    scenario = load_scenario(light)
    busier, canonical = apply_params(scenario, [("workload.tasks_per_day", 240.0)], source=light)
    specs = [
        TuneSpec(scenario=scenario, errors="generic", families=("blind-retry", "backoff"), trials=3, train_seeds=(11, 12, 13)),
        TuneSpec(scenario=busier, errors="structured", params=canonical, families=("backoff", "structured"), trials=3,
                 train_seeds=(11, 12, 13)),
    ]  # fmt: skip
    executor = SerialExecutor()
    assert search_many(specs, executor=executor) == [search(spec, executor=executor) for spec in specs]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> str:
    """A light world that ships a small tuned: block (three families, two trials, two training seeds)."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"], doc["workload"]["tasks_per_day"] = "light", 120
    command = ("fleetchaos tune --scenario light.yaml --errors generic,status,structured "
               "--families backoff,raw-parse,structured --trials 2 --train-seeds 2")  # fmt: skip
    doc["tuned"] = {"command": command, "train_seeds": [1000001, 1000002], "world": "0" * 16,
                    "policies": {"generic": "backoff", "status": "raw-parse", "structured": "structured"}}  # fmt: skip
    doc["tuned"]["world"] = world_fingerprint(parse_scenario(yaml.safe_dump(doc), "light.yaml"))
    path = tmp_path_factory.mktemp("shipped") / "light.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_robustness_re_tunes_draws_the_tornado_and_names_every_flip(shipped, tmp_path):
    out = tmp_path / "study"
    result = CliRunner().invoke(
        main,
        ["robustness", "--scenario", shipped, "--only", "partial_batch,admission,usd_per_silent", "--seeds", "3",
         "--jobs", "1", "--report", str(out)],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["tuning"]["own_bests"].startswith("shipped, tuned by `fleetchaos tune")
    assert doc["tuning"]["train_seeds"] == [1000001, 1000002]  # the shipped command's search, not the defaults
    assert [s["parameter"] for s in doc["settings"]] == [
        "fleet.partial_batch", "fleet.providers[0].admission", "fleet.usd_per_silent_failure",
    ]  # fmt: skip
    retuned = {(p["parameter"], str(p["value"])): p["retuned"] for p in doc["points"]}
    assert retuned[("fleet.partial_batch", "ok")] == ["generic", "status"]  # structured cannot change
    assert retuned[("fleet.providers[0].admission", "queue")] == ["generic", "status", "structured"]
    assert retuned[("fleet.usd_per_silent_failure", "1920.0")] == []  # a price is never re-tuned
    assert {b["metric"] for b in doc["bars"]} == {"success_rate", "cost_usd"}
    assert doc["runs"]["reused"] == 6  # structured at partial_batch ok and count, three seeds each
    assert (out / "tornado.png").stat().st_size > 0
    page = (out / "summary.md").read_text()
    assert "What the answer depends on" in page and "tornado.png" in page
    for flip in doc["flips"]:
        assert flip["parameter"] in result.output
    assert "Prices cannot change a success rate" in result.output
    no_retune = CliRunner().invoke(
        main, ["robustness", "--scenario", shipped, "--only", "admission", "--seeds", "2", "--jobs", "1",
               "--no-retune", "--json"],
    )  # fmt: skip
    assert no_retune.exit_code == 0, no_retune.output
    study = json.loads(no_retune.output[no_retune.output.index("{") :])
    assert study["runs"]["training"] == 0 and all(p["retuned"] == [] for p in study["points"])


def test_mistakes_in_a_study_are_refused_before_it_runs(shipped):
    def refused(*args: str) -> str:
        result = CliRunner().invoke(main, ["robustness", "--scenario", shipped, *args])
        assert result.exit_code == 2, result.output
        return result.output

    assert "give formats of both kinds" in refused("--errors", "structured,tool-envelope", "--only", "admission")
    assert "no assumption's path contains it" in refused("--only", "nothing_like_this")
    assert "judged on success_rate" in refused("--metric", "cost_usd")
    assert "--arm with --errors or --only" in refused("--arm", "blind-retry", "generic", "--arm", "backoff", "generic",
                                                      "--only", "x")  # fmt: skip


@pytest.mark.slow  # every assumption of the registry, re-tuned: about 15 s of CPU
def test_compare_robustness_puts_the_study_into_the_report_and_the_finding(shipped, tmp_path):
    out = tmp_path / "cmp"
    result = CliRunner().invoke(
        main,
        ["compare", "--scenario", shipped, "--seeds", "2", "--jobs", "1", "--no-history", "--robustness", "2",
         "--report", str(out)],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "results.json").read_text())
    study = doc["sensitivity"]
    assert study["seeds"] == [1, 2] and study["retune"] is True
    assert (out / "tornado.png").stat().st_size > 0
    page = (out / "summary.md").read_text()
    assert "## What the answer depends on" in page
    finding = page.split("\n\n")[1]
    assert "the envelope's lead rests most on" in finding or "kept its sign" in finding
    assert "what best against best on light depends on" in result.output
    assert Path(out / "report.html").read_text().count('<img alt="Tornado chart: the envelope') == 1  # drawn once
