"""The regression gate: how much worse than a baseline a metric got, judged seed by seed by the one gate rule.

One gate for ``--fail-on`` in the CLI and ``--fleetchaos-fail-on`` in the pytest plugin, in
the manner of pytest-benchmark's ``--benchmark-compare-fail``; the thresholds and their
units are :mod:`fleetchaos.gates.fail_on`, the verdict is :mod:`fleetchaos.gates.rule`'s.

What is compared (:func:`judge`): runs on the same seed met the same faults, so they are
paired.  For each metric, the seeds where the baseline has a value are the pairs; the
figure is the mean of the per-seed worsenings (the change in the metric's worse
direction), with its Student-t interval across the pairs, and the bound is the worsening
the threshold allows (a relative threshold is a fraction of the baseline's mean over the
pairs; against a baseline of 0 any worsening fails).  The mean decides, and the evidence
(decisive or weak) is stated; in the ``decisive`` mode a pass also needs the whole
interval within the allowance.

A figure the baseline has and the new runs lost (``mean_time_to_recovery_s`` when a policy
stops recovering) fails: a missing figure is a regression, never "skipped".  A figure
undefined on both sides fails when the user asked for it (nothing can be judged) and is
reported as not judged for the registry's default gates (nothing changed).

``common_recovery_rate`` depends on which arms ran (its common set is every task faulted
in any arm), so it is compared on the arms both sides ran: seed by seed, the union of the
tasks those arms' runs met a fault on, on both sides (:func:`common_masks`), read from the
runs' task sets.  Without task sets it is compared only when both sides computed it over
the same arms; otherwise the check says the two are not comparable and fails.

Light to import (the standard library, the registry, the statistics and the bitmaps of
:mod:`fleetchaos.results.common_set`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from fleetchaos.errors import UserError
from fleetchaos.gates.fail_on import FailOn
from fleetchaos.gates.rule import AT_MOST, DEFAULT_EVIDENCE, Figure, Verdict
from fleetchaos.gates.rule import judge as rule_judge
from fleetchaos.results.common_set import common_counts, faulted_union
from fleetchaos.results.registry import direction
from fleetchaos.results.stats import DEFAULT_CONFIDENCE, mean_ci

__all__ = [
    "COMMON_RECOVERY",
    "Arm",
    "ArmKey",
    "Check",
    "arm_of",
    "check",
    "check_arms",
    "common_masks",
    "group_arms",
    "judge",
    "match_group",
    "worsening",
]

#: The metric whose value depends on the set of arms that ran (its common set).
COMMON_RECOVERY = "common_recovery_rate"

ArmKey = tuple[str, str]
"""(policy, error format)."""

#: What a check is: judged by the rule, a figure that went missing, two figures that cannot be compared,
#: or (a default gate) a figure neither side has.
JUDGED, MISSING, INCOMPARABLE, UNJUDGED = "judged", "missing", "not comparable", "not judged"


@dataclass(frozen=True)
class Arm:
    """One arm's figures on each seed it ran: what the rule compares.

    ``per_seed`` maps a seed to that run's metrics.  ``means`` is set instead when only
    the means over ``seeds`` are known (a comparison results file of an older version).
    ``task_sets`` maps a seed to that run's task sets (:attr:`RunResult.task_sets`), when
    known: what recomputing ``common_recovery_rate`` needs.  ``arm_set`` is the set of arms
    its stored ``common_recovery_rate`` was computed over (None when unknown).
    """

    label: str
    per_seed: Mapping[int, Mapping[str, float | None]] = field(default_factory=dict)
    means: Mapping[str, float | None] | None = None
    seeds: tuple[int, ...] = ()
    task_sets: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    arm_set: frozenset[ArmKey] | None = None

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


def arm_of(label: str, runs: Iterable, arm_set: frozenset[ArmKey] | None = None) -> Arm:
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
    return Arm(label, per_seed, seeds=tuple(per_seed), task_sets=task_sets, arm_set=arm_set)


def _average(metrics: list[Mapping[str, float | None]]) -> Mapping[str, float | None]:
    if len(metrics) == 1:
        return metrics[0]
    out: dict[str, float | None] = {}
    for name in dict.fromkeys(k for m in metrics for k in m):
        out[name] = _mean([m.get(name) for m in metrics])
    return out


def _num(x: float) -> str:
    return f"{x:.6g}"


def _signed(x: float) -> str:
    return f"{x + 0.0:+.6g}"  # no "-0"


def _pct(x: float) -> str:
    return f"{100 * x:+.2f}%"


def _seeds(seeds: Iterable[int]) -> str:
    from fleetchaos.gates.assertions import seeds_text

    return seeds_text(sorted(seeds))


@dataclass(frozen=True, slots=True)
class Check:
    """One metric of one arm checked against the baseline: the figures, the verdict and its evidence."""

    rule: FailOn
    arm: str
    baseline_arm: str
    baseline_ref: str
    current: float | None
    baseline: float | None
    seeds: int
    state: str = JUDGED
    """``judged``, ``missing`` (the baseline has the figure, these runs lost it), ``not comparable`` or
    ``not judged`` (a default gate on a figure neither side has)."""
    verdict: Verdict | None = None
    """The rule's verdict on the change (None unless judged)."""
    note: str = ""
    paired_seeds: tuple[int, ...] = ()
    """The seeds compared pair by pair (empty when the means over the baseline's seeds were)."""
    worst_seed: int | None = None
    """The paired seed that got the most worse (None without values)."""
    interval: tuple[float, float] | None = None
    """The confidence interval of the change (current - baseline, in the metric's units), when it has one."""

    @property
    def failed(self) -> bool:
        """Whether this check fails the gate (an informative rule never does)."""
        if self.rule.informative or self.state == UNJUDGED:
            return False
        if self.state in (MISSING, INCOMPARABLE):
            return True
        return self.verdict is not None and not self.verdict.passed

    @property
    def evidence(self) -> str:
        """The verdict's evidence (``decisive``, ``weak``), or the state when the figure was not judged."""
        return self.verdict.evidence if self.verdict is not None else self.state

    def line(self) -> str:
        """One line saying what was compared, whether it regressed, and on what evidence."""
        name = self.rule.metric
        informative = self.rule.informative
        where = f"{name} for {self.arm}"
        if self.state == INCOMPARABLE:
            return f"{'not compared' if informative else 'FAILED'} {where}: not comparable with baseline {self.baseline_ref}: {self.note}"
        if self.state == UNJUDGED:
            return f"not judged {where}: {self.note}"
        if self.state == MISSING:
            head = "compared" if informative else "REGRESSION"
            tail = "" if informative else ": a missing figure fails the gate"
            return f"{head} {where}: {self.note}{tail}"
        assert self.current is not None and self.baseline is not None
        change = self.current - self.baseline
        rel = f" ({_pct(change / abs(self.baseline))})" if self.baseline else ""
        verdict = "compared" if informative else ("REGRESSION" if self.failed else "ok")
        allowed = "" if informative else f", allowed {self.rule.allowed()}"
        text = (
            f"{verdict} {where}: {_num(self.current)} against {_num(self.baseline)} in baseline {self.baseline_ref} "
            f"({self.baseline_arm}), change {_signed(change)}{rel}{allowed} over {self.seeds} "
            f"seed{'' if self.seeds == 1 else 's'}"
        )
        if not informative and self.verdict is not None:
            text += f"; evidence {self.verdict.reason}"
            if self.interval is not None:
                text += f" (interval of the change {_signed(self.interval[0])}..{_signed(self.interval[1])})"
        return text + (f"; {self.note}" if self.note else "")


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


def common_masks(pairs: Iterable[tuple[Arm, Arm]]) -> dict[int, int]:
    """Seed -> the union of the faulted tasks of every arm both sides ran, on both sides.

    ``pairs`` are the (current, baseline) arms both sides ran; a seed is given a common set
    only when every one of those runs kept its task sets.  On it, both sides'
    ``common_recovery_rate`` share one denominator: the tasks faulted in any arm both ran.
    """
    pairs = list(pairs)
    if not pairs:
        return {}
    seeds = set.intersection(*(set(c.task_sets) & set(b.task_sets) for c, b in pairs))
    return {s: faulted_union([*(c.task_sets[s] for c, _ in pairs), *(b.task_sets[s] for _, b in pairs)])
            for s in sorted(seeds)}  # fmt: skip


def _arms_text(arms: frozenset[ArmKey] | None) -> str:
    if arms is None:
        return "an unknown set of arms"
    return f"{len(arms)} arm{'s' if len(arms) != 1 else ''} ({', '.join(f'{p} on {e}' for p, e in sorted(arms))})"


def _common_values(
    current: Arm, baseline: Arm, seeds: list[int], masks: Mapping[int, int] | None
) -> tuple[dict[int, float], dict[int, float], str, str]:
    """(current values, baseline values, note, why not comparable) of ``common_recovery_rate`` on ``seeds``."""
    masks = masks or {}
    same_set = current.arm_set is not None and current.arm_set == baseline.arm_set
    cur, base = {}, {}
    recomputed = stored = 0
    lacking = []
    for s in seeds:
        mask = masks.get(s)
        if mask is not None and s in current.task_sets and s in baseline.task_sets:
            recomputed += 1
            if mask:  # no task faulted in any arm on either side: no value on that seed
                cur[s] = common_counts(mask, current.task_sets[s])[0] / mask.bit_count()
                base[s] = common_counts(mask, baseline.task_sets[s])[0] / mask.bit_count()
        elif same_set:
            stored += 1
            if (v := current.values(COMMON_RECOVERY).get(s)) is not None:
                cur[s] = v
            if (v := baseline.values(COMMON_RECOVERY).get(s)) is not None:
                base[s] = v
        else:
            lacking.append(s)
    if lacking:
        side = "the baseline" if all(s not in baseline.task_sets for s in lacking) else "a side"
        why = (
            f"common_recovery_rate depends on the arms that ran: the baseline's was computed over "
            f"{_arms_text(baseline.arm_set)}, this run's over {_arms_text(current.arm_set)}, and {side} kept no task "
            f"sets on seed(s) {_seeds(lacking)} to recompute it on the arms both ran; run the baseline's arms, or gate "
            "against a history group or an export of it (they keep task sets)"
        )
        return cur, base, "", why
    parts = []
    if recomputed:
        parts.append(f"recomputed on the tasks faulted in the arms both ran, on {recomputed} seed(s)")
    if stored:
        n = len(current.arm_set or ())
        parts.append(f"stored values on {stored} seed(s), both computed over the same {n} arm{'s' if n != 1 else ''}")
    return cur, base, "; ".join(parts), ""


def judge(
    rule: FailOn,
    current: Arm,
    baseline: Arm,
    baseline_ref: str,
    *,
    mode: str = DEFAULT_EVIDENCE,
    masks: Mapping[int, int] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Check:
    """The regression gate: ``current`` against ``baseline`` on ``rule``'s metric, paired by seed.

    ``masks`` are the common sets of :func:`common_masks` (for ``common_recovery_rate``).
    The seeds both ran are compared; a baseline that kept only means is compared by means
    (the caller makes sure it ran the same seeds).
    """
    name = rule.metric
    base_args = (rule, current.label, baseline.label, baseline_ref)

    def made(state: str, cur=None, base=None, n=0, note="", **kw) -> Check:
        return Check(*base_args, cur, base, n, state, note=note, **kw)

    if baseline.means is not None:
        cur_mean, base_mean = current.mean(name), baseline.mean(name)
        own = current.values(name)  # the seed to replay: the new runs' worst
        worst = min(own, key=lambda s: (own[s] * (1 if direction(name) else -1), s), default=None)
        check = _judged(rule, made, {0: cur_mean} if cur_mean is not None else {},
                        {0: base_mean} if base_mean is not None else {}, [0], mode, confidence,
                        "the baseline kept only means over its seeds", paired=False)  # fmt: skip
        return replace(check, worst_seed=worst, seeds=len(own) if check.state == JUDGED else check.seeds)
    common = sorted(set(current.per_seed) & set(baseline.per_seed))
    if not common:
        return made(INCOMPARABLE, note=f"no seed in common (this run: {_seeds(current.per_seed)}; baseline: "
                    f"{_seeds(baseline.per_seed)}), so no pair met the same faults")  # fmt: skip
    cur_values, base_values = current.values(name), baseline.values(name)
    note = ""
    if name == COMMON_RECOVERY:
        cur_values, base_values, note, why = _common_values(current, baseline, common, masks)
        if why:
            return made(INCOMPARABLE, note=why)
    unpaired = sorted(set(current.per_seed) - set(baseline.per_seed))
    if unpaired:  # never silently: the seeds the baseline did not run are named
        note = "; ".join(x for x in (note, f"seed(s) {_seeds(unpaired)} not in the baseline, not paired") if x)
    return _judged(rule, made, cur_values, base_values, common, mode, confidence, note, paired=True)


def _judged(rule, made, cur_values, base_values, seeds, mode, confidence, note, *, paired: bool) -> Check:
    """The verdict on the seeds in ``seeds``: missing, not judged, or the rule's verdict on the mean worsening."""
    name = rule.metric
    lost = [s for s in seeds if s in base_values and s not in cur_values]
    if lost:
        where = f" on seed(s) {_seeds(lost)}" if paired else ""
        had = ", ".join(_num(base_values[s]) for s in lost[:5])
        return made(MISSING, note=f"no value in this run{where}, where the baseline has one ({had})",
                    worst_seed=lost[0] if paired else None)  # fmt: skip
    pairs = [s for s in seeds if s in cur_values and s in base_values]
    if not pairs:
        why = f"no value on either side on any of {len(seeds)} seed(s)" + (f" ({note})" if note else "")
        if rule.asked:
            return made(MISSING, note=f"{why}: the figure cannot be judged; gate on a figure this scenario defines")
        return made(UNJUDGED, note=why)
    worse = {s: worsening(rule, cur_values[s], base_values[s]) for s in pairs}
    cur = sum(cur_values[s] for s in pairs) / len(pairs)
    base = sum(base_values[s] for s in pairs) / len(pairs)
    higher = direction(name)
    deltas = [(base_values[s] - cur_values[s]) if higher else (cur_values[s] - base_values[s]) for s in pairs]
    scale = abs(base) if rule.relative and base != 0 else 1.0
    threshold = 0.0 if rule.relative and base == 0 else rule.threshold  # relative to 0: any worsening fails
    mean, low, high = mean_ci([d / scale for d in deltas], confidence)
    interval = None
    if low is not None and high is not None:
        # back in the metric's units, as the change current - baseline
        ends = sorted(((-low if higher else low) * scale, (-high if higher else high) * scale))
        interval = (ends[0], ends[1])
    verdict = rule_judge(Figure(mean, low, high), AT_MOST, threshold, mode)
    worst = max(pairs, key=lambda s: (worse[s], -s)) if paired else None
    return made(JUDGED, cur, base, len(pairs), note, verdict=verdict, paired_seeds=tuple(pairs) if paired else (),
                worst_seed=worst, interval=interval)  # fmt: skip


def check_arms(
    rules: list[FailOn],
    pairs: Iterable[tuple[Arm, Arm]],
    baseline_ref: str,
    *,
    mode: str = DEFAULT_EVIDENCE,
    masks: Mapping[int, int] | None = None,
) -> list[Check]:
    """Every rule for every (current, baseline) pair of arms, in order."""
    pairs = list(pairs)
    if masks is None:
        masks = common_masks(pairs)
    return [judge(rule, cur, base, baseline_ref, mode=mode, masks=masks) for cur, base in pairs for rule in rules]


def _arm_key(r) -> ArmKey:
    return (r.policy, r.errors)


def match_group(
    current: Mapping[ArmKey, Arm], baseline: Mapping[ArmKey, Arm], baseline_ref: str
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


def group_arms(runs: Iterable) -> dict[ArmKey, Arm]:
    """Runs grouped into arms by (policy, error format), in first-seen order; each knows the set of them all."""
    found: dict[ArmKey, list] = {}
    for r in runs:
        found.setdefault(_arm_key(r), []).append(r)
    arm_set = frozenset(found)
    return {key: arm_of(f"{key[0]} on {key[1]}", rs, arm_set) for key, rs in found.items()}


def check(
    rules: list[FailOn], current: Iterable, baseline: Iterable, baseline_ref: str, *, mode: str = DEFAULT_EVIDENCE
) -> list[Check]:
    """Check every rule for every arm of the ``current`` runs against the matching arm of the ``baseline`` runs.

    Runs are anything with ``policy``, ``errors``, ``seed`` and ``metrics``; arms match
    as :func:`match_group` says, and each pair is judged by :func:`judge`.
    """
    pairs = match_group(group_arms(current), group_arms(baseline), baseline_ref)
    return check_arms(rules, pairs, baseline_ref, mode=mode)


def _names(arms: Mapping[ArmKey, Arm]) -> str:
    return ", ".join(f"{p} on {e}" for p, e in arms)
