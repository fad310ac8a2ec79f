"""The provider capacity model: first-come-first-served servers, a latency curve, refusals, patience."""

from __future__ import annotations

import math

import pytest

from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.capacity import REFUSED, Provider
from fleetchaos.sim.config import FleetSpec, ProviderSpec

INF = math.inf


def provider(**kw) -> Provider:
    return Provider(ProviderSpec(name="p", **kw))


def test_calls_beyond_the_servers_wait_first_come_first_served():
    """With 2 servers and 1 s of work each, the third call at t=0 waits 1 s and the fifth 2 s."""
    p = provider(servers=2)
    seen = [p.admit(0.0, 1.0, INF, cancel=False) for _ in range(5)]
    assert seen == [(1.0, True), (1.0, True), (2.0, True), (2.0, True), (3.0, True)]
    assert p.in_flight(0.0) == 5 and p.in_flight(2.0) == 1 and p.in_flight(3.0) == 0


def test_a_client_that_gives_up_hears_back_after_its_patience_and_the_work_goes_on():
    """Patience 1.5 s behind 2 s of queue: the client hears back at 1.5 s; the work still holds a server to t=3."""
    p = provider(servers=1)
    assert p.admit(0.0, 2.0, INF, cancel=False) == (2.0, True)
    assert p.admit(0.0, 1.0, 1.5, cancel=False) == (1.5, False)
    assert p.abandoned == 1
    assert p.admit(0.0, 1.0, INF, cancel=False) == (4.0, True)  # behind the abandoned call's work


def test_a_cancelled_call_that_never_started_takes_no_server():
    """A call that cancels its work and gave up while waiting leaves the servers as they were."""
    p = provider(servers=1)
    p.admit(0.0, 2.0, INF, cancel=False)
    assert p.admit(0.0, 1.0, 1.5, cancel=True) == (1.5, False)
    assert p.cancelled == 1
    assert p.admit(0.0, 1.0, INF, cancel=False) == (3.0, True)


def test_a_cancelled_call_in_service_frees_its_server_when_the_client_gives_up():
    """A call cut at its client's patience holds its server only until then."""
    p = provider(servers=1)
    assert p.admit(0.0, 5.0, 2.0, cancel=True) == (2.0, False)
    assert p.admit(0.0, 1.0, INF, cancel=False) == (3.0, True)


def test_past_max_in_flight_calls_are_refused_and_a_refusal_costs_work():
    """The third call into a provider holding 2 is refused; its 0.5 s refusal cost delays the queue."""
    p = provider(servers=1, max_in_flight=2, reject_cost_s=0.5)
    assert p.admit(0.0, 1.0, INF, cancel=False) == (1.0, True)
    assert p.admit(0.0, 1.0, INF, cancel=False) == (2.0, True)
    assert p.admit(0.0, 1.0, INF, cancel=False) is REFUSED
    assert p.refused == 1
    assert p.next_room(0.0) == 1.0
    assert p.admit(1.0, 1.0, INF, cancel=False) == (2.5, True)  # the server is busy to 2.5, not 2


def test_the_slowdown_curve_is_linear_between_points_and_flat_past_the_ends():
    """Factor 1 at one call, 3 at five calls: 2 at three calls, 3 at ten."""
    p = provider(slowdown=[{"in_flight": 1, "factor": 1.0}, {"in_flight": 5, "factor": 3.0}])
    assert [p.factor(n) for n in (1, 3, 5, 10)] == [1.0, 2.0, 3.0, 3.0]
    assert p.admit(0.0, 1.0, INF, cancel=False) == (1.0, True)
    assert p.admit(0.0, 1.0, INF, cancel=False) == (1.5, True)  # two calls in it: factor 1.5


def test_an_overloaded_window_slows_the_work():
    """At capacity_factor 0.25 in its window a call's work takes four times as long."""
    p = Provider(ProviderSpec(name="p", servers=1), [(10.0, 20.0, 0.25)])
    assert p.admit(5.0, 1.0, INF, cancel=False) == (1.0, True)
    assert p.admit(12.0, 1.0, INF, cancel=False) == (4.0, True)


def test_a_provider_must_declare_some_capacity():
    """A provider with neither servers, curve nor max_in_flight is refused with the fix."""
    with pytest.raises(ValueError, match="declares no capacity"):
        ProviderSpec(name="p")


def test_providers_validate_against_the_fleet_and_the_tools():
    """Two providers of one tool, or an unknown tool, are refused."""
    with pytest.raises(ValueError, match="already served"):
        FleetSpec(providers=[{"name": "a", "servers": 1}, {"name": "b", "servers": 1}])
    with pytest.raises(ValueError, match="no step uses tool 'nope'"):
        Scenario.model_validate(
            {"name": "x", "description": "x", "fleet": {"providers": [{"name": "a", "tools": ["nope"], "servers": 1}]}}
        )


def test_fields_at_their_defaults_stay_out_of_dumps():
    """A fleet without providers dumps as before they existed (results stay byte-identical)."""
    dumped = FleetSpec().model_dump()
    assert "providers" not in dumped and "max_actions_per_task" not in dumped
    assert FleetSpec(max_actions_per_task=7).model_dump()["max_actions_per_task"] == 7


def test_saturated_reads_the_provider_without_changing_it():
    """A call at t=0 behind 10 s of work is answered at 11 (1 s of its own); with 2 calls in it the limit refuses."""
    p = provider(servers=1, max_in_flight=2)
    p.admit(0.0, 10.0, INF, cancel=False)
    assert not p.saturated(0.0, 1.0, INF) and not p.saturated(0.0, 1.0, 11.0)
    assert p.saturated(0.0, 1.0, 10.9)  # queued to 10, answered at 11: past a 10.9 s patience
    p.admit(0.0, 1.0, INF, cancel=False)
    assert p.saturated(0.0, 1.0, INF)  # two calls in it: a third is refused
    assert (p.served, p.refused, p.in_flight(0.0)) == (2, 0, 2)  # asking admitted and refused nothing
    assert not p.saturated(11.0, 1.0, INF)  # both have left by 11 (a later instant: they leave the heap, as at admit)
    assert (p.served, p.refused) == (2, 0)


def test_queue_admission_never_refuses():
    """admission: queue takes every call past max_in_flight and serves it in turn."""
    p = provider(servers=1, max_in_flight=1, admission="queue")
    assert [p.admit(0.0, 1.0, INF, cancel=False) for _ in range(3)] == [(1.0, True), (2.0, True), (3.0, True)]
    assert p.refused == 0 and not p.saturated(0.0, 1.0, INF)
