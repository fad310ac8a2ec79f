"""A tool's own retry as a transport layer for that tool only, read from its tenacity configuration."""

from __future__ import annotations

import pytest

from fleetchaos.policies import LayeredBackoff, transport_from_tenacity
from fleetchaos.policies.tenacity_adapter import RetryTranslationError
from fleetchaos.sim.transport import TransportRetry


def _world(sim, failing: str):
    """One task: search (1 s), then synth (1 s); every call of ``failing`` is dropped (a blip)."""
    return sim.scenario(
        {"job": [sim.step("search", 1.0), sim.step("synth", 1.0)]},
        faults=[{"kind": "network_blip", "probability": 1.0, "tools": [failing]}],
    )


def test_a_layer_for_one_tool_retries_only_that_tools_calls(sim):
    """search's own layer (3 tries) retries search's dropped calls, 2 more calls per dispatch; synth's dropped
    calls go straight to the policy.  Hand count with no agent retries: search 3 calls (1 + 2 transport
    retries), then the task fails; synth failing: search 1 call, synth 1 call, no transport retry."""
    layer = TransportRetry(attempts=3, base_s=0.0, jitter="none", tools=frozenset({"search"}))
    policy = LayeredBackoff(max_retries=0, transport=layer)
    on_search = sim.run(_world(sim, "search"), policy, "generic")
    assert (on_search.rec.calls, on_search.rec.transport_retries) == (3, 2)
    assert on_search.rec.fault_hits == {"network_blip": 3}
    on_synth = sim.run(_world(sim, "synth"), policy, "generic")
    assert (on_synth.rec.calls, on_synth.rec.transport_retries) == (2, 0)
    assert on_synth.rec.fault_hits == {"network_blip": 1}
    assert "tools=frozenset(['search'])" in repr(layer) and "tools" not in repr(TransportRetry())


def test_a_tenacity_config_becomes_that_tools_layer():
    """stop_after_attempt(4), wait_exponential(multiplier=0.5, max=8), retrying ConnectionError and TimeoutError:
    4 tries, waits 0.5, 1, 2, 4 s capped at 8, no jitter, on the transport kinds whose exception is one of those
    (blips, timeouts, latency spikes, a crashed worker's refused connection; not a 429 or a 503 overload), for search
    only; wait_random_exponential is full jitter."""
    tenacity = pytest.importorskip("tenacity")
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(4),
        wait=tenacity.wait_exponential(multiplier=0.5, max=8),
        retry=tenacity.retry_if_exception_type((ConnectionError, TimeoutError)),
    )
    layer = transport_from_tenacity(retrying, tools=["search"])
    assert (layer.attempts, layer.base_s, layer.cap_s, layer.jitter) == (4, 0.5, 8.0, "none")
    assert layer.tools == frozenset({"search"})
    assert layer.on == frozenset({"network_blip", "timeout", "latency_spike", "node_crash"})
    assert [layer.wait_s(n, 0.5) for n in range(4)] == [0.5, 1.0, 2.0, 4.0]
    jittered = tenacity.Retrying(stop=tenacity.stop_after_attempt(2), wait=tenacity.wait_random_exponential(1, 30))
    assert transport_from_tenacity(jittered).jitter == "full"


def test_a_tenacity_config_a_layer_cannot_follow_is_refused_naming_the_part():
    """A deadline (stop_after_delay) or a linear wait is not a transport layer's: refused, naming the strategy."""
    tenacity = pytest.importorskip("tenacity")
    with pytest.raises(RetryTranslationError, match="stop_after_attempt"):
        transport_from_tenacity(tenacity.Retrying(stop=tenacity.stop_after_delay(10)))
    with pytest.raises(RetryTranslationError, match="wait_fixed, wait_exponential or wait_random_exponential"):
        transport_from_tenacity(
            tenacity.Retrying(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_incrementing(1, 1))
        )
