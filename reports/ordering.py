"""A flip analysis in words: where the ordering of two arms flips as one assumption varies, or that it held.

The ``robustness`` command and ``compare --robustness`` print it under their tables, and the
comparison report's Robustness section states it: one function, read from the leader at
each value tried.  No matplotlib here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleetchaos.results.models import Robustness
from fleetchaos.results.studies import RobustnessResult

__all__ = ["ordering_lines", "short_value", "significant", "summary", "value_text"]


def value_text(value: Any) -> str:
    """A varied value for display (``0.05``, ``1200``, ``cancel``)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def short_value(value: object) -> str:
    """A value of a range, short enough for a label: a list reads as its length (``none`` when empty)."""
    if isinstance(value, list):
        return "none" if not value else f"{len(value)} points"
    if isinstance(value, dict):
        return "a mapping"
    return value_text(value)


def significant(ci: list[float | None]) -> bool:
    """Whether an interval of a paired difference excludes no difference."""
    lo, hi = ci
    return lo is not None and hi is not None and (lo > 0 or hi < 0)


def summary(result: RobustnessResult) -> Robustness:
    """What a study found, as a comparison keeps it (``compare --robustness``): leaders and clear leads per value."""
    leaders: dict[str, list[str]] = {}
    clear: dict[str, list[bool]] = {}
    for point in result.points:
        leaders.setdefault(point.parameter, []).append(point.leader)
        clear.setdefault(point.parameter, []).append(significant(point.ci))
    return Robustness(
        varied=result.varied, flips=result.flips, arms=list(result.arms), metric=result.metric,
        leader=result.baseline_leader, leaders=leaders, clear=clear, seeds=len(result.seeds),
    )  # fmt: skip


def _values(values: list[Any]) -> str:
    return ", ".join(map(value_text, values))


def ordering_lines(
    study: Robustness, described: dict[str, str] | None = None, quote: Callable[[str], str] = str
) -> list[str]:
    """The study's verdict, one sentence a line: where the leader flips, or that it held over every value tried.

    Read from the leader at each value (never assumed from the absence of a flip): a parameter
    over whose whole range the other arm leads, or where the arms tie, is said so; each lead is
    called clear or within the noise of the seeds.  ``quote`` marks names for the medium
    (:func:`~fleetchaos.reports.blocks.literal` on a page).  Results of an older version, with
    flips only, give the flips.
    """
    described = described or {}

    def name(path: str) -> str:
        words = described.get(path)
        return quote(f"{path} ({words})" if words else path)

    def lead(path: str, value: Any) -> str:
        if path not in study.clear:
            return ""
        clear = study.clear[path][[repr(v) for v in study.varied[path]].index(repr(value))]
        return " (clear)" if clear else " (within the noise of the seeds)"

    lines = [
        f"{name(f.parameter)}: {quote(f.ahead)} leads on {quote(f.metric)} at {quote(value_text(f.holds_at))}"
        f"{lead(f.parameter, f.holds_at)}, {quote(f.behind)} at {quote(value_text(f.flips_at))}{lead(f.parameter, f.flips_at)}."
        for f in study.flips
    ]
    if not study.leaders:
        if not lines:
            lines.append(f"The ordering held at every value tried of {', '.join(map(name, study.varied))}.")
        return lines
    flipped = {f.parameter for f in study.flips}
    own = "neither" if study.leader == "tie" else quote(study.leader)
    held: list[str] = []
    noisy: list[str] = []
    tied: list[str] = []
    values_held = unclear = 0
    tie_in_held = False
    for path, leaders in study.leaders.items():
        values = study.varied[path]
        clear = study.clear.get(path, [True] * len(leaders))
        ties = [f"{name(path)} = {quote(value_text(v))}" for v, who in zip(values, leaders) if who == "tie"]
        tied += ties
        ahead = {who for who in leaders if who != "tie"}
        if path in flipped or not ahead:
            continue
        if ahead != {study.leader}:
            (other,) = ahead  # a second arm ahead somewhere would be a flip
            lines.append(
                f"{name(path)}: {quote(other)} leads on {quote(study.metric)} at every value tried ({quote(_values(values))}), "
                f"{own} at the scenario's own value."
            )
            continue
        held.append(name(path))
        values_held += len(values) - len(ties)
        tie_in_held = tie_in_held or bool(ties)
        within = [v for v, who, c in zip(values, leaders, clear) if who != "tie" and not c]
        if within:
            noisy.append(f"{name(path)} = {quote(_values(within))}")
            unclear += len(within)
    if held and study.leader != "tie":
        everywhere = not lines
        sentence = (
            ("The ordering held: " if everywhere else "")
            + f"{quote(study.leader)} leads on {quote(study.metric)} at every value tried of {', '.join(held)}"
            + (" (ties apart)" if tie_in_held else "")
            + "; "
            + f"clear at {values_held - unclear or 'none'} of {values_held} values"
            + (f", within the noise of the seeds at {'; '.join(noisy)}" if noisy else "")
        )
        lines.insert(0, sentence + ".")
    if tied:
        lines.append(f"Tied (neither arm leads) at {'; '.join(tied)}.")
    return lines
