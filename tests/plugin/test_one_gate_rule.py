"""One gate rule everywhere (issue 28): assert_rate, the plugin's baseline gate, the CLI's --fail-on and a
scenario's expect: gate give the same verdict, on the same evidence, on the same figures.

Each case runs one arm of the small hour (tests/plugin/conftest.py) on real seeds and states a
requirement four ways:

* ``assert_rate(result.metric(M), at_least|at_most=B, evidence=MODE)`` in-process;
* an ``expect:`` gate ``{metric: M, at_least|at_most: B, evidence: MODE}`` judged by ``compare``;
* ``--fail-on`` against a baseline whose every seed holds the metric's best end (1 for a rate that
  is better higher, 0 for a count that is better lower), with the change allowed that puts the
  bound at B: a fall to B of a rate (``-Xpp``), a rise to B of a count (``+X``), under ``--evidence MODE``;
* ``--fleetchaos-fail-on`` with the same baseline and threshold, ``--fleetchaos-evidence MODE``.

Against such a baseline the per-seed change is the figure minus a constant, so the change's
interval is the figure's interval shifted: the four must agree on pass or fail and, for a count
(Student-t everywhere), on the evidence.  For a rate the absolute gates use the logit-scale or
Wilson interval and the change a Student-t one, so only cases whose evidence no choice of interval
changes are used.  The figures quoted are those of the structured arm on seeds 1-5 (wasted retries
3, 3, 8, 2, 3: mean 3.8, interval 0.84..6.76; success 0.978, interval 0.969..0.984).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.gates.assertions import WEAK_EVIDENCE, RateAssertionError, assert_rate
from fleetchaos.results.registry import direction, is_rate
from fleetchaos.testing.suite import run_scenario

#: The small hour without faults: no task meets one, so a recovery rate has no value on any seed.
CALM = "name: small\nduration_s: 3600\nfleet: {orchestrators: 1, workers: 3, api_rate_per_s: 5, api_burst: 50}\n" \
    "workload: {tasks_per_day: 1500, diurnal_amplitude: 0}\n"  # fmt: skip


@dataclass(frozen=True)
class Case:
    metric: str
    rule: str
    bound: float
    seeds: int
    mode: str
    passed: bool
    evidence: str
    world: str = "small"


CASES = {
    "count: mean and interval below the bound": Case("wasted_retries", "at_most", 10, 5, "weak", True, "decisive"),
    "count: mean below, interval straddling": Case("wasted_retries", "at_most", 5, 5, "weak", True, "weak"),
    "count: mean above, interval straddling": Case("wasted_retries", "at_most", 3.5, 5, "weak", False, "weak"),
    "count: mean and interval above the bound": Case("wasted_retries", "at_most", 0.5, 5, "weak", False, "decisive"),
    "count: decisive mode fails a weak pass": Case("wasted_retries", "at_most", 5, 5, "decisive", False, "weak"),
    "count: decisive mode passes a decisive pass": Case("wasted_retries", "at_most", 10, 5, "decisive", True, "decisive"),
    "count: the mean exactly on the bound": Case("wasted_retries", "at_most", 3.8, 5, "weak", True, "weak"),
    "one seed: on the bound, no interval": Case("wasted_retries", "at_most", 3, 1, "weak", True, "weak"),
    "one seed: above the bound, no interval": Case("wasted_retries", "at_most", 2, 1, "weak", False, "weak"),
    "one seed: decisive mode has no interval": Case("wasted_retries", "at_most", 3, 1, "decisive", False, "weak"),
    "time: mean and interval below the bound": Case("mean_time_to_recovery_s", "at_most", 200, 5, "weak", True, "decisive"),
    "count: escalations straddling": Case("escalations", "at_most", 1, 5, "weak", True, "weak"),
    "rate: mean and interval above the bound": Case("success_rate", "at_least", 0.95, 5, "weak", True, "decisive"),
    "rate: mean and interval below the bound": Case("success_rate", "at_least", 0.99, 5, "weak", False, "decisive"),
    "undefined figure: no seed has a value": Case("recovery_rate", "at_least", 0.5, 3, "weak", False, "missing", "calm"),
}  # fmt: skip


def _best_end(metric: str) -> float:
    """The baseline's value on every seed: the end of the metric's range the bound is worse than."""
    return 1.0 if direction(metric) else 0.0


def _threshold(case: Case) -> str:
    """``--fail-on`` text whose allowed change from the baseline's constant puts the bound at ``case.bound``."""
    allowed = abs(_best_end(case.metric) - case.bound)
    sign = "-" if direction(case.metric) else "+"
    return (
        f"{case.metric}:{sign}{allowed * 100:.10g}pp" if is_rate(case.metric) else f"{case.metric}:{sign}{allowed:.10g}"
    )


def _assert_rate(case: Case, folder) -> tuple[bool, str]:
    result = run_scenario(str(folder / f"{case.world}.yaml"), seeds=case.seeds)
    heard: list = []
    WEAK_EVIDENCE.append(heard.append)
    try:
        assert_rate(result.metric(case.metric), **{case.rule: case.bound}, evidence=case.mode)
    except RateAssertionError as exc:
        text = str(exc).splitlines()[0]
        evidence = "missing" if "is undefined" in text else text.split("(evidence ")[1].split(":")[0]
        return False, evidence
    finally:
        WEAK_EVIDENCE.remove(heard.append)
    return True, "weak" if heard else "decisive"


def _baseline(case: Case, folder) -> str:
    """A comparison's results file: the arm's figure at the best end of its range on every seed."""
    seeds = list(range(1, case.seeds + 1))
    args = ["compare", "--scenario", str(folder / f"{case.world}.yaml"), "--seeds", str(case.seeds), "--jobs", "1",
            "--policies", "structured", "--errors", "structured", "--no-history", "--no-expect", "--json"]  # fmt: skip
    doc = json.loads(CliRunner().invoke(main, args).stdout)
    (arm,) = doc["arms"]
    arm["per_seed"][case.metric] = [_best_end(case.metric)] * len(seeds)
    arm["metrics"][case.metric] = _best_end(case.metric)
    path = folder / f"baseline-{case.world}-{case.seeds}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _cli(case: Case, folder, baseline: str) -> tuple[tuple[bool, str], tuple[bool, str]]:
    """(the expect: gate's verdict, the --fail-on verdict) of one `compare`."""
    gated = folder / f"gated-{case.world}.yaml"
    gated.write_text((folder / f"{case.world}.yaml").read_text().rstrip("\n") + f"\nexpect:\n  - {{metric: {case.metric}, "
                     f"{case.rule}: {case.bound}, evidence: {case.mode}}}\n")  # fmt: skip
    out = CliRunner().invoke(main, ["compare", "--scenario", str(gated), "--seeds", str(case.seeds), "--jobs", "1",
                                    "--policies", "structured", "--errors", "structured", "--no-history", "--json",
                                    "--baseline", baseline, "--fail-on", _threshold(case), "--evidence", case.mode])  # fmt: skip
    assert out.exit_code in (0, 1), out.stderr
    (record,) = json.loads(out.stdout)["expectations"]
    (line,) = [x for x in out.stderr.splitlines() if x.split(" ", 1)[-1].startswith(f"{case.metric} for ")]
    evidence = line.split("; evidence ")[1].split(":")[0] if "; evidence " in line else "missing"
    assert out.exit_code == (0 if record["passed"] and line.startswith("ok ") else 1)
    return (record["passed"], record["evidence"]), (line.startswith("ok "), evidence)


def _plugin(case: Case, pytester: pytest.Pytester, baseline: str) -> tuple[bool, str]:
    pytester.makepyfile(test_arm=f"import pytest\n\n@pytest.mark.fleetchaos(scenario='{case.world}.yaml', "
                        f"seeds={case.seeds})\ndef test_arm(fleetchaos_result):\n    pass\n")  # fmt: skip
    result = pytester.runpytest("-p", "no:cacheprovider", "--fleetchaos-baseline", baseline, "--fleetchaos-fail-on",
                                _threshold(case), "--fleetchaos-evidence", case.mode)  # fmt: skip
    out = result.stdout.str()
    outcomes = result.parseoutcomes()
    passed = outcomes.get("passed", 0) == 1 and not outcomes.get("failed")
    if not passed:
        # the failure's own message, not its repeat in the short summary (which pytest leaves whole under CI=1)
        report = out.split("short test summary info")[0]
        (line,) = [x.strip() for x in report.splitlines() if x.strip().startswith("REGRESSION ")]
        return False, line.split("; evidence ")[1].split(":")[0] if "; evidence " in line else "missing"
    weak = [x for x in out.splitlines() if f": {case.metric} within " in x and " passed on weak evidence" in x]
    return True, "weak" if weak else "decisive"


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_assert_rate_the_plugin_the_cli_and_expect_give_one_verdict(chaos_dir: pytest.Pytester, case: Case):
    """The same figure, the same bound, the same mode: one verdict and one evidence from the four gates."""
    chaos_dir.makefile(".yaml", calm=CALM)
    chaos_dir.makeini("[pytest]\naddopts = --strict-markers\nfleetchaos_policy = structured\n")
    folder = chaos_dir.path
    baseline = _baseline(case, folder)
    expect, fail_on = _cli(case, folder, baseline)
    verdicts = {
        "assert_rate": _assert_rate(case, folder),
        "expect:": expect,
        "--fail-on": fail_on,
        "--fleetchaos-fail-on": _plugin(case, chaos_dir, baseline),
    }
    assert verdicts == dict.fromkeys(verdicts, (case.passed, case.evidence))
