"""One gate session, shared by the CLI's ``run``/``compare`` and the pytest plugin.

A :class:`GateSession` does, in this order, what a command or a test session asks of
the run history and a baseline:

1. before anything runs: parse the thresholds and resolve the baseline (a typo costs
   nothing: a bad spec or reference is a :class:`~fleetchaos.errors.UserError` at once),
   and for a command, check that the baseline is like the runs about to start
   (:meth:`GateSession.plan`: the same world, seeds in common, comparable common sets;
   :mod:`fleetchaos.gates.like`), refusing before any run when it is not;
2. as runs arrive: store each in the history in its own transaction (the CLI), keeping
   its figures for the gate when there is a baseline, and mark the group complete or
   interrupted at the end;
3. at the end (of the command, or of each scenario run of a test): judge the runs
   against the baseline with the regression gate (:func:`fleetchaos.gates.regression.judge`,
   whose verdict is the one gate rule of :mod:`fleetchaos.gates.rule`).

What differs between the two users is a :class:`GateProfile`: the names of the options
in messages, how arms are matched, and what a baseline without thresholds does
(:data:`COMMAND` reports the changes, :data:`SUITE` gates the registry's gated metrics at
their default thresholds).

Light to import: no SimPy; the history store is imported when it is used.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleetchaos.errors import UserError
from fleetchaos.gates.baseline import Baseline, load_baseline
from fleetchaos.gates.baseline_entry import BaselineEntry
from fleetchaos.gates.fail_on import default_rules, parse_fail_ons
from fleetchaos.gates.like import GateProblem, RunsIdentity, plan_problems
from fleetchaos.gates.regression import ArmKey, Check, arm_of, check_arms
from fleetchaos.gates.rule import DEFAULT_EVIDENCE, check_mode

if TYPE_CHECKING:
    from fleetchaos.results.models import RunResult
    from fleetchaos.scenario.load import Scenario

__all__ = [
    "COMMAND",
    "EXIT_GATE",
    "SUITE",
    "GateProblem",
    "GateProfile",
    "GateSession",
    "RunsIdentity",
    "policy_error_count",
]

#: Exit code of a command whose regression gate failed.
EXIT_GATE = 1


@dataclass(frozen=True)
class GateProfile:
    """How one front end (the CLI, the pytest plugin) names and uses the session's options."""

    baseline_option: str
    fail_on_option: str
    by_scenario: bool
    """Arms match by (scenario, policy, errors) and each test's runs are judged alone; else a command's group
    matches the stored group by (policy, errors) (:func:`~fleetchaos.gates.regression.match_group`)."""
    gate_by_default: bool
    """A baseline without thresholds gates the registry's gated metrics; else it only reports their changes."""
    baseline_hint: str
    """Said when thresholds come without a baseline."""
    fail_on_new_option: str
    evidence_option: str
    allow_policy_errors_option: str
    allow_partial_option: str
    history_option: str
    """The option naming the run-history file, for messages."""


#: The CLI's ``run`` and ``compare``: ``--baseline`` names a history group, results JSON or a report folder.
COMMAND = GateProfile(
    baseline_option="--baseline",
    fail_on_option="--fail-on",
    by_scenario=False,
    gate_by_default=False,
    baseline_hint="a stored run group (see `fleetchaos history`), a results.json or a report folder to compare with",
    fail_on_new_option="--fail-on-new",
    evidence_option="--evidence",
    allow_policy_errors_option="--allow-policy-errors",
    allow_partial_option="--allow-partial-baseline",
    history_option="--history",
)

#: The pytest plugin: ``--fleetchaos-baseline`` names results JSON, a report folder or a history group.
SUITE = GateProfile(
    baseline_option="--fleetchaos-baseline",
    fail_on_option="--fleetchaos-fail-on",
    by_scenario=True,
    gate_by_default=True,
    baseline_hint="a results.json, a report folder or a history group to compare with",
    fail_on_new_option="--fleetchaos-fail-on-new",
    evidence_option="--fleetchaos-evidence",
    allow_policy_errors_option="allow_policy_errors=True (marker or fleetchaos.run)",
    allow_partial_option="--fleetchaos-allow-partial-baseline",
    history_option="--fleetchaos-history",
)


def _check_label(label: str | None) -> str | None:
    if label is None:
        return None
    if not label.strip():
        raise UserError("--label: give a non-empty name")
    if label.strip().lstrip("#").isdigit() or label.strip() == "latest":
        raise UserError(f"--label {label!r}: a label cannot be a number or 'latest' (those name groups by id)")
    return label.strip()


def _arm_names(arms: Iterable[ArmKey]) -> str:
    return ", ".join(f"{p} on {e}" for p, e in arms)


class GateSession:
    """One command's or one test session's use of the run history and a baseline."""

    def __init__(
        self,
        profile: GateProfile,
        *,
        baseline_ref: str | None = None,
        fail_on: Iterable[str] = (),
        history_path: Path | str | None = None,
        store: bool = False,
        label: str | None = None,
        fail_on_source: str | None = None,
        allow_policy_errors: bool = False,
        fail_on_new: bool = False,
        allow_partial_baseline: bool = False,
        evidence: str = DEFAULT_EVIDENCE,
    ):
        """Parse the thresholds, resolve the baseline and open the history, before anything runs.

        ``store`` appends each run given to :meth:`add` to the history at ``history_path``
        (default ``$FLEETCHAOS_HISTORY`` or ``fleetchaos-out/history.db``); the baseline's
        history groups are read from there too.  ``fail_on_source`` names where the
        thresholds came from in messages (default: the profile's option).

        The gate fails a run whose policy errored (unless ``allow_policy_errors``); an arm the
        baseline does not have is reported as new, and fails only with ``fail_on_new``; a
        baseline group that is not complete (killed, interrupted) is refused unless
        ``allow_partial_baseline``, and then the gate says what it lacks.  ``evidence`` is the
        mode of the gate rule (:mod:`fleetchaos.gates.rule`): ``weak`` or ``decisive``.
        """
        self.profile = profile
        self.allow_policy_errors = allow_policy_errors
        self.fail_on_new = fail_on_new
        self.evidence = check_mode(evidence, profile.evidence_option)
        self.rules = parse_fail_ons(fail_on, fail_on_source or profile.fail_on_option)
        if self.rules and baseline_ref is None:
            raise UserError(f"{profile.fail_on_option} needs {profile.baseline_option} REF: {profile.baseline_hint}")
        self.label = _check_label(label)
        self.baseline: Baseline | None = None
        if baseline_ref is not None:  # resolved first: a bad reference creates nothing and runs nothing
            self.baseline = load_baseline(
                baseline_ref,
                history=history_path,
                option=profile.baseline_option,
                allow_partial=allow_partial_baseline,
                partial_option=profile.allow_partial_option,
                history_option=profile.history_option,
            )
        if not self.rules:
            self.rules = default_rules(informative=not profile.gate_by_default)
        self.store = None
        if store:
            from fleetchaos.gates import history

            self.store = history.open_store(history_path)
        self.path = None if self.store is None else self.store.path
        self.group_id: int | None = None
        self._runs: list[_Figures] = []  # kept for the gate, only when there is a baseline
        self.finished = 0
        self.restored = 0  # runs a resumed group already held (start)
        self.identity: RunsIdentity | None = None
        self.arm_set: frozenset[ArmKey] | None = None
        self._notes: list[GateProblem] = []

    # -- before anything runs -------------------------------------------------------------

    def plan(self, identity: RunsIdentity, arms: Iterable[ArmKey], seeds: Sequence[int]) -> None:
        """Refuse, before anything runs, a baseline unlike the command's runs (a :class:`UserError`, exit 2).

        ``identity`` is the scenario as it will run (``--param`` values applied), ``arms`` the
        (policy, errors) arms and ``seeds`` the seeds.  A baseline sharing no arm is refused
        (a single arm against a single stored arm is paired whatever their names), and so is
        one of another world, with no seed in common, or whose ``common_recovery_rate`` cannot
        be compared on the arms both ran (:func:`fleetchaos.gates.like.plan_problems`).
        """
        arms = list(dict.fromkeys(arms))
        self.identity, self.arm_set = identity, frozenset(arms)
        if self.baseline is None:
            return
        stored = self.baseline.entries_by_arm(identity.scenario, identity.world)
        option, ref = self.profile.baseline_option, self.baseline.ref
        if not stored:
            raise UserError(f"{option} {ref}: holds no runs; pick another baseline")
        if len(arms) == 1 and len(stored) == 1:
            pairs = [(arms[0], next(iter(stored.values())))]
        else:
            pairs = [(arm, stored[arm]) for arm in arms if arm in stored]
        if not pairs:
            raise UserError(
                f"{option} {ref}: no arm in common (this command runs: {_arm_names(arms)}; the baseline has: "
                f"{_arm_names(stored)}); nothing was run: choose --policies/--errors the baseline has, or another baseline"
            )
        problems = plan_problems(pairs, identity, self.arm_set, seeds, self.rules, ref)
        failing = [p for p in problems if p.failed]
        if failing:
            raise UserError(
                f"{option} {ref} is not like the runs about to start, so nothing was run: "
                + " | ".join(f"{p.kind}: {p.text}" for p in failing)
            )
        self._notes = problems

    # -- storing runs as they arrive ------------------------------------------------------

    def start(
        self,
        kind: str,
        spec: Scenario,
        meta: dict[str, Any],
        *,
        resume_by: str | None = None,
        wanted: Collection[str] = (),
    ) -> dict[str, RunResult]:
        """Open the history group this command's runs are stored in; return the runs it already holds.

        With ``resume_by`` (the key of ``meta`` that identifies the command's whole set of
        runs, such as ``compare_id``), the newest group of the same kind with the same value
        is continued whatever its status (``running`` after a ``kill -9``, ``interrupted``
        after Ctrl-C) and its runs whose :func:`~fleetchaos.gates.history.run_key` is in
        ``wanted`` are returned by key, their figures kept for the gate; a resumed group
        keeps its label.  Otherwise, or when there is none, a new group starts and ``{}``
        is returned.  The group's meta records the scenario's fingerprints (whole, and of
        its world), which a gate against it checks.
        """
        if self.store is None:
            return {}
        from fleetchaos.gates.identity import world_fingerprint
        from fleetchaos.scenario.load import scenario_hash

        if resume_by is not None:
            for group in self.store.groups():
                if group.kind == kind and group.meta.get(resume_by) == meta[resume_by]:
                    done = {r.key: r.result for r in self.store.runs(group.id) if r.key in wanted}
                    self.store.finish_group(group.id, "running")  # running again until it completes
                    self.group_id = group.id
                    for result in done.values():
                        if self.baseline is not None:
                            self._runs.append(_figures(result))
                    self.restored = len(done)
                    return done
        meta = {"scenario_hash": scenario_hash(spec), "world": world_fingerprint(spec.model_dump(mode="json")), **meta}
        self.group_id = self.store.new_group(kind, spec.name, label=self.label, meta=meta)
        return {}

    def add(self, result: RunResult) -> None:
        """Store one finished run (in its own transaction), and keep its figures for the gate if there is one."""
        self.finished += 1
        if self.baseline is not None:
            self._runs.append(_figures(result))
        if self.store is not None and self.group_id is not None:
            self.store.add_run(self.group_id, result)

    def finish(self, status: str) -> None:
        """Mark the group complete, interrupted or failed, and close the store."""
        if self.store is None:
            return
        if self.group_id is not None:
            self.store.finish_group(self.group_id, status)
        self.store.close()
        self.store = None

    def where(self) -> str | None:
        """'history group #N in PATH' for messages, or None without a history."""
        if self.group_id is None or self.path is None:
            return None
        return f"history group #{self.group_id} in {self.path}"

    # -- the gate -------------------------------------------------------------------------

    def _pairs(self, runs: list, identity: RunsIdentity | None) -> list[tuple[ArmKey, list, BaselineEntry | None]]:
        """(arm, its runs, the baseline entry it is judged against or None) for each arm of ``runs``."""
        assert self.baseline is not None
        current: dict[tuple[str, str, str], list] = {}
        for r in runs:
            current.setdefault((r.scenario, r.policy, r.errors), []).append(r)
        world = identity.world if identity is not None else None
        if self.profile.by_scenario:
            return [((p, e), rs, self.baseline.lookup(s, p, e, world)) for (s, p, e), rs in current.items()]
        scenario = identity.scenario if identity is not None else next(iter(current), ("",))[0]
        stored = self.baseline.entries_by_arm(scenario, world)
        if len(current) == 1 and len(stored) == 1:
            ((_, p, e), rs), entry = next(iter(current.items())), next(iter(stored.values()))
            return [((p, e), rs, entry)]
        return [((p, e), rs, stored.get((p, e))) for (_, p, e), rs in current.items()]

    def check(self, runs: Iterable | None = None, identity: RunsIdentity | None = None) -> list[Check]:
        """Judge ``runs`` (default: the runs given to :meth:`add`) against the baseline; [] without one.

        Runs are anything with ``scenario``, ``policy``, ``errors``, ``seed`` and ``metrics``;
        ``identity`` is what they ran (default: what :meth:`plan` was given).  Arms whose
        baseline is unlike them (:meth:`problems`) are not judged here.
        """
        if self.baseline is None:
            return []
        runs = self._runs if runs is None else list(runs)
        identity = identity or self.identity
        ref = self.baseline.ref
        found = self._pairs(runs, identity)
        if self.profile.by_scenario:  # each test's arm alone, against its own baseline arm
            out: list[Check] = []
            for key, rs, entry in found:
                if entry is not None and not self._unlike(key, rs, entry, identity):
                    pair = (arm_of(f"{key[0]} on {key[1]}", rs, frozenset({key})), entry.arm())
                    out += check_arms(self.rules, [pair], ref, mode=self.evidence)
            return out
        arm_set = self.arm_set or frozenset(key for key, _, _ in found)
        pairs = [(arm_of(f"{key[0]} on {key[1]}", rs, arm_set), entry.arm()) for key, rs, entry in found if entry]
        return check_arms(self.rules, pairs, ref, mode=self.evidence)

    def _unlike(
        self, key: ArmKey, runs: list, entry: BaselineEntry, identity: RunsIdentity | None
    ) -> list[GateProblem]:
        """What makes ``entry`` unlike one test's arm (the plugin judges each test when it has run)."""
        assert self.baseline is not None
        seeds = sorted({int(r.seed) for r in runs})
        problems = plan_problems([(key, entry)], identity, frozenset({key}), seeds, self.rules, self.baseline.ref)
        return [p for p in problems if p.failed]

    def problems(self, runs: Iterable | None = None, identity: RunsIdentity | None = None) -> list[GateProblem]:
        """What fails the gate besides a regression, or is said beside it.

        A baseline unlike the runs (another world, no seed in common, common sets that cannot
        be compared: refused before a command runs, a failure of the test in the plugin), a
        partial baseline, runs whose policy errored (unless allowed), and arms the baseline
        lacks: reported as new, failing only with ``fail_on_new``.  A gate never passes
        silently on an arm it did not judge or on a run whose policy broke.
        """
        if self.baseline is None:
            return []
        runs = self._runs if runs is None else [_figures(r) for r in runs]
        identity = identity or self.identity
        ref = self.baseline.ref
        out = list(self._notes)
        if self.baseline.lacking:
            out.append(GateProblem("partial baseline", f"baseline {ref} {self.baseline.lacking}", False))
        for key, rs, entry in self._pairs(runs, identity):
            if entry is None:
                hint = "" if self.fail_on_new else f" (pass {self.profile.fail_on_new_option} to fail on new arms)"
                where = f" ({rs[0].scenario})" if self.profile.by_scenario else ""
                what = f"{key[0]} on {key[1]}{where}: no such arm in baseline {ref}, so none of its figures is judged{hint}"
                out.append(GateProblem("new arm", what, self.fail_on_new))
            elif self.profile.by_scenario:
                out += self._unlike(key, rs, entry, identity)
        errored: dict[tuple[str, str], list[_Figures]] = {}
        for r in runs:
            if r.policy_errors:
                errored.setdefault((r.policy, r.errors), []).append(r)
        for (policy, errors), rs in errored.items():
            tasks = sum(r.policy_errors for r in rs)
            first = next((r.first_error for r in rs if r.first_error), "")
            seeds = ", ".join(str(r.seed) for r in rs)
            what = (
                f"{policy} on {errors}: {tasks} task(s) given up because the policy errored (seeds {seeds}"
                + (f"; first: {first}" if first else "")
                + ")"
            )
            if not self.allow_policy_errors:
                what += f"; fix the policy, or pass {self.profile.allow_policy_errors_option} if the test expects it"
            out.append(GateProblem("policy errors", what, not self.allow_policy_errors))
        return out

    def gate(self, echo: Callable[[str], None]) -> int:
        """Judge the stored runs; print one line per check and problem; :data:`EXIT_GATE` if one failed, else 0."""
        if self.baseline is None:
            return 0
        checks = self.check()
        failed = [c for c in checks if c.failed]
        for c in checks:
            echo(c.line())
        problems = self.problems()
        for p in problems:
            echo(p.line())
        broken = [p for p in problems if p.failed]
        mode = f" (evidence mode {self.evidence})"
        if failed or broken:
            parts = [f"{len(failed)} regression(s)"] if failed else []
            parts += [f"{len(broken)} gate failure(s) besides regressions"] if broken else []
            echo(f"{' and '.join(parts)} against baseline {self.baseline.ref}{mode}: exit {EXIT_GATE}")
            return EXIT_GATE
        judged = sum(c.verdict is not None for c in checks)
        weak = sum(c.verdict is not None and c.evidence == "weak" for c in checks)
        if judged and not checks[0].rule.informative:
            echo(f"no regression against baseline {self.baseline.ref}{mode}: {judged} check(s) passed, "
                 f"{judged - weak} on decisive evidence, {weak} on weak")  # fmt: skip
        return 0


@dataclass(frozen=True, slots=True)
class _Figures:
    """What the gate keeps of a finished run: its identity, metrics, task sets and policy errors (no per-task rows).

    ``metrics`` is the run's own mapping, not a copy: a comparison sets each run's
    ``common_recovery_rate`` on its common set once every arm has run, and the gate reads that.
    """

    scenario: str
    policy: str
    errors: str
    seed: int
    metrics: dict[str, float | None]
    task_sets: dict[str, str] = field(default_factory=dict)
    policy_errors: int = 0
    first_error: str = ""


def policy_error_count(result: RunResult) -> tuple[int, str]:
    """(tasks given up because the policy errored, the most frequent message) of a run result."""
    by_message = (getattr(result, "breakdowns", None) or {}).get("policy_errors_by_message") or {}
    count = sum(by_message.values()) if by_message else round((result.metrics or {}).get("policy_errors") or 0)
    first = min(by_message.items(), key=lambda kv: (-kv[1], kv[0]))[0] if by_message else ""
    return int(count), first


def _figures(result) -> _Figures:
    errors, first = policy_error_count(result)
    return _Figures(
        result.scenario,
        result.policy,
        result.errors,
        result.seed,
        result.metrics,
        dict(getattr(result, "task_sets", None) or {}),
        errors,
        first,
    )
