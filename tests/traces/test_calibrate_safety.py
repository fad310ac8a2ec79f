"""`calibrate` and `--traces` never write over what is not theirs, and read every input bounded and alike.

Outputs: an existing -o is replaced only with --force, an input never (through a symlink or
a hard link too), a link at an output is replaced and never followed, writes are atomic.
Inputs: floats come back as floats, repeated spans count once, the OTLP and plain readers
refuse the same values, --codes and --space are read bounded (/dev/zero, a FIFO nobody
writes), too many tool names are refused while reading, and the fit check and the report
have the size guard.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.scenario.load import load_scenario

FLEETCHAOS = [sys.executable, "-m", "fleetchaos.cli"]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*FLEETCHAOS, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def _plain(path: Path, calls: int = 120, errors: tuple[int, ...] = (7,), code: str = "ECONNRESET") -> Path:
    rows = [
        {"time": 1735722000 + 30 * i, "task": f"t{i}", "tool": "crm", "worker": f"w{i % 3}", "duration_s": 1.5,
         "outcome": "error" if i in errors else "ok", **({"error": code} if i in errors else {})}
        for i in range(calls)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# -- outputs -----------------------------------------------------------------------------------


def test_an_existing_output_is_replaced_only_with_force_and_atomically(tmp_path):
    """-o that exists is refused (exit 2, untouched); with --force it is replaced by rename, no temporary left."""
    traces = _plain(tmp_path / "calls.jsonl")
    out = tmp_path / "mine.yaml"
    out.write_text("my own notes\n")
    done = _cli("calibrate", str(traces), "-o", str(out), "--check-seeds", "0", cwd=tmp_path)
    assert done.returncode == 2 and "exists; choose another path, or pass --force" in done.stderr, done.stderr
    assert out.read_text() == "my own notes\n"
    before = out.stat().st_ino
    done = _cli("calibrate", str(traces), "-o", str(out), "--check-seeds", "0", "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert load_scenario(str(out)).name == "calibrated"
    assert out.stat().st_ino != before  # a new file renamed over it, never rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calls.jsonl", "mine.yaml"]


def test_no_input_is_ever_written_over_even_with_force(tmp_path):
    """-o naming a trace file (itself, through a symlink, a hard link), the --codes file, or a report file
    that is an input: exit 2 naming the input, every input byte for byte as it was."""
    traces = _plain(tmp_path / "calls.jsonl")
    codes = tmp_path / "codes.yaml"
    codes.write_text("codes: {E_X: network_blip}\n")
    (tmp_path / "link.yaml").symlink_to(traces)
    os.link(traces, tmp_path / "hard.yaml")
    report = tmp_path / "fit"
    report.mkdir()
    in_report = _plain(report / "summary.md")
    original = {p: p.read_bytes() for p in (traces, codes, in_report)}
    cases = {
        "the trace file": [str(traces), "-o", str(traces)],
        "a symlink to it": [str(traces), "-o", str(tmp_path / "link.yaml")],
        "a hard link to it": [str(traces), "-o", str(tmp_path / "hard.yaml")],
        "the --codes file": [str(traces), "--codes", str(codes), "-o", str(codes)],
        "a report file": [str(in_report), "-o", str(tmp_path / "s.yaml"), "--report", str(report)],
    }
    for what, args in cases.items():
        done = _cli("calibrate", *args, "--force", "--check-seeds", "0", cwd=tmp_path)
        assert done.returncode == 2, (what, done.stderr)
        assert "an input of this command; it is never written over (even with --force)" in done.stderr, what
        assert {p: p.read_bytes() for p in original} == original, what
    assert not (tmp_path / "s.yaml").exists()


def test_a_symlink_at_an_output_is_replaced_never_followed(tmp_path):
    """A link (even dangling) at -o or at a report file counts as existing; with --force the link itself is
    replaced by a file and the file it pointed to is untouched."""
    traces = _plain(tmp_path / "calls.jsonl")
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    out = tmp_path / "out.yaml"
    out.symlink_to(tmp_path / "nowhere.yaml")
    done = _cli("calibrate", str(traces), "-o", str(out), "--check-seeds", "0", cwd=tmp_path)
    assert done.returncode == 2 and "exists" in done.stderr
    out.unlink()
    out.symlink_to(victim)
    report = tmp_path / "fit"
    report.mkdir()
    (report / "report.html").symlink_to(victim)
    done = _cli("calibrate", str(traces), "-o", str(out), "--report", str(report), "--check-seeds", "2",
                "--jobs", "1", "--force", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "not yours\n"
    assert not out.is_symlink() and load_scenario(str(out)).name == "calibrated"
    assert not (report / "report.html").is_symlink() and "<html" in (report / "report.html").read_text()


def test_run_traces_never_writes_through_a_planted_symlink(tmp_path, monkeypatch):
    """`run --traces DIR`: a link planted where the trace file goes is replaced by the file, its target untouched."""
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    (tmp_path / "out").mkdir()
    planted = tmp_path / "out" / "crm_sync_403-structured-structured-seed4.otlp.jsonl"
    planted.symlink_to(victim)
    done = CliRunner().invoke(main, ["run", "--scenario", "crm_sync_403", "--seed", "4", "--no-history",
                                     "--traces", "out"])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert victim.read_text() == "not yours\n"
    assert not planted.is_symlink() and planted.read_text().startswith('{"resourceSpans"')


# -- inputs ------------------------------------------------------------------------------------


def test_a_rare_fault_is_written_as_a_float_and_the_scenario_loads(tmp_path):
    """One blip in 50,000 calls is 2e-05, which YAML 1.1 reads as a string; it is written 2.0e-05 and loads."""
    traces = _plain(tmp_path / "calls.jsonl", calls=50_000, errors=(777,))
    out = tmp_path / "rare.yaml"
    done = _cli("calibrate", str(traces), "-o", str(out), "--check-seeds", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "probability: 2.0e-05" in out.read_text()
    assert load_scenario(str(out)).faults[0].probability == 2e-05
    assert yaml.safe_load(out.read_text())["faults"][0]["probability"] == 2e-05


@pytest.mark.parametrize("value", [2e-05, 1e-300, 5e-324, 1.5e300, 1e16, 1.2345678901234568e17, -2e-05, 0.1, 3.0, 1e-7])
def test_every_float_is_written_in_a_form_yaml_reads_back_as_the_same_number(value):
    """The emitter's floats round-trip through PyYAML (YAML 1.1) to the very same float."""
    from fleetchaos.calibrate.yaml_out import _scalar

    back = yaml.safe_load(f"x: {_scalar(value)}")["x"]
    assert isinstance(back, (int, float)) and not isinstance(back, bool) and back == value


def test_a_probability_keeps_six_significant_digits():
    """A rate of one in ten million stays one in ten million (six decimals would write 0)."""
    from fleetchaos.calibrate.faults import sig

    assert sig(1e-7) == 1e-7 and sig(2 / 3) == 0.666667 and sig(123456789.0) == 123457000.0


def test_repeated_spans_count_once_and_the_count_is_said(tmp_path, export_run):
    """A file exported twice over (at-least-once delivery) and a rotated file overlapping it calibrate as the
    file alone, and stderr says how many repeated spans were dropped."""
    scenario = load_scenario("crm_sync_403")
    _, _, path = export_run(tmp_path, scenario, "backoff", "generic", 2)
    lines = path.read_text().splitlines(keepends=True)
    doubled = tmp_path / "doubled.otlp.jsonl"
    doubled.write_text("".join(lines) + "".join(lines))
    overlap = tmp_path / "rotated.otlp.jsonl"
    overlap.write_text("".join(lines[len(lines) // 2 :]))
    once = _cli("calibrate", str(path), "-o", "once.yaml", "--check-seeds", "0", cwd=tmp_path)
    twice = _cli("calibrate", str(doubled), str(overlap), "-o", "twice.yaml", "--check-seeds", "0", cwd=tmp_path)
    assert once.returncode == twice.returncode == 0, twice.stderr
    spans = sum(len(json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]) for line in lines)
    repeated = spans + sum(
        len(json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]) for line in lines[len(lines) // 2 :]
    )
    assert f"{repeated:,} duplicate spans dropped" in twice.stderr, twice.stderr
    a, b = (yaml.safe_load((tmp_path / f).read_text()) for f in ("once.yaml", "twice.yaml"))
    assert (a["fleet"], a["workload"], a["faults"]) == (b["fleet"], b["workload"], b["faults"])


def _otlp_call(attributes: dict) -> dict:
    attrs = [{"key": "gen_ai.tool.name", "value": {"stringValue": "crm"}}]
    attrs += [{"key": k, "value": v} for k, v in attributes.items()]
    span = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b173", "name": "execute_tool",
            "startTimeUnixNano": "1735722000000000000", "endTimeUnixNano": "1735722001000000000",
            "attributes": attrs, "status": {"code": 2}}  # fmt: skip
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}


@pytest.mark.parametrize(
    ("otlp", "plain", "rule"),
    [
        ({"fleetchaos.attempt": {"intValue": -3}}, {"attempt": -3}, "greater than or equal to 1"),
        ({"fleetchaos.attempt": {"boolValue": True}}, {"attempt": True}, "must be a number, not true or false"),
        ({"fleetchaos.attempt": {"doubleValue": 2.5}}, {"attempt": 2.5}, "fractional part"),
        ({"http.response.status_code": {"intValue": str(10**30)}}, {"http_status": 10**30}, "less than or equal to 599"),
        ({"fleetchaos.retry_after_s": {"doubleValue": -5}}, {"retry_after_s": -5}, "greater than or equal to 0"),
        ({"fleetchaos.retry_after_s": {"boolValue": True}}, {"retry_after_s": True}, "not true or false"),
        ({"fleetchaos.item": {"intValue": -1}}, {"item": -1}, "greater than or equal to 0"),
        ({"host.name": {"arrayValue": {"values": []}}}, {"worker": []}, "valid string"),
    ],
)  # fmt: skip
def test_otlp_and_plain_traces_refuse_the_same_values(tmp_path, otlp, plain, rule):
    """One validation for both readers: what the plain form refuses, a span's attributes are refused for too,
    each message naming the field as that file spells it."""
    from fleetchaos.traces.bounded import TraceFileError
    from fleetchaos.traces.read import read_file

    span_file = tmp_path / "span.jsonl"
    span_file.write_text(json.dumps(_otlp_call(otlp)) + "\n")
    record = {"time": 1735722000, "task": "t", "tool": "crm", "duration_s": 1, "outcome": "error", **plain}
    plain_file = tmp_path / "plain.jsonl"
    plain_file.write_text(json.dumps(record) + "\n")
    messages = []
    for path in (span_file, plain_file):
        with pytest.raises(TraceFileError) as info:
            list(read_file(path))
        messages.append(str(info.value))
    attribute = next(iter(otlp))
    assert rule in messages[0] and f"attributes.{attribute}:" in messages[0], messages[0]
    assert rule in messages[1] and f"line 1: {next(iter(plain))}:" in messages[1], messages[1]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_codes_space_and_traces_are_read_bounded_and_a_fifo_never_hangs(tmp_path):
    """/dev/zero as --codes or --space is cut at the size limit; a FIFO nobody writes reads as empty: exit 2."""
    traces = _plain(tmp_path / "calls.jsonl")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cases = {
        "--codes /dev/zero": ["calibrate", str(traces), "--codes", "/dev/zero", "-o", "a.yaml"],
        "--codes FIFO": ["calibrate", str(traces), "--codes", str(fifo), "-o", "a.yaml"],
        "traces FIFO": ["calibrate", str(fifo), "-o", "a.yaml"],
        "--space /dev/zero": ["tune", "--scenario", "crm_sync_403", "--space", "/dev/zero"],
        "--space FIFO": ["tune", "--scenario", "crm_sync_403", "--space", str(fifo)],
    }
    for what, args in cases.items():
        done = _cli(*args, cwd=tmp_path)  # a hang would stop at the subprocess timeout and fail the test
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), (what, done.stderr)
    assert (
        "more than the 1,000,000 bytes a code mapping may have"
        in _cli(*cases["--codes /dev/zero"], cwd=tmp_path).stderr
    )


def test_too_many_tool_names_are_refused_while_reading(tmp_path):
    """50,000 distinct tool names stop the read at the 1,001st (a broken record after it is never reached)."""
    path = tmp_path / "tools.jsonl"
    rows = [{"time": 1735722000 + i, "task": f"t{i}", "tool": f"GET /v1/items/{i}", "duration_s": 1, "outcome": "ok"}
            for i in range(50_000)]  # fmt: skip
    rows[-1]["duration_s"] = -1
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = _cli("calibrate", str(path), "-o", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert (
        "tool: more than 1,000 distinct tool names" in done.stderr and "is an id part of the tool's name" in done.stderr
    )
    assert "duration_s" not in done.stderr and not (tmp_path / "t.yaml").exists()


def test_too_many_task_shapes_are_refused_before_the_fits(tmp_path):
    """Tasks following 300 different tool sequences: refused with the count and the fix, nothing written."""
    rows = []
    for task in range(300):
        for step, tool in enumerate((task % 20, task // 20, 20 + task % 7)):
            rows.append({"time": 1735722000 + 10 * task + step, "task": f"t{task}", "tool": f"tool{tool}",
                         "duration_s": 0.5, "outcome": "ok"})  # fmt: skip
    path = tmp_path / "shapes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = _cli("calibrate", str(path), "-o", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2 and "the tasks follow 300 different tool sequences" in done.stderr, done.stderr
    assert not (tmp_path / "s.yaml").exists()


def test_the_fit_check_and_the_report_have_the_size_guard(tmp_path, monkeypatch):
    """A fitted scenario too large to keep traced in memory is refused before its simulated days, nothing
    written (here with the guard's limit lowered to 10 tasks)."""
    import fleetchaos.scenario.load as load

    monkeypatch.setattr(load, "MAX_REPORT_TASKS", 10)
    traces = _plain(tmp_path / "calls.jsonl")
    out = tmp_path / "s.yaml"
    for extra in (["--report", str(tmp_path / "fit"), "--check-seeds", "0"], []):
        done = CliRunner().invoke(main, ["calibrate", str(traces), "-o", str(out), *extra])
        assert done.exit_code == 2, done.output
        assert "the fit check's simulated days (--check-seeds 0 skips them) and --report" in done.output
        assert not out.exists()
    done = CliRunner().invoke(main, ["calibrate", str(traces), "-o", str(out), "--check-seeds", "0"])
    assert done.exit_code == 0 and out.exists(), done.output
