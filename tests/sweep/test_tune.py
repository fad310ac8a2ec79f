"""fleetchaos tune and compare --tune: training seeds only in the search, held-out figures, spaces, best against best."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

import fleetchaos.runs.runner as runner
from fleetchaos.cli.main import main
from fleetchaos.errors import UserError
from fleetchaos.runs.executors import SerialExecutor
from fleetchaos.runs.spaces import DEFAULT_SPACE, SearchSpace, load_space
from fleetchaos.runs.tune import TuneSpec, check_tune, family_candidates, tune
from fleetchaos.scenario.load import load_scenario

SPACE = SearchSpace.model_validate(
    {
        "families": {
            "backoff": {"max_retries": {"int": [1, 6]}, "base_s": {"log": [0.5, 60]}},
            "ladder": {"long_base_s": {"log": [10, 600]}},
        }
    }
)


def _spec(small: str, **kw) -> TuneSpec:
    base = dict(
        scenario=load_scenario(small),
        errors="generic",
        space=SPACE,
        trials=3,
        train_seeds=(101, 102),
        holdout_seeds=(1, 2, 3),
        race=False,  # every candidate on every training seed (racing: tests/sweep/test_racing.py)
    )
    return TuneSpec(**{**base, **kw})


def test_the_search_never_runs_a_held_out_seed(small, monkeypatch):
    """Instrumented runner: every run before the held-out phase is on a training seed, and held-out runs come last."""
    seen: list[int] = []
    real = runner.run_one

    def spy(scenario, policy, errors, seed, **kw):
        seen.append(seed)
        return real(scenario, policy, errors, seed, **kw)

    monkeypatch.setattr(runner, "run_one", spy)
    phases: list[str] = []
    result = tune(_spec(small), executor=SerialExecutor(), on_result=lambda phase, _run: phases.append(phase))
    trials = len(result.trials)
    assert trials == 6  # 3 per family (defaults included), every one distinct
    assert phases == ["train"] * (trials * 2) + ["holdout"] * (2 * 3)
    assert set(seen[: trials * 2]) == {101, 102}
    assert set(seen[trials * 2 :]) == {1, 2, 3}
    assert all(len(t.per_seed) == 2 for t in result.trials)


def test_the_winner_is_the_best_training_objective_and_is_judged_on_held_out_seeds(small):
    """best is the top trial on training seeds; holdout holds it first, then each other family's best, on held-out seeds."""
    result = tune(_spec(small), executor=SerialExecutor())
    top = max(result.trials, key=lambda t: t.objective)
    assert result.best == top.policy and result.best_family == top.family
    assert result.holdout[0].policy == result.best
    assert {a.policy for a in result.holdout[1:]} == {
        max((t for t in result.trials if t.family == f), key=lambda t: t.objective).policy
        for f in ("backoff", "ladder")
        if f != result.best_family
    }
    assert all(len(a.per_seed["success_rate"]) == 3 for a in result.holdout)
    assert result.holdout[0].ci["success_rate"][0] is not None
    assert result.train_seeds == [101, 102] and result.holdout_seeds == [1, 2, 3]


def test_tuning_is_reproducible(small):
    """The same spec gives the same JSON twice."""
    one = tune(_spec(small, trials=2), executor=SerialExecutor()).model_dump_json()
    two = tune(_spec(small, trials=2), executor=SerialExecutor()).model_dump_json()
    assert one == two


def test_candidates_start_with_the_defaults_and_grid_covers_every_point(small):
    """Random search: defaults then trials-1 seeded samples; grid: defaults then the full grid."""
    random_spec = _spec(small, trials=4)
    candidates = family_candidates(random_spec, "backoff")
    assert candidates[0] == {} and len(candidates) == 4
    assert candidates == family_candidates(random_spec, "backoff")  # seeded
    assert all(1 <= c["max_retries"] <= 6 and 0.5 <= c["base_s"] <= 60 for c in candidates[1:])
    grid = family_candidates(_spec(small, search="grid", grid_points=2), "backoff")
    assert grid[1:] == [
        {"max_retries": 1, "base_s": 0.5},
        {"max_retries": 1, "base_s": 60.0},
        {"max_retries": 6, "base_s": 0.5},
        {"max_retries": 6, "base_s": 60.0},
    ]


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"holdout_seeds": (102, 103)}, "training and held-out seeds overlap (102)"),
        ({"objective": "tasks"}, "neither higher nor lower is better"),
        ({"objective": "succes_rate"}, "unknown metric"),
        ({"families": ("blind-retry",)}, "not in the search space"),
        ({"errors": "nope"}, "unknown error format"),
    ],
)
def test_mistakes_are_refused_before_anything_runs(small, change, needle):
    """Overlapping seeds, a directionless or unknown objective, a family outside the space: one message each."""
    with pytest.raises(UserError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        check_tune(_spec(small, **change))


def test_a_space_file_is_validated_against_the_policies(tmp_path, small):
    """A range whose ends a policy refuses, an unknown parameter, or a bad range is a user error naming it."""
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump({"families": {"backoff": {"base": {"log": [1, 2]}}}}))
    with pytest.raises(UserError, match="family backoff, parameter base: policy 'backoff': unknown parameter 'base'"):
        check_tune(_spec(small, space=load_space(path), space_name=str(path)))
    path.write_text(yaml.safe_dump({"families": {"backoff": {"base_s": {"log": [0, 2]}}}}))
    with pytest.raises(UserError, match="a log range needs a low end above 0"):
        load_space(path)
    path.write_text(yaml.safe_dump({"families": {"backoff": {"base_s": {"log": [1, 2], "int": [1, 2]}}}}))
    with pytest.raises(UserError, match="give exactly one of"):
        load_space(path)


def test_the_default_space_is_valid_for_its_policies(small):
    """Both ends of every default range are settings its policy accepts."""
    check_tune(_spec(small, space=DEFAULT_SPACE))


def test_tpe_search_runs_seeded_when_optuna_is_installed(small):
    """--search tpe: the defaults, then seeded TPE candidates; the same seed gives the same trials."""
    pytest.importorskip("optuna")
    spec = _spec(small, search="tpe", trials=5, families=("backoff",))
    one = tune(spec, executor=SerialExecutor())
    two = tune(spec, executor=SerialExecutor())
    assert one.trials[0].params == {} and 2 <= len(one.trials) <= 5
    assert [t.policy for t in one.trials] == [t.policy for t in two.trials]


def invoke(*args: str):
    """Run the CLI in-process."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_tune_command_prints_the_winner_with_held_out_figures(small, tmp_path):
    """tune prints a table per family, the best spec with held-out intervals and the compare command repeating them."""
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump(SPACE.model_dump(by_alias=True, exclude_none=True)))
    args = ("tune", "--scenario", small, "--errors", "generic", "--space", str(space), "--trials", "2",
            "--train-seeds", "2", "--seeds", "2", "--jobs", "1")  # fmt: skip
    result = invoke(*args, "--report", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "best: " in result.output and "held out on seeds 1-2:" in result.output
    assert "success_rate: " in result.output and "repeat: fleetchaos compare" in result.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["train_seeds"] == [1000001, 1000002] and doc["holdout_seeds"] == [1, 2]
    assert (tmp_path / "out" / "summary.md").read_text().startswith("# Tuning: small on generic errors")
    refused = invoke("tune", "--scenario", small, "--param", "policy.base_s=1")
    assert refused.exit_code == 2 and "declare their ranges in a --space file" in refused.output


def test_compare_tune_records_best_per_format_and_same_policy_rows(small, tmp_path):
    """compare --tune: each format's tuned policy on its format, the first's on every format, roles and gaps recorded."""
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump(SPACE.model_dump(by_alias=True, exclude_none=True)))
    result = invoke(
        "compare", "--scenario", small, "--tune", "--space", str(space), "--trials", "2", "--train-seeds", "2",
        "--errors", "generic,structured", "--seeds", "3", "--jobs", "1", "--no-history", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output[result.output.index("{") :])
    tuning = doc["tuning"]
    best = tuning["best"]
    assert set(best) == {"generic", "structured"} and tuning["source"] == "tuned"
    arms = [(a["policy"], a["errors"]) for a in doc["arms"]]
    assert arms[0] == ("blind-retry", "generic")  # the weak reference
    assert {(best["generic"], "generic"), (best["generic"], "structured"), (best["structured"], "structured")} == set(
        arms[1:]
    )
    roles = {(r["policy"], r["errors"]): r["role"] for r in tuning["roles"]}
    assert roles[(best["generic"], "generic")] == "best for generic"
    assert roles[(best["structured"], "structured")] == "best for structured"
    if best["generic"] != best["structured"]:
        assert roles[(best["generic"], "structured")] == "same policy as best for generic"
        assert [g["kind"] for g in tuning["gaps"]] == ["lead", "envelope", "format"]
    assert all(g["n"] == 3 for g in tuning["gaps"])
    overlap = invoke(
        "compare", "--scenario", small, "--tune", "--first-seed", "1000001", "--seeds", "2", "--no-history"
    )
    assert overlap.exit_code == 2 and "seeds overlap" in overlap.output


def test_tune_several_formats_prints_the_tuned_block_that_compare_reads(small, tmp_path):
    """tune --errors A,B: each format's search, then the scenario's tuned: block with this command and the world."""
    import shlex

    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump(SPACE.model_dump(by_alias=True, exclude_none=True)))
    result = invoke("tune", "--scenario", small, "--errors", "generic,structured", "--space", str(space), "--trials",
                    "2", "--train-seeds", "2", "--seeds", "2", "--jobs", "1")  # fmt: skip
    assert result.exit_code == 0, result.output
    block = yaml.safe_load(result.output[result.output.index("\ntuned:") :])["tuned"]
    assert shlex.split(block["command"]) == ["fleetchaos", "tune", "--scenario", small, "--errors",
                                             "generic,structured", "--space", str(space), "--trials", "2",
                                             "--train-seeds", "2"]  # fmt: skip
    assert block["train_seeds"] == [1000001, 1000002] and set(block["policies"]) == {"generic", "structured"}
    from fleetchaos.scenario.tuned import world_fingerprint

    assert block["world"] == world_fingerprint(load_scenario(small))
    assert block["references"] == ["blind-retry/generic"]
