"""Best against best: each error format's own tuned policy, and what separates them.

``best`` in a comparison's policies stands for the policy tuned on each of its error
formats: tuned now (:func:`tune_each`, :mod:`fleetchaos.runs.tune` on training seeds
disjoint from the comparison's), or shipped with the scenario (its ``tuned:`` block,
:func:`shipped_best`, chosen by the same search and recorded with the command that did it).

The headline layout (:func:`headline_arms`) runs each format's best on its own format, the
first format's best (the envelope-less reference policy) on every other format too, and a
few weak reference arms.  :func:`tuning_record` then says which arm is which and gives
three kinds of paired difference over the comparison's seeds (:class:`Gap`):

* ``lead``: each format's best minus the next best format's best, ranked by the objective;
* ``envelope``: the best of the formats with an envelope minus the best of those without
  one (:func:`has_envelope`): the figure a decision maker reads, and the one the
  sensitivity study (:mod:`fleetchaos.runs.sensitivity`) follows;
* ``format``: the same policy on another format minus on the format it was tuned for:
  what the format alone changes, a separate figure from best against best.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import TYPE_CHECKING

from fleetchaos.errors import UserError
from fleetchaos.results.models import ArmResult, CompareResult, RunResult, rounded
from fleetchaos.results.studies import ArmRole, Gap, TuningRecord
from fleetchaos.runs.tune import TuneSpec, best_trial, check_tune, search

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

__all__ = [
    "BEST",
    "DEFAULT_REFERENCES",
    "DEFAULT_TUNE_FORMATS",
    "ENVELOPE",
    "FORMAT",
    "LEAD",
    "Shipped",
    "best_arm",
    "envelope_gap",
    "expand_best",
    "gaps",
    "has_envelope",
    "headline_arms",
    "shipped_best",
    "tune_each",
    "tuning_record",
    "with_aliases",
]

#: The policy name that stands for "the policy tuned on this format".
BEST = "best"
#: The formats ``compare --tune`` tunes without ``--errors``: the ladder of what a failure reveals
#: without an envelope (a bare word, an HTTP status and exception class, the raw vendor text), then
#: the structured envelope.
DEFAULT_TUNE_FORMATS = ("generic", "status", "raw", "structured")
#: The weak reference arms best against best shows beside the tuned ones (without a ``tuned:`` block).
DEFAULT_REFERENCES = (("blind-retry", "generic"),)
#: The kinds of :class:`Gap` a tuning record holds.
LEAD, ENVELOPE, FORMAT = "lead", "envelope", "format"


def has_envelope(errors: str) -> bool:
    """Whether a format reports a failure in an envelope (``generic``, ``status`` and ``raw`` do not).

    A format without an envelope leaves how a partly failed fan-out step reads to the
    scenario (``partial_batch`` None): the marker every format declares.
    """
    from fleetchaos.sim.formats import get_format

    return getattr(get_format(errors), "partial_batch", None) is not None


class Shipped:
    """A scenario's shipped tuned policies for some formats, and whether they were tuned for this very world."""

    def __init__(self, spec: Scenario, formats: Sequence[str]):
        from fleetchaos.scenario.tuned import world_fingerprint

        tuned = spec.tuned
        assert tuned is not None and all(f in tuned.policies for f in formats)  # shipped_best checked it
        self.best = {f: tuned.policies[f] for f in formats}
        self.command = tuned.command
        self.train_seeds = list(tuned.train_seeds)
        self.references = tuned.reference_arms()
        self.matches_world = world_fingerprint(spec) == tuned.world

    def check_seeds(self, seeds: Sequence[int]) -> None:
        """Refuse comparison seeds the shipped search trained on."""
        _disjoint(self.train_seeds, seeds, "the tuned policies shipped with the scenario were trained on")


def shipped_best(spec: Scenario, formats: Sequence[str]) -> Shipped | None:
    """The scenario's ``tuned:`` policies when it has one for every format in ``formats``, else None."""
    if spec.tuned is None or not all(f in spec.tuned.policies for f in formats):
        return None
    return Shipped(spec, formats)


def _disjoint(train: Sequence[int], seeds: Sequence[int], what: str) -> None:
    shared = sorted(set(train) & set(seeds))
    if shared:
        raise UserError(
            f"--tune: the comparison's seeds include training seeds ({', '.join(map(str, shared[:5]))}): {what} "
            "them; a tuned policy must be judged on seeds its search never ran: choose other --seeds/--first-seed"
        )


def tune_each(
    base: TuneSpec,
    errors: tuple[str, ...],
    seeds: list[int],
    *,
    executor: Executor,
    on_result: Callable[[str, RunResult], None] | None = None,
) -> dict[str, str]:
    """The best spec for each error format of ``errors``, searched on ``base``'s training seeds (none of them in
    ``seeds``)."""
    _disjoint(base.train_seeds, seeds, "the search runs on")
    best = {}
    for each in errors:
        spec = replace(base, errors=each, holdout_seeds=tuple(seeds))
        families = check_tune(spec)
        best[each] = best_trial(spec, search(spec, executor=executor, on_result=on_result, families=families)).policy
    return best


def expand_best(policies: tuple[str, ...], best: dict[str, str]) -> tuple[str, ...]:
    """``policies`` with ``best`` replaced by each format's tuned spec (in format order, each once)."""
    out: list[str] = []
    for policy in policies:
        for name in best.values() if policy == BEST else (policy,):
            if name not in out:
                out.append(name)
    return tuple(out)


def headline_arms(best: dict[str, str], references: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """Best against best's arms: the references, then each tuned policy on its formats.

    Each format's best runs on its own format; the first format's best (the envelope-less
    reference policy) runs on every format, for the format-alone figure.  Each arm once.
    """
    formats = list(best)
    arms: list[tuple[str, str]] = list(dict.fromkeys(references))
    for policy in dict.fromkeys(best.values()):
        mine = formats if policy == best[formats[0]] else [f for f in formats if best[f] == policy]
        arms += [(policy, f) for f in mine if (policy, f) not in arms]
    return arms


def with_aliases(result: CompareResult, best: dict[str, str]) -> CompareResult:
    """``result`` with each tuned arm's alias set (``best-for-FORMAT``, ``best-for-A+B`` when one spec won on several)."""
    arms = []
    for arm in result.arms:
        tuned_for = [e for e, p in best.items() if p == arm.policy]
        arms.append(arm.model_copy(update={"alias": f"best-for-{'+'.join(tuned_for)}"}) if tuned_for else arm)
    return result.model_copy(update={"arms": arms})


def tuning_record(
    result: CompareResult,
    best: dict[str, str],
    *,
    objective: str,
    train_seeds: Sequence[int],
    search: str = "",
    trials: int = 0,
    source: str = "tuned",
    command: str = "",
    matches_world: bool = True,
) -> TuningRecord:
    """What the tuning chose, each arm's role, and the paired differences between them (:func:`gaps`)."""
    roles = []
    for arm in result.arms:
        tuned_for = next((f for f, p in best.items() if p == arm.policy), "")
        if not tuned_for:
            continue
        own = best.get(arm.errors) == arm.policy
        roles.append(
            ArmRole(
                policy=arm.policy,
                errors=arm.errors,
                role=f"best for {arm.errors}" if own else f"same policy as best for {tuned_for}",
                tuned_for=arm.errors if own else tuned_for,
            )
        )
    return TuningRecord(
        objective=objective,
        search=search,
        trials=trials,
        train_seeds=list(train_seeds),
        best=best,
        roles=roles,
        gaps=gaps(result, best, objective),
        source=source,
        command=command,
        matches_world=matches_world,
    )


def best_arm(result: CompareResult, best: dict[str, str], errors: str) -> ArmResult | None:
    """The arm of ``errors``'s tuned policy on ``errors``, if the comparison ran it."""
    return next((a for a in result.arms if a.errors == errors and a.policy == best.get(errors)), None)


def _mean(arm: ArmResult, metric: str, sign: float) -> float:
    value = arm.metrics.get(metric)
    return float("-inf") if value is None else sign * float(value)


def _gap(kind: str, label: str, arm: ArmResult, ref: ArmResult, metric: str, confidence: float) -> Gap:
    from fleetchaos.results.stats import paired_difference

    diff = paired_difference(arm.per_seed.get(metric, []), ref.per_seed.get(metric, []), confidence)
    return Gap(
        kind=kind,
        label=label,
        policy=arm.policy,
        errors=arm.errors,
        reference_policy=ref.policy,
        reference_errors=ref.errors,
        metric=metric,
        n=diff.n,
        mean_difference=rounded(diff.mean),
        ci=[rounded(diff.low), rounded(diff.high)],
    )


def envelope_gap(
    arms: Sequence[ArmResult], metric: str, confidence: float, higher_is_better: bool = True
) -> Gap | None:
    """The best arm with an envelope minus the best without one (each format's best arm given once), paired."""
    sign = 1.0 if higher_is_better else -1.0
    with_env = [a for a in arms if has_envelope(a.errors)]
    without = [a for a in arms if not has_envelope(a.errors)]
    if not with_env or not without:
        return None
    top = max(with_env, key=lambda a: _mean(a, metric, sign))  # max keeps the first of equals
    other = max(without, key=lambda a: _mean(a, metric, sign))
    label = f"best with an envelope ({top.errors}) minus best without one ({other.errors})"
    return _gap(ENVELOPE, label, top, other, metric, confidence)


def gaps(result: CompareResult, best: dict[str, str], metric: str) -> list[Gap]:
    """Each format's lead over the next (ranked by ``metric``), the envelope's lead, and the format-alone rows."""
    from fleetchaos.results.registry import direction

    sign = 1.0 if direction(metric) is not False else -1.0
    own = [arm for f in best if (arm := best_arm(result, best, f)) is not None]
    ranked = sorted(own, key=lambda a: -_mean(a, metric, sign))  # stable: format order among equals
    out = [
        _gap(LEAD, f"best on {a.errors} minus best on {b.errors}", a, b, metric, result.confidence)
        for a, b in itertools.pairwise(ranked)
    ]
    envelope = envelope_gap(own, metric, result.confidence, sign > 0)
    if envelope is not None:
        out.append(envelope)
    for policy in dict.fromkeys(best.values()):
        home = next(f for f, p in best.items() if p == policy)
        ref = result.arm(policy, home) if any(a.policy == policy and a.errors == home for a in result.arms) else None
        if ref is None:
            continue
        for arm in result.arms:
            if arm.policy == policy and arm.errors != home:
                label = f"the same policy on {arm.errors} minus on {home}"
                out.append(_gap(FORMAT, label, arm, ref, metric, result.confidence))
    return out
