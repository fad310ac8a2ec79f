"""Windows of elevated failure rates, found by change-point detection rather than typed in.

The calls are binned in time (``bin_s``); each bin holds failures ``k`` of trials ``n``.
Binary segmentation splits the series where the binomial log-likelihood gains most,
while the gain beats a BIC-style penalty (``penalty`` x log of the trials: a split adds
a location and a rate).  Segments whose rate is well above the baseline (the rate of
the segments that hold most of the trials) are the windows: a one-sided binomial test at
``alpha`` and at least twice the baseline rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # NumPy is imported by the functions that use it, not on import
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

#: Penalty per change point, in units of log(trials) of -2 log-likelihood (BIC: 2 per
#: split; 3 keeps chance clusters of failures at a steady rate from becoming windows).
PENALTY = 3.0

#: Significance of "above the baseline" for a window.
ALPHA = 1e-4


@dataclass(frozen=True)
class Window:
    """A stretch of time with an elevated failure rate."""

    start_s: float
    end_s: float
    failures: int
    trials: int
    baseline: float
    """The rate outside the elevated stretches."""

    @property
    def rate(self) -> float:
        """Failures per trial inside the window."""
        return self.failures / self.trials if self.trials else 0.0


def _loglik(k: float, n: float) -> float:
    if n <= 0 or k <= 0 or k >= n:
        return 0.0
    p = k / n
    return k * math.log(p) + (n - k) * math.log1p(-p)


def segments(
    k: NDArray[np.float64], n: NDArray[np.float64], penalty: float = PENALTY, min_bins: int = 2
) -> list[tuple[int, int]]:
    """Bin ranges ``[a, b)`` of constant rate, by binary segmentation."""
    import numpy as np

    ck = np.concatenate(([0.0], np.cumsum(k, dtype=np.float64)))
    cn = np.concatenate(([0.0], np.cumsum(n, dtype=np.float64)))
    total = float(cn[-1])
    if total <= 0:
        return [(0, len(k))]
    beta = penalty * math.log(max(total, 2.0))
    out: list[tuple[int, int]] = []
    stack = [(0, len(k))]
    while stack:
        a, b = stack.pop()
        if b - a < 2 * min_bins:
            out.append((a, b))
            continue
        splits = np.arange(a + min_bins, b - min_bins + 1)
        k1, n1 = ck[splits] - ck[a], cn[splits] - cn[a]
        k2, n2 = ck[b] - ck[splits], cn[b] - cn[splits]
        whole = _loglik(ck[b] - ck[a], cn[b] - cn[a])
        gain = _vector_loglik(k1, n1) + _vector_loglik(k2, n2) - whole
        best = int(np.argmax(gain))
        if 2.0 * gain[best] > beta:
            s = int(splits[best])
            stack.append((s, b))
            stack.append((a, s))
        else:
            out.append((a, b))
    return sorted(out)


def _vector_loglik(k, n):
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, k / np.where(n > 0, n, 1), 0.0)
        a = np.where(k > 0, k * np.log(np.where(p > 0, p, 1.0)), 0.0)
        b = np.where(n - k > 0, (n - k) * np.log1p(-np.where(p < 1, p, 0.0)), 0.0)
    return a + b


def find_windows(
    times: ArrayLike,
    failed: ArrayLike,
    origin_s: float,
    end_s: float,
    bin_s: float = 60.0,
    penalty: float = PENALTY,
    alpha: float = ALPHA,
    absorb_s: float = 0.0,
) -> tuple[list[Window], float]:
    """Windows of elevated failure rate among trials at ``times`` (seconds from ``origin_s``).

    ``failed`` is a boolean array beside ``times``.  Returns the windows (in seconds from
    the origin, on bin edges) and the baseline rate.  With ``absorb_s``, a window grows
    over failures within that many seconds of its edges (for faults that only ever fail
    inside windows, whose first and last failures are sparse).
    """
    import numpy as np
    from scipy import stats

    times = np.asarray(times, dtype=np.float64)
    failed = np.asarray(failed, dtype=bool)
    bins = max(1, math.ceil((end_s - origin_s) / bin_s))
    index = np.clip(((times - origin_s) // bin_s).astype(np.int64), 0, bins - 1)
    n = np.bincount(index, minlength=bins).astype(np.float64)
    k = np.bincount(index[failed], minlength=bins).astype(np.float64)
    total_k, total_n = float(k.sum()), float(n.sum())
    if total_k == 0 or total_n == 0:
        return [], 0.0
    parts = segments(k, n, penalty)
    rates = [(float(k[a:b].sum()), float(n[a:b].sum()), a, b) for a, b in parts]
    # The baseline: the pooled rate of the lowest-rate segments holding half the trials.
    held = 0.0
    base_k = base_n = 0.0
    for sk, sn, _a, _b in sorted(rates, key=lambda r: (r[0] / r[1]) if r[1] else 0.0):
        if held >= total_n / 2.0:
            break
        base_k += sk
        base_n += sn
        held += sn
    baseline = base_k / base_n if base_n else 0.0
    # Tested against the baseline with one failure added (Laplace's rule): with no failure
    # at all in the baseline, two stray failures are not yet a window.
    smoothed = (base_k + 1.0) / (base_n + 2.0)
    windows: list[Window] = []
    for sk, sn, a, b in rates:
        if sn <= 0 or sk <= 0:
            continue
        rate = sk / sn
        p = stats.binom.sf(sk - 1, sn, max(baseline, smoothed))
        if rate >= 2.0 * baseline and p < alpha:
            start, end = origin_s + a * bin_s, origin_s + b * bin_s
            if windows and windows[-1].end_s == start - origin_s:
                last = windows.pop()
                windows.append(
                    Window(last.start_s, end - origin_s, last.failures + int(sk), last.trials + int(sn), baseline)
                )
            else:
                windows.append(Window(start - origin_s, end - origin_s, int(sk), int(sn), baseline))
    if absorb_s > 0 and windows:  # failures just outside a window's edges belong to it
        rel = times - origin_s
        fail_times = np.sort(rel[failed])
        grown = []
        for w in windows:
            start, end = w.start_s, w.end_s
            while True:
                before = fail_times[(fail_times < start) & (fail_times >= start - absorb_s)]
                after = fail_times[(fail_times >= end) & (fail_times < end + absorb_s)]
                if not len(before) and not len(after):
                    break
                if len(before):
                    start = math.floor(float(before.min()) / bin_s) * bin_s
                if len(after):
                    end = (math.floor(float(after.max()) / bin_s) + 1) * bin_s
            m = (rel >= start) & (rel < end)
            grown.append(Window(start, end, int(failed[m].sum()), int(m.sum()), baseline))
        windows = []
        for w in grown:  # grown windows may now touch or overlap: merge them
            if windows and w.start_s <= windows[-1].end_s:
                last = windows.pop()
                m = (rel >= last.start_s) & (rel < max(last.end_s, w.end_s))
                w = Window(last.start_s, max(last.end_s, w.end_s), int(failed[m].sum()), int(m.sum()), baseline)
            windows.append(w)
    if windows:  # the baseline is the rate outside every window
        inside_k = sum(w.failures for w in windows)
        inside_n = sum(w.trials for w in windows)
        baseline = (total_k - inside_k) / (total_n - inside_n) if total_n > inside_n else 0.0
        windows = [Window(w.start_s, w.end_s, w.failures, w.trials, baseline) for w in windows]
    return windows, baseline
