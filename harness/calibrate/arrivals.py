"""When tasks arrive: an hourly profile of a Poisson process, or the capture's own instants when tasks came in batches.

A fleet fed by a queue or a user sees tasks one at a time: the arrivals are fitted as 24
hourly rates of a Poisson process, repeating daily (:func:`arrival_schedule`).  A fleet
started by a job sees many tasks at one instant (every worker told to push at once, a
nightly batch): no Poisson process makes two tasks arrive at the same microsecond, so
when most tasks share their instant with another, the calibrated scenario replays the
capture's arrivals, each instant and template with its count (:func:`batches`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fleetchaos.calibrate.faults import sig

if TYPE_CHECKING:
    from fleetchaos.calibrate.observed import Calls
    from fleetchaos.calibrate.templates import TemplateFit

DAY_S = 86_400.0
HOUR_S = 3_600.0

#: Tasks within this many seconds of each other arrive at the same instant.
SAME_INSTANT_S = 1e-6

#: Arrivals are replayed when at least this share of the tasks share their instant with another.
BATCHED_SHARE = 0.5

#: The most (instant, template) entries a replayed arrival list has (a scenario file stays readable).
MAX_BATCHES = 2_000


def arrival_schedule(calls: Calls, origin_s: float, notes: list[str]) -> tuple[dict, str, list]:
    import numpy as np

    starts = calls.task_start[np.isfinite(calls.task_start)] - origin_s
    # The capture's own span, from its first arrival to its last record's end (at least a second),
    # shared out over the hours of the day it covers: a ten-minute capture is a sixth of an hour.
    lo = float(starts.min())
    hi = max(float(starts.max()), float((calls.start + calls.duration).max()) - origin_s, lo + 1.0)
    exposure = np.zeros(24)
    for h in range(int(lo // HOUR_S), math.ceil(hi / HOUR_S)):
        exposure[h % 24] += (min(hi, (h + 1) * HOUR_S) - max(lo, h * HOUR_S)) / HOUR_S
    counts = np.bincount((starts // HOUR_S).astype(np.int64) % 24, minlength=24)
    observed = exposure > 0
    mean_rate = counts[observed].sum() / exposure[observed].sum()
    rates = np.where(observed, counts / np.where(observed, exposure, 1), mean_rate)
    if not observed.all():
        missing = [h for h in range(24) if not observed[h]]
        notes.append(f"arrivals: hours {missing} of the day were never observed: the mean rate is used there")
    low, high = _poisson_interval(int(counts.sum()))
    hours = float(exposure.sum())
    if high > 2 * max(low, 1e-12):  # fewer than about 20 arrivals: the rate is a guess the scenario repeats all day
        notes.append(
            f"arrivals: {int(counts.sum()):,} task{'s' if counts.sum() != 1 else ''} over {hours * HOUR_S:,.4g} s "
            f"of capture: the mean rate of {_per_hour(mean_rate)} an hour has a 95% interval of "
            f"{_per_hour(low / hours)} to {_per_hour(high / hours)} (Poisson), and the fitted days repeat it; a longer "
            "capture narrows it"
        )
    points = [{"at_s": h * HOUR_S, "tasks_per_hour": sig(float(r))} for h, r in enumerate(rates)]
    if not any(p["tasks_per_hour"] > 0 for p in points):
        points[0]["tasks_per_hour"] = 1.0
    comment = (
        f"arrival profile by hour of day (UTC), step-wise, repeating daily: {len(starts):,} tasks over "
        f"{sig(float(exposure.sum()))} observed hours (the capture's own span); each point is that hour's "
        "arrivals / its observed hours"
    )
    hourly = [(h, float(exposure[h]), int(counts[h])) for h in range(24)]
    return {"every_s": DAY_S, "interpolation": "step", "points": points}, comment, hourly


def _per_hour(rate: float) -> str:
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def _poisson_interval(count: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Garwood) interval of a Poisson mean from ``count`` events."""
    from scipy.stats import chi2

    tail = (1 - level) / 2
    low = 0.0 if count == 0 else float(chi2.ppf(tail, 2 * count)) / 2
    return low, float(chi2.ppf(1 - tail, 2 * count + 2)) / 2


def batches(
    calls: Calls, origin_s: float, task_template: list[int], templates: list[TemplateFit]
) -> tuple[list[dict], str] | None:
    """The capture's arrivals as ``workload.arrivals`` entries (instant, template, count) when most tasks came in
    batches (None otherwise, or when they would make more than :data:`MAX_BATCHES` entries), and the comment."""
    import numpy as np

    known = np.isfinite(calls.task_start) & (np.asarray(task_template) >= 0)
    starts = calls.task_start[known] - origin_s
    if len(starts) < 2:
        return None
    order = np.argsort(starts, kind="stable")
    sorted_starts = starts[order]
    same = np.diff(sorted_starts) <= SAME_INSTANT_S
    shared = np.zeros(len(starts), dtype=bool)
    shared[1:] |= same
    shared[:-1] |= same
    if shared.mean() < BATCHED_SHARE:
        return None
    instant = np.concatenate([[0], np.cumsum(~same)])  # the instant each sorted task arrived at
    tpl = np.asarray(task_template)[known][order]
    keys, counts = np.unique(np.stack([instant, tpl]), axis=1, return_counts=True)
    if keys.shape[1] > MAX_BATCHES:
        return None
    first = {int(i): float(sorted_starts[np.argmax(instant == i)]) for i in np.unique(keys[0]).tolist()}
    entries = [
        {"at_s": round(first[int(i)], 6), "template": templates[int(t)].name, "count": int(c)}
        for i, t, c in zip(keys[0].tolist(), keys[1].tolist(), counts.tolist())
    ]
    comment = (
        f"{int(shared.sum()):,} of {len(starts):,} tasks arrived at an instant they share with another (a Poisson "
        f"process never does): the capture's {len(first):,} arrival instants replayed, each template with its count"
    )
    return entries, comment
