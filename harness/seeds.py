"""The one rule for seed lists, wherever they are written (scenario files, sweep files, suites).

A seed names one simulated day; statistics across seeds assume each is a different day.
A repeated seed would count the same day twice (a zero-width interval, a "better" verdict
from a single day), and a seed beyond 64 bits cannot be stored in the run history (and
would collide with a smaller one in the random streams), so both are refused before
anything runs.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MAX_SEED", "seeds_problem"]

#: The largest seed: the run history stores seeds as SQLite's signed 64-bit INTEGER.
MAX_SEED = 2**63 - 1


def seeds_problem(seeds: Iterable[object]) -> str | None:
    """What is wrong with a list of seeds (repeated, negative, too large, not whole numbers), or None."""
    seen: set[int] = set()
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int):
            return f"every seed must be a whole number, got {seed!r}"
        if not 0 <= seed <= MAX_SEED:
            return f"every seed must be between 0 and 2**63-1 ({MAX_SEED}), got {seed}"
        if seed in seen:
            return (
                f"seed {seed} is listed twice: each seed is one simulated day, and a repeated day would "
                "count as independent evidence; list each seed once"
            )
        seen.add(seed)
    return None
