"""The scenario's ``expect:`` gates judged on the runs: one rule for the CLI and the pytest plugin.

A gate (:class:`fleetchaos.scenario.expect.Expectation`) judges the arms it names (``arm``),
else the scenario's ``arms``, else the arm that leads the headline (the best mean of the
comparison's lead metric: ``success_rate``, or ``goodput_per_day`` in a closed loop): the
deliberately weak reference arms of a comparison are not what a scenario's acceptance
criteria are about.  ``run`` and a test run one arm and judge the gates that apply to it,
naming the others as not theirs to judge.  Before a comparison runs, :func:`check_arms`
refuses a gate whose arms the command does not run (a gate must never pass because its arm
was left out).  After the runs, :func:`judge` compares each gate's figure with its bound by
the one gate rule (:mod:`fleetchaos.gates.rule`), from the arm's
:class:`~fleetchaos.results.models.ArmResult` (what ``compare`` aggregates; ``run`` and the
plugin aggregate their runs the same way):

* ``mean``: the mean over the seeds where the metric has a value, with its confidence
  interval (one seed of a rate of tasks: the Wilson interval of its tasks) for the evidence;
* ``every_seed``: the worst seed's value, an exact figure (decisive evidence).

A gate fails when its figure has no value, and on an arm whose policy errored unless that is
allowed: never green on missing evidence or on a broken policy.  Each verdict is an
:class:`~fleetchaos.results.models.ExpectationResult`, which the results record.

Light to import: pydantic and the scenario and result models, no SimPy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.gates.rule import Figure
from fleetchaos.gates.rule import judge as rule_judge
from fleetchaos.results.models import ArmResult, ExpectationResult
from fleetchaos.results.registry import lead_metrics
from fleetchaos.scenario.expect import ANY, Expectation, split_arm

__all__ = [
    "ArmName",
    "applies",
    "best_arm",
    "check_arms",
    "failure_message",
    "judge",
    "line",
    "summary_line",
    "unjudged_lines",
]

#: A policy whose spec is known only once it is tuned (``compare --tune``): a gate cannot name it.
_TUNED = "best"


@dataclass(frozen=True)
class ArmName:
    """An arm a command runs: its policy as results record it (the canonical spec), its error
    format, and every spelling that names the policy (as typed on the command line, canonical)."""

    policy: str
    errors: str
    names: frozenset[str]

    @classmethod
    def of(cls, given: str, canonical: str, errors: str) -> ArmName:
        """The arm of policy ``given`` (canonical spelling ``canonical``) on ``errors``."""
        return cls(canonical, errors, frozenset({given, canonical}))

    def label(self) -> str:
        """``POLICY/ERRORS``, as a gate's ``arm`` names it."""
        return f"{self.policy}/{self.errors}"


def _canonical(policy: str) -> str:
    """A built-in policy's spec in its canonical spelling (``backoff(cap_s=5)`` -> ``backoff(cap_s=5.0)``).

    Other names are left as written: a scenario file never makes fleetchaos import a module
    or load an entry point.
    """
    from fleetchaos.policies.registry import POLICIES, resolve_policy
    from fleetchaos.policies.spec import PolicySpecError, parse_spec

    try:
        if parse_spec(policy).name in POLICIES:
            return resolve_policy(policy)[1]
    except (PolicySpecError, LookupError):
        pass
    return policy


def _matches(pattern: str, policy: str, errors: str, names: Iterable[str]) -> bool:
    want_policy, want_errors = split_arm(pattern)
    if want_errors not in (ANY, errors):
        return False
    return want_policy == ANY or want_policy in set(names) or _canonical(want_policy) == policy


def _patterns(gate: Expectation, scenario_arms: Sequence[str] | None) -> list[str] | None:
    """The arm patterns a gate judges: its own, else the scenario's; None for the headline's best arm."""
    if gate.arm is not None:
        return [gate.arm]
    return list(scenario_arms) if scenario_arms else None


def applies(
    gate: Expectation,
    policy: str,
    errors: str,
    names: Iterable[str] = (),
    scenario_arms: Sequence[str] | None = None,
    best: tuple[str, str] | None = None,
) -> bool:
    """Whether ``gate`` applies to the arm of ``policy`` (as results record it, or any of ``names``) on ``errors``.

    A gate that names no arm applies to the scenario's ``arms``, else to ``best`` (the arm
    that leads the headline; every arm when not given, as for the one arm of ``run``).
    """
    patterns = _patterns(gate, scenario_arms)
    if patterns is None:
        return best is None or best == (policy, errors)
    return any(_matches(p, policy, errors, names) for p in patterns)


def best_arm(arms: Sequence[ArmResult], closed_loop: bool = False) -> tuple[str, str] | None:
    """(policy, errors) of the arm with the best mean of the comparison's lead metric (ties: the first)."""
    metric = lead_metrics(closed_loop)[0]
    have = [a for a in arms if a.metrics.get(metric) is not None]
    if not have:
        return (arms[0].policy, arms[0].errors) if arms else None
    top = max(have, key=lambda a: float(a.metrics[metric]))  # type: ignore[arg-type]  # lead metrics are higher-better
    return top.policy, top.errors


def check_arms(
    gates: Sequence[Expectation], arms: Sequence[ArmName], source: str, hint: str, scenario_arms: Sequence[str] | None
) -> None:
    """Refuse, before a comparison runs, a gate whose arms are none of ``arms`` (a :class:`UserError`).

    ``source`` names the scenario in the message; ``hint`` says how to run the missing arm
    (``--policies``/``--errors`` for ``compare``).  A gate judging the headline's best arm
    always has one.
    """
    listed = ", ".join(a.label() for a in arms)
    for i, gate in enumerate(gates):
        patterns = _patterns(gate, scenario_arms)
        if patterns is None:
            continue
        where = f"expect[{i}].arm {gate.arm!r}" if gate.arm is not None else f"expect[{i}] (the scenario's arms)"
        if any(split_arm(p)[0] == _TUNED for p in patterns):
            raise UserError(
                f"{source}: {where}: a tuned arm's spec is known only after tuning; "
                "write */FORMAT to gate the tuned arms"
            )
        if not any(_matches(p, a.policy, a.errors, a.names) for a in arms for p in patterns):
            raise UserError(
                f"{source}: {where} names {', '.join(patterns)}, which this command does not run (arms: {listed}); "
                f"run it too ({hint}), or pass --no-expect to run without the scenario's gates"
            )


def unjudged_lines(
    gates: Sequence[Expectation], arm: ArmName, scenario_arms: Sequence[str] | None, source: str
) -> list[str]:
    """One note per gate that is not for ``arm`` (the one arm of ``run``): named, never judged nor refused."""
    out = []
    for i, gate in enumerate(gates):
        patterns = _patterns(gate, scenario_arms)
        if patterns is not None and not any(_matches(p, arm.policy, arm.errors, arm.names) for p in patterns):
            out.append(
                f"note: expect[{i}] of {source} judges {', '.join(patterns)}, not this run's arm "
                f"({arm.policy} on {arm.errors}): not judged here"
            )
    return out


def _mean_figure(arm: ArmResult, metric: str, n: int) -> Figure:
    low, high = [*(arm.ci.get(metric) or []), None, None][:2]
    if (low is None or high is None) and n == 1 and metric in arm.pooled:  # one seed: the Wilson interval of its tasks
        low, high = arm.pooled[metric].low, arm.pooled[metric].high
    return Figure(arm.metrics.get(metric), low, high)


def _figure(gate: Expectation, arm: ArmResult, seeds: Sequence[int], confidence: float):
    """(the figure compared with the bound, seeds with a value, the worst seed, how it was made)."""
    metric = gate.metric
    least = gate.bound[0] == "at_least"
    values = list(arm.per_seed.get(metric) or [])
    by_seed = {s: v for s, v in zip(seeds, values) if v is not None}
    n = len(by_seed)
    if not by_seed:
        return Figure(None), 0, None, f"no value on any of {len(values)} seed(s): its denominator was empty"
    worst = (min if least else max)(by_seed, key=lambda s: (by_seed[s], s) if least else (by_seed[s], -s))
    left_out = f"; {len(values) - n} seed(s) without a value left out" if n < len(values) else ""
    over = f"{n} seed{'s' if n != 1 else ''}"
    if gate.statistic == "every_seed":
        return Figure(by_seed[worst], exact=True), n, worst, f"worst of {over}, seed {worst}{left_out}"
    figure = _mean_figure(arm, metric, n)
    pct = f"{round(confidence * 100)}%"
    interval = (
        f", {pct} interval {figure.low:.6g}..{figure.high:.6g}"
        if figure.low is not None and figure.high is not None
        else ""
    )
    return figure, n, worst, f"mean over {over}{interval}{left_out}"


def _policy_errors(arm: ArmResult) -> int:
    return int(sum(v or 0 for v in arm.per_seed.get("policy_errors") or []))


def judge(
    gates: Sequence[Expectation],
    arms: Sequence[ArmResult],
    seeds: Sequence[int],
    *,
    confidence: float,
    names: Mapping[str, frozenset[str]] | None = None,
    scenario_arms: Sequence[str] | None = None,
    closed_loop: bool = False,
    allow_policy_errors: bool = False,
    allow_hint: str = "--allow-policy-errors",
    unmatched_fail: bool = True,
) -> list[ExpectationResult]:
    """Every gate on every arm it applies to, in gate order then arm order.

    ``seeds`` are the arms' seeds (the order of their per-seed values); ``names`` maps an
    arm's policy to the other spellings that name it (as typed on the command line).  A
    gate that names no arm judges ``scenario_arms``, else the arm that leads the headline
    (:func:`best_arm`).  A gate that matches no arm gets one failing verdict
    (``unmatched_fail``; else none, for ``run`` and a test, which run one arm).  An arm whose
    policy errored fails every gate on it unless ``allow_policy_errors`` (``allow_hint``
    says how to allow it).
    """
    names = names or {}
    best = best_arm(arms, closed_loop) if len(arms) > 1 else None
    out = []
    for i, gate in enumerate(gates):
        rule, bound = gate.bound
        base: dict[str, Any] = {
            "gate": i,
            "metric": gate.metric,
            "rule": rule,
            "bound": bound,
            "statistic": gate.statistic,
            "arm": gate.arm,
            "mode": gate.evidence,
        }
        matched = [a for a in arms
                   if applies(gate, a.policy, a.errors, names.get(a.policy, frozenset()), scenario_arms, best)]  # fmt: skip
        if not matched:
            if not unmatched_fail:
                continue
            note = f"no arm of these runs matches arm {gate.arm!r}, so nothing was judged"
            out.append(ExpectationResult(**base, policy="", errors="", value=None, seeds=0, passed=False,
                                         evidence="missing", note=note))  # fmt: skip
            continue
        chosen = "" if _patterns(gate, scenario_arms) is not None or best is None else "the headline's best arm; "
        for arm in matched:
            figure, n, worst, how = _figure(gate, arm, seeds, confidence)
            verdict = rule_judge(figure, rule, bound, gate.evidence)
            passed = verdict.passed
            note = f"{chosen}{how}; evidence {verdict.reason}"
            errored = _policy_errors(arm)
            if errored and not allow_policy_errors:
                passed = False
                note += (
                    f"; the policy errored on {errored} task(s), so its figures measure the bug: fix the policy, "
                    f"or pass {allow_hint}"
                )
            out.append(
                ExpectationResult(
                    **base,
                    policy=arm.policy,
                    errors=arm.errors,
                    value=figure.value,
                    seeds=n,
                    worst_seed=worst,
                    passed=passed,
                    evidence=verdict.evidence,
                    note=note,
                )
            )
    return out


def _num(x: float) -> str:
    return f"{x:.6g}"


def _observed(metric: str, x: float) -> str:
    """The figure as the bound is written, and a rate also as a percentage a reader takes in at once."""
    from fleetchaos.results.registry import is_rate

    return f"{x:.6g} = {100 * x:.1f}%" if is_rate(metric) else _num(x)


def line(record: ExpectationResult) -> str:
    """One verdict on one line: ``ok expect[0] success_rate at_least 0.8 for P on E: 0.91 (mean over 5 seeds; ...)``."""
    verdict = "ok" if record.passed else "FAILED"
    arm = f"{record.policy} on {record.errors}" if record.policy else f"arm {record.arm}"
    value = "no value" if record.value is None else _observed(record.metric, record.value)
    mode = " (decisive evidence)" if record.mode == "decisive" else ""
    return (
        f"{verdict} expect[{record.gate}] {record.metric} {record.rule} {_num(record.bound)}{mode} for {arm}: "
        f"{value} ({record.note})"
    )


def summary_line(records: Sequence[ExpectationResult], scenario: str) -> str:
    """The verdict of every gate together: how many passed or failed, and on what evidence."""
    failed = sum(not r.passed for r in records)
    weak = sum(r.passed and r.evidence == "weak" for r in records)
    on_weak = f", {weak} of them on weak evidence" if weak else ""
    if failed:
        return f"{failed} of {len(records)} expect verdict(s) failed (scenario {scenario})"
    return f"all {len(records)} expect verdict(s) passed{on_weak} (scenario {scenario})"


def failure_message(record: ExpectationResult, scenario: str, replays: Mapping[int, str]) -> str:
    """A failed gate as a test failure: the scenario's gate, its verdict line, and the command replaying the worst seed."""
    lines = [f"expect[{record.gate}] of scenario {scenario} failed:", f"  {line(record)}"]
    replay = replays.get(record.worst_seed) if record.worst_seed is not None else None
    if replay:
        which = "the only seed" if len(replays) == 1 else f"the worst seed ({record.worst_seed})"
        lines.append(f"  replay {which}: {replay}")
    return "\n".join(lines)
