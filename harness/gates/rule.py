"""The one gate rule: a figure against a bound, judged by its mean, with its evidence stated.

Every gate of fleetchaos is judged here and nowhere else: a scenario's ``expect:`` gates
(:mod:`fleetchaos.gates.expect`), ``assert_rate`` in a test suite
(:mod:`fleetchaos.gates.assertions`), and the regression gates ``--fail-on`` and
``--fleetchaos-fail-on`` (:mod:`fleetchaos.gates.regression`, whose figure is the change
against the baseline and whose bound is the change allowed).  docs/metrics.md, "The gate
rule", states it for people.

* **Verdict.**  A figure passes when its value (the mean over seeds) is on the bound's
  side: ``at_least`` passes when value >= bound, ``at_most`` when value <= bound.  A figure
  with no value (no seed gave one: a recovery rate with no faulted task, a time to recovery
  when nothing recovered) fails: a gate is never green on missing evidence.
* **Evidence.**  A verdict is *decisive* when the whole confidence interval lies on the
  side of the verdict (a pass whose interval meets the bound, a failure whose interval
  misses it), *weak* when the interval straddles the bound or there is none (one seed of
  a count).  A figure that is not an estimate (the worst of the seeds run, a bare number)
  is exact, so its verdict is decisive.  Every output states the evidence.
* **Mode.**  ``weak`` (the default) lets the mean decide whatever the evidence; ``decisive``
  also fails a pass on weak evidence, so fewer seeds never make a gate easier to pass.

Light to import: the standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fleetchaos.errors import UserError

__all__ = [
    "AT_LEAST",
    "AT_MOST",
    "DECISIVE",
    "DEFAULT_EVIDENCE",
    "EVIDENCE_MODES",
    "MISSING",
    "WEAK",
    "Figure",
    "Verdict",
    "check_mode",
    "judge",
    "meets",
]

AT_LEAST = "at_least"
AT_MOST = "at_most"

#: The evidence of a verdict (and the names of the two modes).
DECISIVE = "decisive"
WEAK = "weak"
#: The evidence of a figure with no value: the gate fails.
MISSING = "missing"

#: The modes a gate can be judged in: ``weak`` (the mean decides) or ``decisive`` (a pass needs the whole interval).
EVIDENCE_MODES = (WEAK, DECISIVE)
DEFAULT_EVIDENCE = WEAK

#: A miss this small is rounding, not a miss.
_TOLERANCE = 1e-12


@dataclass(frozen=True, slots=True)
class Figure:
    """What a gate compares with its bound: a value, its confidence interval when it has one.

    ``exact`` marks a value that is not an estimate (the worst of the seeds run, a bare
    number): its verdict is decisive whatever its interval.
    """

    value: float | None
    low: float | None = None
    high: float | None = None
    exact: bool = False

    @property
    def has_interval(self) -> bool:
        """True when the figure carries a confidence interval."""
        return self.low is not None and self.high is not None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A gate's verdict: passed or not, on what evidence, in which mode, and why in words."""

    passed: bool
    evidence: str
    """``decisive``, ``weak`` or ``missing`` (no value)."""
    mode: str
    reason: str
    """The evidence in words, for messages: ``decisive: the whole interval meets the bound``."""

    @property
    def word(self) -> str:
        """``ok`` or ``FAILED``."""
        return "ok" if self.passed else "FAILED"


def check_mode(mode: object, where: str) -> str:
    """An evidence mode as given (``weak`` or ``decisive``); anything else is a :class:`UserError` naming ``where``."""
    if isinstance(mode, str) and mode.strip().lower() in EVIDENCE_MODES:
        return mode.strip().lower()
    raise UserError(
        f"{where}: evidence mode {mode!r} is not one of {', '.join(EVIDENCE_MODES)}: 'weak' lets the mean decide "
        "(the default), 'decisive' also fails a pass whose interval straddles the bound"
    )


def meets(value: float, rule: str, bound: float) -> bool:
    """Whether ``value`` is on ``bound``'s side for ``rule`` (``at_least``: >=, ``at_most``: <=), rounding aside."""
    if rule == AT_LEAST:
        return value >= bound - _TOLERANCE
    return value <= bound + _TOLERANCE


def judge(figure: Figure, rule: str, bound: float, mode: str = DEFAULT_EVIDENCE) -> Verdict:
    """The one rule: ``figure`` against ``rule`` (``at_least`` or ``at_most``) ``bound`` in ``mode``."""
    if rule not in (AT_LEAST, AT_MOST):
        raise ValueError(f"rule must be {AT_LEAST} or {AT_MOST}, got {rule!r}")
    if mode not in EVIDENCE_MODES:
        raise ValueError(f"mode must be one of {EVIDENCE_MODES}, got {mode!r}")
    value = figure.value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Verdict(False, MISSING, mode, "no value: the gate cannot be judged, so it fails")
    passed = meets(value, rule, bound)
    if figure.exact:
        return Verdict(passed, DECISIVE, mode, "decisive: an exact figure, not an estimate")
    if not figure.has_interval:
        evidence, why = WEAK, "weak: no confidence interval (one seed, or means alone)"
    else:
        assert figure.low is not None and figure.high is not None
        # the interval's end on the far side of the verdict decides whether the verdict could change
        near, far = (figure.low, figure.high) if rule == AT_LEAST else (figure.high, figure.low)
        if passed and meets(near, rule, bound):
            evidence, why = DECISIVE, "decisive: the whole interval meets the bound"
        elif not passed and not meets(far, rule, bound):
            evidence, why = DECISIVE, "decisive: the whole interval misses the bound"
        else:
            evidence, why = WEAK, "weak: the interval straddles the bound; more seeds would decide it"
    if passed and evidence == WEAK and mode == DECISIVE:
        return Verdict(False, WEAK, mode, f"{why}; evidence: decisive asks for a pass on decisive evidence")
    return Verdict(passed, evidence, mode, why)
