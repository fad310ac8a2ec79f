"""A scenario's expect: gates: the messages of a wrong gate, and the one rule that judges them (issue 20).

The rule (:func:`fleetchaos.gates.expect.judge`) is exercised on hand-made arms whose figures are
known, so each statistic, each way a gate has no value and the policy-error rule can be checked
exactly; the CLI and plugin tests run it on simulated runs.
"""

from __future__ import annotations

import pytest
import yaml

from fleetchaos.errors import ScenarioError, UserError
from fleetchaos.gates.expect import ArmName, applies, check_arms, failure_message, judge, line
from fleetchaos.reports.blocks import to_html, to_markdown
from fleetchaos.reports.expectations import expectation_blocks
from fleetchaos.results.models import ArmResult, ExpectationResult, Proportion
from fleetchaos.scenario.expect import Expectation
from fleetchaos.scenario.load import parse_scenario, scenario_hash, to_yaml

WORLD = "name: w\nduration_s: 3600\nfleet: {workers: 2}\nworkload: {tasks_per_day: 100}\n"


def _load(expect_yaml: str):
    return parse_scenario(WORLD + "expect:\n" + expect_yaml, "gates.yaml")


def _problem(expect_yaml: str) -> str:
    with pytest.raises(ScenarioError) as info:
        _load(expect_yaml)
    return str(info.value)


@pytest.mark.parametrize(
    "gate, parts",
    [
        ("  - {metric: sucess_rate, at_least: 0.8}",
         ["gates.yaml: expect[0].metric: unknown metric 'sucess_rate' (known: success_rate, ",
          "did you mean 'success_rate'?", "(line 6)"]),
        ("  - {metric: silent_failure_rate, at_most: 1.5}",
         ["expect[0].at_most: 1.5 is above 1, and silent_failure_rate is a proportion in [0, 1]",
          "0.95 for 95%"]),
        ("  - {metric: wasted_retries, at_most: -1}", ["expect[0].at_most: -1 is below 0"]),
        ("  - {metric: success_rate, at_least: 0}", ["expect[0].at_least: 0 always holds", "give a bound above 0"]),
        ("  - {metric: escalation_rate, at_most: 1}", ["expect[0].at_most: 1 always holds"]),
        ("  - {metric: success_rate}", ["expect[0]: a gate needs a bound: give at_least or at_most"]),
        ("  - {metric: success_rate, at_least: 0.5, at_most: 0.9}",
         ["expect[0]: give one bound per gate", "write a range as two gates"]),
        ("  - {metric: success_rate, at_least: 0.8, statistic: every-seed}",
         ["expect[0].statistic: must be one of 'mean', 'every_seed' (got 'every-seed')",
          "did you mean 'every_seed'?"]),
        ("  - {metric: success_rate, at_least: 0.8, statistic: interval}",
         ["expect[0].statistic: statistic 'interval' is written 'evidence: decisive'", "evidence: decisive"]),
        ("  - {metric: success_rate, at_least: 0.8, evidence: strong}",
         ["expect[0].evidence: must be one of 'weak', 'decisive' (got 'strong')"]),
        ("  - {metric: success_rate, at_least: 0.8, arm: structured}",
         ["expect[0].arm: arm 'structured' must name a policy and an error format as POLICY/ERRORS"]),
        ("  - {metric: success_rate, at_least: 0.8, arm: structred/generic}",
         ["expect[0].arm: unknown policy 'structred' in arm (known: blind-retry, ", "did you mean 'structured'?"]),
        ("  - {metric: success_rate, at_least: 0.8, arm: structured/genric}",
         ["expect[0].arm: unknown error format 'genric' in arm (known: ", "did you mean 'generic'?"]),
        ('  - {metric: success_rate, at_least: 0.8, arm: "structured/\\x1b[31m"}',
         ["expect[0].arm: 'structured/\\x1b[31m' holds the control character \\x1b"]),
        ("  - {metric: success_rate, at_least: .nan}", ["expect[0].at_least: must be a finite number"]),
        ("  - {metric: success_rate, at_least: 0.8, colour: red}",
         ["expect[0].colour: unknown field 'colour'", "arm, at_least, at_most, evidence, metric, statistic"]),
        ("  {metric: success_rate, at_least: 0.8}", ["expect: must be a list"]),
    ],
)  # fmt: skip
def test_a_wrong_gate_gets_one_message_naming_file_field_value_and_fix(gate, parts):
    """Each mistake is one line of its own: the file, expect[i].FIELD, the rule and the fix."""
    message = _problem(gate + "\n")
    for part in parts:
        assert part in message, message


def test_valid_gates_load_dump_and_keep_old_scenarios_unchanged():
    """Gates load with their defaults, round-trip through to_yaml, and a scenario without them dumps and hashes
    as before (results of existing scenarios stay byte-identical)."""
    scenario = _load(
        "  - {metric: success_rate, at_least: 0.8}\n"
        "  - {metric: wasted_retries, at_most: 5, statistic: every_seed, arm: 'backoff(cap_s=5)/*'}\n"
        "  - {metric: recovery_rate, at_least: 0.5, evidence: decisive, arm: 'mypkg.mod:Policy/structured'}\n"
    )
    assert [g.describe() for g in scenario.expect] == [
        "success_rate at_least 0.8 (mean)",
        "wasted_retries at_most 5 (every_seed)",
        "recovery_rate at_least 0.5 (mean, decisive evidence)",
    ]
    assert parse_scenario(to_yaml(scenario), "again.yaml") == scenario
    plain = parse_scenario(WORLD, "w.yaml")
    assert "expect" not in plain.model_dump() and "expect" not in yaml.safe_load(to_yaml(plain))
    assert scenario_hash(plain) == scenario_hash(parse_scenario(WORLD + "expect: []\n", "w.yaml"))


def _arm(policy="structured", errors="structured", *, per_seed=None, ci=None, pooled=None, policy_errors=None):
    per_seed = per_seed or {"success_rate": [0.9, 0.8, 0.7], "wasted_retries": [2, 4, 9]}
    if policy_errors is not None:
        per_seed = {**per_seed, "policy_errors": policy_errors}
    means = {k: (sum(v for v in vs if v is not None) / len([v for v in vs if v is not None]))
             if any(v is not None for v in vs) else None for k, vs in per_seed.items()}  # fmt: skip
    return ArmResult(policy=policy, errors=errors, metrics=means, ci=ci or {}, per_seed=per_seed,
                     breakdowns={}, pooled=pooled or {})  # fmt: skip


def _gate(**fields) -> Expectation:
    return Expectation(**fields)


def test_each_statistic_and_evidence_mode_judges_by_the_one_rule():
    """mean: the mean decides, its interval gives the evidence; decisive: a weak pass fails; every_seed: the worst."""
    arm = _arm(ci={"success_rate": [0.55, 0.95], "wasted_retries": [0.0, 11.5]})
    gates = [
        _gate(metric="success_rate", at_least=0.8),  # mean 0.8: holds (the bound is inclusive), interval straddles
        _gate(metric="success_rate", at_least=0.6, evidence="decisive"),  # mean holds, lower end 0.55 < 0.6
        _gate(metric="success_rate", at_least=0.7, statistic="every_seed"),  # worst 0.7 on seed 3
        _gate(metric="wasted_retries", at_most=5),  # mean 5: holds, on weak evidence
        _gate(metric="wasted_retries", at_most=4),  # mean 5 > 4: fails, on weak evidence
        _gate(metric="wasted_retries", at_most=9, statistic="every_seed"),  # worst 9
        _gate(metric="wasted_retries", at_most=12, evidence="decisive"),  # upper end 11.5 <= 12: decisive pass
    ]
    got = judge(gates, [arm], [1, 2, 3], confidence=0.95)
    assert [(r.gate, r.value, r.passed, r.evidence, r.worst_seed) for r in got] == [
        (0, pytest.approx(0.8), True, "weak", 3),
        (1, pytest.approx(0.8), False, "weak", 3),
        (2, 0.7, True, "decisive", 3),
        (3, pytest.approx(5), True, "weak", 3),
        (4, pytest.approx(5), False, "weak", 3),
        (5, 9, True, "decisive", 3),
        (6, pytest.approx(5), True, "decisive", 3),
    ]
    assert got[1].note == (
        "mean over 3 seeds, 95% interval 0.55..0.95; evidence weak: the interval straddles the bound; more seeds "
        "would decide it; evidence: decisive asks for a pass on decisive evidence"
    )
    assert line(got[4]) == (
        "FAILED expect[4] wasted_retries at_most 4 for structured on structured: 5 (mean over 3 seeds, 95% interval "
        "0..11.5; evidence weak: the interval straddles the bound; more seeds would decide it)"
    )
    assert line(got[1]).startswith("FAILED expect[1] success_rate at_least 0.6 (decisive evidence) for ")


def test_a_gate_without_a_value_fails_and_one_seed_is_weak_or_wilson():
    """No value on any seed fails; one seed of a count has no interval (weak); one seed of a rate, Wilson's."""
    arm = _arm(per_seed={"recovery_rate": [None, None], "wasted_retries": [3], "success_rate": [0.9]},
               pooled={"success_rate": Proportion(successes=9, trials=10, rate=0.9, low=0.6, high=0.98)})  # fmt: skip
    got = judge(
        [
            _gate(metric="recovery_rate", at_most=0.5),
            _gate(metric="wasted_retries", at_most=100),
            _gate(metric="wasted_retries", at_most=100, evidence="decisive"),
            _gate(metric="success_rate", at_least=0.5, evidence="decisive"),
        ],
        [arm],
        [4],
        confidence=0.9,
    )
    assert [(r.value, r.passed, r.evidence) for r in got] == [
        (None, False, "missing"),
        (3, True, "weak"),
        (3, False, "weak"),
        (0.9, True, "decisive"),
    ]
    assert "no value on any of 2 seed(s)" in got[0].note and "the gate cannot be judged" in got[0].note
    assert got[1].note == "mean over 1 seed; evidence weak: no confidence interval (one seed, or means alone)"
    assert got[3].note.startswith("mean over 1 seed, 90% interval 0.6..0.98; evidence decisive")


def test_a_policy_that_errored_fails_every_gate_on_its_arm_unless_allowed():
    """Figures of a broken policy measure the bug: its gates fail, with the count and the way to allow it."""
    arm = _arm(policy_errors=[0, 3, 1])
    gate = _gate(metric="success_rate", at_least=0.5)
    (failed,) = judge([gate], [arm], [1, 2, 3], confidence=0.95)
    assert not failed.passed and failed.value == pytest.approx(0.8)
    assert "the policy errored on 4 task(s)" in failed.note and "--allow-policy-errors" in failed.note
    (allowed,) = judge([gate], [arm], [1, 2, 3], confidence=0.95, allow_policy_errors=True)
    assert allowed.passed


def test_arms_match_by_name_wildcard_or_canonical_spec():
    """A gate's arm names an arm as typed, canonically, or with * for either part; other arms are not judged."""
    gate = _gate(metric="success_rate", at_least=0.5, arm="backoff(cap_s=5)/generic")
    assert applies(gate, "backoff(cap_s=5.0)", "generic")  # its canonical spelling
    assert not applies(gate, "backoff(cap_s=5.0)", "structured")
    assert applies(_gate(metric="success_rate", at_least=0.5, arm="*/generic"), "anything", "generic")
    # `compare --policies backoff --param policy.base_s=0.5`: typed backoff, run as backoff(base_s=0.5)
    typed = _gate(metric="success_rate", at_least=0.5, arm="backoff/*")
    assert applies(typed, "backoff(base_s=0.5)", "raw", names={"backoff"})
    assert not applies(typed, "backoff(base_s=0.5)", "raw")
    arms = [_arm("blind-retry", "generic"), _arm("structured", "structured")]
    got = judge([_gate(metric="success_rate", at_least=0.5, arm="structured/structured")], arms, [1, 2, 3],
                confidence=0.95)  # fmt: skip
    assert [(r.policy, r.errors) for r in got] == [("structured", "structured")]
    (unmatched,) = judge([_gate(metric="success_rate", at_least=0.5, arm="raw-parse/raw")], arms, [1, 2, 3],
                         confidence=0.95)  # fmt: skip
    assert not unmatched.passed and unmatched.policy == "" and "nothing was judged" in unmatched.note
    assert judge([_gate(metric="success_rate", at_least=0.5, arm="raw-parse/raw")], arms, [1, 2, 3],
                 confidence=0.95, unmatched_fail=False) == []  # fmt: skip


def test_a_gate_for_an_arm_not_run_is_refused_before_the_runs():
    """check_arms names the gate, the arms run and both ways out; a tuned arm cannot be named."""
    arms = [ArmName.of("backoff", "backoff", "generic"), ArmName.of("structured", "structured", "generic")]
    gate = _gate(metric="success_rate", at_least=0.5, arm="structured/structured")
    with pytest.raises(UserError) as info:
        check_arms([_gate(metric="success_rate", at_least=0.5), gate], arms, "my.yaml", "HINT", None)
    assert str(info.value) == (
        "my.yaml: expect[1].arm 'structured/structured' names structured/structured, which this command does not run "
        "(arms: backoff/generic, structured/generic); run it too (HINT), or pass --no-expect to run without "
        "the scenario's gates"
    )
    check_arms([_gate(metric="success_rate", at_least=0.5, arm="*/generic")], arms, "my.yaml", "HINT", None)
    with pytest.raises(UserError, match="known only after tuning"):
        check_arms([_gate(metric="success_rate", at_least=0.5, arm="best/generic")], arms, "my.yaml", "HINT", None)
    with pytest.raises(UserError, match=r"expect\[0\] \(the scenario's arms\) names raw-parse/raw, which"):
        check_arms([_gate(metric="success_rate", at_least=0.5)], arms, "my.yaml", "HINT", ["raw-parse/raw"])


def test_a_gate_naming_no_arm_judges_the_scenarios_arms_else_the_headlines_best():
    """Without arm: the scenario's arms when it declares them, else the arm with the best success rate only."""
    weak = _arm("blind-retry", "generic", per_seed={"success_rate": [0.5, 0.4, 0.6]})
    strong = _arm("structured", "structured", per_seed={"success_rate": [0.9, 0.8, 0.7]})
    gate = _gate(metric="success_rate", at_least=0.75)
    (best,) = judge([gate], [weak, strong], [1, 2, 3], confidence=0.95)
    assert (best.policy, best.passed) == ("structured", True) and best.note.startswith("the headline's best arm; ")
    (declared,) = judge([gate], [weak, strong], [1, 2, 3], confidence=0.95, scenario_arms=["blind-retry/*"])
    assert (declared.policy, declared.passed) == ("blind-retry", False)
    (alone,) = judge([gate], [weak], [1, 2, 3], confidence=0.95)  # run and a test judge their one arm
    assert (alone.policy, alone.passed) == ("blind-retry", False)
    assert judge([gate], [weak], [1, 2, 3], confidence=0.95, scenario_arms=["structured/*"], unmatched_fail=False) == []


def test_the_report_section_escapes_what_users_wrote():
    """Policy names and notes reach Markdown and HTML as text: no tag, no link, no table cell split."""
    record = ExpectationResult(gate=0, metric="success_rate", rule="at_least", bound=0.9, statistic="mean",
                               arm=None, policy="evil<script>|[x](javascript:1)", errors="generic", value=0.5,
                               seeds=2, worst_seed=1, passed=False, note="mean over 2 seeds")  # fmt: skip
    blocks = expectation_blocks([record])
    md = to_markdown(blocks)
    assert "<script>" not in md and "](javascript" not in md and "**1 of 1 verdicts failed.**" in md
    page = to_html(blocks, "t", {})
    assert "<script>" not in page and "&lt;script&gt;" in page and "<strong>FAILED</strong>" in page
    assert expectation_blocks([]) == []


def test_a_failed_gate_as_a_test_failure_names_the_replay_of_the_worst_seed():
    """The plugin's message: the gate, its verdict line, and the command replaying the worst seed."""
    (record,) = judge([_gate(metric="success_rate", at_least=0.75)], [_arm()], [1, 2, 3], confidence=0.95)
    assert record.passed
    (record,) = judge([_gate(metric="success_rate", at_least=0.85)], [_arm()], [1, 2, 3], confidence=0.95)
    message = failure_message(record, "my.yaml", {1: "fleetchaos run ... --seed 1", 3: "fleetchaos run ... --seed 3"})
    assert message.splitlines() == [
        "expect[0] of scenario my.yaml failed:",
        "  FAILED expect[0] success_rate at_least 0.85 for structured on structured: 0.8 = 80.0% (mean over 3 seeds; "
        "evidence weak: no confidence interval (one seed, or means alone))",
        "  replay the worst seed (3): fleetchaos run ... --seed 3",
    ]
