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
                "metrics": {"recovery_rate": recovery, "silent_failure_rate": silent, "wasted_retries": wasted},
                "ci": {},
            }
        ],
    }


def run_doc(seed: int, recovery: float) -> dict:
    """A single-run results document."""
    return {"scenario": "s", "policy": "p", "errors": "e", "seed": seed, "metrics": {"recovery_rate": recovery}}


def current(recovery: list[float], wasted: list[float] | None = None) -> ScenarioResult:
    """A ScenarioResult of arm p on e with the given per-seed recovery rates."""
    wasted = wasted or [2.0] * len(recovery)
    runs = tuple(
        RunResult(
            scenario="s",
            policy="p",
            errors="e",
            seed=i + 1,
            metrics={"recovery_rate": r, "silent_failure_rate": 0.0, "wasted_retries": w},
            breakdowns={},
            fault_schedule=[],
            replay=f"fleetchaos run --scenario s --policy p --errors e --seed {i + 1}",
        )
        for i, (r, w) in enumerate(zip(recovery, wasted))
    )
    return ScenarioResult("s", "s", "p", "e", tuple(r.seed for r in runs), runs)


def test_a_comparison_file_gives_one_entry_per_arm(tmp_path):
    """Each arm of a compare results.json is keyed by (scenario, policy, errors)."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps(compare_doc()))
    entry = load_baseline(path).lookup("s", "p", "e")
    assert entry.metrics["recovery_rate"] == 0.9 and entry.seeds == [1, 2, 3]
    assert load_baseline(path).lookup("s", "p", "other") is None


def test_a_folder_prefers_comparisons_and_averages_single_runs(tmp_path):
    """In a folder, a comparison's arm wins over runs of it; runs alone are averaged."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps(run_doc(1, 0.5)))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "results.json").write_text(json.dumps(run_doc(2, 0.7)))
    entry = load_baseline(tmp_path).lookup("s", "p", "e")
    assert entry.metrics["recovery_rate"] == pytest.approx(0.6) and entry.seeds == [1, 2]
    (tmp_path / "results.json").write_text(json.dumps(compare_doc(recovery=0.9)))
    assert load_baseline(tmp_path).lookup("s", "p", "e").metrics["recovery_rate"] == 0.9


def test_a_json_list_of_results_is_read(tmp_path):
    """A list of documents contributes every entry."""
    path = tmp_path / "all.json"
    path.write_text(json.dumps([run_doc(1, 0.4), compare_doc()]))
    assert load_baseline(path).lookup("s", "p", "e").metrics["recovery_rate"] == 0.9


def test_a_run_regresses_only_when_its_whole_interval_is_worse(tmp_path):
    """Recovery below the baseline by the whole interval regresses; an interval holding it does not."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps(compare_doc(recovery=0.9, wasted=2.0)))
    baseline = load_baseline(path)
    bad = {v["metric"]: v for v in baseline.verdicts(current([0.5, 0.55, 0.6]))}
    assert bad["recovery_rate"]["regressed"]
    assert bad["recovery_rate"]["message"].startswith(
        f"recovery_rate regressed against the baseline {path} (0.9 on seeds 1-3):"
    )
    assert (
        "replay the worst seed (1): fleetchaos run --scenario s --policy p --errors e --seed 1"
        in bad["recovery_rate"]["message"]
    )
    assert not bad["silent_failure_rate"]["regressed"] and not bad["wasted_retries"]["regressed"]
    ok = baseline.verdicts(current([0.8, 0.95, 0.9]))
    assert [v["regressed"] for v in ok] == [False, False, False]
    more_waste = {v["metric"]: v for v in baseline.verdicts(current([0.9, 0.9, 0.9], wasted=[5.0, 6.0, 5.5]))}
    assert more_waste["wasted_retries"]["regressed"]


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


def test_a_history_group_is_a_baseline_averaged_over_its_seeds(tmp_path):
    """A label, id or 'latest' names a run-history group; its runs are averaged per arm."""
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
        assert entry.metrics["recovery_rate"] == pytest.approx(0.85) and entry.seeds == [1, 2]
    verdicts = {v["metric"]: v for v in load_baseline("main", history=db).verdicts(current([0.4, 0.5, 0.45]))}
    assert verdicts["recovery_rate"]["regressed"]
    assert f"against the baseline history #{gid} (main) (0.85 on seeds 1,2)" in verdicts["recovery_rate"]["message"]


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
