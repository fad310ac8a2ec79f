"""The regression rule: how much worse than a baseline a metric may get, judged seed by seed.

One rule for ``--fail-on`` in the CLI and ``--fleetchaos-fail-on`` in the pytest plugin,
in the manner of pytest-benchmark's ``--benchmark-compare-fail``: each spec names a
metric and how much worse it may get than the baseline before the gate fails.  "Worse"
follows the metric's direction (:mod:`fleetchaos.results.registry`): a drop for
``recovery_rate``, a rise for ``wasted_retries``.

Spec forms (``METRIC:THRESHOLD``)::

    recovery_rate:-2%      may fall at most 2% relative to the baseline value
    recovery_rate:2%       the same (the sign is optional; if given it must point the worse way)
    recovery_rate:-0.02    may fall at most 0.02 absolute (two percentage points of a rate)
    wasted_retries:+10%    may rise at most 10%
    cost_usd:5             may rise at most 5 (USD)

What is compared (:func:`judge`): runs on the same seed met the same faults, so they are
paired.  For each metric, the seeds where both the new runs and the baseline have a
value are the pairs; the change is the mean of the per-seed differences (equal to the
difference of the two means over those seeds), and a relative threshold is a fraction of
the baseline's mean over them.  When the two share no seed (or the baseline kept only
means), the means over each side's own seeds are compared, and the check says so.  A
relative threshold against a baseline of 0 fails on any worsening.

``common_recovery_rate`` is judged on a common set of each pair: the union of the new
run's and the baseline run's faulted tasks on that seed, read from both runs' task sets
(:mod:`fleetchaos.results.common_set`), so the two values of a pair share one denominator.

Light to import (the standard library, the registry, :mod:`fleetchaos.names` and the
bitmaps of :mod:`fleetchaos.results.common_set`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fleetchaos.errors import UserError
from fleetchaos.names import check_metric
from fleetchaos.results.common_set import common_pair
from fleetchaos.results.registry import DIRECTIONLESS, GATED_METRICS, direction

#: The metric judged on the union of the two runs' faulted tasks, seed by seed.
COMMON_RECOVERY = "common_recovery_rate"

_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*$")

#: A worsening this small is rounding, not a regression.
_TOLERANCE = 1e-12


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

    @property
    def informative(self) -> bool:
        """True for a rule that only reports the change and never fails (an infinite threshold)."""
        return math.isinf(self.threshold)


def parse_fail_on(spec: str, option: str = "--fail-on") -> FailOn:
    """Parse ``METRIC:THRESHOLD`` (``recovery_rate:-2%``, ``wasted_retries:10``); a bad spec is a :class:`UserError`.

    ``option`` names the option in messages (``--fleetchaos-fail-on`` in the plugin).
    """
    m = _SPEC.match(spec)
    if m is None:
        raise UserError(
            f"{option} {spec!r}: expected METRIC:THRESHOLD, for example recovery_rate:-2% (relative) "
            "or recovery_rate:-0.02 (absolute)"
        )
    name, sign, number, pct = m.groups()
    check_metric(name, f"{option} {spec!r}")
    if name in DIRECTIONLESS:
        raise UserError(
            f"{option} {spec!r}: {name} has no better direction, so it cannot regress; gate on another metric"
        )
    higher = direction(name)
    worse_sign = "-" if higher else "+"
    if sign and sign != worse_sign:
        word = "higher" if higher else "lower"
        raise UserError(
            f"{option} {spec!r}: {name} is better {word}, so a regression is a {'fall' if higher else 'rise'}; "
            f"write {name}:{worse_sign}{number}{pct} (or leave the sign out)"
        )
    value = float(number)
    if pct:
        value /= 100.0
    return FailOn(metric=name, threshold=value, relative=bool(pct), text=spec.strip())


def parse_fail_ons(specs: Iterable[str], option: str = "--fail-on") -> list[FailOn]:
    """Parse every spec; a spec may hold several separated by commas."""
    out = []
    for spec in specs:
        for part in spec.split(","):
            if part.strip():
                out.append(parse_fail_on(part, option))
    return out


def default_rules(*, informative: bool) -> list[FailOn]:
    """The rules of a baseline given without thresholds: each gated metric of the registry.

    ``informative`` rules report the change and never fail (the CLI's ``--baseline`` alone);
    otherwise each gated metric may worsen by its default threshold (the plugin's
    ``--fleetchaos-baseline`` alone).
    """
    if informative:
        return [FailOn(name, math.inf, False, name) for name in GATED_METRICS]
    return [parse_fail_on(f"{name}:{gate}") for name, gate in GATED_METRICS.items()]


@dataclass(frozen=True)
class Arm:
    """One arm's figures on each seed it ran: what the rule compares.

    ``per_seed`` maps a seed to that run's metrics.  ``means`` is set instead when only
    the means over ``seeds`` are known (a comparison results file of an older version).
    ``task_sets`` maps a seed to that run's task sets (:attr:`RunResult.task_sets`), when
    known: what judging ``common_recovery_rate`` on the pair's union needs.
    """

    label: str
    per_seed: Mapping[int, Mapping[str, float | None]] = field(default_factory=dict)
    means: Mapping[str, float | None] | None = None
    seeds: tuple[int, ...] = ()
    task_sets: Mapping[int, Mapping[str, str]] = field(default_factory=dict)

    def values(self, metric: str) -> dict[int, float]:
        """Seed -> the metric's value, for the seeds where it has one."""
        out = {}
        for seed, metrics in self.per_seed.items():
            value = metrics.get(metric)
            if value is not None:
                out[seed] = float(value)
        return out

    def mean(self, metric: str) -> float | None:
        """The metric's mean over the seeds where it has a value (or the stored mean)."""
        if self.means is not None:
            value = self.means.get(metric)
            return None if value is None else float(value)
        return _mean(list(self.values(metric).values()))


def arm_of(label: str, runs: Iterable) -> Arm:
    """An :class:`Arm` from results with ``seed`` and ``metrics`` (RunResults, stored runs).

    Several runs on one seed (the points of a sweep) are averaged into that seed's value
    (and their task sets, which name different tasks, are not kept).
    """
    by_seed: dict[int, list[Mapping[str, float | None]]] = {}
    sets: dict[int, list[Mapping[str, str]]] = {}
    for run in runs:
        by_seed.setdefault(int(run.seed), []).append(run.metrics)
        sets.setdefault(int(run.seed), []).append(getattr(run, "task_sets", None) or {})
    per_seed = {seed: _average(found) for seed, found in sorted(by_seed.items())}
    task_sets = {seed: found[0] for seed, found in sorted(sets.items()) if len(found) == 1 and found[0]}
    return Arm(label, per_seed, seeds=tuple(per_seed), task_sets=task_sets)


def _average(metrics: list[Mapping[str, float | None]]) -> Mapping[str, float | None]:
    if len(metrics) == 1:
        return metrics[0]
    out: dict[str, float | None] = {}
    for name in dict.fromkeys(k for m in metrics for k in m):
        out[name] = _mean([m.get(name) for m in metrics])
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
    paired_seeds: tuple[int, ...] = ()
    """The seeds compared pair by pair (empty when the means of each side's own seeds were)."""
    worst_seed: int | None = None
    """The paired seed that got the most worse; without pairs, the new runs' worst seed (None without values)."""

    def line(self) -> str:
        """One line saying what was compared and whether it regressed."""
        name = self.rule.metric
        if self.current is None or self.baseline is None:
            return f"skipped {name} for {self.arm}: no value ({self.note or 'empty denominator'})"
        change = self.current - self.baseline
        rel = f" ({_pct(change / abs(self.baseline))})" if self.baseline else ""
        informative = self.rule.informative
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


def judge(rule: FailOn, current: Arm, baseline: Arm, baseline_ref: str) -> Check:
    """The one regression rule: ``current`` against ``baseline`` on ``rule``'s metric, paired by seed.

    The pairs are the seeds where both arms have a value; the change is the mean of the
    per-seed changes, judged against the threshold (a relative one against the
    baseline's mean over the pairs).  Without a seed in common, the means over each
    arm's own seeds are compared, with a note saying so.  A missing value on either side
    skips the check (it never fails).
    """
    name = rule.metric

    def made(cur, base, seeds, note="", pairs=(), worst=None) -> Check:
        failed = cur is not None and base is not None and worsening(rule, cur, base) > rule.threshold + _TOLERANCE
        return Check(rule, current.label, baseline.label, baseline_ref, cur, base, seeds, failed, note, pairs, worst)

    cur_values = current.values(name)
    # Unpaired, the seed to replay is the new runs' worst: the lowest value when higher is better.
    worst_own = min(cur_values, key=lambda s: (cur_values[s] * (1 if direction(name) else -1), s), default=None)
    if baseline.means is not None:
        return made(current.mean(name), baseline.mean(name), len(cur_values),
                    "the baseline kept no per-seed values: means over each group's own seeds", worst=worst_own)  # fmt: skip
    base_values = baseline.values(name)
    common = set(current.per_seed) & set(baseline.per_seed)
    if not common:
        return made(current.mean(name), baseline.mean(name), len(cur_values),
                    "no seed in common: means over each group's own seeds", worst=worst_own)  # fmt: skip
    note = ""
    if name == COMMON_RECOVERY:
        cur_values, base_values, note = _on_pair_unions(current, baseline, common, cur_values, base_values)
    pairs = tuple(sorted(s for s in common if s in cur_values and s in base_values))
    if not pairs:
        return made(None, None, 0, f"no seed where both have a value among {len(common)} in common")
    cur = sum(cur_values[s] for s in pairs) / len(pairs)
    base = sum(base_values[s] for s in pairs) / len(pairs)
    worst = max(pairs, key=lambda s: (worsening(rule, cur_values[s], base_values[s]), -s))
    return made(cur, base, len(pairs), note, pairs=pairs, worst=worst)


def _on_pair_unions(
    current: Arm, baseline: Arm, seeds: set[int], cur_values: dict[int, float], base_values: dict[int, float]
) -> tuple[dict[int, float], dict[int, float], str]:
    """Each seed's common recovery of both arms on the union of their two runs' faulted tasks.

    A seed where either side kept no task sets keeps its stored values (each computed on
    its own comparison's common set), and the note says on how many seeds that happened.
    """
    cur, base = dict(cur_values), dict(base_values)
    fallback = 0
    for seed in seeds:
        mine, theirs = current.task_sets.get(seed), baseline.task_sets.get(seed)
        if not mine or not theirs:
            fallback += 1
            continue
        pair = common_pair(mine, theirs)
        cur.pop(seed, None)
        base.pop(seed, None)
        if pair is not None:  # no task faulted in either run: no value on that seed
            cur[seed], base[seed] = pair
    if not fallback:
        return cur, base, "on the union of both runs' faulted tasks, seed by seed"
    return (
        cur,
        base,
        (
            f"{fallback} of {len(seeds)} seed(s) without task sets on one side: their stored values, "
            "each on its own comparison's common set"
        ),
    )


def check_arms(rules: list[FailOn], pairs: Iterable[tuple[Arm, Arm]], baseline_ref: str) -> list[Check]:
    """Every rule for every (current, baseline) pair of arms, in order."""
    return [judge(rule, cur, base, baseline_ref) for cur, base in pairs for rule in rules]


def _arm_key(r) -> tuple[str, str]:
    return (r.policy, r.errors)


def match_group(
    current: Mapping[tuple[str, str], Arm], baseline: Mapping[tuple[str, str], Arm], baseline_ref: str
) -> list[tuple[Arm, Arm]]:
    """Pair a command's arms with a stored group's arms by (policy, error format).

    When both sides hold exactly one arm they are paired whatever their names (so a run
    can be gated against a stored run of another policy).  No arm in common is a
    :class:`UserError`; a current arm with no match is left out.
    """
    if not baseline:
        raise UserError(f"--baseline {baseline_ref}: the group holds no runs; pick another (see `fleetchaos history`)")
    if len(current) == 1 and len(baseline) == 1:
        return [(next(iter(current.values())), next(iter(baseline.values())))]
    pairs = [(arm, baseline[key]) for key, arm in current.items() if key in baseline]
    if not pairs:
        raise UserError(
            f"--baseline {baseline_ref}: no arm in common (this run: {_names(current)}; baseline: {_names(baseline)})"
        )
    return pairs


def group_arms(runs: Iterable) -> dict[tuple[str, str], Arm]:
    """Runs grouped into arms by (policy, error format), in first-seen order."""
    found: dict[tuple[str, str], list] = {}
    for r in runs:
        found.setdefault(_arm_key(r), []).append(r)
    return {key: arm_of(f"{key[0]} on {key[1]}", rs) for key, rs in found.items()}


def check(rules: list[FailOn], current: Iterable, baseline: Iterable, baseline_ref: str) -> list[Check]:
    """Check every rule for every arm of the ``current`` runs against the matching arm of the ``baseline`` runs.

    Runs are anything with ``policy``, ``errors``, ``seed`` and ``metrics``; arms match
    as :func:`match_group` says, and each pair is judged by :func:`judge`.
    """
    pairs = match_group(group_arms(current), group_arms(baseline), baseline_ref)
    return check_arms(rules, pairs, baseline_ref)


def _names(arms: Mapping[tuple[str, str], Arm]) -> str:
    return ", ".join(f"{p} on {e}" for p, e in arms)
