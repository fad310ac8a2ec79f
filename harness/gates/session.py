"""One gate session, shared by the CLI's ``run``/``compare`` and the pytest plugin.

A :class:`GateSession` does, in this order, what a command or a test session asks of
the run history and a baseline:

1. before anything runs: parse the thresholds and resolve the baseline (a typo costs
   nothing: a bad spec or reference is a :class:`~fleetchaos.errors.UserError` at once);
2. as runs arrive: store each in the history in its own transaction (the CLI), keeping
   its figures for the gate when there is a baseline, and mark the group complete or
   interrupted at the end;
3. at the end (of the command, or of each scenario run of a test): judge the runs
   against the baseline with the one regression rule (:func:`fleetchaos.gates.regression.judge`).

What differs between the two users is a :class:`GateProfile`: the names of the options
in messages, whether a baseline may be results JSON, how arms are matched, and what a
baseline without thresholds does (:data:`COMMAND` reports the changes, :data:`SUITE`
gates the registry's gated metrics at their default thresholds).

Light to import: no SimPy; the history store is imported when it is used.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleetchaos.errors import UserError
from fleetchaos.gates.baseline import Baseline, load_baseline
from fleetchaos.gates.regression import Arm, Check, arm_of, check_arms, default_rules, match_group, parse_fail_ons

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
    "failure_message",
    "policy_error_count",
]

#: Exit code of a command whose regression gate failed.
EXIT_GATE = 1


@dataclass(frozen=True)
class GateProfile:
    """How one front end (the CLI, the pytest plugin) names and uses the session's options."""

    baseline_option: str
    fail_on_option: str
    results_files: bool
    """A baseline may be results JSON or a report folder, not only a history group."""
    by_scenario: bool
    """Arms match by (scenario, policy, errors) and an unmatched arm is not judged; else a
    command's group matches the stored group by (policy, errors) (:func:`~fleetchaos.gates.regression.match_group`)."""
    gate_by_default: bool
    """A baseline without thresholds gates the registry's gated metrics; else it only reports their changes."""
    baseline_hint: str
    """Said when thresholds come without a baseline."""
    allow_new_arms_option: str
    allow_policy_errors_option: str
    allow_partial_option: str
    history_option: str
    """The option naming the run-history file, for messages."""


#: The CLI's ``run`` and ``compare``: ``--baseline`` names a history group, results JSON or a report folder.
COMMAND = GateProfile(
    baseline_option="--baseline",
    fail_on_option="--fail-on",
    results_files=True,
    by_scenario=False,
    gate_by_default=False,
    baseline_hint="a stored run group (see `fleetchaos history`), a results.json or a report folder to compare with",
    allow_new_arms_option="--allow-new-arms",
    allow_policy_errors_option="--allow-policy-errors",
    allow_partial_option="--allow-partial-baseline",
    history_option="--history",
)

#: The pytest plugin: ``--fleetchaos-baseline`` names results JSON, a report folder or a history group.
SUITE = GateProfile(
    baseline_option="--fleetchaos-baseline",
    fail_on_option="--fleetchaos-fail-on",
    results_files=True,
    by_scenario=True,
    gate_by_default=True,
    baseline_hint="a results.json, a report folder or a history group to compare with",
    allow_new_arms_option="--fleetchaos-allow-new-arms",
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
        allow_new_arms: bool = False,
        allow_partial_baseline: bool = False,
    ):
        """Parse the thresholds, resolve the baseline and open the history, before anything runs.

        ``store`` appends each run given to :meth:`add` to the history at ``history_path``
        (default ``$FLEETCHAOS_HISTORY`` or ``fleetchaos-out/history.db``); the baseline's
        history groups are read from there too.  ``fail_on_source`` names where the
        thresholds came from in messages (default: the profile's option).

        The gate fails a run whose policy errored (unless ``allow_policy_errors``) and an
        arm the baseline does not have (unless ``allow_new_arms``); a baseline group that
        is not complete (killed, interrupted) is refused unless ``allow_partial_baseline``,
        and then the gate says what it lacks.
        """
        self.profile = profile
        self.allow_policy_errors = allow_policy_errors
        self.allow_new_arms = allow_new_arms
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
                files=profile.results_files,
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
        is returned.
        """
        if self.store is None:
            return {}
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
        meta = {"scenario_hash": scenario_hash(spec), **meta}
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

    def check(self, runs: Iterable | None = None) -> list[Check]:
        """Judge ``runs`` (default: the runs given to :meth:`add`) against the baseline; [] without one.

        Runs are anything with ``scenario``, ``policy``, ``errors``, ``seed`` and ``metrics``.
        """
        if self.baseline is None:
            return []
        runs = self._runs if runs is None else list(runs)
        ref = self.baseline.ref
        if self.profile.by_scenario:
            return check_arms(self.rules, self._scenario_pairs(runs), ref)
        current: dict[tuple[str, str], list] = {}
        for r in runs:
            current.setdefault((r.policy, r.errors), []).append(r)
        arms = {key: arm_of(f"{key[0]} on {key[1]}", rs) for key, rs in current.items()}
        return check_arms(self.rules, match_group(arms, self.baseline.by_arm(), ref), ref)

    def expect_arms(self, arms: Iterable[tuple[str, str]]) -> None:
        """Refuse, before anything runs, a baseline that shares no arm with the (policy, errors) arms about to run.

        Matching is the command's (:func:`~fleetchaos.gates.regression.match_group`): a single
        arm against a single stored arm is paired whatever their names; otherwise at least
        one arm must be in both.  Arms the baseline lacks are named by the gate at the end
        (and fail it unless allowed); here only "nothing to compare" is found early.
        """
        if self.baseline is None or self.profile.by_scenario:
            return
        current = list(dict.fromkeys(arms))
        stored = self.baseline.by_arm()
        if not stored:
            raise UserError(f"{self.profile.baseline_option} {self.baseline.ref}: holds no runs; pick another baseline")
        if len(current) == 1 and len(stored) == 1:
            return
        if not any(arm in stored for arm in current):
            names = ", ".join(f"{p} on {e}" for p, e in current)
            theirs = ", ".join(f"{p} on {e}" for p, e in stored)
            raise UserError(
                f"{self.profile.baseline_option} {self.baseline.ref}: no arm in common (this command runs: {names}; "
                f"the baseline has: {theirs}); nothing was run: choose --policies/--errors the baseline has, "
                "or another baseline"
            )

    def unmatched(self, runs: Iterable | None = None) -> list[str]:
        """The arms of ``runs`` the baseline has no arm for (so no metric of theirs is judged)."""
        if self.baseline is None:
            return []
        runs = self._runs if runs is None else list(runs)
        if self.profile.by_scenario:
            keys = dict.fromkeys((r.scenario, r.policy, r.errors) for r in runs)
            return [f"{p} on {e} ({s})" for s, p, e in keys if self.baseline.lookup(s, p, e) is None]
        current = dict.fromkeys((r.policy, r.errors) for r in runs)
        stored = self.baseline.by_arm()
        if len(current) == 1 and len(stored) == 1:
            return []  # a single arm is gated against a single stored arm whatever their names
        return [f"{p} on {e}" for p, e in current if (p, e) not in stored]

    def problems(self, runs: Iterable | None = None) -> list[GateProblem]:
        """What fails the gate besides a regression: arms the baseline lacks, runs whose policy errored.

        Each is a failure unless allowed (then a note), so a gate never passes silently on
        an arm it did not judge or on a run whose policy broke.
        """
        if self.baseline is None:
            return []
        runs = self._runs if runs is None else [_figures(r) for r in runs]
        out = []
        if self.baseline.lacking:
            out.append(GateProblem("partial baseline", f"baseline {self.baseline.ref} {self.baseline.lacking}", False))
        allowed = self.allow_new_arms
        hint = "" if allowed else f"; pass {self.profile.allow_new_arms_option} to let new arms pass unjudged"
        for arm in self.unmatched(runs):
            what = f"{arm}: no such arm in baseline {self.baseline.ref}, so none of its figures is judged{hint}"
            out.append(GateProblem("new arm", what, not allowed))
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

    def _scenario_pairs(self, runs: list) -> list[tuple[Arm, Arm]]:
        assert self.baseline is not None
        current: dict[tuple[str, str, str], list] = {}
        for r in runs:
            current.setdefault((r.scenario, r.policy, r.errors), []).append(r)
        pairs = []
        for (scenario, policy, errors), rs in current.items():
            entry = self.baseline.lookup(scenario, policy, errors)
            if entry is not None:
                pairs.append((arm_of(f"{policy} on {errors}", rs), entry.arm()))
        return pairs

    def gate(self, echo: Callable[[str], None]) -> int:
        """Judge the stored runs; print one line per check; :data:`EXIT_GATE` if any regressed, else 0."""
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
        if failed or broken:
            parts = [f"{len(failed)} regression(s)"] if failed else []
            parts += [f"{len(broken)} gate failure(s) besides regressions"] if broken else []
            echo(f"{' and '.join(parts)} against baseline {self.baseline.ref}: exit {EXIT_GATE}")
            return EXIT_GATE
        return 0


@dataclass(frozen=True, slots=True)
class GateProblem:
    """A gate failure that is not a regression (or, when allowed, a note): what and why, on one line."""

    kind: str
    """``new arm``, ``policy errors`` or ``partial baseline``."""
    text: str
    failed: bool

    def line(self) -> str:
        """``FAILED new arm: ...`` or ``note (allowed) new arm: ...``."""
        return f"{'FAILED' if self.failed else 'note'} {self.kind}: {self.text}"


@dataclass(frozen=True, slots=True)
class _Figures:
    """What the gate keeps of a finished run: its identity, metrics, task sets and policy errors (no per-task rows)."""

    scenario: str
    policy: str
    errors: str
    seed: int
    metrics: dict[str, float | None]
    task_sets: dict[str, str]
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
        dict(result.metrics),
        dict(getattr(result, "task_sets", None) or {}),
        errors,
        first,
    )


def failure_message(check: Check, origin: str, replays: Mapping[int, str]) -> str:
    """A regression as a test failure: the baseline, the check's line, and the command replaying the worst seed."""
    from fleetchaos.gates.assertions import fmt_number, seeds_text

    if check.paired_seeds:
        where = f"{fmt_number(check.baseline)} on seeds {seeds_text(check.paired_seeds)}"
    else:
        where = f"{fmt_number(check.baseline)}, a mean over its own seeds"
    lines = [f"{check.rule.metric} regressed against the baseline {origin} ({where}):", f"  {check.line()}"]
    replay = replays.get(check.worst_seed) if check.worst_seed is not None else None
    if replay:
        which = "the only seed" if len(replays) == 1 else f"the worst seed ({check.worst_seed})"
        lines.append(f"  replay {which}: {replay}")
    elif replays:
        lines.append(f"  replay: {next(iter(replays.values()))}")
    return "\n".join(lines)
