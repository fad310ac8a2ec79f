"""The scenario's ``expect:`` gates in ``run`` and ``compare``: checked before the runs, judged after them.

:class:`ExpectGates` refuses, before anything runs, a gate whose arm the command does not
run (exit 2, naming the arms it runs and ``--no-expect``); after the runs it judges every
gate with the one rule (:func:`fleetchaos.gates.expect.judge`), records the verdicts in the
result (so results.json, ``--json`` and the report carry them) and prints them, returning
exit 1 when one failed.  ``--no-expect`` runs without them.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import click

from fleetchaos.gates.session import EXIT_GATE

if TYPE_CHECKING:
    from fleetchaos.results.models import CompareResult, RunResult
    from fleetchaos.scenario.load import Scenario

__all__ = ["ExpectGates", "no_expect_option", "note_unjudged"]

no_expect_option = click.option(
    "--no-expect",
    is_flag=True,
    help="do not judge the scenario's expect: gates (its acceptance criteria; by default a failed one exits 1)",
)


class ExpectGates:
    """One command's use of its scenario's ``expect:`` gates."""

    def __init__(
        self,
        spec: Scenario,
        scenario_ref: str,
        arms: Sequence[tuple[str, str, str]],
        *,
        hint: str | None,
        skip: bool = False,
        allow_policy_errors: bool = False,
    ):
        """Check, before the runs, that every gate's arms are among ``arms`` (else a UserError, exit 2).

        ``arms`` are (policy as typed, its canonical spec, error format); ``hint`` says how to
        run a missing arm (None for ``run``, which runs one arm: the gates for other arms are
        named, not refused); ``skip`` (``--no-expect``) leaves the gates out.
        """
        self.gates = [] if skip else list(getattr(spec, "expect", []))
        self.scenario_arms = getattr(spec, "arms", None)
        self.closed_loop = False
        self.scenario = scenario_ref
        self.names: dict[str, frozenset[str]] = {}
        self.allow_policy_errors = allow_policy_errors
        self.records: list = []
        self.notes: list[str] = []
        if self.gates:
            from fleetchaos.gates.expect import ArmName, check_arms, unjudged_lines
            from fleetchaos.sim.workload import is_closed_loop

            self.closed_loop = is_closed_loop(spec.workload)
            named = [ArmName.of(*arm) for arm in arms]
            self.names = {a.policy: a.names for a in named}
            if hint is None:
                self.notes = [n for a in named for n in unjudged_lines(self.gates, a, self.scenario_arms, scenario_ref)]
            else:
                check_arms(self.gates, named, scenario_ref, hint, self.scenario_arms)

    def _judge(self, arms, seeds: Sequence[int], confidence: float, *, one_arm: bool) -> list:
        from fleetchaos.gates.expect import judge

        self.records = judge(
            self.gates,
            arms,
            seeds,
            confidence=confidence,
            names=self.names,
            scenario_arms=self.scenario_arms,
            closed_loop=self.closed_loop,
            allow_policy_errors=self.allow_policy_errors,
            unmatched_fail=not one_arm,
        )
        return self.records

    def judge_run(self, result: RunResult) -> None:
        """Judge the gates on one run (its arm on its one seed) and record the verdicts in it."""
        if not self.gates:
            return
        from fleetchaos.results.stats import DEFAULT_CONFIDENCE
        from fleetchaos.runs.runner import aggregate

        arm = aggregate(result.policy, result.errors, [result], DEFAULT_CONFIDENCE)
        result.expectations = self._judge([arm], [result.seed], DEFAULT_CONFIDENCE, one_arm=True)

    def judge_compare(self, result: CompareResult) -> None:
        """Judge the gates on every arm of a comparison and record the verdicts in it."""
        if self.gates:
            result.expectations = self._judge(result.arms, result.seeds, result.confidence, one_arm=False)

    def gate(self, echo: Callable[[str], None]) -> int:
        """Print each verdict and a summary; :data:`~fleetchaos.gates.session.EXIT_GATE` if one failed, else 0."""
        if not self.gates:
            return 0
        from fleetchaos.gates.expect import line, summary_line

        for record in self.records:
            echo(line(record))
        for note in self.notes:
            echo(note)
        if not self.records:
            echo(f"no expect: gate of {self.scenario} applies to this run's arm")
            return 0
        failed = not all(r.passed for r in self.records)
        echo(summary_line(self.records, self.scenario) + (f": exit {EXIT_GATE}" if failed else ""))
        return EXIT_GATE if failed else 0


def note_unjudged(
    specs: Sequence[tuple[str, Scenario]], command: str, echo: Callable[[str], None], *, swept: bool = False
) -> None:
    """Say on stderr, once per scenario, that ``command`` does not judge its ``expect:`` gates.

    ``specs`` are (the scenario as the user named it, its spec).  A study reports figures
    across points or steps; the gates are acceptance criteria of one scenario's arms, which
    ``run`` and ``compare`` judge (exit 1 on a failure).  Saying so keeps a study's exit 0
    from reading as the gates' pass.  ``swept``: the study varies the scenario, so the
    command named judges the scenario as written unless given a point's ``--param`` values.
    """
    seen = set()
    for ref, spec in specs:
        gates = getattr(spec, "expect", None) or []
        if not gates or ref in seen:
            continue
        seen.add(ref)
        many = "s" if len(gates) != 1 else ""
        echo(
            f"note: {ref} has {len(gates)} expect: gate{many}, which `{command}` does not judge; "
            f"`fleetchaos compare --scenario {shlex.quote(ref)}` judges {'them' if many else 'it'}"
            + (" (add a point's --param PATH=VALUE to judge that point)" if swept else "")
        )
