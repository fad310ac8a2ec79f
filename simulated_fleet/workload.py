"""The workload: tasks arriving over the simulated horizon, with realistic names.

Arrivals are a non-homogeneous Poisson process (busier in the afternoon, or following
a scenario's arrival schedule), drawn by thinning from one seeded stream, so the same seed gives the same tasks in every arm.
Names come from a Faker instance seeded per run (``seed_instance``, never the global
``Faker.seed``) and are drawn into small pools once, and only when a title is shown,
keeping per-task work tiny.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from fleetchaos.sim import _rng
from fleetchaos.sim.config import DAY_S, WorkloadSpec, lognormal_params

S_WORKLOAD = _rng.stream_id("workload")
PEAK_HOUR_S = 14 * 3600.0


@dataclass(frozen=True, slots=True)
class NamePools:
    """Seeded pools of realistic names the workload draws task titles from."""

    repos: tuple[str, ...]
    files: tuple[str, ...]
    companies: tuple[str, ...]
    topics: tuple[str, ...]

    @classmethod
    def build(cls, seed: int, size: int = 40) -> NamePools:
        fake = _faker()
        fake.seed_instance(seed)
        return cls(
            repos=tuple(f"{fake.user_name()}/{fake.slug()}" for _ in range(size)),
            files=tuple(fake.file_path(depth=2, extension="py") for _ in range(size)),
            companies=tuple(fake.company() for _ in range(size)),
            topics=tuple(fake.catch_phrase() for _ in range(size)),
        )

    def text(self, template_name: str, picks: tuple[int, ...]) -> str:
        """The title of a task in the style of its template, from the pool entries it picked."""
        if template_name == "coding":
            return f"fix {self.files[picks[0]]} in {self.repos[picks[1]]}"
        if template_name == "research":
            return f"research: {self.topics[picks[0]]}"
        if template_name == "crm_sync":
            return f"sync contacts of {self.companies[picks[0]]}"
        return f"{template_name}: {self.topics[picks[0]]}"


class TitleSource:
    """A run's task titles: which pool entries each task picks, drawn now; the names, later.

    Building the Faker pools costs about 10 ms, a sixth of a 3,000-call run, and only
    per-task rows (tasks.csv, the report) ever show a title.  So a task's picks are drawn
    from the workload's stream as it arrives (the same draws as picking from the pools
    themselves), and the pools are built the first time a title is read.  They depend on
    the seed and size alone, so a process keeps the last few (:func:`_name_pools`): the
    arms of a comparison share their seeds and build each seed's pools once.
    """

    __slots__ = ("_pools", "seed", "size")

    def __init__(self, seed: int, size: int = 40):
        self.seed = seed
        self.size = size
        self._pools: NamePools | None = None

    def __repr__(self) -> str:  # no memory address: event logs and fingerprints include titles
        return f"TitleSource(seed={self.seed}, size={self.size})"

    def __eq__(self, other: object) -> bool:  # the seed and size decide every name
        return isinstance(other, TitleSource) and (self.seed, self.size) == (other.seed, other.size)

    def __hash__(self) -> int:
        return hash((self.seed, self.size))

    def __deepcopy__(self, memo) -> TitleSource:
        return self  # its only state is a cache of what the seed determines

    def pools(self) -> NamePools:
        """The run's name pools, built on first use."""
        if self._pools is None:
            self._pools = _name_pools(self.seed, self.size)
        return self._pools

    def pick(self, template_name: str, rng: random.Random) -> Title:
        """A task's title: ``rng`` chooses pool entries exactly as ``rng.choice(pool)`` would.

        ``choice(seq)`` draws ``getrandbits(k)`` for ``k = len(seq).bit_length()`` until the
        number is below ``len(seq)``, then indexes: done here directly (once per task).
        """
        getrandbits = rng.getrandbits
        size = self.size
        k = size.bit_length()
        first = getrandbits(k)
        while first >= size:
            first = getrandbits(k)
        if template_name == "coding":
            second = getrandbits(k)
            while second >= size:
                second = getrandbits(k)
            return Title(self, template_name, (first, second))
        return Title(self, template_name, (first,))


class Title(NamedTuple):
    """A task's title, resolved to text (``str(title)``) only when something shows it.

    Named tuples, here and for :class:`Task`: immutable like a frozen dataclass, and built
    in one C call rather than a ``object.__setattr__`` per field (one of each per task).
    """

    source: TitleSource
    template_name: str
    picks: tuple[int, ...]

    def __str__(self) -> str:
        return self.source.pools().text(self.template_name, self.picks)


class Task(NamedTuple):
    """One unit of work sent to the fleet."""

    id: int
    arrival_s: float
    template: int
    orchestrator: int
    title: Title | str
    """The task's title; ``str(task.title)`` is its text."""


@functools.lru_cache(maxsize=64)
def _name_pools(seed: int, size: int) -> NamePools:
    # Immutable and a function of (seed, size): shared by every run of the seed in this process.
    return NamePools.build(seed, size)


@functools.cache
def _faker():  # constructing Faker is slow; each run re-seeds its own instance
    from faker import Faker

    return Faker("en_US")


def is_closed_loop(spec: WorkloadSpec) -> bool:
    """Whether clients submit tasks as their previous ones end (so each arm of a comparison runs its own tasks)."""
    return spec.clients is not None and spec.arrivals is None


def closed_loop_task(
    spec: WorkloadSpec,
    seed: int,
    client: int,
    n: int,
    task_id: int,
    now: float,
    orchestrators: int,
    titles: TitleSource,
) -> tuple[Task, float]:
    """The ``n``-th task of closed-loop ``client`` and the think time before it.

    The client thinks from ``now``, so the task arrives at ``now`` plus the think time.
    """
    rng = random.Random(_rng.key(seed, S_WORKLOAD, client, n))
    think = spec.think
    if think.cv > 0:
        mu, sigma = lognormal_params(think.mean_s, think.cv)
        think_s = math.exp(mu + sigma * rng.gauss(0.0, 1.0))
    else:
        think_s = think.mean_s
    weights = [t.weight for t in spec.templates]
    template = rng.choices(range(len(weights)), weights)[0]
    title = titles.pick(spec.templates[template].name, rng)
    return Task(task_id, now + think_s, template, client % orchestrators, title), think_s


def explicit_task_count(spec: WorkloadSpec, workers: int) -> int:
    """How many tasks the explicit ``arrivals`` stand for (counts and per-worker bursts expanded)."""
    return sum(a.count * (workers if a.per_worker else 1) for a in spec.arrivals or ())


def arrivals(spec: WorkloadSpec, seed: int, horizon_s: float, orchestrators: int, workers: int = 1) -> Iterator[Task]:
    """Tasks in arrival order over ``[0, horizon_s)`` (``workers`` sizes per-worker bursts)."""
    rng = random.Random(_rng.key(seed, S_WORKLOAD))
    titles = TitleSource(seed)
    names = [t.name for t in spec.templates]
    if spec.arrivals is not None:
        ordered = sorted(enumerate(spec.arrivals), key=lambda p: (p[1].at_s, p[0]))
        task_id = 0
        for _, a in ordered:
            if a.at_s >= horizon_s:
                return
            template = names.index(a.template)
            for _ in range(a.count * (workers if a.per_worker else 1)):
                yield Task(task_id, a.at_s, template, task_id % orchestrators, titles.pick(a.template, rng))
                task_id += 1
        return
    base = spec.tasks_per_day / DAY_S
    amp = spec.diurnal_amplitude
    peak = base * (1.0 + amp)
    schedule = spec.arrival_schedule
    scheduled = None
    if schedule is not None:  # thinning against the schedule's highest rate instead of the sinusoid
        scheduled = schedule.compiled()
        peak = max(p.tasks_per_hour for p in schedule.points) / 3600.0
    # Cumulative weights once, not per task: choices() with weights= accumulates them on
    # every call, then bisects them with one random() scaled by their total.  That last
    # step is done here directly (the same draw and the same index), without choices()'s
    # argument checks and list on every task.
    cum_weights = list(itertools.accumulate(t.weight for t in spec.templates))
    total = cum_weights[-1] + 0.0
    last = len(cum_weights) - 1
    t = 0.0
    task_id = 0
    uniform = rng.random
    log, cos, pick, bisect_right = math.log, math.cos, titles.pick, bisect.bisect
    while True:
        t += -log(1.0 - uniform()) / peak  # rng.expovariate(peak), the same arithmetic, inlined
        if t >= horizon_s:
            return
        if scheduled is not None:
            if uniform() * peak > scheduled(t):
                continue
        elif amp > 0:
            rate = base * (1.0 + amp * cos(2.0 * math.pi * (t - PEAK_HOUR_S) / DAY_S))
            if uniform() * peak > rate:
                continue
        template = bisect_right(cum_weights, uniform() * total, 0, last)
        # Task(id, arrival_s, template, orchestrator, title), positionally: one per task.
        yield Task(task_id, t, template, task_id % orchestrators, pick(names[template], rng))
        task_id += 1
