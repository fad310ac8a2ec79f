"""Load and capacity in the world: call timeouts count queueing, abandoned work goes on, providers overload."""

from __future__ import annotations

from fleetchaos.sim.observation import GiveUp


class GiveUpAtOnce:
    """Never retries: each task's first dispatch is its only one."""

    name = "give-up"

    def decide(self, observation, history):
        return GiveUp()


def _queue_world(sim, after_timeout="continue", **fleet):
    steps = [sim.step("write", 1.0, side_effect="append", after_timeout=after_timeout)]
    arrivals = [(0.0, "t")] * 20
    return sim.scenario({"t": steps}, arrivals, tool_slots=1, call_timeout_s=3, **fleet)


def test_time_queued_for_a_tool_slot_counts_toward_the_call_timeout(sim):
    """20 calls of 1.1 s behind one slot and a 3 s timeout: only the first two finish in time; the rest time out at 3 s."""
    s = sim.run(_queue_world(sim, after_timeout="cancel"), GiveUpAtOnce(), "structured")
    claims = [r.claim for r in s.records]
    assert claims[:2] == ["success", "success"]
    assert all(c == "failed" for c in claims[2:])
    assert all(r.fault_hits == {"timeout": 1} for r in s.records[2:])
    assert all(r.end_s <= 3.0 + 1e-9 for r in s.records[2:])  # heard back when the timeout ran out, not later


def test_cancelled_work_never_runs_and_abandoned_work_runs_and_takes_effect(sim):
    """after_timeout cancel: the timed-out writes never happen; continue: the 17 that timed out queued all happen."""
    cancelled = sim.run(_queue_world(sim, after_timeout="cancel"), GiveUpAtOnce(), "structured")
    assert sum(r.commits[0][0] for r in cancelled.records) == 2
    kept = sim.run(_queue_world(sim), GiveUpAtOnce(), "structured")
    # task 2 got its slot at 2.2 s and was cut at 3 s while running (the slow-call rule); 3.. timed out queued
    assert [r.commits[0][0] for r in kept.records[3:]] == [1] * 17
    assert kept.records[3].claim == "failed"  # told it failed, yet it took effect: a silent side effect
    assert all(r.orphans == 0 for r in kept.records)
    assert kept.records[-1].calls == 1


def test_abandoned_work_delays_the_calls_behind_it(sim):
    """A retry behind abandoned work waits for it: with continue the retry of task 2 starts after 20 orphans."""
    kept = sim.run(_queue_world(sim), "blind-retry", "structured")
    cancelled = sim.run(_queue_world(sim, after_timeout="cancel"), "blind-retry", "structured")
    assert sum(r.claim == "success" for r in kept.records) < sum(r.claim == "success" for r in cancelled.records)


def _provider_world(sim, provider, after_timeout="continue", n=6, **fleet):
    steps = [sim.step("search", 1.0, uses_api=False, after_timeout=after_timeout)]
    arrivals = [(0.0, "t")] * n
    return sim.scenario(
        {"t": steps},
        arrivals,
        workers=n,
        tool_slots=1,
        providers=[{"name": "backend", "tools": ["search"], **provider}],
        **fleet,
    )


def test_provider_queueing_counts_toward_the_call_timeout(sim):
    """Two servers, 1 s of work, 6 calls at once and a 2.5 s timeout: four answer in time, two time out."""
    s = sim.run(_provider_world(sim, {"servers": 2}, call_timeout_s=2.5), GiveUpAtOnce(), "structured")
    assert [r.claim for r in s.records].count("success") == 4
    late = [r for r in s.records if r.claim != "success"]
    assert all(r.fault_hits == {"timeout": 1} and r.end_s == 2.5 for r in late)


def test_a_full_provider_refuses_with_503_or_429(sim):
    """max_in_flight 2: the other calls are refused at once, as overloaded (503) or as rate_limit (429)."""
    s = sim.run(_provider_world(sim, {"servers": 2, "max_in_flight": 2}), GiveUpAtOnce(), "structured")
    assert sorted(k for r in s.records for k in r.fault_hits) == ["overloaded"] * 4
    assert s.rendered[0][1].envelope.error_code == "SERVICE_OVERLOADED"
    s = sim.run(
        _provider_world(sim, {"servers": 2, "max_in_flight": 2, "overload_status": 429}), GiveUpAtOnce(), "structured"
    )
    assert sorted(k for r in s.records for k in r.fault_hits) == ["rate_limit"] * 4
    assert s.rendered[0][0].retry_after_s is not None  # a 429 says when the provider has room


def test_a_brownout_window_slows_the_provider(sim):
    """An overloaded fault at capacity_factor 0.5 doubles the work: 1 s calls take 2.1 s, all in time without a timeout."""
    fault = {
        "kind": "overloaded",
        "provider": "backend",
        "windows": [{"start_s": 0, "duration_s": 100}],
        "capacity_factor": 0.5,
    }
    s = sim.run(_provider_world(sim, {"servers": 6}, n=1, faults=None), GiveUpAtOnce(), "structured")
    assert abs(s.rec.end_s - (sim.RTT + 1.0)) < 1e-9
    scenario = _provider_world(sim, {"servers": 6}, n=1)
    scenario = scenario.model_validate({**scenario.model_dump(), "faults": [fault]})
    s = sim.run(scenario, GiveUpAtOnce(), "structured")
    assert abs(s.rec.end_s - (sim.RTT + 2.0)) < 1e-9


def test_a_streamed_task_is_handed_on_only_after_its_orphaned_work_ends(sim):
    """With a sink, a task whose step queued past its timeout reaches the sink with the orphan's commit counted."""
    from fleetchaos.sim.formats import get_format
    from fleetchaos.sim.world import World

    handed = []
    World(_queue_world(sim), GiveUpAtOnce(), get_format("structured"), 0, sink=handed.append).run()
    kept = sim.run(_queue_world(sim), GiveUpAtOnce(), "structured")
    assert sorted((r.id, r.commits, r.calls) for r in handed) == [(r.id, r.commits, r.calls) for r in kept.records]
    assert [r.commits[0][0] for r in sorted(handed, key=lambda r: r.id)][3:] == [1] * 17


def test_closed_loop_clients_with_a_spike_on_top(sim):
    """Clients plus an arrival schedule: the schedule's tasks arrive on top, with ids apart from the clients'."""
    from fleetchaos.scenario.load import Scenario
    from fleetchaos.sim.world import OPEN_LOOP_IDS

    doc = _provider_world(sim, {"servers": 2}).model_dump(mode="json")
    doc["workload"] = {
        "clients": 3,
        "think": {"mean_s": 10, "cv": 0},
        "arrival_schedule": {
            "points": [
                {"at_s": 0, "tasks_per_hour": 0},
                {"at_s": 100, "tasks_per_hour": 3600},
                {"at_s": 110, "tasks_per_hour": 0},
            ]
        },
        "templates": doc["workload"]["templates"],
    }
    doc["duration_s"] = 200
    s = sim.run(Scenario.model_validate(doc), GiveUpAtOnce(), "structured")
    spike = [r for r in s.records if r.id >= OPEN_LOOP_IDS]
    clients = [r for r in s.records if r.id < OPEN_LOOP_IDS]
    assert 3 <= len(spike) <= 25 and all(100 <= r.arrival_s < 110 for r in spike)
    assert len(clients) > 3 * 10  # each client loops: about 11.1 s per task over 200 s


def test_a_runs_breakdowns_count_what_each_provider_did():
    """run_one reports each provider's served, refused, abandoned and cancelled calls; no provider, no breakdown."""
    from fleetchaos.runs.runner import run_one
    from fleetchaos.scenario.load import load_scenario

    scenario = load_scenario("retry_collapse")
    short = scenario.model_validate({**scenario.model_dump(), "duration_s": 2400})
    counts = run_one(short, "retry-immediate", "structured", 1).breakdowns["provider_calls"]
    assert set(counts) == {f"backend {w}" for w in ("abandoned", "cancelled", "refused", "served")}
    assert counts["backend served"] > counts["backend abandoned"] > 0 and counts["backend refused"] == 0
    assert "provider_calls" not in run_one(load_scenario("crm_sync_403"), "blind-retry", "structured", 1).breakdowns
