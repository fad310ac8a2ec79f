"""MCP server restarts come back from the traces: which tools share a server, how often it restarts and how long
it stays down, on a hand-written hour whose outages are known.

Three tools are called every 10 s (a1 at 0, 10, ...; a2 at 5, 15, ...; b at 2, 12, ...), each call on one of four
workers in turn.  Server A (a1 and a2) is down from 100 to 140 s and from 1,000 to 1,020 s; server B (b) from 500
to 560 s.  By the midpoint rule (an outage runs from halfway between its last success and first failure to halfway
between its last failure and next success, over all the server's tools) A's outages last (135+140)/2 - (95+100)/2 =
40 s and (1015+1020)/2 - (995+1000)/2 = 20 s, B's (552+562)/2 - (492+502)/2 = 60 s.
"""

from __future__ import annotations

import json
import math

import pytest

from fleetchaos.calibrate.fit import calibrate

EPOCH = 1_735_689_600.0
DOWN = {"a1": [(100, 140), (1000, 1020)], "a2": [(100, 140), (1000, 1020)], "b": [(500, 560)]}


def _hour(path) -> float:
    """Writes the hour; returns the capture's span (first call's start to last call's end)."""
    records, n = [], 0
    for tool, offset in (("a1", 0), ("a2", 5), ("b", 2)):
        for t in range(offset, 3600, 10):
            n += 1
            down = any(lo <= t < hi for lo, hi in DOWN[tool])
            record = {"time": EPOCH + t, "task": f"t{n}", "tool": tool, "worker": f"w{n % 4}"}
            if down:
                records.append({**record, "duration_s": 0.01, "outcome": "error", "error": "MCP_SERVER_UNAVAILABLE"})
            else:
                records.append({**record, "duration_s": 1.0, "outcome": "ok"})
    path.write_text("".join(json.dumps(r) + "\n" for r in sorted(records, key=lambda r: r["time"])))
    return 3595 + 1.0  # a2's last call at 3,595 s, a second long


def test_servers_restarts_and_respawn_times_are_fitted(tmp_path):
    path = tmp_path / "hour.jsonl"
    days = _hour(path) / 86_400
    fitted = calibrate([path])
    restarts = [f for f in fitted.document["faults"] if f["kind"] == "mcp_server_restart"]
    assert [f["tools"] for f in restarts] == [["a1", "a2"], ["b"]]
    a, b = restarts
    assert a["restarts_per_day"] == pytest.approx(2 / days, rel=1e-5)
    assert b["restarts_per_day"] == pytest.approx(1 / days, rel=1e-5)
    # A: a log-normal through 40 s and 20 s (logs' mean ln(sqrt(800)), standard deviation ln(2)/2).
    sigma = math.log(2) / 2
    assert a["respawn_s"] == pytest.approx(math.sqrt(800) * math.exp(sigma**2 / 2), rel=1e-5)
    assert a["respawn_cv"] == pytest.approx(math.sqrt(math.expm1(sigma**2)), rel=1e-5)
    assert (b["respawn_s"], b["respawn_cv"]) == (pytest.approx(60, rel=1e-5), 0)
    assert not any(note.startswith("mcp_server_restart") for note in fitted.notes)  # fitted, not "not fitted"
