"""Baselines: reading stored results, and judging a new run against them."""

from __future__ import annotations

import json

import pytest

from fleetchaos.errors import UserError
from fleetchaos.gates.baseline import load_baseline
from fleetchaos.results.models import RunResult
from fleetchaos.testing.suite import ScenarioResult


def compare_doc(recovery=0.9, silent=0.0, wasted=2.0) -> dict:
    """A comparison results document with one arm."""
    return {
        "scenario": "s",
        "seeds": [1, 2, 3],
        "confidence": 0.95,
        "arms": [
            {
                "policy": "p",
                "errors": "e",
                "metrics": {"common_recovery_rate": recovery, "silent_failure_rate": silent, "wasted_retries": wasted},
                "ci": {},
            }
        ],
    }


def run_doc(seed: int, recovery: float) -> dict:
    """A single-run results document."""
    return {"scenario": "s", "policy": "p", "errors": "e", "seed": seed, "metrics": {"common_recovery_rate": recovery}}


def current(recovery: list[float], wasted: list[float] | None = None, scenario: str = "s") -> ScenarioResult:
    """A ScenarioResult of arm p on e of ``scenario`` with the given per-seed recovery rates."""
    wasted = wasted or [2.0] * len(recovery)
    runs = tuple(
        RunResult(
            scenario=scenario,
            policy="p",
            errors="e",
            seed=i + 1,
            metrics={"common_recovery_rate": r, "silent_failure_rate": 0.0, "wasted_retries": w},
            breakdowns={},
            fault_schedule=[],
            replay=f"fleetchaos run --scenario s --policy p --errors e --seed {i + 1}",
        )
        for i, (r, w) in enumerate(zip(recovery, wasted))
    )
    return ScenarioResult(scenario, scenario, "p", "e", tuple(r.seed for r in runs), runs)


def test_a_comparison_file_gives_one_entry_per_arm(tmp_path):
    """Each arm of a compare results.json is keyed by (scenario, policy, errors)."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps(compare_doc()))
    entry = load_baseline(path).lookup("s", "p", "e")
    assert entry.metrics["common_recovery_rate"] == 0.9 and entry.seeds == [1, 2, 3]
    assert load_baseline(path).lookup("s", "p", "other") is None


def test_a_folder_prefers_comparisons_and_averages_single_runs(tmp_path):
    """In a folder, a comparison's arm wins over runs of it; runs alone are averaged."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps(run_doc(1, 0.5)))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "results.json").write_text(json.dumps(run_doc(2, 0.7)))
    entry = load_baseline(tmp_path).lookup("s", "p", "e")
    assert entry.metrics["common_recovery_rate"] == pytest.approx(0.6) and entry.seeds == [1, 2]
    (tmp_path / "results.json").write_text(json.dumps(compare_doc(recovery=0.9)))
    assert load_baseline(tmp_path).lookup("s", "p", "e").metrics["common_recovery_rate"] == 0.9


def test_a_json_list_of_results_is_read(tmp_path):
    """A list of documents contributes every entry."""
    path = tmp_path / "all.json"
    path.write_text(json.dumps([run_doc(1, 0.4), compare_doc()]))
    assert load_baseline(path).lookup("s", "p", "e").metrics["common_recovery_rate"] == 0.9


def verdicts(ref, result: ScenarioResult, *, history=None, fail_on=()) -> dict[str, str]:
    """The plugin's gate on one scenario result: metric -> failure message ('' when it held)."""
    from fleetchaos.gates.session import SUITE, GateSession
    from fleetchaos.gates.suite_gate import failure_message

    gate = GateSession(SUITE, baseline_ref=str(ref), history_path=history, fail_on=fail_on)
    entry = gate.baseline.lookup(result.scenario, result.policy, result.errors)
    if entry is None:
        assert gate.check(result.runs) == []
        return {}
    replays = {r.seed: r.replay for r in result.runs}
    return {
        c.rule.metric: failure_message(c, entry.origin, replays) if c.failed else "" for c in gate.check(result.runs)
    }


def test_a_baseline_of_means_gates_the_headline_metrics_at_their_default_thresholds(tmp_path):
    """Against a file of means: recovery down 38% fails, down 1.9% passes, wasted retries up 175% fails."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps(compare_doc(recovery=0.9, wasted=2.0)))
    bad = verdicts(path, current([0.5, 0.55, 0.6]))
    assert bad["common_recovery_rate"].startswith(
        f"common_recovery_rate regressed against the baseline {path} (0.9, a mean over its own seeds):\n"
        "  REGRESSION common_recovery_rate for p on e: 0.55 against 0.9 "
    )
    assert (
        "replay the worst seed (1): fleetchaos run --scenario s --policy p --errors e --seed 1"
        in bad["common_recovery_rate"]
    )
    assert bad["silent_failure_rate"] == "" and bad["wasted_retries"] == ""
    assert verdicts(path, current([0.8, 0.95, 0.9])) == dict.fromkeys(bad, "")
    assert verdicts(path, current([0.9, 0.9, 0.9], wasted=[5.0, 6.0, 5.5]))["wasted_retries"]


def test_a_comparison_with_per_seed_values_is_paired_seed_by_seed(tmp_path):
    """Each seed 9% worse than a stored comparison's same seed fails, naming the paired seeds and the worst seed."""
    doc = compare_doc(recovery=0.6)
    doc["arms"][0]["per_seed"] = {"common_recovery_rate": [0.2, 0.9, 0.7], "wasted_retries": [2.0, 2.0, 2.0]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    entry = load_baseline(path).lookup("s", "p", "e")
    assert entry.per_seed[2] == {"common_recovery_rate": 0.9, "wasted_retries": 2.0}
    worse = verdicts(path, current([0.2 * 0.91, 0.9 * 0.91, 0.7 * 0.88]))
    message = worse["common_recovery_rate"]
    assert message.startswith(f"common_recovery_rate regressed against the baseline {path} (0.6 on seeds 1-3):")
    assert "allowed -2% over 3 seeds" in message
    assert "replay the worst seed (3): fleetchaos run --scenario s --policy p --errors e --seed 3" in message
    assert not verdicts(path, current([0.2, 0.9, 0.7]))["common_recovery_rate"]
    assert not verdicts(path, current([0.2 * 0.91, 0.9 * 0.91, 0.7 * 0.88]), fail_on=["common_recovery_rate:-15%"])[
        "common_recovery_rate"
    ]


def test_an_arm_the_baseline_lacks_is_not_judged(tmp_path):
    """A scenario run whose scenario, policy and format are not in the baseline gets no verdict."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps(compare_doc()))
    assert verdicts(path, current([0.1, 0.1], scenario="other")) == {}


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        ('{"hello": 1}', "not a fleetchaos results document"),
        (
            '{"scenario": "s", "arms": [{"policy": 1, "errors": "e", "metrics": {}}]}',
            "arms[0]: field 'policy' must be a string",
        ),
        (
            '{"scenario": "s", "arms": [{"policy": "p", "errors": "e", "metrics": 3}]}',
            "field 'metrics' must be a mapping",
        ),
        ("42", "expected a results document"),
    ],
)
def test_invalid_baselines_are_user_errors_naming_the_file(tmp_path, content, message):
    """A malformed baseline file raises UserError with the file and what is wrong."""
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_baseline(path)


def test_a_missing_baseline_or_an_empty_folder_is_a_user_error(tmp_path):
    """No such path, or a folder without results.json, is a UserError."""
    with pytest.raises(UserError, match="no such file or folder"):
        load_baseline(tmp_path / "nope.json")
    with pytest.raises(UserError, match="holds no results.json"):
        load_baseline(tmp_path)


def test_a_history_group_is_a_baseline_kept_seed_by_seed(tmp_path):
    """A label, id or 'latest' names a run-history group; its runs are kept per seed and averaged per arm."""
    from fleetchaos.gates.history import open_store

    db = tmp_path / "history.db"
    with open_store(db) as store:
        gid = store.new_group("compare", "s", label="main")
        for run in current([0.9, 0.8]).runs:
            store.add_run(gid, run)
        store.finish_group(gid)
    for ref in ("main", "latest", str(gid), f"#{gid}"):
        baseline = load_baseline(ref, history=db)
        entry = baseline.lookup("s", "p", "e")
        assert entry.metrics["common_recovery_rate"] == pytest.approx(0.85) and entry.seeds == [1, 2]
    found = verdicts("main", current([0.4, 0.5, 0.45]), history=db)
    assert f"against the baseline history #{gid} (main) (0.85 on seeds 1,2):" in found["common_recovery_rate"]


def test_an_unknown_history_group_or_a_missing_history_is_a_user_error(tmp_path):
    """A group name that is not stored, or no history file at all, says where it looked."""
    from fleetchaos.gates.history import open_store

    db = tmp_path / "history.db"
    with pytest.raises(UserError, match="no run history at .*history.db"):
        load_baseline("main", history=db)
    with open_store(db) as store:
        store.new_group("run", "s", label="other")
    with pytest.raises(UserError, match="no run group 'main'"):
        load_baseline("main", history=db)


def test_a_history_group_keeps_each_runs_task_sets_for_the_common_set_gate(tmp_path):
    """Runs stored whole keep their task sets; the baseline hands them to the rule seed by seed."""
    from fleetchaos.gates.history import open_store

    db = tmp_path / "history.db"
    runs = current([0.9, 0.8]).runs
    for i, run in enumerate(runs):
        run.task_sets = {"faulted": "Aw==", "succeeded": "Bw==" if i == 0 else "AQ=="}  # {0,1}; {0,1,2} or {0}
    with open_store(db) as store:
        gid = store.new_group("compare", "s", label="main")
        for run in runs:
            store.add_run(gid, run)
        store.finish_group(gid)
    entry = load_baseline("main", history=db).lookup("s", "p", "e")
    assert entry.task_sets == {1: runs[0].task_sets, 2: runs[1].task_sets}
    assert entry.arm().task_sets == entry.task_sets
