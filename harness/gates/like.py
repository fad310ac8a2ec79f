"""Whether a baseline is like the runs gated against it: the same world, seeds in common, common sets that match.

A regression gate compares like with like or refuses.  Before anything runs (the CLI) or
when a test's runs are judged (the plugin), :func:`plan_problems` compares what the
baseline recorded with what the new runs are:

* **the scenario**: the world fingerprint (:mod:`fleetchaos.gates.identity`; a ``--param``
  value changes it, a description or an ``expect:`` gate does not), else the fingerprint of
  the whole scenario (groups stored before world fingerprints), else the ``--param`` values
  and the scenario's name; a baseline that recorded none is noted as unchecked;
* **the seeds**: at least one seed in common, or the same seeds for a baseline that kept
  only means (runs on one seed met the same faults; other seeds met others);
* **common sets**: ``common_recovery_rate`` depends on the arms that ran, so a gate on it
  needs the baseline's task sets (to recompute it on the arms both ran) or the same arms.

Each difference is a failing :class:`GateProblem` naming both sides and the fix; the CLI turns
them into exit 2 before any run, the plugin into the test's failure.

Light to import (the standard library and the gate's own modules).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fleetchaos.gates.identity import differences, params_key, scenario_fingerprint, world_fingerprint
from fleetchaos.gates.regression import COMMON_RECOVERY, ArmKey

if TYPE_CHECKING:
    from fleetchaos.gates.baseline_entry import BaselineEntry
    from fleetchaos.gates.fail_on import FailOn

__all__ = ["GateProblem", "RunsIdentity", "plan_problems"]


@dataclass(frozen=True, slots=True)
class GateProblem:
    """A gate failure that is not a regression (or, when not failing, a note): what and why, on one line."""

    kind: str
    """``other scenario``, ``other seeds``, ``not comparable``, ``new arm``, ``policy errors``,
    ``partial baseline`` or ``unchecked scenario``."""
    text: str
    failed: bool

    def line(self) -> str:
        """``FAILED new arm: ...`` or ``note new arm: ...``."""
        return f"{'FAILED' if self.failed else 'note'} {self.kind}: {self.text}"


@dataclass(frozen=True)
class RunsIdentity:
    """What the runs about to be gated ran: the scenario's name, fingerprints, validated JSON and ``--param`` values."""

    scenario: str
    world: str
    fingerprint: str
    config: Mapping[str, Any] = field(default_factory=dict, compare=False)
    params: str = "{}"

    @classmethod
    def of(cls, config: Mapping[str, Any], params: Iterable[tuple[str, Any]] | Mapping[str, Any] = ()) -> RunsIdentity:
        """The identity of a validated scenario (``spec.model_dump(mode="json")``) run with ``params`` applied."""
        given = dict(params.items() if isinstance(params, Mapping) else params)
        return cls(str(config.get("name", "")), world_fingerprint(config), scenario_fingerprint(config),
                   dict(config), params_key(given))  # fmt: skip


def _params_text(text: str) -> str:
    values = json.loads(text) if text else {}
    if not values:
        return "no --param"
    return ", ".join(f"--param {k}={json.dumps(v)}" for k, v in values.items())


def scenario_problem(entry: BaselineEntry, current: RunsIdentity, ref: str) -> GateProblem | None:
    """Whether ``entry`` (a baseline arm) ran another world than ``current``: a failing problem, a note, or None."""
    arm = f"{entry.policy} on {entry.errors}"
    if len(entry.params) > 1:
        return GateProblem(
            "other scenario",
            f"baseline {ref} holds {len(entry.params)} variants of the scenario for {arm} (a sweep's points, or "
            "runs with other --param values), so its figures mix worlds; gate against a run or compare group",
            True,
        )
    stored_params = entry.params[0] if entry.params else None
    mine = f"{current.scenario!r} with {_params_text(current.params)}"
    theirs = f"{entry.scenario!r}" + (f" with {_params_text(stored_params)}" if stored_params is not None else "")
    fix = (
        "the same seed met other faults, so no difference is the policy's alone; gate against a baseline of this "
        "scenario (store one with --label), or run the baseline's scenario"
    )
    if entry.world is not None:
        same, how = entry.world == current.world, f"world fingerprint {entry.world} against {current.world}"
    elif entry.fingerprint is not None:
        same, how = (
            entry.fingerprint == current.fingerprint,
            f"fingerprint {entry.fingerprint} against {current.fingerprint}",
        )
    else:
        same = stored_params is None or stored_params == current.params
        if same and entry.scenario == current.scenario:
            return GateProblem(
                "unchecked scenario",
                f"baseline {ref} ({arm}) recorded no fingerprint of its scenario (a run's results file keeps none): "
                "whether it ran the same world was not checked",
                False,
            )
        same, how = False, "by name and --param values"
    if same:
        return None
    found = differences(entry.config, current.config) if entry.config and current.config else []
    detail = f": {'; '.join(found)}" if found else ""
    return GateProblem(
        "other scenario",
        f"baseline {ref} ({arm}) ran {theirs}, this run {mine} ({how}){detail}; {fix}",
        True,
    )


def seeds_problem(entry: BaselineEntry, seeds: Sequence[int], ref: str) -> GateProblem | None:
    """A failing problem when ``entry`` shares no seed with ``seeds`` (or, keeping only means, ran other seeds)."""
    from fleetchaos.gates.assertions import seeds_text

    arm = f"{entry.policy} on {entry.errors}"
    theirs = sorted(entry.per_seed) if entry.per_seed else sorted(entry.seeds)
    if not entry.per_seed:
        if sorted(seeds) != theirs:
            return GateProblem(
                "other seeds",
                f"baseline {ref} ({arm}) kept only means, over seeds {seeds_text(theirs) or 'unknown'}, and this run "
                f"has seeds {seeds_text(sorted(seeds))}: means over other seeds differ by their faults; run its seeds, "
                "or gate against a baseline that kept each seed (a history group, an export, a newer results.json)",
                True,
            )
        return None
    if not set(theirs) & set(seeds):
        return GateProblem(
            "other seeds",
            f"baseline {ref} ({arm}) ran seeds {seeds_text(theirs)}, this run {seeds_text(sorted(seeds))}: no seed in "
            "common, so no pair met the same faults; run the baseline's seeds (--seeds/--first-seed, --seed)",
            True,
        )
    return None


def common_set_problem(
    pairs: Sequence[tuple[ArmKey, BaselineEntry]],
    arm_set: frozenset[ArmKey],
    seeds: Sequence[int],
    rules: Sequence[FailOn],
    ref: str,
) -> GateProblem | None:
    """A failing problem when ``common_recovery_rate`` is gated and cannot be compared on the arms both sides ran.

    It can when the baseline kept task sets for every arm both ran on every seed both ran
    (the gate recomputes it on them), or computed it over the same arms as these runs.
    """
    if not any(r.metric == COMMON_RECOVERY and r.asked and not r.informative for r in rules):
        return None
    lacking = []
    for _, entry in pairs:
        shared = set(entry.per_seed) & set(seeds)
        if entry.arm_set == arm_set or shared <= set(entry.task_sets):
            continue
        lacking.append(entry)
    if not lacking:
        return None
    theirs = lacking[0].arm_set
    theirs_text = "an unknown set of arms" if theirs is None else f"{len(theirs)} arm(s)"
    return GateProblem(
        "not comparable",
        f"{COMMON_RECOVERY} of baseline {ref} was computed over {theirs_text}, these runs' over {len(arm_set)} "
        f"({', '.join(f'{p} on {e}' for p, e in sorted(arm_set))}), and the baseline kept no task sets to recompute it "
        "on the arms both ran; run the baseline's arms, or gate against a history group, an export or a results.json "
        "of this version (they keep task sets)",
        True,
    )


def plan_problems(
    pairs: Sequence[tuple[ArmKey, BaselineEntry]],
    current: RunsIdentity | None,
    arm_set: frozenset[ArmKey],
    seeds: Sequence[int],
    rules: Sequence[FailOn],
    ref: str,
) -> list[GateProblem]:
    """Every difference between the baseline arms in ``pairs`` and the runs gated against them.

    ``pairs`` are (this run's arm, the baseline's entry it is judged against); ``current``
    says what the runs ran (None: not known, nothing checked); ``arm_set`` is every arm
    these runs' common sets are computed over; ``seeds`` their seeds.  One problem per kind
    (the first arm that shows it): a difference of scenario or seeds is the same for every arm.
    """
    out: list[GateProblem] = []
    kinds: set[str] = set()
    for _, entry in pairs:
        for problem in (
            scenario_problem(entry, current, ref) if current is not None else None,
            seeds_problem(entry, seeds, ref),
        ):
            if problem is not None and problem.kind not in kinds:
                kinds.add(problem.kind)
                out.append(problem)
    if not any(p.failed for p in out):
        common = common_set_problem(pairs, arm_set, seeds, rules, ref)
        if common is not None:
            out.append(common)
    return out
