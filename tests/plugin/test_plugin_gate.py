"""One regression rule for the CLI and the plugin: paired by seed, with thresholds (issue 17, item 4)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.gates.history import open_store
from fleetchaos.testing.suite import run_scenario

BLIND = """
import pytest

@pytest.mark.fleetchaos(scenario="small.yaml", seeds=3, policy="blind-retry", errors="generic")
def test_blind(fleetchaos_result):
    pass
"""


@pytest.fixture
def nine_percent_better_baseline(chaos_dir: pytest.Pytester):
    """A history group 'main' whose common recovery on each seed is the real run's / 0.91: today is 9% worse on every
    seed.  The stored runs keep no task sets, so the gate reads the stored values (not the union of both runs)."""
    result = run_scenario(str(chaos_dir.path / "small.yaml"), policy="blind-retry", errors="generic", seeds=3)
    with open_store(chaos_dir.path / "hist.db") as store:
        gid = store.new_group("compare", "small", label="main")
        for run in result.runs:
            better = {**run.metrics, "common_recovery_rate": run.metrics["common_recovery_rate"] / 0.91}
            store.add_run(gid, run.model_copy(update={"metrics": better, "task_sets": {}}))
        store.finish_group(gid)
    chaos_dir.makepyfile(test_pt_blind=BLIND)
    return result


def test_every_seed_nine_percent_worse_fails_both_the_cli_and_the_plugin(chaos_dir, nine_percent_better_baseline):
    """Each seed 9% worse on recovery: compare --fail-on exits 1, and the plugin fails the test, by default and at -2%."""
    today = nine_percent_better_baseline.metric("common_recovery_rate")
    baseline_mean = today.value / 0.91
    # The spread between seeds is wider than the regression: an interval rule against the
    # baseline's mean passed this run, which is why the gate must pair the seeds.
    assert today.low < baseline_mean < today.high

    cli = CliRunner().invoke(
        main,
        ["compare", "--scenario", "small.yaml", "--seeds", "3", "--jobs", "1", "--policies", "blind-retry",
         "--errors", "generic", "--history", "hist.db", "--baseline", "main", "--fail-on", "common_recovery_rate:-2%"],
        catch_exceptions=False,
    )  # fmt: skip
    assert cli.exit_code == 1, cli.stderr
    (line,) = [x for x in cli.stderr.splitlines() if x.startswith("REGRESSION")]
    assert line.startswith("REGRESSION common_recovery_rate for blind-retry on generic: ")
    assert "(-9.00%), allowed -2% over 3 seeds" in line

    for extra in ([], ["--fleetchaos-fail-on", "common_recovery_rate:-2%"]):
        result = chaos_dir.runpytest("--fleetchaos-baseline", "main", "--fleetchaos-history", "hist.db", *extra)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "*common_recovery_rate regressed against the baseline history #1 (main) (* on seeds 1-3):",
                "*REGRESSION common_recovery_rate for blind-retry on generic: * (-9.00%), allowed -2% over 3 seeds*",
                "*test_blind*FAILED*regressed: common_recovery_rate*",
            ]
        )


def test_thresholds_come_from_the_command_line_then_the_ini(chaos_dir, nine_percent_better_baseline):
    """An ini fleetchaos_fail_on of -20% lets a 9% fall pass; --fleetchaos-fail-on -5% on the command line replaces it."""
    chaos_dir.makeini("[pytest]\naddopts = --strict-markers\nfleetchaos_fail_on = common_recovery_rate:-20%\n")
    base = ["--fleetchaos-baseline", "main", "--fleetchaos-history", "hist.db"]
    loose = chaos_dir.runpytest(*base)
    loose.assert_outcomes(passed=1)
    loose.stdout.fnmatch_lines(
        ["fleetchaos: baseline main, gate common_recovery_rate:-20%, evidence weak", "*test_blind*passed*  ok *sim"]
    )
    chaos_dir.runpytest(*base, "--fleetchaos-fail-on", "common_recovery_rate:-5%").assert_outcomes(failed=1)


@pytest.mark.parametrize(
    "args, ini, message",
    [
        (["--fleetchaos-fail-on", "recovery_rate:-2%"], "", "*--fleetchaos-fail-on needs --fleetchaos-baseline REF*"),
        (["--fleetchaos-baseline", "main", "--fleetchaos-fail-on", "recovery_rate:+2%"], "",
         "*--fleetchaos-fail-on 'recovery_rate:+2%': recovery_rate is better higher*write recovery_rate:-2%*"),
        (["--fleetchaos-baseline", "main"], "fleetchaos_fail_on = recovry_rate:2%",
         "*ini fleetchaos_fail_on 'recovry_rate:2%': unknown metric*did you mean 'recovery_rate'?"),
    ],
    ids=["thresholds-without-baseline", "wrong-sign", "ini-typo"],
)  # fmt: skip
def test_threshold_mistakes_stop_pytest_with_one_message(chaos_dir, nine_percent_better_baseline, args, ini, message):
    """A threshold without a baseline, a sign pointing the better way or a misspelt ini metric is a usage error."""
    chaos_dir.makeini(f"[pytest]\naddopts = --strict-markers\n{ini}\n")
    result = chaos_dir.runpytest(*args, "--fleetchaos-history", "hist.db")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
