"""Calibration infers a provider's capacity (servers, the calls it holds) and its calls' service times from
their arrival and answer times.

The trace is built by hand: a provider with two servers serving calls first come first served, holding at most six
(two in service, four waiting) and refusing the rest as overloaded, computed here from known arrivals and service
times, so the capacity and the service the fit must find are known.
"""

from __future__ import annotations

import heapq
import json
import math
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


def _patient_day(path, seed: int = 11, patience: float = 60.0, hang: float = 20.0) -> tuple[list[float], int, int]:
    """Six hours of one-call tasks (a call every 7.5 s on average) at a provider of two servers holding eight calls,
    whose clients give up after ``patience`` seconds: a call answered later times out then, and the provider goes
    on working for it (its server stays busy, it stays among the calls held).  One call in fifty hangs for
    ``hang`` seconds before it reaches the provider.  Returns every admitted call's service, the hangs and the
    calls the client gave up on."""
    rng = random.Random(seed)
    free = [0.0, 0.0]
    in_system: list[float] = []
    records, services, hangs, gave_up, t, i = [], [], 0, 0, 0.0, 0
    while t < 6 * 3600:
        t += rng.expovariate(1 / 7.5)
        i += 1
        while in_system and in_system[0] <= t:
            heapq.heappop(in_system)
        record = {"time": EPOCH + t, "task": f"t{i}", "tool": "llm", "worker": "w0"}
        if rng.random() < 0.02:
            hangs += 1
            records.append({**record, "duration_s": hang, "outcome": "error", "error": "TIMEOUT"})
            continue
        if len(in_system) >= 8:
            records.append({**record, "duration_s": 0.0, "outcome": "error", "error": "SERVICE_OVERLOADED"})
            continue
        service = rng.lognormvariate(2.6, 0.3)
        start = max(t, free[0])
        heapq.heapreplace(free, start + service)
        heapq.heappush(in_system, start + service)
        services.append(service)
        if start + service - t > patience:
            gave_up += 1
            records.append({**record, "duration_s": patience, "outcome": "error", "error": "TIMEOUT"})
        else:
            records.append({**record, "duration_s": start + service - t, "outcome": "ok"})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return services, hangs, gave_up


def test_a_client_that_gives_up_leaves_the_provider_working(tmp_path):
    """Calls answered after the client's 60 s patience time out at 60 s while the provider works on; hangs end at
    20 s and never reach it.  The fit finds the call timeout, the hangs as the timeout fault (at 20 s, none of the
    calls at 60 s among them) and the services: the abandoned calls keep their server in the reconstructed queue.
    Before, the 60 s timeouts were a hang of their own and the next calls' services came out long (the
    reconstruction freed a server the provider was still using)."""
    path = tmp_path / "patient.jsonl"
    services, hangs, gave_up = _patient_day(path)
    assert gave_up >= 20 and hangs >= 20  # the world has both, in numbers
    fitted = calibrate([path])
    fleet = fitted.document["fleet"]
    assert fleet["call_timeout_s"] == 60
    assert fleet["providers"] == [{"name": "provider", "servers": 2, "max_in_flight": 8, "admission": "refuse"}]
    [timeout] = [f for f in fitted.document["faults"] if f["kind"] == "timeout"]
    assert timeout["timeout_s"] == 20
    calls = len(path.read_text().splitlines())
    assert timeout["probability"] == pytest.approx(hangs / calls, rel=0.02)
    # The services' own log-normal: the mean and standard deviation of their logs (before: mean +1.4%, cv +6%).
    logs = [math.log(s) for s in services]
    sigma = statistics.pstdev(logs)
    (step,) = fitted.document["workload"]["templates"][0]["steps"]
    assert step["duration"]["mean_s"] == pytest.approx(math.exp(statistics.fmean(logs) + sigma**2 / 2), rel=0.005)
    assert step["duration"]["cv"] == pytest.approx(math.sqrt(math.expm1(sigma**2)), rel=0.02)


def test_a_tool_the_provider_does_not_queue_is_left_out_of_it(default_export):
    """The default day on seed 3: run_tests runs on the worker, not through the provider, but no expired key shows
    it off the API, so it is taken for an API tool.  Its 90 s calls run beside the queue; counted in it, they needed
    five servers (a limit of 14) where the provider has two and holds twelve.  Left out (it needs more servers than
    the tools the provider refused), the provider comes back as declared, with the API tools it does queue."""
    _, _, path = default_export
    fitted = calibrate([path])
    [provider] = fitted.document["fleet"]["providers"]
    assert (provider["servers"], provider["max_in_flight"]) == (2, 12)
    assert "run_tests" not in provider["tools"]
    assert {"plan", "edit", "git_push", "search", "synthesise"} <= set(provider["tools"])
