"""A provider's load over time, a service mixture and the late-reply setting, against figures worked out by hand."""

from __future__ import annotations

import math

import pytest

from fleetchaos.sim.capacity import Provider, provider_breakdowns
from fleetchaos.sim.config import FleetSpec, ProviderSpec
from fleetchaos.sim.provider_load import BUSY, IN_FLIGHT, QUEUE, LoadSeries

INF = math.inf


def test_a_span_adds_its_overlap_to_every_bin_it_covers():
    """Bins of 10 s: [5, 37) gives 5, 10, 10, 7; [40, 41) gives 1 to bin 4; a span past the end is cut there."""
    load = LoadSeries(10.0, 60.0)
    load.add(QUEUE, 5.0, 37.0)
    load.add(QUEUE, 40.0, 41.0)
    assert load.integrals(QUEUE) == pytest.approx([5.0, 10.0, 10.0, 7.0, 1.0])
    load.add(BUSY, 55.0, INF)  # work that never ends counts until the run's end
    load.add(BUSY, 70.0, 80.0)  # and nothing after it
    load.add(BUSY, 3.0, 3.0)  # an empty span counts nothing
    assert load.integrals(BUSY) == pytest.approx([0, 0, 0, 0, 0, 5.0])
    assert load.integrals(IN_FLIGHT) == []


def test_overlapping_spans_add_up():
    """Three calls in a 4 s bin for 2, 4 and 3 s: 9 call-seconds, a mean of 2.25 calls; the next bin gets the rest."""
    load = LoadSeries(4.0, 100.0)
    for start, end in ((0.0, 2.0), (0.0, 6.0), (1.0, 4.0)):
        load.add(IN_FLIGHT, start, end)
    assert load.integrals(IN_FLIGHT) == pytest.approx([9.0, 2.0])


def test_a_watched_provider_records_its_queue_calls_in_flight_and_busy_server():
    """One server, 3 s of work, calls at 0, 1 and 2 s: waits [1, 3) and [2, 6), stays [0, 3), [1, 6), [2, 9),
    the server busy [0, 9); in bins of 2 s the queue holds 0, 3, 2 call-seconds (the rest in bin 2)."""
    p = Provider(ProviderSpec(name="api", servers=1))
    p.watch(2.0, 100.0)
    assert [p.admit(t, 3.0, INF, cancel=False) for t in (0.0, 1.0, 2.0)] == [(3.0, True), (5.0, True), (7.0, True)]
    load = p.load
    assert load is not None
    assert load.integrals(QUEUE) == pytest.approx([1.0, 3.0, 2.0])  # [1,3) and [2,6): 1; 2 + 1; 2
    assert load.integrals(IN_FLIGHT) == pytest.approx([3.0, 5.0, 4.0, 2.0, 1.0])
    assert load.integrals(BUSY) == pytest.approx([2.0, 2.0, 2.0, 2.0, 1.0])
    series = provider_breakdowns([p], late=False)
    assert series["provider_queue_by_time"] == {"api 000000000": 1, "api 000000002": 3, "api 000000004": 2}
    assert sum(series["provider_busy_by_time"].values()) == 9  # the server's 9 busy seconds
    assert "api late" not in series["provider_calls"]
    assert provider_breakdowns([p], late=True)["provider_calls"]["api late"] == 0


def test_abandoned_cancelled_and_refused_calls_count_as_they_hold_the_provider():
    """A cancelled call waits only until its client gives up; a refusal's cost holds the server; abandoned work runs."""
    p = Provider(ProviderSpec(name="api", servers=1, max_in_flight=2, reject_cost_s=0.5))
    p.watch(100.0, 1000.0)
    p.admit(0.0, 4.0, INF, cancel=False)  # served [0, 4)
    p.admit(0.0, 1.0, 2.0, cancel=True)  # waits [0, 2), then dropped: no service
    assert p.admit(0.0, 1.0, INF, cancel=False) is None  # two in it: refused, 0.5 s of the server at [4, 4.5)
    p.admit(3.0, 1.0, 0.5, cancel=False)  # waits [3, 4.5), served [4.5, 5.5), abandoned at 3.5 but runs on
    load = p.load
    assert load is not None
    assert load.integrals(QUEUE) == pytest.approx([2.0 + 1.5])
    assert load.integrals(BUSY) == pytest.approx([4.0 + 0.5 + 1.0])
    assert load.integrals(IN_FLIGHT) == pytest.approx([4.0 + 2.0 + 2.5])
    assert (p.abandoned, p.cancelled, p.refused, p.served) == (1, 1, 1, 3)


def test_an_unwatched_provider_records_nothing():
    p = Provider(ProviderSpec(name="api", servers=1))
    p.admit(0.0, 1.0, INF, cancel=False)
    assert p.load is None
    assert set(provider_breakdowns([p], late=False)) == {"provider_calls"}


def test_a_service_mixture_picks_its_share_by_the_calls_draw():
    """Shares 0.1 x11 and 0.2 x3: draws below 0.1 get 11, below 0.3 get 3, the rest 1."""
    p = Provider(
        ProviderSpec(
            name="api",
            servers=1,
            service_mixture=[{"probability": 0.1, "factor": 11}, {"probability": 0.2, "factor": 3}],
        )
    )
    assert [p.service_factor(u) for u in (0.0, 0.099, 0.1, 0.29, 0.31, 0.99)] == [11, 11, 3, 3, 1, 1]
    assert Provider(ProviderSpec(name="b", servers=1)).mixture is None


def test_a_service_mixture_above_one_is_refused_and_an_empty_one_stays_out_of_dumps():
    with pytest.raises(ValueError, match="add up to 1.2, above 1"):
        ProviderSpec(
            name="api",
            servers=1,
            service_mixture=[{"probability": 0.7, "factor": 2}, {"probability": 0.5, "factor": 3}],
        )
    assert "service_mixture" not in ProviderSpec(name="api", servers=1).model_dump()
    mixed = ProviderSpec(name="api", servers=1, service_mixture=[{"probability": 0.1, "factor": 11}])
    assert mixed.model_dump()["service_mixture"] == [{"probability": 0.1, "factor": 11.0}]


def test_late_reply_s_must_be_below_the_call_timeout_and_stays_out_of_dumps_when_unset():
    with pytest.raises(ValueError, match="late_reply_s 30 is not below fleet.call_timeout_s 30"):
        FleetSpec(call_timeout_s=30, late_reply_s=30)
    assert FleetSpec(call_timeout_s=30, late_reply_s=20).late_reply_s == 20
    assert FleetSpec(late_reply_s=20).model_dump()["late_reply_s"] == 20
    assert "late_reply_s" not in FleetSpec().model_dump()


def test_saturated_reads_the_queue_without_changing_it():
    """One server busy until 6 s: a 1 s call at 3 s is answered after 4 s: late for patience 2.5, in time for 5."""
    p = Provider(ProviderSpec(name="api", servers=1))
    for _ in range(6):
        p.admit(0.0, 1.0, INF, cancel=False)
    assert p.saturated(3.0, 1.0, 2.5) and not p.saturated(3.0, 1.0, 5.0)
    assert p.admit(3.0, 1.0, INF, cancel=False) == (4.0, True)  # as saturated() said, and nothing moved
