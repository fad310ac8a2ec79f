"""The fit check: does the fitted scenario fail its calls, and take its time, as the traces did?

The fitted scenario is simulated on a few seeds and each simulated day is read back
through the same trace reader as the traces.  Per fault kind, the share of tool calls that
failed with it in the traces must be a plausible day of the fitted model: within a
prediction interval built from the simulated days, whose spread is the model's own
day-to-day variation (clustered faults included: a rate-limit cut, a key that stays
expired, an error window) and never less than the binomial error of one day's calls.
The interval is Student's t at ``seeds - 1`` degrees of freedom for a false alarm rate
of :data:`ALPHA` per kind when the fit is right: more seeds make it narrower, never
wrong.  A kind calibration does not fit (a provider's 503s) is checked like the others
and marked as not fitted: a world without it fails less than the traces, and its
headline would say so.

Each well-observed tool's p50 and p90 of successful call durations are held to the
simulated days the same way (:func:`latency_fits`).  The CLI prints each miss and exits
1 unless ``--allow-misfit``; the fit report shows
every kind.  :func:`simulate_days` runs the simulated days (in worker processes when
there are several cores): the fit report draws the first.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fleetchaos.calibrate.observed import OK, Calls, Observations
from fleetchaos.traces.codes import FAULT_KINDS, CodeMap
from fleetchaos.traces.read import read_file

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from fleetchaos.scenario.load import Scenario

__all__ = ["ALPHA", "FitCheck", "KindFit", "LatencyFit", "SimulatedDay", "fit_check", "latency_fits", "simulate_days"]

#: The chance that a kind of a right fit is called a miss (two-sided).
ALPHA = 1e-3


@dataclass(frozen=True)
class KindFit:
    """One fault kind's share of calls: observed, on each simulated day, and the interval it must lie in."""

    kind: str
    observed: int
    """Calls that failed with it in the traces."""
    observed_share: float
    simulated_shares: tuple[float, ...]
    """Its share of calls on each simulated day."""
    low: float
    high: float
    """The prediction interval of one day's share under the fitted scenario."""
    fitted: bool
    """Whether calibration fits this kind at all."""

    @property
    def simulated_share(self) -> float:
        """The mean share over the simulated days."""
        return sum(self.simulated_shares) / len(self.simulated_shares)

    @property
    def misses(self) -> bool:
        """The observed share lies outside the interval."""
        return not self.low <= self.observed_share <= self.high

    def describe(self) -> str:
        """``rate_limit: 14.90% of simulated calls (5 seeds, 99.9% interval 13.1%..16.7%) against 2.90% observed``."""
        fitted = "" if self.fitted else "; not fitted"
        return (
            f"{self.kind}: {_pct(self.simulated_share)} of simulated calls ({len(self.simulated_shares)} seeds, "
            f"{100 * (1 - ALPHA):g}% interval for one day {_pct(self.low)}..{_pct(self.high)}) against "
            f"{_pct(self.observed_share)} observed{fitted}"
        )


def _pct(share: float) -> str:
    return f"{100 * share:.2f}%"


#: The quantiles of each tool's successful call durations the check holds to the simulated days.
QUANTILES = (0.5, 0.9)

#: The fewest successful calls of a tool, in the traces, for its quantiles to be checked.
MIN_CALLS = 20

#: How finely a simulated duration stands for a traced one: calibration leaves the traces' network round
#: trip inside each fitted duration and writes the fleet's smallest network latency (0.5 ms a way), which
#: the simulation adds again, so a simulated call may be 1 ms longer than its traced twin (and a span's
#: times, Unix seconds in a double, are exact to a quarter of a microsecond).
RESOLUTION_S = 1e-3 + 1e-6


@dataclass(frozen=True)
class LatencyFit:
    """One tool's duration quantile: observed, on each simulated day, and the interval it must lie in."""

    tool: str
    quantile: float
    observed: float
    """Seconds, over the traces' successful calls of the tool."""
    simulated: tuple[float, ...]
    low: float
    high: float

    @property
    def misses(self) -> bool:
        """The observed quantile lies outside the interval."""
        return not self.low <= self.observed <= self.high

    def describe(self) -> str:
        """``fetch p50: 2.46 s on simulated days (mean of 10, 99.9% interval 2.20..2.71 s) against 1.00 s observed``."""
        mean = sum(self.simulated) / len(self.simulated)
        return (
            f"{self.tool} p{round(100 * self.quantile)}: {mean:.3g} s on simulated days (mean of {len(self.simulated)}, "
            f"{100 * (1 - ALPHA):g}% interval for one day {self.low:.3g}..{self.high:.3g} s) against "
            f"{self.observed:.3g} s observed"
        )


@dataclass(frozen=True)
class FitCheck:
    """Every fault kind either side met, each well-observed tool's duration quantiles, and the verdict."""

    kinds: tuple[KindFit, ...]
    observed_calls: int
    simulated_calls: tuple[int, ...]
    seeds: tuple[int, ...]
    latencies: tuple[LatencyFit, ...] = ()

    @property
    def misses(self) -> tuple[KindFit, ...]:
        """The kinds whose observed share is not a plausible day of the fitted scenario."""
        return tuple(k for k in self.kinds if k.misses)

    @property
    def latency_misses(self) -> tuple[LatencyFit, ...]:
        """The tools' quantiles that are not a plausible day of the fitted scenario."""
        return tuple(q for q in self.latencies if q.misses)

    @property
    def idle_days(self) -> int:
        """Simulated days that made no call while the traces have calls: nothing to hold the traces against."""
        return sum(not n for n in self.simulated_calls) if self.observed_calls else 0

    @property
    def fits(self) -> bool:
        """No kind or duration quantile misses and every simulated day made calls."""
        return not self.misses and not self.latency_misses and not self.idle_days


def _interval(observed: int, n_obs: int, counts: Sequence[int], totals: Sequence[int]) -> tuple[float, float]:
    """The prediction interval of one day's share from the simulated days' ``counts`` of ``totals`` calls."""
    from scipy.stats import t as student

    shares = [k / n if n else 0.0 for k, n in zip(counts, totals, strict=True)]
    days = len(shares)
    mean = sum(shares) / days
    spread2 = sum((s - mean) ** 2 for s in shares) / (days - 1) * (1 + 1 / days)
    pooled = (observed + sum(counts)) / max(1, n_obs + sum(totals))
    mean_calls = sum(totals) / days
    binomial2 = pooled * (1 - pooled) * (1 / max(1, n_obs) + 1 / max(1.0, mean_calls))
    half = float(student.ppf(1 - ALPHA / 2, days - 1)) * math.sqrt(max(spread2, binomial2))
    return max(0.0, mean - half), min(1.0, mean + half)


def fit_check(
    observed: Calls, simulated: Sequence[Calls], seeds: Sequence[int], fitted_kinds: frozenset[str]
) -> FitCheck:
    """Check each fault kind's share of calls in the traces against the simulated days (two or more)."""
    if len(simulated) < 2:
        raise ValueError("the fit check needs two simulated days or more")
    totals = [len(c) for c in simulated]
    rows = []
    for index, kind in enumerate(FAULT_KINDS):
        counts = [int((c.kind == index).sum()) for c in simulated]
        k = int((observed.kind == index).sum())
        if not k and not any(counts):
            continue
        low, high = _interval(k, len(observed), counts, totals)
        shares = tuple(c / n if n else 0.0 for c, n in zip(counts, totals, strict=True))
        rows.append(
            KindFit(kind, k, k / len(observed) if len(observed) else 0.0, shares, low, high, kind in fitted_kinds)
        )
    return FitCheck(tuple(rows), len(observed), tuple(totals), tuple(seeds), latency_fits(observed, simulated))


def _ok_durations(calls: Calls, tool: str) -> NDArray[np.float64]:
    """The durations of ``calls``' successful calls of ``tool``."""
    import numpy as np

    if tool not in calls.tools:
        return np.empty(0)
    return calls.duration[(calls.tool == calls.tools.index(tool)) & (calls.kind == OK)]


def latency_fits(observed: Calls, simulated: Sequence[Calls]) -> tuple[LatencyFit, ...]:
    """Each tool's p50 and p90 of successful call durations against the simulated days'.

    Per quantile p, the interval for one day is the wider of Student's t over the simulated
    days' quantiles (their day-to-day spread) and the distribution-free bound: the pooled
    simulated durations' quantiles at p plus or minus the standard error of a quantile's
    probability, sqrt(p(1-p)(1/n_observed + 1/n_day)), at the same false alarm rate, widened by
    :data:`RESOLUTION_S` on each side (the round trip the simulation adds, and a span's precision).  A tool
    with fewer than :data:`MIN_CALLS` successful calls in the traces, or with none on a
    simulated day, is not checked.
    """
    import numpy as np
    from scipy.stats import norm
    from scipy.stats import t as student

    out = []
    days = len(simulated)
    t = float(student.ppf(1 - ALPHA / 2, days - 1))
    z = float(norm.ppf(1 - ALPHA / 2))
    for tool in observed.tools:
        seen = _ok_durations(observed, tool)
        per_day = [_ok_durations(c, tool) for c in simulated]
        if len(seen) < MIN_CALLS or any(not len(d) for d in per_day):
            continue
        pooled = np.concatenate(per_day)
        n_day = len(pooled) / days
        for p in QUANTILES:
            qs = tuple(float(np.quantile(d, p)) for d in per_day)
            mean = sum(qs) / days
            spread = math.sqrt(sum((q - mean) ** 2 for q in qs) / (days - 1) * (1 + 1 / days))
            se = z * math.sqrt(p * (1 - p) * (1 / len(seen) + 1 / n_day))
            low = min(mean - t * spread, float(np.quantile(pooled, max(0.0, p - se))))
            high = max(mean + t * spread, float(np.quantile(pooled, min(1.0, p + se))))
            low, high = low - RESOLUTION_S, high + RESOLUTION_S
            out.append(LatencyFit(tool, p, float(np.quantile(seen, p)), qs, max(0.0, low), high))
    return tuple(out)


@dataclass(frozen=True)
class SimulatedDay:
    """One run of the fitted scenario, read back from its exported traces, and its metrics."""

    seed: int
    calls: Calls
    metrics: dict


def simulated_day(job: tuple[Scenario, str, str, int]) -> SimulatedDay:
    """Run the scenario traced on one seed, export its traces and read them back as the traces were read."""
    from fleetchaos.runs.runner import run_one
    from fleetchaos.traces.otlp_write import write_run_traces

    scenario, policy, errors, seed = job
    with tempfile.TemporaryDirectory(prefix="fleetchaos-fit-") as folder:
        path = Path(folder) / "simulated.otlp.jsonl"
        result = run_one(
            scenario, policy, errors, seed, trace=True,
            on_trace=lambda out: write_run_traces(out, path, scenario=scenario.name, policy=policy, errors=errors, seed=seed),
        )  # fmt: skip
        observations = Observations(CodeMap())
        if path.exists() and path.stat().st_size:  # a day whose fleet made no call exports no span
            observations.add(read_file(path))
        return SimulatedDay(seed, observations.finish(), result.metrics)


def simulate_days(
    scenario: Scenario,
    policy: str,
    errors: str,
    seeds: Sequence[int],
    executor: Executor,
    on_day: Callable[[SimulatedDay], None] = lambda _day: None,
) -> list[SimulatedDay]:
    """One :class:`SimulatedDay` per seed, in the order of ``seeds`` (``on_day`` is told of each as it ends)."""
    from fleetchaos.runs.executors import map_chunks

    days: dict[int, SimulatedDay] = {}

    def done(day: SimulatedDay) -> None:
        days[day.seed] = day
        on_day(day)

    map_chunks(executor, simulated_day, [(scenario, policy, errors, seed) for seed in seeds], done)
    return [days[seed] for seed in seeds]
