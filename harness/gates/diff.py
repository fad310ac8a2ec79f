"""``fleetchaos history diff A B``: two stored groups or results files compared without running anything.

Runs on the same seed of the same arm (policy and error format) met the same faults, so
they are paired, as the regression gate pairs them (:mod:`fleetchaos.gates.regression`).
For each arm both sides have and each metric asked for (the registry's headline metrics
by default), the diff gives the mean of A and of B over the paired seeds, the mean of the
per-seed differences B - A with its Student-t interval (:func:`fleetchaos.results.stats.paired_difference`,
cut to [-1, 1] for a rate), the number of pairs and the verdict of B against A.
``common_recovery_rate`` depends on the arms that ran (its common set is every task faulted
in any arm), so, as the gate does, it is compared on the arms both sides ran: recomputed
seed by seed on the union of those arms' faulted tasks on both sides when every run kept its
task sets, else compared as stored only when both sides computed it over the same arms, and
otherwise given the verdict ``not comparable`` with the reason, never a difference.

Nothing is left out silently: arms only one side has, and an arm's seeds only one side
ran, are listed; two sides that ran different scenarios (another name, another
fingerprint, other parameters) get a warning.

When each side holds one scenario variant (a run or a comparison), arms are paired by
policy and format whatever the variant (and a difference is warned about); otherwise
(sweeps, folders of several scenarios) by scenario, parameters, policy and format.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetchaos.gates.diff_sides import DiffRun, Side
from fleetchaos.results.common_set import common_counts, faulted_union
from fleetchaos.results.models import rounded
from fleetchaos.results.registry import HEADLINE_METRICS, REGISTRY, direction, is_rate
from fleetchaos.results.stats import DEFAULT_CONFIDENCE, bounded, paired_difference, verdict

__all__ = ["ArmDiff", "Diff", "MetricDiff", "Unpaired", "diff_sides", "variant_text"]

_COMMON = "common_recovery_rate"
#: The verdict of a metric no seed pairs.
NOT_PAIRED = "not paired"
#: The verdict of a figure the two sides computed differently (``common_recovery_rate`` over other arms).
NOT_COMPARABLE = "not comparable"


@dataclass(frozen=True, slots=True)
class MetricDiff:
    """One metric of one arm: the two means over the paired seeds and their paired difference B - A."""

    metric: str
    unit: str
    higher_is_better: bool | None
    a_mean: float | None
    b_mean: float | None
    difference: float | None
    low: float | None
    high: float | None
    pairs: int
    verdict: str
    """B against A: better, worse, inconclusive, no difference, too few seeds, no direction, not paired, or
    not comparable."""
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """The figures as a JSON object (rounded as results are)."""
        return {
            "metric": self.metric,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "a_mean": rounded(self.a_mean),
            "b_mean": rounded(self.b_mean),
            "difference": rounded(self.difference),
            "ci": [rounded(self.low), rounded(self.high)],
            "pairs": self.pairs,
            "verdict": self.verdict,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class ArmDiff:
    """An arm both sides ran: its paired seeds, the seeds only one side ran, and each metric's difference."""

    scenario: str | None
    """The scenario and parameters the arm is paired within (None when each side holds one variant)."""
    params: str | None
    policy: str
    errors: str
    paired_seeds: tuple[int, ...]
    only_a: tuple[int, ...]
    only_b: tuple[int, ...]
    metrics: tuple[MetricDiff, ...]
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``policy on errors`` (with the scenario variant when arms are paired within variants)."""
        where = variant_text(self.scenario, self.params)
        return f"{self.policy} on {self.errors}" + (f" ({where})" if where else "")


@dataclass(frozen=True, slots=True)
class Unpaired:
    """An arm only one side ran, with the seeds it ran."""

    side: str
    """``A`` or ``B``."""
    scenario: str | None
    params: str | None
    policy: str
    errors: str
    seeds: tuple[int, ...]

    @property
    def label(self) -> str:
        """``policy on errors`` (with its scenario variant when arms are paired within variants)."""
        where = variant_text(self.scenario, self.params)
        return f"{self.policy} on {self.errors}" + (f" ({where})" if where else "")


@dataclass
class Diff:
    """Everything ``history diff`` prints: the two sides, warnings, paired arms and unpaired ones."""

    a: Side
    b: Side
    confidence: float
    metrics: tuple[str, ...]
    arms: list[ArmDiff] = field(default_factory=list)
    unpaired: list[Unpaired] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The diff as one JSON document (``history diff --json``)."""

        def side(s: Side) -> dict[str, Any]:
            return {"ref": s.ref, "source": s.source, "status": s.status, "runs": len(s.runs),
                    "fingerprints": dict(sorted(s.fingerprints.items()))}  # fmt: skip

        def variant(scenario: str | None, params: str | None) -> dict[str, Any]:
            return {} if scenario is None else {"scenario": scenario, "params": params}

        return {
            "a": side(self.a),
            "b": side(self.b),
            "confidence": self.confidence,
            "metrics": list(self.metrics),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "arms": [
                {
                    **variant(arm.scenario, arm.params),
                    "policy": arm.policy,
                    "errors": arm.errors,
                    "paired_seeds": list(arm.paired_seeds),
                    "seeds_only_in_a": list(arm.only_a),
                    "seeds_only_in_b": list(arm.only_b),
                    "notes": list(arm.notes),
                    "metrics": [m.to_json() for m in arm.metrics],
                }
                for arm in self.arms
            ],
            "unpaired": [
                {
                    "side": u.side,
                    **variant(u.scenario, u.params),
                    "policy": u.policy,
                    "errors": u.errors,
                    "seeds": list(u.seeds),
                }
                for u in self.unpaired
            ],
        }


def variant_text(scenario: str | None, params: str | None) -> str:
    """A scenario variant for people: ``small`` or ``small, faults[0].probability=0.1``."""
    if scenario is None:
        return ""
    import json

    values = json.loads(params) if params else {}
    given = ", ".join(f"{p}={json.dumps(v)}" for p, v in values.items()) if isinstance(values, dict) else ""
    return f"{scenario}, {given}" if given else scenario


def _mean(values: Iterable[float]) -> float | None:
    xs = list(values)
    return sum(xs) / len(xs) if xs else None


def _by_seed(runs: list[DiffRun]) -> tuple[dict[int, DiffRun], list[int]]:
    """One run per seed; several runs on one seed are averaged (their task sets, naming other tasks, dropped)."""
    found: dict[int, list[DiffRun]] = {}
    for r in runs:
        found.setdefault(r.seed, []).append(r)
    out, averaged = {}, []
    for seed, rs in sorted(found.items()):
        if len(rs) == 1:
            out[seed] = rs[0]
            continue
        averaged.append(seed)
        names = dict.fromkeys(k for r in rs for k in r.metrics)
        metrics = {n: _mean(v for r in rs if (v := r.metrics.get(n)) is not None) for n in names}
        out[seed] = DiffRun(rs[0].scenario, rs[0].params, rs[0].policy, rs[0].errors, seed, metrics)
    return out, averaged


def _common(
    a: dict[int, DiffRun], b: dict[int, DiffRun], common: list[int], masks: dict[int, int]
) -> tuple[dict[int, float], dict[int, float], str, str]:
    """``common_recovery_rate`` of both sides on the arms both ran: (A's values, B's, a note, why not comparable)."""
    a_vals: dict[int, float] = {}
    b_vals: dict[int, float] = {}
    recomputed, stored, lacking = 0, 0, []
    for s in common:
        if s in masks and a[s].task_sets and b[s].task_sets:
            recomputed += 1
            if masks[s]:  # no task faulted in any arm on either side: no value on that seed
                size = masks[s].bit_count()
                a_vals[s] = common_counts(masks[s], a[s].task_sets)[0] / size
                b_vals[s] = common_counts(masks[s], b[s].task_sets)[0] / size
        elif a[s].arm_set is not None and a[s].arm_set == b[s].arm_set:
            stored += 1
            for side, vals in ((a, a_vals), (b, b_vals)):
                if (v := side[s].metrics.get(_COMMON)) is not None:
                    vals[s] = v
        else:
            lacking.append(s)
    if lacking:
        sides = {"A": a[lacking[0]].arm_set, "B": b[lacking[0]].arm_set}
        counts = ", ".join(f"{k} over {len(v) if v is not None else 'unknown'} arm(s)" for k, v in sides.items())
        return (
            {},
            {},
            "",
            (
                f"computed over different arms ({counts}) and without task sets on {len(lacking)} paired seed(s) to "
                "recompute it on the arms both ran: the two figures are not fractions of the same tasks"
            ),
        )
    parts = [f"recomputed on the tasks faulted in the arms both ran, on {recomputed} seed(s)"] if recomputed else []
    parts += [f"stored values on {stored} seed(s), both over the same arms"] if stored else []
    return a_vals, b_vals, "; ".join(parts), ""


def _metric(
    name: str, a: dict[int, DiffRun], b: dict[int, DiffRun], common: list[int], confidence: float,
    masks: dict[int, int],
) -> MetricDiff:  # fmt: skip
    a_vals = {s: v for s, r in a.items() if (v := r.metrics.get(name)) is not None}
    b_vals = {s: v for s, r in b.items() if (v := r.metrics.get(name)) is not None}
    note = ""
    if name == _COMMON and common:
        a_vals, b_vals, note, why = _common(a, b, common, masks)
        if why:
            unit = REGISTRY[name].unit
            return MetricDiff(name, unit, direction(name), None, None, None, None, None, 0, NOT_COMPARABLE, why)
    unit, better = REGISTRY[name].unit if name in REGISTRY else "", direction(name)
    pairs = [s for s in common if s in a_vals and s in b_vals]
    if not pairs:
        why = "no seed in common" if not common else "no paired seed where both have a value"
        return MetricDiff(name, unit, better, _mean(a_vals.values()), _mean(b_vals.values()), None, None, None, 0,
                          NOT_PAIRED, f"{why}: means over each side's own seeds")  # fmt: skip
    diff = paired_difference([b_vals[s] for s in pairs], [a_vals[s] for s in pairs], confidence)
    if is_rate(name):  # a difference of two proportions lies in [-1, 1]
        diff = bounded(diff, -1.0, 1.0)
    a_mean, b_mean = _mean(a_vals[s] for s in pairs), _mean(b_vals[s] for s in pairs)
    return MetricDiff(name, unit, better, a_mean, b_mean, diff.mean, diff.low, diff.high, diff.n,
                      verdict(diff, better), note)  # fmt: skip


def _masks(arms_a: dict[tuple, list[DiffRun]], arms_b: dict[tuple, list[DiffRun]], keys: list[tuple]) -> dict:
    """Per variant (scenario, parameters), seed -> the union of the faulted tasks of every arm both sides ran.

    A seed gets a common set only when every one of those runs, on both sides, kept its task sets.
    """
    out: dict[tuple, dict[int, int]] = {}
    for variant in dict.fromkeys(k[:2] for k in keys):
        runs = [r for k in keys if k[:2] == variant for r in (*arms_a[k], *arms_b[k])]
        by_seed: dict[int, list[DiffRun]] = {}
        for r in runs:
            by_seed.setdefault(r.seed, []).append(r)
        wanted = 2 * sum(1 for k in keys if k[:2] == variant)
        out[variant] = {s: faulted_union(r.task_sets for r in rs) for s, rs in by_seed.items()
                        if len(rs) == wanted and all(r.task_sets for r in rs)}  # fmt: skip
    return out


def _variants(side: Side) -> list[tuple[str, str | None]]:
    return list(dict.fromkeys((r.scenario, r.params) for r in side.runs))


def _scenario_warnings(a: Side, b: Side, single: bool) -> tuple[list[str], list[str]]:
    """Warnings when the two sides ran different scenarios, and notes when that could not be checked."""
    warnings, notes = [], []
    va, vb = _variants(a), _variants(b)
    if single and va[0][0] != vb[0][0]:
        warnings.append(
            f"different scenarios: A ran {va[0][0]!r}, B ran {vb[0][0]!r}; arms are paired by policy and format, "
            "but the two sides met different faults, so a difference is not the policy's alone"
        )
    elif single and va[0][1] is not None and vb[0][1] is not None and va[0][1] != vb[0][1]:
        warnings.append(
            f"different parameters: A ran {variant_text(*va[0])}, B ran {variant_text(*vb[0])}; arms are paired "
            "by policy and format, but the two sides met different faults"
        )
    for name in sorted(set(a.fingerprints) & set(b.fingerprints)):
        fa, fb = a.fingerprints[name], b.fingerprints[name]
        if fa != fb:
            warnings.append(
                f"scenario {name!r} differs between the sides (fingerprint {fa} in A, {fb} in B): the scenario "
                "file or its --param values changed, so the same seed met different faults"
            )
    for label, side, other in (("A", a, b), ("B", b, a)):
        unknown = sorted({r.scenario for r in side.runs} - set(side.fingerprints))
        if unknown and (single or set(unknown) & {r.scenario for r in other.runs}):
            notes.append(
                f"{label} ({side.source}) recorded no fingerprint of {', '.join(map(repr, unknown))} "
                "(a run's or a sweep's results file keeps none): whether both sides ran the same scenario "
                "was not checked"
            )
    return warnings, notes


def diff_sides(
    a: Side, b: Side, *, metrics: Sequence[str] = HEADLINE_METRICS, confidence: float = DEFAULT_CONFIDENCE
) -> Diff:
    """Pair the runs of ``a`` and ``b`` by arm and seed and compute each metric's paired difference B - A."""
    single = len(_variants(a)) == 1 and len(_variants(b)) == 1
    key: Callable[[DiffRun], tuple]
    if single:
        key = lambda r: (None, None, r.policy, r.errors)  # noqa: E731 - one variant a side: pair by arm alone
    else:
        key = lambda r: (r.scenario, r.params or "{}", r.policy, r.errors)  # noqa: E731
    out = Diff(a, b, confidence, tuple(metrics))
    out.warnings, out.notes = _scenario_warnings(a, b, single)
    for label, loaded in (("A", a), ("B", b)):
        out.warnings += [f"{label}: {note}" for note in loaded.notes]
    arms_a: dict[tuple, list[DiffRun]] = {}
    arms_b: dict[tuple, list[DiffRun]] = {}
    for runs, arms in ((a.runs, arms_a), (b.runs, arms_b)):
        for r in runs:
            arms.setdefault(key(r), []).append(r)
    paired_keys = [k for k in arms_a if k in arms_b]
    masks = _masks(arms_a, arms_b, paired_keys)
    for k in dict.fromkeys([*arms_a, *arms_b]):
        scenario, params, policy, errors = k
        if k not in arms_b or k not in arms_a:
            side, runs = ("A", arms_a[k]) if k in arms_a else ("B", arms_b[k])
            out.unpaired.append(Unpaired(side, scenario, params, policy, errors, tuple(sorted({r.seed for r in runs}))))
            continue
        (sa, avg_a), (sb, avg_b) = _by_seed(arms_a[k]), _by_seed(arms_b[k])
        common = sorted(set(sa) & set(sb))
        notes = tuple(
            f"{label} ran several runs on seed(s) {', '.join(map(str, seeds))}: their figures are averaged"
            for label, seeds in (("A", avg_a), ("B", avg_b))
            if seeds
        )
        figures = tuple(
            _metric(name, sa, sb, common, confidence, masks.get((scenario, params), {})) for name in metrics
        )
        only_a = tuple(s for s in sa if s not in sb)
        only_b = tuple(s for s in sb if s not in sa)
        out.arms.append(ArmDiff(scenario, params, policy, errors, tuple(common), only_a, only_b, figures, notes))
    return out
