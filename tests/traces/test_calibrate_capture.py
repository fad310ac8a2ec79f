"""Calibration reads a capture's arrival rate over the capture's own span, and a folder of trace files."""

from __future__ import annotations

import json

import pytest

from fleetchaos.calibrate.fit import calibrate

EPOCH = 1_735_722_000.0  # 2025-01-01T09:00:00Z


def _capture(path, tasks: int, gap_s: float, start_s: float = EPOCH) -> None:
    """``tasks`` tasks ``gap_s`` apart, each one successful 0.5 s search call: plain JSON lines."""
    lines = [
        {"time": start_s + i * gap_s, "task": f"t{i}", "tool": "search", "duration_s": 0.5, "outcome": "ok"}
        for i in range(tasks)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_ten_minute_capture_gives_its_own_rate_not_its_count_per_hour(tmp_path):
    """240 tasks arriving every 2.649 s (1,359 an hour) over 10.6 minutes: the hour they arrive in is fitted at
    240 / 0.176 h = 1,362 tasks an hour (the capture's span, first arrival to last call's end: 633.6 s), where
    counting the hour as wholly observed gave 240."""
    path = tmp_path / "capture.jsonl"
    _capture(path, 240, 3600 / 1359)
    fitted = calibrate([path])
    points = fitted.document["workload"]["arrival_schedule"]["points"]
    span_s = 239 * 3600 / 1359 + 0.5
    assert points[9]["tasks_per_hour"] == pytest.approx(240 / span_s * 3600, rel=1e-5)
    assert points[9]["tasks_per_hour"] == pytest.approx(1359, rel=0.01)


def test_the_folder_run_traces_writes_is_read_for_its_trace_files(tmp_path):
    """`fleetchaos run --traces DIR` writes DIR/<scenario>-<policy>-<errors>-seed<N>.otlp.jsonl: calibrate DIR reads
    it (before: "is a folder"); a folder with no trace file in it is refused with one message, exit 2."""
    from click.testing import CliRunner

    from fleetchaos.cli.main import main as cli

    runner = CliRunner()
    traces = tmp_path / "traces"
    ran = runner.invoke(cli, ["run", "--scenario", "research_fanout", "--seed", "1", "--traces", str(traces), "-q"])
    assert ran.exit_code == 0, ran.output
    assert [p.suffixes for p in traces.iterdir()] == [[".otlp", ".jsonl"]]
    out = tmp_path / "fitted.yaml"
    fitted = runner.invoke(cli, ["calibrate", str(traces), "-o", str(out), "--check-seeds", "0"])
    assert fitted.exit_code == 0, fitted.output
    assert "tasks_per_hour" in out.read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = runner.invoke(cli, ["calibrate", str(empty), "-o", str(tmp_path / "x.yaml"), "--check-seeds", "0"])
    assert refused.exit_code == 2 and "a folder with no trace files in it" in refused.output


def test_an_api_rate_that_never_binds_is_set_from_the_captures_own_span(tmp_path):
    """60 tasks a second apart (one call a second over 59.5 s) and no rate-limit failure: the shared API rate is
    twice the busiest ten minutes' rate over the capture's time in them, 2 x 60 / 59.5 s = 2.02 calls a second,
    so the fitted world's own arrivals (60 / 59.5 s a second) never meet it.  Dividing by the whole ten minutes
    gave 0.5 calls a second (its floor), which bound the arrivals the same fit writes at half their rate."""
    path = tmp_path / "capture.jsonl"
    _capture(path, 60, 1.0)
    fitted = calibrate([path])
    rate = fitted.document["fleet"]["api_rate_per_s"]
    assert rate == pytest.approx(2 * 60 / 59.5, rel=1e-3)
    arrivals = fitted.document["workload"]["arrival_schedule"]["points"][9]["tasks_per_hour"] / 3600
    assert rate >= 2 * arrivals * 0.999


def test_a_capture_of_few_arrivals_says_how_uncertain_its_rate_is(tmp_path):
    """One task in a one-second capture is fitted at 3,600 tasks an hour, a figure the fitted days repeat: the
    calibration says so, with the exact Poisson 95% interval of one event (0.0253 to 5.572 events, tables:
    Garwood 1936) over its one second, 91 to 20,058 an hour.  240 tasks (test above) say nothing: their interval
    is narrower than twice its low end."""
    one = tmp_path / "one.jsonl"
    _capture(one, 1, 1.0)
    notes = [n for n in calibrate([one]).notes if "95% interval" in n]
    assert notes == [
        "arrivals: 1 task over 1 s of capture: the mean rate of 3,600 an hour has a 95% interval of 91.1 to 20,058 "
        "(Poisson), and the fitted days repeat it; a longer capture narrows it"
    ]
    many = tmp_path / "many.jsonl"
    _capture(many, 240, 3600 / 1359)
    assert not [n for n in calibrate([many]).notes if "95% interval" in n]
