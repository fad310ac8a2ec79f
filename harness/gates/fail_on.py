"""Regression thresholds as the user writes them: ``METRIC:THRESHOLD`` with an explicit unit.

One parser for ``--fail-on`` in the CLI, ``--fleetchaos-fail-on`` and the ini
``fleetchaos_fail_on`` in the pytest plugin.  Each spec names a metric and how much worse
it may get than the baseline; "worse" follows the metric's direction
(:mod:`fleetchaos.results.registry`): a fall for ``success_rate``, a rise for
``wasted_retries``.  The unit is always explicit::

    success_rate:-2%       may fall by at most 2% of the baseline's value (relative)
    success_rate:-2pp      may fall by at most 2 percentage points (absolute, rates only)
    wasted_retries:+10%    may rise by at most 10%
    wasted_retries:+5      may rise by at most 5 retries (absolute, in the metric's unit)

A bare number on a rate is refused: ``success_rate:-2`` could mean 2%, 2 points or a fall
of 2.0 on a figure that lies in [0, 1] (a gate that never fails).  ``0`` needs no unit.
The sign is optional; when given it must point the metric's worse way.

Light to import (the standard library, the registry and :mod:`fleetchaos.names`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from fleetchaos.errors import UserError
from fleetchaos.names import check_metric
from fleetchaos.results.registry import DIRECTIONLESS, GATED_METRICS, direction, is_rate

__all__ = ["FailOn", "default_rules", "parse_fail_on", "parse_fail_ons"]

_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)\s*(%|pp)?\s*$", re.IGNORECASE)


def _num(x: float) -> str:
    return f"{x:.6g}"


@dataclass(frozen=True, slots=True)
class FailOn:
    """One parsed threshold: the metric, the worsening it allows, and whether it is relative."""

    metric: str
    threshold: float
    """The allowed worsening, >= 0: a fraction of the baseline when ``relative``, else in the metric's units
    (a fraction of 1 for a rate: ``-2pp`` is 0.02)."""
    relative: bool
    text: str
    asked: bool = True
    """False for the registry's default gates, given by no option: a figure undefined on both sides is then
    reported as not judged rather than failed (nothing changed)."""

    def allowed(self) -> str:
        """The threshold in the unit it was written in, with the worse direction's sign."""
        sign = "-" if direction(self.metric) else "+"
        if self.relative:
            return f"{sign}{_num(self.threshold * 100)}%"
        if is_rate(self.metric):
            return f"{sign}{_num(self.threshold * 100)}pp"
        return f"{sign}{_num(self.threshold)}"

    @property
    def informative(self) -> bool:
        """True for a rule that only reports the change and never fails (an infinite threshold)."""
        return math.isinf(self.threshold)


def parse_fail_on(spec: str, option: str = "--fail-on") -> FailOn:
    """Parse ``METRIC:THRESHOLD`` (``success_rate:-2%``, ``success_rate:-2pp``, ``wasted_retries:+5``).

    A bad spec is a :class:`UserError` naming ``option`` (``--fleetchaos-fail-on`` in the plugin).
    """
    m = _SPEC.match(spec)
    if m is None:
        raise UserError(
            f"{option} {spec!r}: expected METRIC:THRESHOLD, for example success_rate:-2% (2% of the baseline's "
            "value), success_rate:-2pp (2 percentage points) or wasted_retries:+5 (5 retries)"
        )
    name, sign, number, unit = m.groups()
    unit = (unit or "").lower()
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
            f"write {name}:{worse_sign}{number}{unit} (or leave the sign out)"
        )
    value = float(number)
    rate = is_rate(name)
    if unit == "pp" and not rate:
        raise UserError(
            f"{option} {spec!r}: 'pp' (percentage points) is a unit of rates, and {name} is not one; write "
            f"{name}:{worse_sign}{number} for an absolute change in its unit, or {name}:{worse_sign}{number}% "
            "for a change relative to the baseline"
        )
    if not unit and rate and value != 0:
        raise UserError(
            f"{option} {spec!r}: a bare number on a rate is ambiguous ({name} lies in [0, 1], so a change of "
            f"{number} would never happen); write {name}:{worse_sign}{number}pp for {number} percentage points, "
            f"or {name}:{worse_sign}{number}% for {number}% of the baseline's value"
        )
    if unit == "pp" and value > 100:
        raise UserError(
            f"{option} {spec!r}: a rate cannot change by more than 100 percentage points, so this gate could "
            f"never fail; give at most {worse_sign}100pp"
        )
    if unit:
        value /= 100.0
    return FailOn(metric=name, threshold=value, relative=unit == "%", text=spec.strip())


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
        return [FailOn(name, math.inf, False, name, asked=False) for name in GATED_METRICS]
    rules = [parse_fail_on(f"{name}:{gate}") for name, gate in GATED_METRICS.items()]
    return [FailOn(r.metric, r.threshold, r.relative, r.text, asked=False) for r in rules]
