"""omission_collapse against queueing theory worked out by hand: resubmitting late replies collapses a backend 80% busy.

The expectations come from the scenario's inputs and textbook formulas, never from the
simulator's own figures: arrival rate lambda = tasks per day / 86,400 s; bimodal service
(a share p of the calls takes factor times the step's duration d) with mean
E[S] = (1 - p) d + p f d and second moment E[S^2] = (1 - p) d^2 + p (f d)^2; utilisation
rho = lambda E[S] on one server; Pollaczek and Khinchine's mean queue of an M/G/1 queue,
Lq = lambda^2 E[S^2] / (2 (1 - rho)).  Once every reply is late, every late reply comes
back as a new call: the server is always busy (utilisation 1), each departure is replaced
at once, and each new task joins the queue for good, so the queue grows by lambda calls a
second.  The queue, in-flight and busy series are the ``provider_*_by_time`` breakdowns:
call- or server-seconds per ``goodput_bin_s`` bin.
"""

from __future__ import annotations

import statistics

import pytest

from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import load_scenario

RESUBMIT, GIVE_UP = "blind-retry(max_retries=100)", "blind-retry(max_retries=0)"


@pytest.fixture(scope="module")
def world():
    """The catalogue scenario and what queueing theory says of it, from its own inputs."""
    scenario = load_scenario("omission_collapse")
    provider = scenario.fleet.providers[0]
    (share,) = provider.service_mixture
    step = scenario.workload.templates[0].steps[0]
    assert provider.servers == 1 and step.duration.cv == 0 and scenario.workload.diurnal_amplitude == 0
    d, p, f = step.duration.mean_s, share.probability, share.factor
    arrival = scenario.workload.tasks_per_day / 86_400.0
    mean_s = (1 - p) * d + p * f * d
    second = (1 - p) * d**2 + p * (f * d) ** 2
    rho = arrival * mean_s
    expected = {
        "arrival": arrival,
        "mean_s": mean_s,
        "rho": rho,
        "queue": arrival**2 * second / (2 * (1 - rho)),
    }
    # The figures the scenario's description states, worked out by hand: 0.08/s, 10 s, 80%, 5.2 calls.
    assert expected == pytest.approx({"arrival": 0.08, "mean_s": 10.0, "rho": 0.8, "queue": 5.2})
    return scenario, expected


def _series(run, name: str, width: float, bins: int) -> list[float]:
    """A provider breakdown as its mean per bin over the day (calls waiting, or the servers' busy fraction)."""
    values = run.breakdowns[name]
    return [values.get(f"backend {k * width:09.0f}", 0) / width for k in range(bins)]


def test_without_resubmission_the_queue_is_the_textbook_m_g_1_queue(world):
    """Late replies counted as failed and not sent again: utilisation rho and Pollaczek-Khinchine's mean queue, bounded."""
    scenario, expected = world
    width = scenario.goodput_bin_s
    bins = int(scenario.duration_s // width)
    for seed in (1, 2):
        run = run_one(scenario, GIVE_UP, "generic", seed)
        queue = _series(run, "provider_queue_by_time", width, bins)
        busy = _series(run, "provider_busy_by_time", width, bins)
        assert statistics.mean(busy) == pytest.approx(expected["rho"], abs=0.05)  # 0.80; a day's noise is about 0.015
        assert statistics.mean(queue) == pytest.approx(expected["queue"], rel=0.35)  # 5.2 calls waiting
        assert max(queue) < 10 * expected["queue"]  # no bin's mean queue runs away
        assert statistics.mean(queue[-bins // 4 :]) < 2.5 * expected["queue"]  # the last quarter: no trend
        calls = run.breakdowns["provider_calls"]
        assert calls["backend late"] > 0 and run.metrics["retries"] == 0  # late replies failed, none sent again
        assert run.metrics["false_alarms"] == calls["backend late"]  # each late reply's work was done all the same
        assert run.metrics["duplicate_side_effects"] == 0


def test_resubmitting_late_replies_grows_the_queue_by_the_arrival_rate_and_goodput_falls_to_zero(world):
    """Every late reply sent again: once the server is busy for good, the queue grows lambda calls a second, no task succeeds."""
    scenario, expected = world
    width = scenario.goodput_bin_s
    bins = int(scenario.duration_s // width)
    run = run_one(scenario, RESUBMIT, "generic", 1)
    queue = _series(run, "provider_queue_by_time", width, bins)
    busy = _series(run, "provider_busy_by_time", width, bins)
    # The collapse: the first bin from which the server never rests again; in this world it comes within hours.
    onset = next(k for k in range(bins) if min(busy[k:]) > 0.99)
    assert onset < bins // 4, busy
    assert max(queue[:onset]) < 10 * expected["queue"]  # before it, the same bounded queue as without resubmission
    after = range(onset + 2, bins)
    slope = statistics.linear_regression(list(after), [queue[k] for k in after]).slope
    assert slope == pytest.approx(expected["arrival"] * width, rel=0.05)  # 144 more calls waiting every half hour
    goodput = run.breakdowns.get("goodput_by_time", {})
    assert not [k for k, n in goodput.items() if float(k) >= (onset + 1) * width and n], goodput  # goodput zero
    assert run.metrics["success_rate"] < 0.2
    # Every resubmission after a late reply is wasted (the provider answers it late again) and repeats a placed record.
    assert run.metrics["wasted_retries"] == run.metrics["retries"] > 1000
    assert run.breakdowns["wasted_retries_by_reason"] == {"timed out again": run.metrics["retries"]}
    # Each resubmission that came back came back late, its record placed again (and one sent in time, too).
    assert run.metrics["duplicate_side_effects"] >= run.metrics["failed_retries"] > 1000
