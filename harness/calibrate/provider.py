"""A provider's capacity from its traced calls: servers, the calls it holds, and each call's own service time.

A provider that refuses calls for overload (the ``overloaded`` kind: its 503s) has a
limit on the calls in it, and a queue in front of its servers; the traces show neither,
only when each call arrived and when its answer came back.  Both follow from those
times under the provider's own discipline, first come first served (``fleet.providers``):

* **its tools**: the tools it refused, and when they all call the model provider's API,
  every tool that does whose calls its queue can hold: one that needs no more servers
  than the refused tools alone (a tool it never refused may still queue in it: a step
  after a fan-out arrives as its items leave, when there is room; a tool whose calls run
  in parallel beside it, taken for an API tool, needs more).
* **max_in_flight**: it admits a call only while fewer than that many are in it, so it
  is one more than the most calls in flight (arrived, not yet answered) at an admitted
  call's arrival (as all but :data:`OVERCOUNT_SHARE` of them saw it).
* **servers**: with ``c`` servers, each admitted call, in order of arrival, starts when
  it arrives or when the earliest of the ``c`` servers frees, whichever is later, and is
  served until its answer.  Too few servers make some calls start after their own answer
  (a negative service time); the fit takes the fewest servers with which no more than
  :data:`NEGATIVE_SHARE` of the calls do (a client that gave up leaves the provider
  working for it, which the traces do not show).
* **service times**: each call's answer less its start: the call's duration without its
  wait in the queue, which is what a step's ``duration`` is in a world with the provider
  (its queue makes the waits again); the few calls that start after their answer are left
  out of the fit.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

from fleetchaos.calibrate.faults import Context, sig
from fleetchaos.traces.codes import FAULT_KINDS

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from fleetchaos.calibrate.observed import Calls

#: The share of calls whose reconstructed service may be negative at the fitted server count.
NEGATIVE_SHARE = 0.005

#: The share of arrivals that may see one more call in flight than the provider held.
OVERCOUNT_SHARE = 0.01

#: The name of the fitted provider.
NAME = "provider"


def _services(arrive: NDArray[np.float64], answer: NDArray[np.float64], servers: int) -> NDArray[np.float64]:
    """Each call's service time (answer less start) with ``servers`` first-come-first-served servers; calls in
    order of arrival."""
    import numpy as np

    free = [-np.inf] * servers
    out = np.empty(len(arrive))
    for i, (a, d) in enumerate(zip(arrive.tolist(), answer.tolist())):
        start = max(a, free[0])
        out[i] = d - start
        heapq.heapreplace(free, max(d, start))
    return out


def _most_in_flight(arrive: NDArray[np.float64], answer: NDArray[np.float64]) -> int:
    """The most calls in flight (arrived, not answered) at a call's arrival, not counting it, that more than
    :data:`OVERCOUNT_SHARE` of the arrivals saw: a traced answer includes the network's way back, so a call the
    provider has finished may still look in flight to a few arrivals."""
    import numpy as np

    if not len(arrive):
        return 0
    ends = np.sort(answer)
    # Calls arrived strictly before each arrival (one arriving at the same instant is not yet in it) ...
    arrived = np.searchsorted(arrive, arrive, side="left")
    # ... less those answered by then.
    seen = arrived - np.searchsorted(ends, arrive, side="right")
    counts = np.bincount(seen)
    above = len(seen) - np.cumsum(counts)  # arrivals that saw more than k
    return int(np.flatnonzero(above <= OVERCOUNT_SHARE * len(seen))[0])


@dataclass(frozen=True)
class ProviderFit:
    """The fitted provider and what its reconstructed queue says of each call."""

    doc: dict | None
    """The ``fleet.providers`` entry (None: the traces show no provider with a limit)."""
    service: NDArray[np.float64]
    """Each served call's service time (NaN for calls it did not serve)."""
    floor: NDArray[np.float64]
    """Each call the client gave up on: the least service that outlasts its patience (NaN elsewhere)."""
    chance: NDArray[np.float64]
    """Each call it served or the client gave up on: its chance, from its wait, to outlast the client's patience
    (NaN elsewhere)."""
    comment: str


def _log_params(service: NDArray[np.float64], tool: NDArray[np.int32]) -> dict[int, tuple[float, float]]:
    """Each tool's log-normal service (mean and standard deviation of the logs) from its positive services."""
    import numpy as np

    params = {}
    for t in np.unique(tool).tolist():
        logs = np.log(service[(tool == t) & (service > 0)])
        if len(logs):
            params[t] = (float(logs.mean()), float(logs.std()))
    return params


def outlasts(bound: float, mu: float, sigma: float) -> tuple[float, float]:
    """(chance that a log-normal service outlasts ``bound``, its median given that it does)."""
    if bound <= 0.0:
        return 1.0, math.exp(mu)
    if sigma <= 1e-9:
        return (1.0, math.exp(mu)) if math.exp(mu) > bound else (0.0, bound)
    z = (math.log(bound) - mu) / sigma
    survive = 0.5 * math.erfc(z / math.sqrt(2.0))
    if survive < 1e-12:
        return survive, bound
    return survive, math.exp(mu + sigma * NormalDist().inv_cdf(1.0 - survive / 2.0))


def _queue(
    arrive: NDArray[np.float64],
    answer: NDArray[np.float64],
    patience: NDArray[np.float64],
    left: NDArray[np.bool_],
    tool: NDArray[np.int32],
    servers: int,
    params: dict[int, tuple[float, float]],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """:func:`_services` with the calls the client gave up on (``left``): each starts in its turn and keeps its
    server for the median service its tool's log-normal gives past its patience (the provider goes on working
    for it).  Returns the served calls' services, each abandoned call's least service, and every call's chance,
    from its wait, to outlast its client's ``patience``."""
    import numpy as np

    free = [-math.inf] * servers
    n = len(arrive)
    service = np.full(n, np.nan)
    floor = np.full(n, np.nan)
    chance = np.full(n, np.nan)
    for i, (a, d, p, gone, t) in enumerate(
        zip(arrive.tolist(), answer.tolist(), patience.tolist(), left.tolist(), tool.tolist())
    ):
        start = max(a, free[0])
        bound = a + p - start
        mu, sigma = params.get(t, (math.log(max(bound, 1e-6)), 0.0))
        chance[i], work = outlasts(bound, mu, sigma)
        if gone:
            floor[i] = max(bound, 0.0)
            heapq.heapreplace(free, start + work)
        else:
            service[i] = d - start
            heapq.heapreplace(free, max(d, start))
    return service, floor, chance


def _servers_for(calls: Calls, tools: set[int]) -> int:
    """The fewest first-come-first-served servers with which the successful calls of ``tools`` start after their own
    answer no more than :data:`NEGATIVE_SHARE` of the time: a tool whose calls the provider does not queue (a tool
    not on its API, run in parallel) needs more servers than the ones it queues."""
    import numpy as np

    index = np.flatnonzero(np.isin(calls.tool, list(tools)) & (calls.kind == -1))
    order = index[np.argsort(calls.start[index], kind="stable")]
    arrive = calls.start[order]
    answer = arrive + calls.duration[order]
    limit = _most_in_flight(arrive, answer) + 1
    for c in range(1, limit + 1):
        if float((_services(arrive, answer, c) < 0).mean()) <= NEGATIVE_SHARE:
            return c
    return limit


def fit_provider(ctx: Context, gave_up: NDArray[np.bool_] | None = None, patience_s: float = math.inf) -> ProviderFit:
    """The provider (a ``fleet.providers`` entry) when the traces show overload refusals, and its queue's view of
    each call.  ``gave_up``: calls the client may have given up on (:mod:`fleetchaos.calibrate.call_timeout`),
    after ``patience_s`` or their own duration if shorter; those of its tools wait in its queue and keep a server
    after the client left."""
    import numpy as np

    calls = ctx.calls
    service = np.full(len(calls), np.nan)
    floor = np.full(len(calls), np.nan)
    chance = np.full(len(calls), np.nan)
    refused = calls.kind == FAULT_KINDS.index("overloaded")
    if not refused.any():
        return ProviderFit(None, service, floor, chance, "")
    tools = set(np.unique(calls.tool[refused]).tolist())
    if tools <= ctx.bucket_tools:  # the model provider: every call through its API that its queue can hold
        base = _servers_for(calls, tools)
        tools |= {t for t in ctx.bucket_tools - tools if _servers_for(calls, tools | {t}) <= base}
    at_provider = np.isin(calls.tool, list(tools))
    served = at_provider & (calls.kind == -1)
    index = np.flatnonzero(served)
    order = index[np.argsort(calls.start[index], kind="stable")]
    arrive = calls.start[order]
    answer = arrive + calls.duration[order]
    limit = _most_in_flight(arrive, answer) + 1
    servers = _servers_for(calls, tools)
    times = _services(arrive, answer, servers)
    waited = answer - arrive - np.maximum(times, 0.0)
    left = at_provider & gave_up if gave_up is not None else np.zeros(len(calls), dtype=bool)
    if left.any():  # again, with the calls the client gave up on holding a server for their work
        params = _log_params(times, calls.tool[order])
        index = np.flatnonzero(served | left)
        order = index[np.argsort(calls.start[index], kind="stable")]
        arrive = calls.start[order]
        patience = np.where(left[order], calls.duration[order], patience_s)
        times, floor[order], chance[order] = _queue(
            arrive, arrive + calls.duration[order], patience, left[order], calls.tool[order], servers, params
        )
        mask = served[order]
        waited = (calls.duration[order] - np.maximum(times, 0.0))[mask]
        times = np.where(mask, times, np.nan)
    service[order] = np.where(times > 0, times, np.nan)  # a call that started after its answer has no service
    doc: dict = {"name": NAME, "servers": servers, "max_in_flight": max(limit, servers), "admission": "refuse"}
    if tools != ctx.api_tools:  # without tools, a provider serves every call through an API
        doc["tools"] = sorted(calls.tools[t] for t in tools)
    comment = (
        f"{int(refused.sum())} calls refused for overload: a provider with a limit.  max_in_flight: one more than the "
        f"most of its {int(served.sum()):,} served calls in flight at one's arrival ({limit - 1}, as "
        f"{100 * (1 - OVERCOUNT_SHARE):g}% of them saw it); servers: the fewest with "
        f"which, first come first served, no more than {100 * NEGATIVE_SHARE:g}% of them start after their own answer "
        f"({servers}); their durations are fitted without their wait in its queue (mean wait "
        f"{sig(float(waited.mean()), 3):g} s, the longest {sig(float(waited.max()), 3):g} s)"
    )
    if left.any():
        comment += (
            f"; {int(left.sum())} calls the client gave up on keep a server in their turn until their work is done"
        )
    return ProviderFit(doc, service, floor, chance, comment)
