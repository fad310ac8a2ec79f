"""The terminal tables: 100 columns by default, every figure with --wide, arms by their policy's own name."""

from __future__ import annotations

from rich.console import Console

from fleetchaos.reports.tables import compare_table, count_text, rate_interval, run_table
from fleetchaos.results.models import ArmResult, CompareResult, RunResult


def _arm(policy: str, errors: str, policy_name: str = "") -> ArmResult:
    metrics = {"success_rate": 0.97, "common_recovery_rate": 0.886, "recovery_rate": 0.85,
               "silent_failure_rate": 0.002, "failed_retries": 44.8, "wasted_retries": 22.0, "cost_usd": 3983.84,
               "faulted_tasks": 116.2, "escalations": 16.5, "tool_calls": 3204.7}  # fmt: skip
    ci = {"success_rate": [0.929, 0.988], "common_recovery_rate": [0.758, 0.95], "silent_failure_rate": [0.0015, 0.003]}
    return ArmResult(policy=policy, errors=errors, metrics=metrics, ci=ci, per_seed={}, breakdowns={},
                     policy_name=policy_name)  # fmt: skip


def _text(table, width: int = 250) -> list[str]:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed with the console
    console.print(table)
    return [line.rstrip() for line in console.export_text().splitlines()]


def _result() -> CompareResult:
    arms = [_arm(p, e) for p in ("blind-retry", "backoff", "structured") for e in ("generic", "structured")]
    return CompareResult(scenario="default", seeds=list(range(1, 11)), confidence=0.95, arms=arms)


def test_the_default_table_fits_100_columns_and_wide_shows_more():
    """The default demo's six arms fit in 100 columns with the lead metrics first; --wide adds the rest."""
    lines = _text(compare_table(_result()))
    assert max(map(len, lines)) <= 100
    header = next(line for line in lines if "policy" in line)
    assert header.index("success") < header.index("common rec.") < header.index("silent") < header.index("failed")
    assert "97.0% 93-99" in "\n".join(lines) and "0.2% 0.1-0.3" in "\n".join(lines)
    wide = _text(compare_table(_result(), wide=True))
    assert max(map(len, wide)) > 100 and any("own-set rec." in line for line in wide)
    assert any("escalations" in line for line in wide) and not any("escalations" in line for line in lines)


def test_arms_show_the_policys_own_name_and_counts_read_as_integers():
    """An import path shows as the policy's name; a spec with parameters keeps them; means of counts are whole."""
    result = _result()
    result.arms[0] = _arm("team_policy:TeamPolicy", "generic", policy_name="team-policy")
    result.arms[1] = _arm("backoff(base_s=0.5)", "generic", policy_name="backoff")
    text = "\n".join(_text(compare_table(result)))
    assert "team-policy" in text and "team_policy:TeamPolicy" not in text
    assert "backoff(base_s=0.5)" in text
    assert " 45 " in text and " 22 " in text and "44.8" not in text
    assert (count_text(44.8), count_text(3.6), count_text(600.0), count_text(None)) == ("45", "3.6", "600", "-")
    assert rate_interval(0.5, [None, None]) == "50.0%" and rate_interval(None, [0.1, 0.2]) == "-"


def test_a_run_table_prints_counts_as_integers():
    """One run's counts are exact: no trailing '.0'."""
    run = RunResult(scenario="s", policy="p", errors="e", seed=1, breakdowns={}, fault_schedule=[], replay="",
                    metrics={"tasks": 600.0, "tool_calls": 3486.0, "success_rate": 0.828, "cost_usd": 67.9})  # fmt: skip
    text = "\n".join(_text(run_table(run)))
    assert " 600 " in text and "600.0" not in text
    assert "3,486" in text and "3,486.0" not in text and "82.8%" in text and "67.9" in text


def test_a_policy_name_is_never_read_as_terminal_markup():
    """A name written like rich markup is printed as it is."""
    result = _result()
    result.arms[0] = _arm("x:Y", "generic", policy_name="[bold red]evil[/]")
    assert any("[bold red]evil[/]" in line for line in _text(compare_table(result)))


def test_a_run_tables_title_stays_on_one_line():
    """The title (scenario, policy, format, seed) does not wrap at the narrow table's width."""
    run = RunResult(scenario="crm_sync_403", policy="structured", errors="structured", seed=1, breakdowns={},
                    fault_schedule=[], replay="", metrics={"tasks": 600.0})  # fmt: skip
    lines = _text(run_table(run), width=100)
    assert lines[0].strip() == "crm_sync_403: structured on structured errors, seed 1"


def test_the_ablation_table_prints_rates_as_percentages_and_gains_in_points():
    """ablation reads like compare: 48.6% [7.2, 92.1], counts as whole numbers, the recovery gain in pp."""
    from fleetchaos.reports.ablation import ablation_table

    step0 = {"format": "generic", "ci": {"success_rate": [0.0718, 0.921], "wasted_retries": [47.6, 98.4]},
             "metrics": {"common_recovery_rate": 0.0, "success_rate": 0.486, "wasted_retries": 73.0}}  # fmt: skip
    step1 = {"format": "ablation:failure_type", "ci": {}, "metrics": {"common_recovery_rate": 0.331},
             "gain": {"common_recovery_rate": {"mean": 0.331, "ci": [0.299, 0.362]}}}  # fmt: skip
    text = ablation_table({"scenario": "s", "seeds": [1, 2], "policy": "p", "steps": [step0, step1]})
    assert "| 48.6% [7.2, 92.1] |" in text and "| 73 [48, 98] |" in text and "73.0" not in text
    assert "| +33.1 pp [+29.9, +36.2] |" in text and "0.486" not in text
