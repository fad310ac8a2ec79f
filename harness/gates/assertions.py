"""Statistical assertions for chaos suites: ``assert_rate``, judged by the one gate rule.

:func:`assert_rate` judges a figure of a scenario run (an :class:`Estimate`: the mean over
seeds with its confidence interval) against a bound by :mod:`fleetchaos.gates.rule`, the
rule a scenario's ``expect:`` gates and the regression gates use too: it fails when the
mean is on the wrong side of the bound, and every message states the evidence (decisive
when the whole interval is on the verdict's side, weak when it straddles the bound).  A
failure names the figure, the interval, the seeds and the ``fleetchaos run`` command that
replays the worst seed.

Two more rules keep a gate from passing when it should not:

* a figure from runs whose policy errored (tasks given up because the policy raised or
  returned nonsense) fails every gate, unless the test says it expects policy errors
  (``allow_policy_errors=True``);
* a pass on weak evidence is reported to the listeners of :data:`WEAK_EVIDENCE` (the pytest
  plugin shows it in the terminal summary and the junit XML), and ``evidence="decisive"``
  (or the plugin's ``fleetchaos_evidence`` ini option, through :func:`set_evidence_default`)
  makes it fail.

Light to import: no SimPy, no matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from numbers import Real

from fleetchaos.gates.rule import AT_LEAST, AT_MOST, DEFAULT_EVIDENCE, EVIDENCE_MODES, WEAK, Figure, judge, meets

__all__ = [
    "WEAK_EVIDENCE",
    "Estimate",
    "RateAssertionError",
    "WeakPass",
    "assert_rate",
    "fmt_number",
    "set_evidence_default",
]


def seeds_text(seeds: Iterable[int]) -> str:
    """Seeds for messages and tables: ``1-5`` for a run of three or more, else ``1,3``."""
    seeds = list(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def fmt_number(value: float | None) -> str:
    """A figure for messages and tables: four significant digits, ``n/a`` for None."""
    if value is None:
        return "n/a"
    return f"{value:.4g}"


@dataclass(frozen=True, slots=True)
class Estimate:
    """A metric of a scenario run: its value, its confidence interval, and where it came from.

    ``value`` is the mean over seeds (or the pooled proportion); ``low`` and ``high`` bound
    the interval at ``confidence`` and are None when there is no interval (one seed of a
    count).  ``value`` is None when the metric is undefined in every seed (a recovery rate
    with no faulted task).  ``seeds``, ``per_seed`` and ``replay`` are aligned: the value of
    each seed and the command that replays it.
    """

    metric: str
    value: float | None
    low: float | None = None
    high: float | None = None
    confidence: float = 0.95
    method: str = ""
    seeds: tuple[int, ...] = ()
    per_seed: tuple[float | None, ...] = ()
    replay: tuple[str, ...] = ()
    label: str = ""
    policy_errors: int = 0
    """Tasks given up because the policy errored, over every seed (a gate never passes these silently)."""
    policy_error: str = ""
    """The most frequent policy error message, for the failure message."""

    @property
    def has_interval(self) -> bool:
        """True when the estimate carries a confidence interval."""
        return self.low is not None and self.high is not None

    def describe(self) -> str:
        """One line: ``0.8866 (95% CI 0.851..0.921, Student-t across 5 seeds)``."""
        pct = f"{self.confidence * 100:g}%"
        parts = []
        if self.has_interval:
            parts.append(f"{pct} CI {fmt_number(self.low)}..{fmt_number(self.high)}")
        else:
            parts.append("no interval")
        if self.method:
            parts.append(self.method)
        return f"{fmt_number(self.value)} ({', '.join(parts)})"

    def __float__(self) -> float:
        if self.value is None:
            raise ValueError(f"{self.metric} is undefined ({self.method or 'no data'})")
        return float(self.value)

    def __str__(self) -> str:
        return f"{self.metric} = {self.describe()}"


class RateAssertionError(AssertionError):
    """A statistical gate whose figure misses its bound (or that cannot be judged)."""


@dataclass(frozen=True, slots=True)
class WeakPass:
    """A gate that passed on weak evidence: the mean meets the bound, the interval straddles it (or there is none)."""

    metric: str
    bound: str
    """``at_least 0.6`` or ``at_most 0``."""
    figure: str
    """The estimate as :meth:`Estimate.describe` gives it."""
    label: str

    def line(self) -> str:
        """One line for summaries: what passed on weak evidence, and how to make it decisive."""
        where = f" ({self.label})" if self.label else ""
        return (
            f"{self.metric} {self.bound} passed on weak evidence: {self.figure}{where}; "
            "the mean meets the bound but the interval does not rule out missing it: add seeds to decide it"
        )


#: Callables told of every pass on weak evidence (the pytest plugin registers one per test).
WEAK_EVIDENCE: list[Callable[[WeakPass], None]] = []

_EVIDENCE_DEFAULT = [DEFAULT_EVIDENCE]


def set_evidence_default(mode: str) -> None:
    """Make ``mode`` (``weak`` or ``decisive``) the default of :func:`assert_rate` (the plugin's ``fleetchaos_evidence``)."""
    if mode not in EVIDENCE_MODES:
        raise ValueError(f"evidence mode must be one of {EVIDENCE_MODES}, got {mode!r}")
    _EVIDENCE_DEFAULT[0] = mode


def _bound(name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise TypeError(f"assert_rate: {name} must be a finite number, got {value!r}")
    return float(value)


def _as_estimate(subject: object) -> tuple[Estimate, bool]:
    """(the estimate, whether it is exact: a bare number is no estimate, so its verdict is decisive)."""
    if isinstance(subject, Estimate):
        return subject, False
    if isinstance(subject, bool) or not isinstance(subject, Real):
        raise TypeError(
            f"assert_rate: expected an Estimate (such as result.recovery_rate) or a number, got {type(subject).__name__}"
        )
    x = float(subject)
    return Estimate(metric="value", value=x, method="a bare number"), True


def _worst(est: Estimate, low_is_bad: bool) -> tuple[int, float, str] | None:
    """(seed, value, replay) of the seed that misses the bound the most."""
    rows = [
        (seed, value, est.replay[i] if i < len(est.replay) else "")
        for i, (seed, value) in enumerate(zip(est.seeds, est.per_seed))
        if value is not None
    ]
    if not rows:
        return None
    return min(rows, key=lambda r: r[1]) if low_is_bad else max(rows, key=lambda r: r[1])


def _message(est: Estimate, headline: str, low_is_bad: bool) -> str:
    lines = [headline, f"  figure: {est.metric} = {est.describe()}"]
    if est.label:
        lines.append(f"  run: {est.label}")
    if est.seeds:
        lines.append(f"  seeds: {', '.join(map(str, est.seeds))}")
        if len(est.per_seed) == len(est.seeds) and len(est.seeds) > 1:
            lines.append(f"  per seed: {', '.join(fmt_number(v) for v in est.per_seed)}")
    worst = _worst(est, low_is_bad)
    if worst is not None and worst[2]:
        which = "the only seed" if len(est.seeds) == 1 else f"the worst seed ({worst[0]})"
        lines.append(f"  replay {which}: {worst[2]}")
        if len(est.seeds) > 1:
            lines.append("  replay another seed: the same command with its --seed")
    elif est.replay:
        lines.append(f"  replay: {est.replay[0]}")
    return "\n".join(lines)


def assert_rate(
    subject: Estimate | float,
    *,
    at_least: float | None = None,
    at_most: float | None = None,
    allow_policy_errors: bool = False,
    evidence: str | None = None,
) -> None:
    """Fail when the mean of ``subject`` is on the wrong side of a bound (the one gate rule, :mod:`fleetchaos.gates.rule`).

    * ``at_least=b`` fails when the mean is below ``b``;
    * ``at_most=b`` fails when the mean is above ``b``.

    The message states the evidence: *decisive* when the whole confidence interval lies on
    the verdict's side, *weak* when it straddles the bound (or there is none: one seed of a
    count).  A pass on weak evidence is reported (:data:`WEAK_EVIDENCE`), and with
    ``evidence="decisive"`` (default: the plugin's ``fleetchaos_evidence`` ini option, else
    ``weak``) it fails.  An undefined figure (no data in any seed) fails, since a gate that
    cannot be judged must not pass silently; so does a figure from runs whose policy
    errored, unless ``allow_policy_errors``.  The message gives the figure, the interval,
    the seeds and the command that replays the worst seed.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's
    lower = _bound("at_least", at_least)
    upper = _bound("at_most", at_most)
    if lower is None and upper is None:
        raise TypeError("assert_rate: give at_least=, at_most=, or both")
    mode = _EVIDENCE_DEFAULT[0] if evidence is None else evidence
    if mode not in EVIDENCE_MODES:
        raise TypeError(
            f"assert_rate: evidence must be one of {', '.join(map(repr, EVIDENCE_MODES))}, got {evidence!r}"
        )
    est, exact = _as_estimate(subject)
    if est.policy_errors and not allow_policy_errors:
        first = f" (most frequent: {est.policy_error})" if est.policy_error else ""
        raise RateAssertionError(
            _message(
                est,
                f"{est.metric} comes from runs whose policy errored: {est.policy_errors} task(s) were given up "
                f"because the policy raised or returned nonsense{first}; a gate never passes such a run: "
                "fix the policy, or pass allow_policy_errors=True if the test expects it",
                low_is_bad=True,
            )
        )
    if est.value is None:
        raise RateAssertionError(
            _message(
                est,
                f"{est.metric} is undefined, so the gate cannot be judged "
                f"({est.method or 'no seed produced a value'}); "
                "use a scenario whose faults reach the tasks, or more seeds",
                low_is_bad=True,
            )
        )
    figure = Figure(est.value, est.low, est.high, exact=exact)
    weak = []
    for rule, bound in ((AT_LEAST, lower), (AT_MOST, upper)):
        if bound is None:
            continue
        verdict = judge(figure, rule, bound, mode)
        words = f"{rule} {fmt_number(bound)}"
        if not verdict.passed:
            side = "meets" if meets(est.value, rule, bound) else ("is below" if rule == AT_LEAST else "is above")
            raise RateAssertionError(
                _message(
                    est,
                    f"{est.metric} {words} failed: its mean {fmt_number(est.value)} {side} the bound "
                    f"(evidence {verdict.reason})",
                    low_is_bad=rule == AT_LEAST,
                )
            )
        if verdict.evidence == WEAK:
            weak.append(words)
    if weak:
        record = WeakPass(est.metric, " and ".join(weak), est.describe(), est.label)
        for listener in list(WEAK_EVIDENCE):
            listener(record)
