"""Per-tool call durations: a log-normal fit (the simulator's family) and how well it fits.

The log-normal is fitted by maximum likelihood (the mean and standard deviation of the
logs) and written as the scenario's ``{mean_s, cv}``.  Its goodness of fit is the
Kolmogorov-Smirnov distance D between the fitted and the observed distribution (with its
p-value, optimistic since the parameters come from the same data); the same distance is
computed for a Weibull and a gamma fit, so the report says when another family fits
better than the one the simulator can draw from.

Calls a client gave up on are right-censored: their duration (or, at a provider, their
service) outlasted what the trace shows.  With such calls the log-normal is fitted by
maximum likelihood over both (SciPy's ``CensoredData``); the distances are over the
calls that ended.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # NumPy is imported when a fit is made, not on import
    from numpy.typing import ArrayLike

#: Durations are fitted on at most this many calls per tool (an evenly spaced subsample
#: of the sorted values beyond it: the KS distance of 200,000 points is exact to ~0.003).
MAX_FIT_SAMPLES = 200_000

#: Durations at or below this are rounded up to it before taking logs.
MIN_DURATION_S = 1e-6


@dataclass(frozen=True)
class LatencyFit:
    """One tool's fitted duration distribution and its goodness of fit."""

    tool: str
    n: int
    mean_s: float
    cv: float
    mean_low_s: float
    mean_high_s: float
    """95% interval of the mean (from the interval of the log-mean)."""
    median_s: float
    p95_s: float
    ks_d: float
    ks_p: float
    alternatives: dict[str, float]
    """KS distance of other families' fits, by family name."""

    @property
    def best_family(self) -> str:
        """The family with the smallest KS distance (``lognormal`` when it is the one)."""
        best = min(self.alternatives.items(), key=lambda kv: kv[1], default=("lognormal", self.ks_d))
        return best[0] if best[1] < self.ks_d else "lognormal"


def fit_latency(tool: str, durations: ArrayLike, censored: ArrayLike = ()) -> LatencyFit | None:
    """The fit of one tool's successful call durations (None without any; one call's duration is a constant);
    ``censored``: durations its calls outlasted (a client gave up)."""
    import numpy as np
    from scipy import stats

    x = np.sort(np.maximum(np.asarray(durations, dtype=np.float64), MIN_DURATION_S))
    n = len(x)
    if n == 0:
        return None
    if n > MAX_FIT_SAMPLES:
        x = x[np.linspace(0, n - 1, MAX_FIT_SAMPLES).round().astype(np.int64)]
    logs = np.log(x)
    mu = float(logs.mean())
    sigma = float(logs.std())
    if sigma <= 1e-9:  # every call took the same time: a constant
        value = float(math.exp(mu))
        return LatencyFit(tool, n, value, 0.0, value, value, value, value, 0.0, 1.0, {})
    right = np.maximum(np.asarray(censored, dtype=np.float64), MIN_DURATION_S)
    if len(right):
        shape, _, scale = stats.lognorm.fit(stats.CensoredData(uncensored=x, right=right), floc=0)
        mu, sigma = math.log(float(scale)), float(shape)
    mean = math.exp(mu + sigma * sigma / 2.0)
    cv = math.sqrt(math.expm1(sigma * sigma))
    half = 1.96 * sigma / math.sqrt(n)
    ks = stats.kstest(x, stats.lognorm(s=sigma, scale=math.exp(mu)).cdf)
    alternatives = {}
    for name, family in (("weibull", stats.weibull_min), ("gamma", stats.gamma)):
        try:
            params = family.fit(x, floc=0)
            alternatives[name] = float(stats.kstest(x, family(*params).cdf).statistic)
        except Exception:  # a family whose fit does not converge is simply not offered
            continue
    return LatencyFit(
        tool=tool,
        n=n,
        mean_s=mean,
        cv=cv,
        mean_low_s=math.exp(mu - half + sigma * sigma / 2.0),
        mean_high_s=math.exp(mu + half + sigma * sigma / 2.0),
        median_s=float(np.median(x)),
        p95_s=float(np.quantile(x, 0.95)),
        ks_d=float(ks.statistic),
        ks_p=float(ks.pvalue),
        alternatives=alternatives,
    )
