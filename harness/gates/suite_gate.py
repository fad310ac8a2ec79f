"""The baseline gate of one test's scenario run: its verdicts for the summary row, and its failure messages.

The pytest plugin judges each scenario run once the test's body has run: every check of the
gate session's rules (:meth:`fleetchaos.gates.session.GateSession.check`) and every problem
besides a regression (:meth:`~fleetchaos.gates.session.GateSession.problems`), a regression
as a message naming the baseline, the check and the command replaying the worst seed.

Light to import: the gate's own modules, no SimPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetchaos.gates.regression import Check

if TYPE_CHECKING:
    from fleetchaos.gates.session import GateSession
    from fleetchaos.testing.suite import ScenarioResult

__all__ = ["failure_message", "suite_verdicts"]


def suite_verdicts(gate: GateSession, result: ScenarioResult) -> list[dict[str, Any]]:
    """One verdict per gated metric and per problem: ``{"metric", "regressed", "message", "weak"}`` ([] without a
    baseline); ``weak`` is (the bound, the figure) of a check that passed on weak evidence, else empty.

    Policy errors are left to the test, whose marker may allow them.
    """
    if gate.baseline is None:
        return []
    identity = result.identity
    entry = gate.baseline.lookup(result.scenario, result.policy, result.errors, identity.world)
    replays = dict(zip(result.seeds, result.replay))
    out = []
    for check in gate.check(result.runs, identity):
        message = failure_message(check, entry.origin, replays) if check.failed and entry is not None else ""
        weak = _weak(check) if not check.failed and check.evidence == "weak" else ()
        out.append({"metric": check.rule.metric, "regressed": check.failed, "message": message, "weak": weak})
    for problem in gate.problems(result.runs, identity):
        if problem.kind != "policy errors":  # judged by the test itself (allow_policy_errors)
            out.append({"metric": problem.kind, "regressed": problem.failed, "message": problem.line(), "weak": ()})
    return out


def _weak(check: Check) -> tuple[str, str]:
    """(the bound, the figure) of a check that passed on weak evidence, as the weak-evidence list says them."""
    from fleetchaos.gates.assertions import fmt_number

    change = (check.current or 0.0) - (check.baseline or 0.0)
    interval = (
        f", interval {fmt_number(check.interval[0])}..{fmt_number(check.interval[1])}"
        if check.interval
        else ", no interval"
    )
    figure = (
        f"{fmt_number(check.current)} against {fmt_number(check.baseline)} in baseline {check.baseline_ref}, change "
        f"{fmt_number(change)}{interval} over {check.seeds} seed(s)"
    )
    return f"within {check.rule.allowed()} of the baseline", figure


def failure_message(check: Check, origin: str, replays: Mapping[int, str]) -> str:
    """A regression as a test failure: the baseline, the check's line, and the command replaying the worst seed."""
    from fleetchaos.gates.assertions import fmt_number, seeds_text

    if check.paired_seeds:
        where = f"{fmt_number(check.baseline)} on seeds {seeds_text(check.paired_seeds)}"
    elif check.baseline is not None:
        where = f"{fmt_number(check.baseline)}, a mean over its own seeds"
    else:
        where = check.state
    lines = [f"{check.rule.metric} regressed against the baseline {origin} ({where}):", f"  {check.line()}"]
    replay = replays.get(check.worst_seed) if check.worst_seed is not None else None
    if replay:
        which = "the only seed" if len(replays) == 1 else f"the worst seed ({check.worst_seed})"
        lines.append(f"  replay {which}: {replay}")
    elif replays:
        lines.append(f"  replay: {next(iter(replays.values()))}")
    return "\n".join(lines)
