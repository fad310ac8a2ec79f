"""Client-side adaptive throttling sees every request: under sustained overload it sends about K times what is accepted."""

from __future__ import annotations

import pytest

from fleetchaos.scenario.load import Scenario


def _overloaded_backend(tasks_per_s: float, accepted_per_s: float) -> Scenario:
    """Open arrivals at ``tasks_per_s`` against an API that accepts ``accepted_per_s`` (a token bucket, burst 1)."""
    return Scenario.model_validate(
        {
            "name": "overload",
            "description": "sustained overload",
            "duration_s": 3600,
            "fleet": {
                "orchestrators": 1,
                "workers": 20,
                "tool_slots": 8,
                "network_latency": {"mean_s": 0.05, "cv": 0},
                "api_rate_per_s": accepted_per_s,
                "api_burst": 1,
                "misread_probability": 0.0,
            },
            "workload": {
                "tasks_per_day": tasks_per_s * 86400,
                "diurnal_amplitude": 0,
                "templates": [{"name": "ask", "steps": [{"tool": "ask", "duration": {"mean_s": 0.5, "cv": 0}}]}],
            },
        }
    )


@pytest.mark.parametrize("errors", ["structured", "generic", "status", "raw"])
def test_sre_throttle_sends_about_twice_what_the_backend_accepts(sim, errors):
    """K=2 under 8x overload, on every format: requests reaching the backend / requests it accepted is 2 within 10%;
    refusals are local.  On a bare "failed" the client cannot tell a refusal from anything else, so every failure
    counts as not accepted (the SRE design counts every request that was not accepted)."""
    s = sim.run(_overloaded_backend(4.0, 0.5), "throttle-sre", errors, seed=3, drain_s=600)
    sent = sum(r.calls for r in s.records)
    refused_by_backend = sum(r.fault_hits.get("rate_limit", 0) for r in s.records)
    accepted = sent - refused_by_backend
    assert accepted > 800  # about 0.5 per second over the hour
    assert 1.8 <= sent / accepted <= 2.2, (sent, accepted)
    assert sum(r.throttled for r in s.records) > sent  # most requests never left the client
    from fleetchaos.results.metrics import RunAccumulator

    acc = RunAccumulator(None)
    for record in s.records:
        acc.fold(record)
    assert acc.breakdowns()["dispatches_refused_locally"] == {"dispatches": sum(r.throttled for r in s.records)}
    first_tries_refused = sum(1 for r in s.records if r.throttled and r.calls == 0)
    assert first_tries_refused > 0  # the throttle judges first tries too, not only retries


@pytest.mark.slow  # an hour of 14,400 tasks whose every retry is refused: about 6 s of CPU
def test_without_the_throttle_the_backend_sees_every_retry(sim):
    """The same overload under plain backoff: the backend sees far more than twice what it accepts."""
    s = sim.run(_overloaded_backend(4.0, 0.5), "backoff", "structured", seed=3, drain_s=600)
    sent = sum(r.calls for r in s.records)
    accepted = sent - sum(r.fault_hits.get("rate_limit", 0) for r in s.records)
    assert sent / accepted > 4
