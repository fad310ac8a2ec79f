"""The fleetchaos pytest plugin as a suite author meets it: fixture, marker, options, messages."""

from __future__ import annotations

import json
import re
import shlex
from importlib.metadata import entry_points

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main


def _replay(command: str) -> dict:
    """Run a printed ``fleetchaos run ...`` command through the CLI and return its JSON."""
    args = shlex.split(command)
    assert args[:2] == ["fleetchaos", "run"], command
    out = CliRunner().invoke(main, [*args[1:], "--json", "--no-history"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_entry_points_name_the_plugin_and_the_strategies_hook():
    """The distribution registers the pytest plugin (pytest11) and the hypothesis setup hook."""
    pytest11 = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    hypothesis = {ep.name: ep.value for ep in entry_points(group="hypothesis")}
    assert pytest11["fleetchaos"] == "fleetchaos.testing.pytest_plugin"
    assert hypothesis["fleetchaos"] == "fleetchaos.testing.strategies:_hypothesis_setup_hook"


def test_plugin_is_loaded_and_its_marker_registered(chaos_dir):
    """pytest loads the plugin by itself, lists the marker, and a marked test passes --strict-markers."""
    chaos_dir.makepyfile(
        """
        import pytest

        @pytest.mark.fleetchaos(scenario="small.yaml", seeds=1)
        def test_loaded(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("fleetchaos")
        """
    )
    chaos_dir.runpytest().assert_outcomes(passed=1)
    chaos_dir.runpytest("--markers").stdout.fnmatch_lines(["@pytest.mark.fleetchaos(scenario=None, seeds=None, *"])


def test_fixture_runs_a_scenario_by_name_by_path_and_as_an_object(chaos_dir):
    """fleetchaos.run takes a catalogue name, a file path or a Scenario, and every run names a replay command that works."""
    chaos_dir.mkdir("sub")
    (chaos_dir.path / "sub" / "near.yaml").write_text((chaos_dir.path / "small.yaml").read_text())
    chaos_dir.makepyfile(
        **{
            "sub/test_pt_refs.py": """
            from fleetchaos import load_scenario

            def test_by_name(fleetchaos):
                r = fleetchaos.run("default", seeds=1)
                assert r.scenario == "default" and r.seeds == (1,)
                assert r.replay == ("fleetchaos run --scenario default --policy structured --errors structured --seed 1",)

            def test_by_path_next_to_the_test_file(fleetchaos):
                r = fleetchaos.run("near.yaml", seeds=2)
                assert (r.scenario, r.policy, r.errors, r.seeds) == ("small", "structured", "structured", (1, 2))
                assert r.replay[1] == "fleetchaos run --scenario sub/near.yaml --policy structured --errors structured --seed 2"
                assert r.recovery_rate.has_interval and 0.9 < r.recovery_rate.value <= 1.0
                assert r.wasted_retries.value == sum(x.metrics["wasted_retries"] for x in r.runs) / 2

            def test_by_object(fleetchaos):
                spec = load_scenario("small.yaml").model_copy(update={"name": "tweaked"})
                r = fleetchaos.run(spec, seeds=[3])
                assert r.scenario == "tweaked"
                assert "fleetchaos-scenarios/tweaked-" in r.replay[0] and r.replay[0].endswith("--seed 3")
                print("REPLAY", r.replay[0], "METRICS", r.runs[0].metrics["recovery_rate"])
            """
        }
    )
    result = chaos_dir.runpytest("-s")
    result.assert_outcomes(passed=3)
    command, recovery = re.search(r"REPLAY (.*) METRICS (\S+)", result.stdout.str()).groups()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(chaos_dir.path)
        assert _replay(command)["metrics"]["recovery_rate"] == float(recovery)


def test_marker_configures_the_fixture_and_the_closest_marker_wins(chaos_dir):
    """Marker arguments are the fixture's defaults; a function marker overrides a module one key by key."""
    chaos_dir.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.fleetchaos(scenario="small.yaml", seeds=2)

        @pytest.mark.fleetchaos(policy="blind-retry", errors="generic")
        def test_marker(fleetchaos_result):
            r = fleetchaos_result
            assert (r.scenario, r.policy, r.errors, r.seeds) == ("small", "blind-retry", "generic", (1, 2))

        @pytest.mark.fleetchaos(seeds=[7, 9], confidence=0.9)
        def test_closest_wins(fleetchaos):
            r = fleetchaos.run()
            assert (r.seeds, r.policy, r.confidence) == ((7, 9), "structured", 0.9)

        @pytest.mark.fleetchaos(policy="blind-retry")
        def test_run_arguments_override_the_marker(fleetchaos):
            r = fleetchaos.run(policy="backoff", seeds=1)
            assert (r.policy, r.seeds) == ("backoff", (1,))
            assert fleetchaos.results == [r]
        """
    )
    chaos_dir.runpytest().assert_outcomes(passed=3)


def test_invalid_marker_and_arguments_fail_with_one_clear_message(chaos_dir):
    """An unknown marker argument, policy, format or scenario fails the test with the value and the fix, no traceback."""
    chaos_dir.makepyfile(
        """
        import pytest

        @pytest.mark.fleetchaos(scenario="small.yaml", seed=3)
        def test_unknown_argument(fleetchaos_result):
            pass

        def test_unknown_policy(fleetchaos):
            fleetchaos.run("small.yaml", policy="nope", seeds=1)

        def test_unknown_format(fleetchaos):
            fleetchaos.run("small.yaml", errors="structred", seeds=1)

        def test_unknown_scenario(fleetchaos):
            fleetchaos.run("defualt", seeds=1)

        def test_no_scenario(fleetchaos):
            fleetchaos.run()
        """
    )
    result = chaos_dir.runpytest()
    result.assert_outcomes(failed=4, errors=1)
    result.stdout.fnmatch_lines_random(
        [
            "*@pytest.mark.fleetchaos: unknown argument(s) seed (known: scenario, seeds, policy, errors, confidence, "
            "bindings, tasks, clock, allow_policy_errors)",
            "*fleetchaos: policy: unknown policy 'nope'*",
            "*fleetchaos: errors: unknown error format 'structred': use one of *generic*structured*; "
            "did you mean 'structured'?",
            "*unknown scenario 'defualt'*did you mean 'default'?",
            "*fleetchaos: no scenario; pass one to fleetchaos.run(...) or mark the test*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_ini_options_set_suite_wide_defaults(chaos_dir):
    """fleetchaos_policy, fleetchaos_errors and fleetchaos_seeds in the ini file are the defaults of every run."""
    chaos_dir.makeini(
        "[pytest]\naddopts = --strict-markers\nfleetchaos_policy = backoff\nfleetchaos_errors = generic\nfleetchaos_seeds = 2,5\n"
    )
    chaos_dir.makepyfile(
        """
        def test_defaults(fleetchaos):
            r = fleetchaos.run("small.yaml")
            assert (r.policy, r.errors, r.seeds) == ("backoff", "generic", (2, 5))
        """
    )
    chaos_dir.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "ini, args, message",
    [
        (
            "fleetchaos_seeds = five",
            (),
            "ini fleetchaos_seeds: expected a count or a comma-separated list of seeds, got 'five'",
        ),
        (
            "fleetchaos_confidence = 95",
            (),
            "ini fleetchaos_confidence: expected a level in [[]0.5, 1) such as 0.95, got '95'",
        ),
        ("", ("--fleetchaos-seed", "-3"), "--fleetchaos-seed: must be a seed >= 0, got -3"),
    ],
)
def test_invalid_ini_values_and_options_stop_pytest_with_one_message(chaos_dir, ini, args, message):
    """A bad ini default or option value is a usage error at start-up, not a failure in every test."""
    chaos_dir.makeini(f"[pytest]\n{ini}\n")
    chaos_dir.makepyfile("def test_nothing():\n    pass\n")
    result = chaos_dir.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_seed_option_moves_every_run_to_consecutive_seeds_from_n(chaos_dir):
    """--fleetchaos-seed N runs as many seeds as asked, from N, and the replay commands name them."""
    chaos_dir.makepyfile(
        """
        import pytest

        @pytest.mark.fleetchaos(scenario="small.yaml", seeds=2)
        def test_seeds(fleetchaos_result):
            assert fleetchaos_result.seeds == (40, 41)
            assert fleetchaos_result.replay[0].endswith("--seed 40")

        def test_explicit_list(fleetchaos):
            assert fleetchaos.run("small.yaml", seeds=[1, 7, 9]).seeds == (40, 41, 42)
        """
    )
    result = chaos_dir.runpytest("--fleetchaos-seed", "40")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["fleetchaos: seeds from 40"])


def test_report_option_writes_a_report_folder_per_scenario_run(chaos_dir):
    """--fleetchaos-report DIR writes the arm's comparison report and one run report per seed, per arm."""
    chaos_dir.makepyfile(
        test_pt_gate="""
        import pytest

        @pytest.mark.fleetchaos(scenario="small.yaml", seeds=2)
        def test_arm(fleetchaos_result):
            pass
        """
    )
    result = chaos_dir.runpytest("--fleetchaos-report", "out")
    result.assert_outcomes(passed=1)
    folder = chaos_dir.path / "out" / "small.structured.structured"
    doc = json.loads((folder / "results.json").read_text())
    assert doc["scenario"] == "small" and doc["seeds"] == [1, 2]
    assert [(a["policy"], a["errors"]) for a in doc["arms"]] == [("structured", "structured")]
    assert (folder / "summary.md").is_file()
    for seed in (1, 2):
        run = json.loads((folder / f"seed-{seed}" / "results.json").read_text())
        assert run["seed"] == seed and run["replay"].endswith(f"--seed {seed}")
        assert (folder / f"seed-{seed}" / "tasks.csv").is_file()
    result.stdout.fnmatch_lines(["reports written to *out"])


BLIND = """
import pytest

@pytest.mark.fleetchaos(scenario="small.yaml", seeds=3, policy="blind-retry", errors="generic")
def test_blind(fleetchaos_result):
    pass
"""


def test_baseline_option_fails_a_run_that_regresses(chaos_dir):
    """A run worse than the baseline beyond the default gates fails, naming the metric, the baseline and the replay."""
    baseline = {
        "scenario": "small",
        "seeds": [1, 2, 3],
        "arms": [
            {
                "policy": "blind-retry",
                "errors": "generic",
                "metrics": {"common_recovery_rate": 0.9, "silent_failure_rate": 0.0, "wasted_retries": 0.0},
            }
        ],
    }
    (chaos_dir.path / "baseline.json").write_text(json.dumps(baseline))
    chaos_dir.makepyfile(test_pt_blind=BLIND)
    result = chaos_dir.runpytest("--fleetchaos-baseline", "baseline.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*common_recovery_rate regressed against the baseline baseline.json (0.9, a mean over its own seeds):",
            "*REGRESSION common_recovery_rate for blind-retry on generic: * against 0.9 in baseline baseline.json "
            "(blind-retry on generic), change -*, allowed -2% over 3 seeds; evidence weak*; the baseline kept only means over its seeds*",
            "*replay the worst seed (*): fleetchaos run --scenario small.yaml --policy blind-retry --errors generic --seed *",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*test_blind*FAILED*regressed: common_recovery_rate, silent_failure_rate, wasted_retries *sim"]
    )


def test_a_report_folder_is_the_baseline_of_the_next_run(chaos_dir):
    """The --fleetchaos-report folder of one run (a run report for one seed) is a baseline the same arm passes against."""
    chaos_dir.makepyfile(test_pt_blind=BLIND.replace("seeds=3", "seeds=1"))
    chaos_dir.runpytest("--fleetchaos-report", "main").assert_outcomes(passed=1)
    run = json.loads((chaos_dir.path / "main" / "small.blind-retry.generic" / "results.json").read_text())
    assert run["seed"] == 1 and run["policy"] == "blind-retry"
    result = chaos_dir.runpytest("--fleetchaos-baseline", "main")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "fleetchaos: baseline main, gate success_rate:-2%, common_recovery_rate:-2%, silent_failure_rate:+2%, "
            "wasted_retries:+2%, evidence weak",
            "*test_blind*passed*  ok *sim",
        ]
    )


def test_a_run_history_group_is_a_baseline(chaos_dir):
    """--fleetchaos-baseline names a group of the run history (--fleetchaos-history PATH) as the CLI's --baseline does."""
    from fleetchaos.gates.history import open_store
    from fleetchaos.testing.suite import run_scenario

    runs = run_scenario(str(chaos_dir.path / "small.yaml"), policy="blind-retry", errors="generic", seeds=3).runs
    with open_store(chaos_dir.path / "hist.db") as store:
        gid = store.new_group("compare", "small", label="main")
        for run in runs:
            tampered = {**run.metrics, "common_recovery_rate": 0.95}
            store.add_run(gid, run.model_copy(update={"metrics": tampered, "task_sets": {}}))
        store.finish_group(gid)
    chaos_dir.makepyfile(test_pt_blind=BLIND)
    result = chaos_dir.runpytest("--fleetchaos-baseline", "main", "--fleetchaos-history", "hist.db")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*common_recovery_rate regressed against the baseline history #1 (main) (0.95 on seeds 1-3):",
            "*REGRESSION common_recovery_rate for blind-retry on generic: * against 0.95 in baseline #1 "
            "(blind-retry on generic)*",
        ]
    )


def test_a_missing_or_invalid_baseline_is_a_usage_error(chaos_dir):
    """A baseline that does not exist or is not results JSON stops pytest with one message."""
    chaos_dir.makepyfile(test_pt_blind=BLIND)
    result = chaos_dir.runpytest("--fleetchaos-baseline", "nowhere.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--fleetchaos-baseline: nowhere.json: no such file or folder"])
    result = chaos_dir.runpytest("--fleetchaos-baseline", "main", "--fleetchaos-history", "none.db")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--fleetchaos-baseline: main: no such file or folder, and no run history at none.db*"]
    )
    (chaos_dir.path / "bad.json").write_text('{"hello": 1}')
    result = chaos_dir.runpytest("--fleetchaos-baseline", "bad.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*bad.json: not a fleetchaos results document*"])


def test_failing_assert_rate_gives_figure_interval_seeds_and_a_replay_that_reproduces_it(chaos_dir):
    """A gate whose mean misses the bound fails with the figure, interval, evidence, seeds and a replay command for the
    worst seed; a mean meeting bounds its interval straddles passes (on weak evidence)."""
    chaos_dir.makepyfile(
        """
        import pytest
        from fleetchaos import assert_rate

        pytestmark = pytest.mark.fleetchaos(scenario="small.yaml", seeds=3, policy="blind-retry", errors="generic")

        def test_gate(fleetchaos_result):
            assert_rate(fleetchaos_result.recovery_rate, at_least=0.7)

        def test_straddling_interval_passes(fleetchaos_result):
            est = fleetchaos_result.recovery_rate
            assert est.low < 0.3 < est.value < 0.4 < est.high
            assert_rate(est, at_least=0.3)
            assert_rate(est, at_most=0.4)
        """
    )
    result = chaos_dir.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * recovery_rate at_least 0.7 failed: its mean * is below the bound (evidence decisive: the whole interval "
            "misses the bound)",
            "E *figure: recovery_rate = * (95% CI *..*, t-interval on the logit scale across 3 seeds)",
            "E *run: scenario small.yaml, policy blind-retry, errors generic",
            "E *seeds: 1, 2, 3",
            "E *per seed: *, *, *",
            "E *replay the worst seed (*): fleetchaos run --scenario small.yaml --policy blind-retry --errors generic --seed *",
        ]
    )
    text = result.stdout.str()
    per_seed = [float(v) for v in re.search(r"per seed: (.*)", text).group(1).split(", ")]
    command = re.search(r"replay the worst seed \(\d+\): (fleetchaos run .*)", text).group(1).strip()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(chaos_dir.path)
        replayed = _replay(command)["metrics"]["recovery_rate"]
    assert replayed == pytest.approx(min(per_seed), abs=5e-4)
    result.stdout.fnmatch_lines(
        [
            "*- fleetchaos replay -*",
            "fleetchaos run --scenario small.yaml --policy blind-retry --errors generic --seed 1",
        ]
    )


def test_terminal_summary_lists_every_scenario_run(chaos_dir):
    """After the tests, a table gives each run's test, outcome, arm, seeds and headline figures with intervals."""
    chaos_dir.makepyfile(
        """
        def test_a(fleetchaos):
            fleetchaos.run("small.yaml", seeds=3)
            fleetchaos.run("small.yaml", seeds=3, policy="blind-retry", errors="generic")
        """
    )
    result = chaos_dir.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*= fleetchaos scenarios =*",
            "test * outcome * scenario * policy * errors * seeds * success rate * recovery rate * silent failures * "
            "wasted retries * baseline * mode",
            # (fnmatch reads [...] as a character class, so ? stands for each bracket)
            "test_terminal_summary_lists_every_scenario_run.py::test_a * passed * small * structured * structured * 1-3 "
            "* 0.9* ?0.9*, *? * 0.9* ?0.9*, *? * 0.0* ?0.0*, 0.0*? * * ?*, *? * - * sim",
            "test_terminal_summary_lists_every_scenario_run.py::test_a * passed * small * blind-retry * generic * 1-3 "
            "* 0.* ?0.*, 0.*? * 0.3* ?0.2*, 0.5*? * 0.* ?0.*, 0.*? * 6* ?5*, 7*? * - * sim",
        ]
    )


def test_summary_rows_survive_the_report_serialisation_xdist_uses(chaos_dir):
    """A test's rows ride on its call report as plain JSON data, so pytest-xdist carries them to the controller."""
    from _pytest.reports import TestReport

    from fleetchaos.testing.pytest_plugin import _SessionState

    chaos_dir.makepyfile(
        """
        def test_arm(fleetchaos):
            fleetchaos.run("small.yaml", seeds=2, policy="backoff")
        """
    )
    reprec = chaos_dir.inline_run()
    call = next(r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call")
    wire = json.loads(json.dumps(call._to_json()))  # what xdist sends: plain JSON-able data
    state = _SessionState()
    state.pytest_runtest_logreport(TestReport._from_json(wire))
    assert [(r["outcome"], r["scenario"], r["policy"], r["seeds"]) for r in state.rows] == [
        ("passed", "small", "backoff", "1,2")
    ]
    assert state.rows[0]["replays"][1].endswith("--policy backoff --errors structured --seed 2")


def test_scenario_runs_are_served_from_the_run_cache_in_the_next_session(chaos_dir, monkeypatch):
    """A second session serves its scenario runs from the run cache, with the same figures; --fleetchaos-no-cache makes them afresh."""
    import sqlite3

    folder = chaos_dir.path / "runcache"
    monkeypatch.setenv("FLEETCHAOS_CACHE", str(folder))
    chaos_dir.makepyfile(
        """
        import json

        def test_cached(fleetchaos):
            r = fleetchaos.run("small.yaml", seeds=2)
            print("RUNS", json.dumps([x.model_dump(mode="json") for x in r.runs], sort_keys=True))
        """
    )

    def session(*args: str) -> str:
        result = chaos_dir.runpytest("-s", *args)
        result.assert_outcomes(passed=1)
        return re.search(r"RUNS (.*)", result.stdout.str()).group(1)

    first = session()
    used = sqlite3.connect(folder / "runs.sqlite").execute("SELECT COUNT(*), MAX(used) FROM runs").fetchone()
    assert used[0] == 2
    assert session() == first
    again = sqlite3.connect(folder / "runs.sqlite").execute("SELECT COUNT(*), MIN(used) FROM runs").fetchone()
    assert again[0] == 2 and again[1] > used[1]  # both entries were read (served) by the second session
    assert session("--fleetchaos-no-cache") == first
