"""The scenario's ``expect:`` gates judged on the runs: one rule for the CLI and the pytest plugin.

A gate (:class:`fleetchaos.scenario.expect.Expectation`) applies to every arm its ``arm``
matches (every arm without one).  Before anything runs, :func:`check_arms` refuses a gate
whose arm is not one the command runs (a gate must never pass because its arm was left
out).  After the runs, :func:`judge` compares each gate's figure of each arm it applies to
with its bound, from the arm's :class:`~fleetchaos.results.models.ArmResult` (what
``compare`` aggregates; ``run`` and the plugin aggregate their runs the same way):

* ``mean``: the mean over the seeds where the metric has a value;
* ``interval``: the confidence interval's end on the bound's side (the lower end for
  ``at_least``, the upper end for ``at_most``); with one seed, a rate of tasks uses the
  Wilson interval of that seed's tasks, and a count has no interval, which fails;
* ``every_seed``: the worst seed's value.

A gate fails when its figure has no value (no seed gave one, no interval), and on an arm
whose policy errored unless that is allowed: never green on missing evidence or on a broken
policy.  Each verdict is an :class:`~fleetchaos.results.models.ExpectationResult`, which the
results record.

Light to import: pydantic and the scenario and result models, no SimPy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.results.models import ArmResult, ExpectationResult
from fleetchaos.scenario.expect import ANY, Expectation, split_arm

__all__ = [
    "ArmName",
    "applies",
    "check_arms",
    "failure_message",
    "judge",
    "line",
    "summary_line",
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


def applies(gate: Expectation, policy: str, errors: str, names: Iterable[str] = ()) -> bool:
    """Whether ``gate`` applies to the arm of ``policy`` (as results record it, or any of ``names``) on ``errors``."""
    if gate.arm is None:
        return True
    want_policy, want_errors = split_arm(gate.arm)
    if want_errors not in (ANY, errors):
        return False
    return want_policy == ANY or want_policy in set(names) or _canonical(want_policy) == policy


def check_arms(gates: Sequence[Expectation], arms: Sequence[ArmName], source: str, hint: str) -> None:
    """Refuse, before anything runs, a gate whose ``arm`` matches none of ``arms`` (a :class:`UserError`).

    ``source`` names the scenario in the message; ``hint`` says how to run the missing arm
    (``--policy P --errors E`` for ``run``).
    """
    listed = ", ".join(a.label() for a in arms)
    for i, gate in enumerate(gates):
        if gate.arm is None:
            continue
        if split_arm(gate.arm)[0] == _TUNED:
            raise UserError(
                f"{source}: expect[{i}].arm {gate.arm!r}: a tuned arm's spec is known only after tuning; "
                "leave arm out, or write */FORMAT, to gate the tuned arms"
            )
        if not any(applies(gate, a.policy, a.errors, a.names) for a in arms):
            raise UserError(
                f"{source}: expect[{i}].arm {gate.arm!r} is not an arm this command runs (arms: {listed}); "
                f"run it too ({hint}), or pass --no-expect to run without the scenario's gates"
            )


def _rate_of_one_seed(arm: ArmResult, metric: str, low_end: bool) -> float | None:
    pooled = arm.pooled.get(metric)
    if pooled is None:
        return None
    return pooled.low if low_end else pooled.high


def _figure(gate: Expectation, arm: ArmResult, seeds: Sequence[int], confidence: float):
    """(the figure compared with the bound, seeds with a value, the worst seed, how it was made or why it has none)."""
    metric = gate.metric
    rule, _ = gate.bound
    least = rule == "at_least"
    values = list(arm.per_seed.get(metric) or [])
    by_seed = {s: v for s, v in zip(seeds, values) if v is not None}
    n = len(by_seed)
    if not by_seed:
        return None, 0, None, f"no value on any of {len(values)} seed(s): its denominator was empty"
    worst = (min if least else max)(by_seed, key=lambda s: (by_seed[s], s) if least else (by_seed[s], -s))
    left_out = f"; {len(values) - n} seed(s) without a value left out" if n < len(values) else ""
    over = f"{n} seed{'s' if n != 1 else ''}"
    if gate.statistic == "every_seed":
        return by_seed[worst], n, worst, f"worst of {over}, seed {worst}{left_out}"
    if gate.statistic == "mean":
        return arm.metrics.get(metric), n, worst, f"mean over {over}{left_out}"
    pct = f"{round(confidence * 100)}%"
    end = "lower" if least else "upper"
    low, high = [*(arm.ci.get(metric) or []), None, None][:2]
    value = low if least else high
    if value is not None:
        return value, n, worst, f"{end} end of the {pct} interval over {over}{left_out}"
    value = _rate_of_one_seed(arm, metric, least) if n == 1 else None
    if value is not None:
        return value, n, worst, f"{end} end of the {pct} Wilson interval of one seed's tasks"
    return None, n, worst, f"no {pct} interval from {over}: run two or more seeds, or gate on the mean"


def _policy_errors(arm: ArmResult) -> int:
    return int(sum(v or 0 for v in arm.per_seed.get("policy_errors") or []))


def judge(
    gates: Sequence[Expectation],
    arms: Sequence[ArmResult],
    seeds: Sequence[int],
    *,
    confidence: float,
    names: Mapping[str, frozenset[str]] | None = None,
    allow_policy_errors: bool = False,
    allow_hint: str = "--allow-policy-errors",
    unmatched_fail: bool = True,
) -> list[ExpectationResult]:
    """Every gate on every arm it applies to, in gate order then arm order.

    ``seeds`` are the arms' seeds (the order of their per-seed values); ``names`` maps an
    arm's policy to the other spellings that name it (as typed on the command line).  A
    gate that matches no arm gets one failing verdict (``unmatched_fail``; else none, for a
    test that runs one arm of a scenario whose gates name others).  An arm whose policy
    errored fails every gate on it unless ``allow_policy_errors`` (``allow_hint`` says how
    to allow it).
    """
    names = names or {}
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
        }
        matched = [a for a in arms if applies(gate, a.policy, a.errors, names.get(a.policy, frozenset()))]
        if not matched:
            if not unmatched_fail:
                continue
            note = f"no arm of these runs matches arm {gate.arm!r}, so nothing was judged"
            out.append(ExpectationResult(**base, policy="", errors="", value=None, seeds=0, passed=False, note=note))
            continue
        for arm in matched:
            value, n, worst, note = _figure(gate, arm, seeds, confidence)
            passed = value is not None and (value >= bound if rule == "at_least" else value <= bound)
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
                    value=value,
                    seeds=n,
                    worst_seed=worst,
                    passed=passed,
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
    """One verdict on one line: ``ok expect[0] success_rate at_least 0.8 for P on E: 0.91 (mean over 5 seeds)``."""
    verdict = "ok" if record.passed else "FAILED"
    arm = f"{record.policy} on {record.errors}" if record.policy else f"arm {record.arm}"
    value = "no value" if record.value is None else _observed(record.metric, record.value)
    return (
        f"{verdict} expect[{record.gate}] {record.metric} {record.rule} {_num(record.bound)} for {arm}: "
        f"{value} ({record.note})"
    )


def summary_line(records: Sequence[ExpectationResult], scenario: str) -> str:
    """The verdict of every gate together: how many passed or failed."""
    failed = sum(not r.passed for r in records)
    if failed:
        return f"{failed} of {len(records)} expect verdict(s) failed (scenario {scenario})"
    return f"all {len(records)} expect verdict(s) passed (scenario {scenario})"


def failure_message(record: ExpectationResult, scenario: str, replays: Mapping[int, str]) -> str:
    """A failed gate as a test failure: the scenario's gate, its verdict line, and the command replaying the worst seed."""
    lines = [f"expect[{record.gate}] of scenario {scenario} failed:", f"  {line(record)}"]
    replay = replays.get(record.worst_seed) if record.worst_seed is not None else None
    if replay:
        which = "the only seed" if len(replays) == 1 else f"the worst seed ({record.worst_seed})"
        lines.append(f"  replay {which}: {replay}")
    return "\n".join(lines)
