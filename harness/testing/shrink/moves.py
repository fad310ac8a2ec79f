"""The reduction moves: delta debugging over events and tasks, a shorter horizon, shorter windows, fewer workers.

Each move proposes smaller candidates and keeps one only if a trial shows the failure is
still there (:meth:`fleetchaos.testing.shrink.trials.Trials.fails`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from fleetchaos.errors import UserError
from fleetchaos.testing.shrink.materialise import CallEvent, KeptFault, RateEvent, StateEvent, event_key, frozen_spec
from fleetchaos.testing.shrink.properties import ARRIVAL_TOLERANCE_S
from fleetchaos.testing.shrink.trials import Candidate, Trials

__all__ = ["ddmin", "minimise", "reproduce", "shortest_prefix"]


def ddmin(items: list, test: Callable[[list], bool]) -> list:
    """Zeller's ddmin: a 1-minimal sublist of ``items`` on which ``test`` holds (``test(items)`` must hold).

    Deterministic: chunks are tried in order, subsets before complements.
    """
    if test([]):
        return []
    n = 2
    while len(items) >= 2:
        chunks = _split(items, n)
        for chunk in chunks:
            if test(chunk):
                items, n = chunk, 2
                break
        else:
            for i in range(len(chunks)):
                rest = [x for j, ch in enumerate(chunks) if j != i for x in ch]
                if n > 2 and test(rest):
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(items):
                    break
                n = min(2 * n, len(items))
    return items


def _split(items: list, n: int) -> list[list]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]


def _needed_workers(events: Sequence, resolved: list[dict]) -> int:
    need = 0
    for e in events:
        if isinstance(e, (CallEvent, StateEvent)):
            need = max(need, e.worker + 1)
        elif isinstance(e, KeptFault):
            need = max(need, *(w + 1 for w in resolved[e.index].get("workers") or [0]))
    if any(isinstance(e, CallEvent) for e in events):
        for e in events:
            if isinstance(e, CallEvent):
                for i in e.rules:
                    need = max(need, *(w + 1 for w in resolved[i].get("workers") or [0]))
    return max(need, 1)


def reproduce(s: Trials, c: Candidate, kinds: dict[int, str], notes: list[str]) -> Candidate:
    """The materialised candidate, with fallbacks to original specs until it fails like the original."""
    if s.fails(c):
        return c
    events = list(c.events)
    materialised = sorted(
        {e.kind for e in events if isinstance(e, (CallEvent, StateEvent))}
        | ({"rate_limit"} if any(isinstance(e, RateEvent) for e in events) else set())
    )
    for kind in materialised:
        events = [e for e in events if not (isinstance(e, (CallEvent, StateEvent, RateEvent)) and _kind(e) == kind)]
        events += [KeptFault(i, k, frozen_spec(s.resolved[i])) for i, k in kinds.items() if k == kind]
        events.sort(key=event_key)
        notes.append(f"{kind}: the materialised events did not reproduce the failure; the original spec is kept")
        c = Candidate(tuple(events), c.arrivals, c.duration_s, c.workers)
        if s.fails(c):
            return c
    c = Candidate(c.events, None, c.duration_s, c.workers)
    notes.append("workload: the explicit arrivals did not reproduce the failure; the original workload is kept")
    if s.fails(c):
        return c
    raise UserError("shrink: the failure could not be reproduced from the materialised run; nothing to shrink")


def _kind(e) -> str:
    return "rate_limit" if isinstance(e, RateEvent) else e.kind


def minimise(s: Trials, c: Candidate) -> Candidate:
    """ddmin over events, then tasks; then shorter horizon, windows and fewer workers; then the plain form."""

    def with_events(events):
        return Candidate(tuple(events), c.arrivals, c.duration_s, c.workers)

    events = ddmin(list(c.events), lambda sub: s.fails(with_events(sub)))
    c = with_events(events)
    if c.arrivals is not None:
        target = [a for a in c.arrivals if s.target is not None and _same(a, s.target)]
        others = [a for a in c.arrivals if a not in target]

        def with_arrivals(sub):
            return Candidate(c.events, tuple(sorted(target + list(sub))), c.duration_s, c.workers)

        if target:  # first the cheap cut: every task arriving after the failing one
            before = [a for a in others if a[0] <= target[0][0]]
            if len(before) < len(others) and s.fails(with_arrivals(before)):
                others = before
        others = shortest_prefix(others, lambda sub: s.fails(with_arrivals(sub)))
        # cheap, and kept if the budget runs out in ddmin below (with_arrivals reads c when called)
        c = _cut_horizon(s, with_arrivals(others))
        kept = ddmin(others, lambda sub: s.fails(with_arrivals(sub)))
        c = with_arrivals(kept)
    c = _cut_horizon(s, c)
    # windows: halve disk fills, crashes and rate-limit cuts while the run still fails
    for i, e in enumerate(c.events):
        if isinstance(e, (StateEvent, RateEvent)) and e.length_s > 0:
            for _ in range(8):
                cur = c.events[i]
                half = round(cur.length_s / 2, 3)
                if half < 1:
                    break
                smaller = (
                    StateEvent(cur.at_s, cur.kind, cur.worker, half)
                    if isinstance(cur, StateEvent)
                    else RateEvent(cur.at_s, half, cur.factor)
                )
                trial = Candidate((*c.events[:i], smaller, *c.events[i + 1 :]), c.arrivals, c.duration_s, c.workers)
                if not s.fails(trial):
                    break
                c = trial
    # workers: the fewest that still fail (round-robin dispatch depends on the count)
    need = _needed_workers(c.events, s.resolved)
    for n in range(need, min(c.workers, need + 5)):
        fewer = Candidate(c.events, c.arrivals, c.duration_s, n)
        if s.fails(fewer):
            c = fewer
            break
    # the plain form: each call fault its own probability-1 spec, no placeholders
    if any(isinstance(e, CallEvent) for e in c.events):
        plain = Candidate(c.events, c.arrivals, c.duration_s, c.workers, plain=True)
        if s.fails(plain):
            c = plain
    return c


def _cut_horizon(s: Trials, c: Candidate) -> Candidate:
    """The candidate with its horizon just past its last task and last event, if it still fails."""
    last = max([a for a, _ in c.arrivals or ()] + [e.at_s for e in c.events] + [0.0])
    horizon = float(math.floor(last) + 1)
    if horizon < c.duration_s:
        shorter = Candidate(c.events, c.arrivals, horizon, c.workers)
        if s.fails(shorter):
            return shorter
    return c


def shortest_prefix(items: list, test: Callable[[list], bool]) -> list:
    """The shortest prefix found failing by doubling then bisecting (dropping later tasks keeps earlier ids).

    ``test(items)`` must hold.  Prefix lengths 1, 2, 4, ... are tried; between the last
    passing and the first failing length a bisection narrows it (assuming that, in
    between, longer prefixes fail when shorter ones do; only tested prefixes are kept).
    """
    n = len(items)
    size = 1
    while size < n and not test(items[:size]):
        size *= 2
    if size >= n:
        lo, hi = size // 2, n
    else:
        lo, hi = size // 2, size
    # invariant: items[:hi] fails (hi == n fails by the precondition), items[:lo] passes or lo == 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if test(items[:mid]):
            hi = mid
        else:
            lo = mid
    return items[:hi]


def _same(a: tuple[float, str], b: tuple[float, str]) -> bool:
    return a[1] == b[1] and abs(a[0] - b[0]) <= ARRIVAL_TOLERANCE_S
