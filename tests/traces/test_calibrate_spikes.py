"""A latency spike comes back from its traces as a window, and stays out of the tools' duration fits.

The hand-written world: two tools called in turn every 10 s for two hours, each call taking 10 s, except from 1:00
to 1:10 (3,600 to 4,200 s) when each takes 110 s: a spike adding 100 s to every call for ten minutes.  With one
tool alone slow, the same window is that tool's own backend (a queue, a slow dependency): no spike.
"""

from __future__ import annotations

import json

from fleetchaos.calibrate.fit import calibrate

EPOCH = 1_735_689_600.0


def _day(path, tools: tuple[str, ...]) -> None:
    records = [
        {"time": EPOCH + t, "task": f"t{t}", "tool": tools[(t // 10) % len(tools)], "worker": f"w{t % 20}",
         "outcome": "ok", "duration_s": 110.0 if 3_600 <= t < 4_200 else 10.0}
        for t in range(0, 7_200, 10)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_spike_is_a_window_that_adds_its_extra_time(tmp_path):
    path = tmp_path / "spike.jsonl"
    _day(path, ("lookup", "search"))
    fitted = calibrate([path])
    [spike] = [f for f in fitted.document["faults"] if f["kind"] == "latency_spike"]
    assert spike == {"kind": "latency_spike", "windows": [{"start_s": 3_600, "duration_s": 600}], "factor": 1,
                     "add_s": 100}  # fmt: skip
    for template in fitted.document["workload"]["templates"]:
        (step,) = template["steps"]
        assert step["duration"] == {"mean_s": 10, "cv": 0}  # the spike's calls are not a tail of every call's


def test_one_tool_alone_slow_is_no_spike(tmp_path):
    path = tmp_path / "queue.jsonl"
    _day(path, ("lookup",))
    fitted = calibrate([path])
    assert not [f for f in fitted.document["faults"] if f["kind"] == "latency_spike"]
    (step,) = fitted.document["workload"]["templates"][0]["steps"]
    assert step["duration"]["cv"] > 0  # its slow calls stay in its durations
