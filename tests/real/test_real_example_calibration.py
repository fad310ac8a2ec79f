"""The example agent's real run, traced with the OpenTelemetry SDK, calibrates back into a scenario.

A copy of examples/real_agent runs its day (seed 1, every task of the eight hours) with tracing on
(`trace_day.py`: one span per HTTP request and per Python tool try, in virtual time), then
`fleetchaos calibrate` fits the spans and simulates the fitted scenario on ten days under the
structured policy on structured errors, the contract the agent follows.  The fit check holds each
fault kind's share of calls and each tool's p50 and p90 to those days.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import patience
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "real_agent"
JUNK = shutil.ignore_patterns(".pytest_cache", "__pycache__", "out")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """(the calibrate command's result, the fit report's verdict rows by name: 'fits' or 'misses')."""
    pytest.importorskip("openai")
    pytest.importorskip("opentelemetry.exporter.otlp.json.file")
    suite = tmp_path_factory.mktemp("example") / "real_agent"
    shutil.copytree(EXAMPLE, suite, ignore=JUNK)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FLEETCHAOS_"))}
    traced = patience.run([sys.executable, "trace_day.py", "day.jsonl", "1"], cwd=suite, env=env,
                          capture_output=True, text=True, cpu_s=120)  # fmt: skip
    assert traced.returncode == 0, traced.stderr
    done = patience.run(
        [sys.executable, "-m", "fleetchaos.cli", "calibrate", "day.jsonl", "-o", "day.yaml", "--report", "fit",
         "--policy", "structured", "--errors", "structured", "--jobs", "1"],
        cwd=suite, env=env, capture_output=True, text=True, cpu_s=120,
    )  # fmt: skip
    rows = {}
    for line in (suite / "fit" / "summary.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[-1] in ("fits", "misses"):
            quantile = cells[1] in ("p50", "p90")
            rows[f"{cells[0]} {cells[1]}" if quantile else cells[0]] = cells[-1]
    return done, rows


def test_its_per_call_faults_keys_and_latencies_fit(calibrated):
    """The agent's day as traced: the dropped connections (2% of calls, 15% of the diagnostic's), the timeouts
    (12% of the CRM calls and the notes), the revoked keys, and every tool's p50 and p90 (the model's turns
    included) are each a plausible day of the fitted scenario."""
    done, rows = calibrated
    assert "model calls (gen_ai.operation.name chat) read as calls of the tool 'llm'" in done.stderr, done.stderr
    for kind in ("network_blip", "timeout", "expired_key"):
        assert rows[kind] == "fits", (kind, done.stderr)
    tools = ("llm", "fetch_contacts", "update_contact", "post_note", "diagnose")
    assert {f"{t} {q}" for t in tools for q in ("p50", "p90")} <= rows.keys()
    assert all(rows[f"{t} {q}"] == "fits" for t in tools for q in ("p50", "p90")), rows


def test_the_whole_day_fits(calibrated):
    """The provider's one-hour cut too: the model's five turns a task are five steps, and the cut's rate, end and
    the provider's full rate come from the 429s' Retry-After, so the fitted days are rate-limited as the traced one
    was (docs/calibration.md, 'A real agent's own traces')."""
    done, rows = calibrated
    assert rows["rate_limit"] == "fits", done.stderr
    assert done.returncode == 0 and "fit check: fits" in done.stderr, done.stderr
