"""Calibration infers a provider's capacity (servers, the calls it holds) and its calls' service times from
their arrival and answer times.

The trace is built by hand: a provider with two servers serving calls first come first served, holding at most six
(two in service, four waiting) and refusing the rest as overloaded, computed here from known arrivals and service
times, so the capacity and the service the fit must find are known.
"""

from __future__ import annotations

import heapq
import json
import random
import statistics

import pytest

from fleetchaos.calibrate.fit import calibrate

EPOCH = 1_735_689_600.0  # 2025-01-01T00:00:00Z


def _provider_day(path, seed: int = 7) -> list[float]:
    """Three hours of one-call tasks arriving at random (a call every 9 s on average) at a provider of two servers
    that holds six calls; each call's service is log-normal around 15 s.  Returns the admitted calls' services."""
    rng = random.Random(seed)
    free = [0.0, 0.0]  # when each server frees
    in_system: list[float] = []  # when each call in it leaves
    records, services, t, i = [], [], 0.0, 0
    while t < 3 * 3600:
        t += rng.expovariate(1 / 9)
        i += 1
        while in_system and in_system[0] <= t:
            heapq.heappop(in_system)
        record = {"time": EPOCH + t, "task": f"t{i}", "tool": "llm", "worker": "w0"}
        if len(in_system) >= 6:
            records.append({**record, "duration_s": 0.0, "outcome": "error", "error": "SERVICE_OVERLOADED"})
            continue
        service = rng.lognormvariate(2.7, 0.3)
        start = max(t, free[0])
        heapq.heapreplace(free, start + service)
        heapq.heappush(in_system, start + service)
        records.append({**record, "duration_s": start + service - t, "outcome": "ok"})
        services.append(service)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return services


def test_a_providers_servers_limit_and_service_times_are_fitted(tmp_path):
    """The fit finds the two servers, the six calls held, and the calls' service (their duration without the wait
    in the queue): the fitted step's mean within 2% of the services' own.  Before, no provider was fitted (its
    503s were counted as a kind not fitted) and the durations, waits included, were fitted as the service."""
    path = tmp_path / "provider.jsonl"
    services = _provider_day(path)
    fitted = calibrate([path])
    assert fitted.document["fleet"]["providers"] == [
        {"name": "provider", "servers": 2, "max_in_flight": 6, "admission": "refuse"}
    ]
    (step,) = fitted.document["workload"]["templates"][0]["steps"]
    assert step["duration"]["mean_s"] == pytest.approx(statistics.fmean(services), rel=0.02)
    assert not any(note.startswith("overloaded") for note in fitted.notes)
