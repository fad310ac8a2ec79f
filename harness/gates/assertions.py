"""Statistical assertions for chaos suites: judge a figure by its confidence interval.

A scenario test that asserts a point value (``recovery_rate >= 0.7``) breaks whenever the
seeds, the scenario or the model move the mean a hair; one that asserts the interval
fails only when the evidence says the gate is missed.  :func:`assert_rate` fails only
when the *whole* interval lies on the wrong side of the bound, and its message gives the
figure, the interval, the seeds and the ``fleetchaos run`` command that replays the
worst seed.

Two more rules keep a gate from passing when it should not:

* a figure from runs whose policy errored (tasks given up because the policy raised or
  returned nonsense) fails every gate, unless the test says it expects policy errors
  (``allow_policy_errors=True``);
* a pass whose interval straddles the bound (or that has no interval) is a pass on
  *weak evidence*: it is reported to the listeners of :data:`WEAK_EVIDENCE` (the pytest
  plugin shows it in the terminal summary and the junit XML), and ``strict=True`` (or the
  plugin's ``fleetchaos_strict`` ini option, through :func:`set_strict_default`) makes it fail.

Light to import: no SimPy, no matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from numbers import Real

__all__ = [
    "WEAK_EVIDENCE",
    "Estimate",
    "RateAssertionError",
    "WeakPass",
    "assert_rate",
    "fmt_number",
    "set_strict_default",
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
    """A statistical gate that the whole confidence interval misses (or that cannot be trusted)."""


@dataclass(frozen=True, slots=True)
class WeakPass:
    """A gate that passed only because the evidence could not rule it out: the interval straddles the bound."""

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
            "the interval straddles the bound: add seeds to decide it"
        )


#: Callables told of every pass on weak evidence (the pytest plugin registers one per test).
WEAK_EVIDENCE: list[Callable[[WeakPass], None]] = []

_STRICT_DEFAULT = [False]


def set_strict_default(strict: bool) -> None:
    """Make ``strict`` the default of :func:`assert_rate` (the plugin's ``fleetchaos_strict`` ini option)."""
    _STRICT_DEFAULT[0] = bool(strict)


def _bound(name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise TypeError(f"assert_rate: {name} must be a finite number, got {value!r}")
    return float(value)


def _as_estimate(subject: object) -> Estimate:
    if isinstance(subject, Estimate):
        return subject
    if isinstance(subject, bool) or not isinstance(subject, Real):
        raise TypeError(
            f"assert_rate: expected an Estimate (such as result.recovery_rate) or a number, got {type(subject).__name__}"
        )
    x = float(subject)
    return Estimate(metric="value", value=x, method="a bare number")


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
    strict: bool | None = None,
) -> None:
    """Fail only when the whole confidence interval of ``subject`` misses the bound.

    * ``at_least=b`` fails when the interval's upper end is below ``b``;
    * ``at_most=b`` fails when the interval's lower end is above ``b``.

    An interval that straddles the bound passes: the evidence does not show the gate is
    missed (add seeds to narrow it); such a pass is reported as a pass on weak evidence
    (:data:`WEAK_EVIDENCE`), and with ``strict=True`` it fails.  Without an interval (one
    seed of a count, or a bare number) the value itself is compared.  An undefined figure
    (no data in any seed) fails, since a gate that cannot be judged must not pass
    silently; so does a figure from runs whose policy errored, unless
    ``allow_policy_errors``.  The message gives the figure, the interval, the seeds and
    the command that replays the worst seed.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's
    lower = _bound("at_least", at_least)
    upper = _bound("at_most", at_most)
    if lower is None and upper is None:
        raise TypeError("assert_rate: give at_least=, at_most=, or both")
    est = _as_estimate(subject)
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
    low = est.low if est.low is not None else est.value
    high = est.high if est.high is not None else est.value
    what = "interval" if est.has_interval else "value (no interval)"
    if lower is not None and high < lower:
        raise RateAssertionError(
            _message(
                est,
                f"{est.metric} is below {fmt_number(lower)}: the whole {what} "
                f"{fmt_number(low)}..{fmt_number(high)} lies below the bound",
                low_is_bad=True,
            )
        )
    if upper is not None and low > upper:
        raise RateAssertionError(
            _message(
                est,
                f"{est.metric} is above {fmt_number(upper)}: the whole {what} "
                f"{fmt_number(low)}..{fmt_number(high)} lies above the bound",
                low_is_bad=False,
            )
        )
    weak = []
    if lower is not None and low < lower:
        weak.append(f"at_least {fmt_number(lower)}")
    if upper is not None and high > upper:
        weak.append(f"at_most {fmt_number(upper)}")
    if not weak:
        return
    record = WeakPass(est.metric, " and ".join(weak), est.describe(), est.label)
    if strict if strict is not None else _STRICT_DEFAULT[0]:
        raise RateAssertionError(
            _message(
                est,
                f"{est.metric} {record.bound}: not a decisive pass (strict): the {what} "
                f"{fmt_number(low)}..{fmt_number(high)} straddles the bound; add seeds to decide it",
                low_is_bad=lower is not None and low < lower,
            )
        )
    for listener in list(WEAK_EVIDENCE):
        listener(record)
