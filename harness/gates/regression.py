"""Regression gates: compare a run group with a stored baseline and fail on regressions.

In the manner of pytest-benchmark's ``--benchmark-compare-fail``: each ``--fail-on``
spec names a metric and how much worse it may get than the baseline before the command
exits 1.  "Worse" follows the metric's direction (docs/metrics.md): a drop for
``recovery_rate``, a rise for ``wasted_retries``.

Spec forms (``METRIC:THRESHOLD``)::

    recovery_rate:-2%      may fall at most 2% relative to the baseline value
    recovery_rate:2%       the same (the sign is optional; if given it must point the worse way)
    recovery_rate:-0.02    may fall at most 0.02 absolute (two percentage points of a rate)
    wasted_retries:+10%    may rise at most 10%
    cost_usd:5             may rise at most 5 (USD)

What is compared: for each arm (policy on error format) the mean of the metric over the
seeds both groups ran (the same seeds face the same faults); when they share no seed,
the means over each group's own seeds.  A relative threshold against a baseline of 0
fails on any worsening.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from fleetchaos.errors import UserError
from fleetchaos.names import check_metric
from fleetchaos.results.models import RunResult
from fleetchaos.results.registry import DIRECTIONLESS, direction

_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*$")


@dataclass(frozen=True, slots=True)
class FailOn:
    """One parsed ``--fail-on`` spec."""

    metric: str
    threshold: float
    """The allowed worsening, >= 0: a fraction of the baseline when ``relative``, else in the metric's units."""
    relative: bool
    text: str

    def allowed(self) -> str:
        """The threshold as the user wrote it, with the worse direction's sign."""
        sign = "-" if direction(self.metric) else "+"
        if self.relative:
            return f"{sign}{_num(self.threshold * 100)}%"
        return f"{sign}{_num(self.threshold)}"


def parse_fail_on(spec: str) -> FailOn:
    """Parse ``METRIC:THRESHOLD`` (``recovery_rate:-2%``, ``wasted_retries:10``); a bad spec is a :class:`UserError`."""
    m = _SPEC.match(spec)
    if m is None:
        raise UserError(
            f"--fail-on {spec!r}: expected METRIC:THRESHOLD, for example recovery_rate:-2% (relative) "
            "or recovery_rate:-0.02 (absolute)"
        )
    name, sign, number, pct = m.groups()
    check_metric(name, f"--fail-on {spec!r}")
    if name in DIRECTIONLESS:
        raise UserError(
            f"--fail-on {spec!r}: {name} has no better direction, so it cannot regress; gate on another metric"
        )
    higher = direction(name)
    worse_sign = "-" if higher else "+"
    if sign and sign != worse_sign:
        word = "higher" if higher else "lower"
        raise UserError(
            f"--fail-on {spec!r}: {name} is better {word}, so a regression is a {'fall' if higher else 'rise'}; "
            f"write {name}:{worse_sign}{number}{pct} (or leave the sign out)"
        )
    value = float(number)
    if pct:
        value /= 100.0
    return FailOn(metric=name, threshold=value, relative=bool(pct), text=spec.strip())


def parse_fail_ons(specs: tuple[str, ...] | list[str]) -> list[FailOn]:
    """Parse every spec; a spec may hold several separated by commas."""
    out = []
    for spec in specs:
        for part in spec.split(","):
            if part.strip():
                out.append(parse_fail_on(part))
    return out


@dataclass(frozen=True, slots=True)
class Check:
    """One metric of one arm checked against the baseline."""

    rule: FailOn
    arm: str
    baseline_arm: str
    baseline_ref: str
    current: float | None
    baseline: float | None
    seeds: int
    failed: bool
    note: str = ""

    def line(self) -> str:
        """One line saying what was compared and whether it regressed."""
        name = self.rule.metric
        if self.current is None or self.baseline is None:
            return f"skipped {name} for {self.arm}: no value ({self.note or 'empty denominator'})"
        change = self.current - self.baseline
        rel = f" ({_pct(change / abs(self.baseline))})" if self.baseline else ""
        informative = math.isinf(self.rule.threshold)
        verdict = "REGRESSION" if self.failed else ("compared" if informative else "ok")
        allowed = "" if informative else f", allowed {self.rule.allowed()}"
        return (
            f"{verdict} {name} for {self.arm}: {_num(self.current)} against {_num(self.baseline)} "
            f"in baseline {self.baseline_ref} ({self.baseline_arm}), change {_signed(change)}{rel}"
            f"{allowed} over {self.seeds} seed{'' if self.seeds == 1 else 's'}{'; ' + self.note if self.note else ''}"
        )


def _num(x: float) -> str:
    return f"{x:.6g}"


def _signed(x: float) -> str:
    return f"{x:+.6g}"


def _pct(x: float) -> str:
    return f"{100 * x:+.2f}%"


def worsening(rule: FailOn, current: float, baseline: float) -> float:
    """How much worse ``current`` is than ``baseline`` in the rule's terms (negative when better)."""
    delta = (baseline - current) if direction(rule.metric) else (current - baseline)
    if not rule.relative:
        return delta
    if baseline == 0:
        return math.inf if delta > 0 else (0.0 if delta == 0 else -math.inf)
    return delta / abs(baseline)


def _mean(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def _arm(r) -> tuple[str, str]:
    return (r.policy, r.errors)


def check(
    rules: list[FailOn],
    current: list[RunResult],
    baseline: list[RunResult],
    baseline_ref: str,
) -> list[Check]:
    """Check every rule for every arm of ``current`` against the matching arm of ``baseline``.

    Arms match by (policy, error format).  When both sides hold exactly one arm they are
    compared whatever their names (so a run can be gated against a stored run of another
    policy).  A current arm with no match is a :class:`UserError` if no arm matches at all,
    and is skipped otherwise.
    """
    cur_arms: dict[tuple[str, str], list[RunResult]] = {}
    for r in current:
        cur_arms.setdefault(_arm(r), []).append(r)
    base_arms: dict[tuple[str, str], list[RunResult]] = {}
    for r in baseline:
        base_arms.setdefault(_arm(r), []).append(r)
    if not base_arms:
        raise UserError(f"--baseline {baseline_ref}: the group holds no runs; pick another (see `fleetchaos history`)")
    pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
    if len(cur_arms) == 1 and len(base_arms) == 1:
        pairs = [(next(iter(cur_arms)), next(iter(base_arms)))]
    else:
        pairs = [(a, a) for a in cur_arms if a in base_arms]
        if not pairs:
            raise UserError(
                f"--baseline {baseline_ref}: no arm in common (this run: {_names(cur_arms)}; baseline: {_names(base_arms)})"
            )
    checks = []
    for cur_key, base_key in pairs:
        cur_runs, base_runs = cur_arms[cur_key], base_arms[base_key]
        common = sorted({r.seed for r in cur_runs} & {r.seed for r in base_runs})
        note = ""
        if common:
            cur_runs = [r for r in cur_runs if r.seed in common]
            base_runs = [r for r in base_runs if r.seed in common]
        else:
            note = "no seed in common: means over each group's own seeds"
        for rule in rules:
            cur = _mean([r.metrics.get(rule.metric) for r in cur_runs])
            base = _mean([r.metrics.get(rule.metric) for r in base_runs])
            failed = cur is not None and base is not None and worsening(rule, cur, base) > rule.threshold + 1e-12
            checks.append(
                Check(
                    rule=rule,
                    arm=f"{cur_key[0]} on {cur_key[1]}",
                    baseline_arm=f"{base_key[0]} on {base_key[1]}",
                    baseline_ref=baseline_ref,
                    current=cur,
                    baseline=base,
                    seeds=len(common) if common else len(cur_runs),
                    failed=failed,
                    note=note,
                )
            )
    return checks


def _names(arms: dict[tuple[str, str], list]) -> str:
    return ", ".join(f"{p} on {e}" for p, e in arms)
