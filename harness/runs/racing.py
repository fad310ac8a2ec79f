"""Racing: candidates run seed after seed, and those already behind stop spending seeds.

A tuning search judges every candidate by its objective's mean over the training seeds.
Most candidates of a wide space are far behind after a seed or two, and every candidate
meets the same faults on a seed, so their per-seed values are paired: :func:`race` runs
the pool one training seed at a time and, after each seed,

* keeps the best third of the survivors by their mean over the seeds run so far, and never
  fewer than two, so the winner is decided on every seed against a rival (successive halving
  with a factor of :data:`ETA`; of equals, the earlier in the pool, as the exhaustive search's
  winner is the earliest of equals), and
* from seed two on, drops any survivor that a paired Student-t test (one-sided, at
  :data:`ALPHA`) finds worse than the incumbent (the survivor with the best mean).

Only the last survivors run every training seed, and the winner is one of them, judged on
every training seed as the exhaustive search judges it.  A candidate's record says how
many seeds it ran.  Members of the pool already judged on every seed (``known``: an
earlier batch's incumbent) take part without running again.  Everything is a pure
function of the values, so a race gives the same survivors whatever the executor.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fleetchaos.results.stats import paired_difference

__all__ = ["ALPHA", "ETA", "Race", "RaceOutcome", "halving_runs", "race"]

#: Each seed keeps about 1 / ETA of the survivors.
ETA = 3
#: The one-sided level of the paired test that drops a survivor worse than the incumbent.
ALPHA = 0.05

#: Runs the given candidates on one seed; each candidate's objective value there (None: undefined).
RunSeed = Callable[[list[str], int], list[float | None]]


@dataclass(frozen=True)
class RaceOutcome:
    """Each candidate's objective values on the seeds it ran (a prefix of the seeds), and the runs made."""

    values: dict[str, list[float | None]]
    runs: int


def _mean(values: Sequence[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


class Race:
    """One race, a seed at a time: :meth:`todo` names the candidates to run on :attr:`seed`, :meth:`record` takes
    their values and makes the cut.  Several races can step together (one batch of runs for all of them)."""

    def __init__(
        self,
        candidates: Sequence[str],
        seeds: Sequence[int],
        *,
        higher_is_better: bool,
        known: dict[str, list[float | None]] | None = None,
    ):
        self.seeds = list(seeds)
        self.sign = 1.0 if higher_is_better else -1.0
        self.known = dict(known or {})
        self.values: dict[str, list[float | None]] = {c: [] for c in candidates if c not in self.known}
        self.alive = list(dict.fromkeys([*self.known, *self.values]))
        self.k = 0
        self.runs = 0

    @property
    def done(self) -> bool:
        """Whether every seed has been run."""
        return self.k >= len(self.seeds)

    @property
    def seed(self) -> int:
        """The seed the candidates of :meth:`todo` run on next."""
        return self.seeds[self.k]

    def todo(self) -> list[str]:
        """The candidates still in the race that have not run :attr:`seed` (known ones never run)."""
        return [] if self.done else [c for c in self.alive if c in self.values]

    def record(self, values: Sequence[float | None]) -> None:
        """The values of :meth:`todo`'s candidates on :attr:`seed`, in its order; then the cut for the next seed."""
        todo = self.todo()
        for candidate, value in zip(todo, values):
            self.values[candidate].append(value)
        self.runs += len(todo)
        k = self.k
        self.k += 1
        if self.done:
            return
        seen = {c: (self.known[c][: k + 1] if c in self.known else self.values[c]) for c in self.alive}

        def score(c: str) -> float:
            mean = _mean(seen[c])
            return -math.inf if mean is None else self.sign * mean

        # Stable: the earlier of equals first, and kept first, as the exhaustive search breaks ties.
        ranked = sorted(self.alive, key=score, reverse=True)
        survivors = ranked[: _kept(len(ranked))]
        if k >= 1:
            incumbent = survivors[0]
            survivors = [incumbent] + [c for c in survivors[1:] if not _worse(seen[c], seen[incumbent], self.sign)]
        self.alive = [c for c in self.alive if c in survivors]  # the pool's own order, for the next seed's batch

    def outcome(self) -> RaceOutcome:
        """Each candidate's values on the seeds it ran, and the runs made."""
        return RaceOutcome(dict(self.values), self.runs)


def race(
    candidates: Sequence[str],
    seeds: Sequence[int],
    run_seed: RunSeed,
    *,
    higher_is_better: bool,
    known: dict[str, list[float | None]] | None = None,
) -> RaceOutcome:
    """Race ``candidates`` over ``seeds`` (in order); see the module's text for the rules."""
    one = Race(candidates, seeds, higher_is_better=higher_is_better, known=known)
    while not one.done:
        todo = one.todo()
        one.record(run_seed(todo, one.seed) if todo else [])
    return one.outcome()


def _worse(values: list[float | None], incumbent: list[float | None], sign: float) -> bool:
    """A paired t-test, one-sided at :data:`ALPHA`: ``values`` worse than ``incumbent`` on the same seeds."""
    diff = paired_difference(values, incumbent, confidence=1 - 2 * ALPHA)
    if diff.low is None or diff.high is None or diff.n < 2:
        return False
    return (diff.high < 0) if sign > 0 else (diff.low > 0)


def _kept(alive: int) -> int:
    """How many of ``alive`` survivors a cut keeps: a third, and never fewer than two (while two race)."""
    return min(alive, max(2, math.ceil(alive / ETA)))


def halving_runs(candidates: int, seeds: int) -> int:
    """The runs a race of ``candidates`` over ``seeds`` makes at most (the paired test may stop more, sooner)."""
    total, alive = 0, candidates
    for _ in range(seeds):
        total += alive
        alive = _kept(alive)
    return total
