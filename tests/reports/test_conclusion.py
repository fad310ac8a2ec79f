"""The report's opening finding and headline table: generated from the result, on the arm-independent figures."""

from __future__ import annotations

import re

from fleetchaos.reports.blocks import to_html, to_markdown
from fleetchaos.reports.compare_report import compare_blocks
from fleetchaos.reports.conclusion import finding
from fleetchaos.reports.headline import headline_table
from fleetchaos.results.common_set import encode
from fleetchaos.results.models import CompareResult, Flip, Robustness, RunResult
from fleetchaos.runs.runner import aggregate, paired_comparisons

SEEDS = [1, 2, 3, 4, 5]
TASKS = 20


def _bits(ids) -> bytes:
    return sum(1 << i for i in ids).to_bytes((TASKS + 7) // 8, "little")


def _run(policy: str, seed: int, faulted: set[int], recovered: set[int]) -> RunResult:
    """One hand-built run of 20 tasks: the ``faulted`` ones fail but for ``recovered``; every other task succeeds."""
    succeeded = (set(range(TASKS)) - faulted) | recovered
    counts = {"tasks": TASKS, "faulted": len(faulted), "recovered": len(recovered), "successes": len(succeeded)}
    return RunResult(
        scenario="storm",
        policy=policy,
        errors="structured",
        seed=seed,
        metrics={
            "success_rate": len(succeeded) / TASKS,
            "recovery_rate": len(recovered) / len(faulted),
            "common_recovery_rate": len(recovered) / len(faulted),  # a lone run's; the comparison widens it
            "faulted_tasks": float(len(faulted)),
            "cost_usd": 10.0,
            "token_cost_usd": 9.0,
            "tool_call_cost_usd": 1.0,
            "human_cost_usd": 0.0,
            "human_hours": 0.0,
        },
        breakdowns={"task_counts": counts},
        fault_schedule=[],
        replay="",
        task_sets={"faulted": encode(_bits(faulted)), "succeeded": encode(_bits(succeeded))},
        policy_name=policy,
    )


def _comparison(**extra) -> CompareResult:
    """Two arms that meet different faults: 'waiter' is faulted on 4 tasks and saves 1 (25% of its own),
    'storm' brings 10 tasks into a fault and saves 4 or 5 (46% of its own on average): better on its own faulted
    tasks, worse on the 10 tasks faulted in either arm (waiter finishes 7 of them: 6 it never faulted)."""
    from fleetchaos.results.common_set import apply_common_sets

    runs = [_run("waiter", s, set(range(4)), {0}) for s in SEEDS]
    runs += [_run("storm", s, set(range(10)), set(range(4 + s % 2))) for s in SEEDS]
    apply_common_sets(runs)
    arms = [aggregate(p, "structured", [r for r in runs if r.policy == p], 0.95) for p in ("waiter", "storm")]
    return CompareResult(
        scenario="storm", seeds=SEEDS, confidence=0.95, arms=arms, comparisons=paired_comparisons(arms, 0.95), **extra
    )


def _verdicts(result: CompareResult) -> dict[str, str]:
    return {c.metric: c.verdict for c in result.comparisons}


def test_the_headline_verdict_follows_the_common_denominator_where_the_own_one_disagrees():
    """Own-denominator recovery calls 'storm' better; on the common set (and in success) it is worse: the
    finding and the headline table say so, and name the disagreement."""
    result = _comparison()
    storm = result.arms[1]
    assert storm.pooled["common_recovery_rate"].trials == storm.pooled["recovery_rate"].trials == 50
    assert result.arms[0].pooled["common_recovery_rate"].trials == 50  # one denominator for both arms
    assert result.arms[0].pooled["recovery_rate"].trials == 20
    verdicts = _verdicts(result)
    assert verdicts["recovery_rate"] == "better"  # own faulted tasks: 46% on average against 25%
    assert verdicts["common_recovery_rate"] == "worse"  # the same 10 tasks: 46% on average against 70%
    assert verdicts["success_rate"] == "worse"

    text = finding(result)
    assert text.startswith("On storm over 5 seeds: **waiter on structured** leads on success rate")
    assert (
        "It also leads on recovery on the common set (faulted tasks saved, of the 10 per seed faulted in any arm)"
        in text
    )
    assert "70.0%" in text and "paired over 5 seeds: better" in text
    assert "would rank them the other way (46.0% against 25.0%)" in text
    assert "10.0 faulted tasks per run against 4.0" in text

    table = headline_table(result)
    common = table.headers.index("recovery, common set")
    storm_row = table.rows[1]
    assert storm_row[common].startswith("46.0%")
    assert storm_row[common + 1].startswith("-24.0 pp") and storm_row[common + 1].endswith("worse")
    assert table.rows[0][common + 1] == "reference"
    own = table.headers.index("own-set recovery (secondary)")
    assert storm_row[own] == "46.0%" and table.rows[0][own] == "25.0%"


def test_every_number_of_the_finding_comes_from_the_result():
    """Change the figures and the paragraph changes with them; no figure stays put."""
    before = finding(_comparison())
    result = _comparison()
    for arm in result.arms:
        arm.metrics["success_rate"] = (arm.metrics["success_rate"] or 0.0) / 2
        arm.metrics["token_cost_usd"] = 123.45
    after = finding(result)
    assert before != after
    assert "$123.45" in after and "$123.45" not in before
    assert "42.5%" in after  # waiter's success rate halved: 17/20 / 2


def test_flips_are_read_from_the_robustness_hook_and_their_absence_is_said():
    """Without a robustness section the finding says no flip analysis was run; with one it names each flip."""
    assert "No flip analysis is in these results" in finding(_comparison())
    flips = Robustness(
        varied={"fleet.api_reject_cost": [0.0, 0.5, 1.0]},
        flips=[Flip(parameter="fleet.api_reject_cost", metric="success_rate", ahead="storm on structured",
                    behind="waiter on structured", holds_at=0.0, flips_at=0.5)],
    )  # fmt: skip
    text = finding(_comparison(robustness=flips))
    assert "The ordering flips: on success\\_rate, waiter on structured overtakes storm on structured when " in text
    assert "fleet.api\\_reject\\_cost goes from 0.0 to 0.5" in text
    held = finding(_comparison(robustness=Robustness(varied={"fleet.workers": [5, 10]})))
    assert "The ordering held over every value tried (fleet.workers from 5 to 10)" in held


def test_a_closed_loop_leads_with_goodput():
    """A closed loop (each arm its own tasks) leads with successful tasks per day; no common set is named."""
    result = _comparison(closed_loop=True)
    for arm, per_day in zip(result.arms, (300.0, 200.0)):
        arm.metrics["goodput_per_day"] = per_day
        arm.per_seed["goodput_per_day"] = [per_day + s for s in SEEDS]
    result.comparisons = paired_comparisons(result.arms, 0.95)
    text = finding(result)
    assert "a closed loop: each arm runs its own tasks" in text
    assert (
        "**waiter on structured** leads on goodput (tasks fully done and claimed a success per simulated day): 300.0"
        in text
    )
    assert "common set" not in text
    assert headline_table(result).headers[1] == "goodput (tasks / day)"


def test_names_are_escaped_for_markdown_and_html():
    """A policy named like markup reads as itself in summary.md and report.html, never as markup."""
    result = _comparison()
    result.arms[1].policy_name = "<img src=x onerror=alert(1)>|*bold*"
    blocks = compare_blocks(result, made={})
    md, page = to_markdown(blocks), to_html(blocks, "t", {})
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;\\|\\*bold\\*" in md
    assert "<img" not in md
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;|*bold*" in page
    first_p = re.search(r'<p class="finding">(.*?)</p>', page).group(1)
    assert "<strong>waiter on structured</strong>" in first_p


def test_best_against_best_states_each_lead_the_envelopes_and_the_format_alone_apart():
    """Best against best: each format's lead over the next, the envelope's lead, then the format alone, labelled;
    without a sensitivity study it names the settings it rests on and that where it reverses was not tested."""
    from fleetchaos.results.studies import ArmRole, Gap, TunedCompareResult, TuningRecord

    base = _comparison()

    def gap(kind, errors, ref, mean, low, high):
        return Gap(kind=kind, label=kind, policy="p", errors=errors, reference_policy="q", reference_errors=ref,
                   metric="success_rate", n=5, mean_difference=mean, ci=[low, high])  # fmt: skip

    tuning = TuningRecord(
        objective="success_rate", search="random", trials=8, train_seeds=[101, 102],
        best={"generic": "ladder", "structured": "structured"},
        roles=[ArmRole(policy="ladder", errors="generic", role="best for generic", tuned_for="generic")],
        gaps=[gap("lead", "structured", "generic", 0.05, 0.03, 0.07),
              gap("envelope", "structured", "generic", 0.05, 0.03, 0.07),
              gap("format", "structured", "generic", 0.01, -0.01, 0.03)],
    )  # fmt: skip
    config = {"fleet": {"partial_batch": "failed", "checkpoints": False, "providers": [{"admission": "refuse"}]},
              "faults": [{"kind": "wrong_envelope", "misclassify": 0.05}]}  # fmt: skip
    text = finding(TunedCompareResult(**{**base.model_dump(), "scenario_config": config}, tuning=tuning))
    assert "each format's lead over the next: best on structured over best on generic +5.0 pp [+3.0, +7.0]" in text
    assert "the best with an envelope (structured) minus the best without one (generic): +5.0 pp [+3.0, +7.0]" in text
    assert "A separate figure, the format alone" in text and "+1.0 pp [-1.0, +3.0]" in text
    assert "fleet.partial\\_batch failed, fleet.checkpoints off, providers that refuse past max\\_in\\_flight" in text
    assert "where it would reverse was not tested here" in text
    assert "lead over the next" not in finding(base)


def test_a_pooled_rate_without_its_interval_still_renders():
    """A results file whose pooled proportion lost its interval (low/high null) renders the rate and counts, no crash."""
    from fleetchaos.reports.cells import proportion
    from fleetchaos.results.models import Proportion

    assert proportion(Proportion(successes=3, trials=10, rate=0.3, low=None, high=0.5)) == "30.0% (3/10)"
    assert proportion(Proportion(successes=3, trials=10, rate=0.3, low=0.1, high=0.5)) == "30.0% [10.0, 50.0] (3/10)"


def test_a_tuned_arm_reads_as_its_alias_and_an_untuned_result_keeps_its_bytes():
    """with_aliases names tuned specs best-for-FORMAT in the finding and the headline; an alias-free JSON is unchanged."""
    from fleetchaos.runs.best import with_aliases

    base = _comparison()
    spec = "waiter"
    tuned = with_aliases(base, {"structured": spec})
    assert tuned.arms[0].alias == "best-for-structured" and tuned.arms[1].alias == ""
    text = finding(tuned)
    assert "**best-for-structured on structured**" in text
    assert '"alias"' not in base.model_dump_json() and '"alias":"best-for-structured"' in tuned.model_dump_json()


def test_with_its_sensitivity_study_the_finding_names_what_it_rests_on_and_where_it_reverses():
    """The widest bars are what the answer rests on; each flip that changes the envelope's lead's sign is named."""
    import statistics

    from fleetchaos.results.models import ArmResult
    from fleetchaos.results.studies import ArmRole, SensitivityResult, Setting, TunedCompareResult, TuningRecord
    from fleetchaos.runs.sensitivity import flips_of, point, tornado_bars

    def arms(lead: float) -> list[ArmResult]:
        def arm(errors: str, values: list[float]) -> ArmResult:
            mean = statistics.fmean(values)
            return ArmResult(policy=f"{errors}-best", errors=errors, metrics={"success_rate": mean},
                             ci={"success_rate": [mean, mean]}, per_seed={"success_rate": values}, breakdowns={})  # fmt: skip

        return [arm("status", [0.80, 0.81]), arm("structured", [0.80 + lead - 0.001, 0.81 + lead + 0.001])]

    leads = {"fleet.providers[0].admission": {"refuse": 0.07, "queue": -0.03},
             "fleet.checkpoints": {False: 0.07, True: 0.05}, "workload.tasks_per_day": {600.0: 0.02, 1200.0: 0.07}}  # fmt: skip
    settings = [Setting(parameter=p, values=list(v), own=next(iter(v)) if p != "workload.tasks_per_day" else 1200.0,
                        metric="success_rate", retuned=True, reaches=["status", "structured"])
                for p, v in leads.items()]  # fmt: skip
    points = [point(p, value, "success_rate", arms(d), 0.95) for p, v in leads.items() for value, d in v.items()]
    study = SensitivityResult(scenario="storm", errors=["status", "structured"], seeds=[1, 2], confidence=0.95,
                              retune=True, baseline=point("", None, "success_rate", arms(0.07), 0.95),
                              settings=settings, points=points, flips=flips_of(points),
                              bars=tornado_bars(settings, points))  # fmt: skip
    tuning = TuningRecord(objective="success_rate", train_seeds=[101], best={"status": "p", "structured": "q"},
                          roles=[ArmRole(policy="q", errors="structured", role="best for structured", tuned_for="structured")])  # fmt: skip
    result = TunedCompareResult(**_comparison().model_dump(), tuning=tuning, sensitivity=study)
    text = finding(result)
    assert "the envelope's lead rests most on fleet.providers\\[0\\].admission (-3.0 pp to +7.0 pp)" in text
    assert (
        "workload.tasks\\_per\\_day (+2.0 pp to +7.0 pp)" in text and "fleet.checkpoints (+5.0 pp to +7.0 pp)" in text
    )
    assert (
        "It reverses (the best without an envelope leads) when fleet.providers\\[0\\].admission goes from refuse to queue"
        in text
    )
    assert "was not tested" not in text
