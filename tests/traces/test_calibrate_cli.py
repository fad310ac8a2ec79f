"""`fleetchaos calibrate` as a user meets it: hostile trace files exit 2 with one message, never a traceback."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import patience
import pytest
import yaml

from fleetchaos.scenario.load import load_scenario

FLEETCHAOS = [sys.executable, "-m", "fleetchaos.cli"]


def _calibrate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return patience.run(
        [*FLEETCHAOS, "calibrate", *args], cwd=cwd, capture_output=True, text=True, cpu_s=120, check=False
    )


@pytest.fixture(scope="module")
def traces(tmp_path_factory, default_export) -> Path:
    """The exported default-scenario run."""
    return default_export[2]


def test_calibrate_writes_a_scenario_that_loads(tmp_path, traces):
    """An exported run calibrates into a scenario file that validates, with provenance comments."""
    out = tmp_path / "fitted.yaml"
    done = _calibrate(str(traces), "-o", str(out), "--name", "fitted", "--check-seeds", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stderr
    text = out.read_text()
    scenario = load_scenario(str(out))
    assert scenario.name == "fitted"
    assert {t.name for t in scenario.workload.templates} == {"coding", "research", "crm_sync"}
    assert text.count("\n  # ") >= len(scenario.faults)  # every fault has its provenance above it
    assert "95% CI" in text


def test_a_tool_seen_in_one_call_keeps_that_calls_duration(tmp_path):
    """One call is too few to fit a spread: its duration is kept as a constant with a note (it used to exit 3)."""
    rows = [{"time": 1735722000 + 60 * i, "task": f"t{i}", "tool": "crm", "worker": "w1", "duration_s": 2,
             "outcome": "ok"} for i in range(40)]  # fmt: skip
    rows.append({"time": 1735724460, "task": "t40", "tool": "rare", "worker": "w1", "duration_s": 3, "outcome": "ok"})
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = _calibrate(str(path), "-o", str(tmp_path / "s.yaml"), "--check-seeds", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "tool 'rare': one call to fit its duration on, kept as a constant (cv 0)" in done.stderr
    steps = {s.tool: s for t in load_scenario(str(tmp_path / "s.yaml")).workload.templates for s in t.steps}
    assert (steps["rare"].duration.mean_s, steps["rare"].duration.cv) == (3, 0)


def test_unknown_codes_are_listed_not_dropped(tmp_path):
    """Failures with codes the mapping does not know are listed with their counts, and the run still succeeds."""
    rows = []
    for i in range(40):
        rows.append({"time": 1735722000 + 60 * i, "task": f"t{i}", "tool": "crm", "worker": "w1", "duration_s": 2,
                     "outcome": "error" if i % 4 == 0 else "ok", "error": "E_MYSTERY" if i % 4 == 0 else None})  # fmt: skip
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in rows))
    done = _calibrate(str(path), "-o", str(tmp_path / "s.yaml"), "--check-seeds", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning: unmapped failure: code 'E_MYSTERY': 10 calls (map it with --codes)" in done.stderr
    assert "E_MYSTERY" in (tmp_path / "s.yaml").read_text()
    mapping = tmp_path / "codes.yaml"
    mapping.write_text("codes: {E_MYSTERY: network_blip}\n")
    done = _calibrate(str(path), "-o", str(tmp_path / "s.yaml"), "--codes", str(mapping), "--force", "--check-seeds", "0",
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0 and "unmapped" not in done.stderr
    faults = yaml.safe_load((tmp_path / "s.yaml").read_text())["faults"]
    assert faults == [{"kind": "network_blip", "probability": 0.25}]


def _hostile(root: Path) -> dict[str, list[str]]:
    good = json.dumps({"resourceSpans": []})
    (root / "truncated.jsonl").write_text(good + "\n" + good[:-5] + "\n")
    (root / "types.jsonl").write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 7}]}]}]}))
    (root / "huge.jsonl").write_bytes(b"{" + b" " * (65 * 1024 * 1024) + b"}\n")
    (root / "binary.jsonl").write_bytes(bytes(range(256)) * 10)
    (root / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (root / "nospans.jsonl").write_text(good + "\n")
    (root / "codes.yaml").write_text("codes: {X: not_a_kind}\n")
    return {
        "truncated JSON": ["truncated.jsonl"],
        "wrong types": ["types.jsonl"],
        "huge line": ["huge.jsonl"],
        "/dev/zero": ["/dev/zero", "--format", "otlp"],
        "binary": ["binary.jsonl"],
        "deep nesting": ["deep.jsonl"],
        "no tool calls": ["nospans.jsonl"],
        "missing file": ["nope.jsonl"],
        "a folder": ["."],
        "bad mapping": ["nospans.jsonl", "--codes", "codes.yaml"],
    }


def test_hostile_files_exit_2_with_one_message(tmp_path):
    """Truncated JSON, wrong types, a 65 MiB line, /dev/zero, binary, deep nesting, no calls: exit 2, one line."""
    cases = _hostile(tmp_path)
    for what, args in cases.items():
        done = _calibrate(*args, "-o", str(tmp_path / "out.yaml"), cwd=tmp_path)
        assert done.returncode == 2, (what, done.returncode, done.stderr)
        assert "Traceback" not in done.stderr + done.stdout, what
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) >= 1 and lines[0].startswith("error: "), (what, done.stderr)
        assert not (tmp_path / "out.yaml").exists(), what


def test_run_and_compare_write_traces(tmp_path, monkeypatch):
    """`run --traces DIR` writes the run's OTLP file; `compare --traces DIR` the traced best and worst arms."""
    from click.testing import CliRunner

    from fleetchaos.cli.main import main

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    done = runner.invoke(main, ["run", "--scenario", "crm_sync_403", "--seed", "4", "--no-history", "--traces", "out"])
    assert done.exit_code == 0, done.output
    written = tmp_path / "out" / "crm_sync_403-structured-structured-seed4.otlp.jsonl"
    assert written.exists() and "OTLP JSON" in done.output
    done = runner.invoke(main, ["compare", "--scenario", "crm_sync_403", "--seeds", "2", "--jobs", "1",
                                "--policies", "blind-retry,structured", "--errors", "generic,structured",
                                "--no-history", "--traces", "cmp"])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert len(list((tmp_path / "cmp").glob("*.otlp.jsonl"))) == 2


def test_calibrate_report(tmp_path, traces):
    """`calibrate --report DIR` writes the fit report: Markdown, HTML and its charts."""
    from click.testing import CliRunner

    from fleetchaos.cli.main import main

    done = CliRunner().invoke(
        main,
        ["calibrate", str(traces), "-o", str(tmp_path / "s.yaml"), "--report", str(tmp_path / "r"),
         "--check-seeds", "2", "--jobs", "1"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    names = sorted(p.name for p in (tmp_path / "r").iterdir())
    assert names == ["errors_by_hour.png", "latency_ecdf.png", "report.html", "summary.md"]
    summary = (tmp_path / "r" / "summary.md").read_text()
    assert "## Windows found" in summary and "rate_limit" in summary
    assert "## Fit check" in summary and "simulated on 2 seeds (1, 2" in summary
    # The provider is fitted (its servers and limit), so the simulated day has 503s too.
    row = next(line for line in summary.splitlines() if line.startswith("| overloaded | 15.28% | "))
    assert float(row.split("|")[3].strip().rstrip("%")) > 0, row
    # The last column of the durations' table: the simulated median duration over the traced one.  run_tests is
    # queued by no provider, so both are medians of one fitted log-normal's draws: near 1 (the column once divided
    # by the fitted sample's median, a provider's service for its tools, and read 1.21 here).
    start = summary.index("| tool | calls | mean (s)")
    rows = list(itertools.takewhile(lambda line: line.startswith("| "), summary[start:].splitlines()[2:]))
    ratio = {line.split("|")[1].strip(): line.split("|")[-2].strip() for line in rows}
    assert 0.9 < float(ratio["run_tests"]) < 1.1, rows
