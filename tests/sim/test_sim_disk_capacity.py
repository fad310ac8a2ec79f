"""Disk capacity: task workspaces occupy a worker's disk until the task ends."""

from __future__ import annotations


def test_workspaces_fill_a_small_disk_under_load(sim):
    """Two concurrent tasks each writing 60 MB on a 100 MB disk: the second write fails as a full disk."""
    scn = sim.scenario(
        {"job": [sim.step("write", 10, disk_mb=60, uses_api=False), sim.step("wait", 20, uses_api=False)]},
        arrivals=[(0.0, "job"), (1.0, "job")],
        workers=1,
        disk_mb=100,
    )
    r = sim.run(scn, "blind-retry", "generic")
    first, second = r.records
    # t=0: task 0 writes 60 MB (call 0.1 + 10 -> 10.1), then waits 20 s (ends 30.2) holding its workspace
    # t=1: task 1's write starts; 0 MB used at that instant (task 0's write lands at 10.1) -> fits, 60 MB more
    # both writes land: 120 MB > 100 MB is possible because capacity is checked when a call starts
    assert first.claim == "success" and second.claim == "success"
    scn2 = sim.scenario(
        {"job": [sim.step("write", 10, disk_mb=60, uses_api=False), sim.step("wait", 20, uses_api=False)]},
        arrivals=[(0.0, "job"), (15.0, "job")],
        workers=1,
        disk_mb=100,
    )
    r2 = sim.run(scn2, "blind-retry", "generic")
    a, b = r2.records
    # t=15: task 0's 60 MB are on disk (landed 10.1, freed at 30.2): 60 + 60 > 100 -> disk_full at once;
    # blind retries at 15.6, 16.2, 16.8 all still see 60 MB used -> 3 wasted ("same full disk"), claim failed
    assert a.claim == "success"
    assert b.claim == "failed" and b.fault_hits == {"disk_full": 4}
    assert b.wasted_reasons == {"same full disk": 3}


def test_workspace_is_freed_when_the_task_ends(sim):
    """After a task ends its files are cleaned up, so a later task's write fits again."""
    scn = sim.scenario(
        {"job": [sim.step("write", 10, disk_mb=60, uses_api=False)]},
        arrivals=[(0.0, "job"), (50.0, "job")],
        workers=1,
        disk_mb=100,
    )
    r = sim.run(scn, "blind-retry", "generic")
    # task 0 ends at 10.1 and frees its 60 MB; task 1 at 50 finds an empty disk
    assert [rec.claim for rec in r.records] == ["success", "success"]
    assert all(not rec.fault_hits for rec in r.records)
