"""Issue 17 items 12, 13 and 14: reads are bounded, sizes are refused from measured costs, and every user mistake
is exit 2 (a full disk a clean exit 3 naming the cause), checked before work starts where it can be."""

from __future__ import annotations

import copy
import json
import resource
import signal
from pathlib import Path

import patience
import pytest
from reliability_cli import fleetchaos

from fleetchaos.errors import UserError
from fleetchaos.files import FileTooLargeError, read_bounded
from fleetchaos.runs.sweep import SweepSpec, check_grid_size
from fleetchaos.scenario.load import MAX_REPORT_TASKS, check_rows_fit, estimated_size, parse_scenario


def test_reads_are_bounded_before_the_whole_input_is_read(tmp_path):
    """A regular file over the limit is refused from its size; a device is read only up to the limit."""
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a" * 2000)
    with pytest.raises(FileTooLargeError, match="2,000 bytes is larger than the 1,000 bytes"):
        read_bounded(big, 1000)
    with pytest.raises(FileTooLargeError, match="read stopped there"):
        read_bounded("/dev/zero", 1000)


@pytest.mark.parametrize(
    "args, message",
    [
        (["scenarios", "validate", "/dev/zero"], "more than the 1,000,000 bytes a scenario file may have"),
        (["run", "--scenario", "/dev/zero", "--no-history"], "more than the 1,000,000 bytes"),
        (["report", "/dev/zero", "-o", "out"], "bytes a results file may have"),
        (["sweep", "--file", "/dev/zero", "--no-history"], "bytes a sweep file may have"),
    ],
    ids=["validate", "run", "report", "sweep"],
)
def test_dev_zero_is_refused_without_reading_it_all(tmp_path, args, message):
    """Every command that reads a user's file stops at its limit on /dev/zero: exit 2, one message."""
    out = fleetchaos(*args, cwd=tmp_path, cpu_s=120)
    assert out.returncode == 2 and message in out.stderr, out.stderr


def test_json_repeated_keys_and_infinity_are_refused(tmp_path):
    """A scenario JSON with a key twice, and a results file holding Infinity, are exit 2 naming the problem."""
    (tmp_path / "s.json").write_text('{"name": "a", "name": "b"}')
    out = fleetchaos("scenarios", "validate", "s.json", cwd=tmp_path)
    assert out.returncode == 2 and "key 'name' appears twice" in out.stderr + out.stdout
    (tmp_path / "r.json").write_text('{"scenario": "x", "seeds": [1], "confidence": 0.95, "arms": [], "x": Infinity}')
    out = fleetchaos("report", "r.json", "-o", "rep", cwd=tmp_path)
    assert out.returncode == 2 and "Infinity is not a JSON number" in out.stderr, out.stderr


@pytest.mark.parametrize(
    ("scheduler", "message"),
    [
        ("tls://localhost:8786", "DASK_DISTRIBUTED__COMM__TLS__CA_FILE"),  # a tls:// scheduler without its TLS settings
        ("ucx://localhost:8786", "tcp://HOST:PORT"),
        ("localhost:8786", "tcp://HOST:PORT"),
    ],
)
def test_unsupported_schedulers_are_usage_errors_before_any_group_is_stored(tmp_path, scheduler, message):
    """ucx://, an address without a scheme, and tls:// without TLS settings are exit 2, and no history group is left behind."""
    out = fleetchaos("compare", "--scheduler", scheduler, "--seeds", "1", cwd=tmp_path)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert not (tmp_path / "history.db").exists()


@pytest.mark.parametrize(
    "param",
    [
        "workload.templates[0].steps[0].duration.mean_s=1e300",
        "duration_s=1e-9",
        "workload.tasks_per_day=1e-300",
        "x=" + "[" * 300 + "]" * 300,
    ],
    ids=["huge-mean", "tiny-duration", "tiny-rate", "deep-param"],
)
def test_absurd_values_are_a_result_or_a_usage_error_never_a_crash(tmp_path, tiny, param):
    """Huge means, tiny horizons and rates, and deeply nested --param values: exit 0 or 2, never 3 or a traceback."""
    out = fleetchaos("run", "--scenario", str(tiny), "--param", param, "--no-history", cwd=tmp_path)
    assert out.returncode in (0, 2), out.stderr
    assert "Traceback" not in out.stderr


def test_a_killed_pool_worker_is_one_message(tmp_path, tiny):
    """A worker process killed under a compare gives exit 2 saying so, never an internal error."""
    out = fleetchaos("compare", "--scenario", str(tiny), "--policies", "hostile_policies:KillsItsProcess,backoff",
                     "--errors", "generic", "--seeds", "2", "--jobs", "2", cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2 and "a worker process died" in out.stderr, out.stderr


def test_a_full_disk_is_a_clean_exit_3_naming_the_cause_and_leaves_no_truncated_report(tmp_path, tiny):
    """Writing a report past a file-size limit (as a full disk does) is exit 3 naming the OS cause; results.json,
    summary.md and report.html are whole or absent, never 0-byte or cut."""

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))

    out = fleetchaos("run", "--scenario", str(tiny), "--report", "rep", "--no-history", cwd=tmp_path, preexec_fn=limit)
    assert out.returncode == 3, out.stderr
    assert "File too large: no room to write" in out.stderr and "Traceback" not in out.stderr
    for name in ("results.json", "summary.md", "report.html"):
        path = tmp_path / "rep" / name
        if path.exists():
            assert path.stat().st_size > 0
            if name == "results.json":
                json.loads(path.read_text())


def test_a_report_run_too_big_to_keep_in_memory_is_refused_first(tmp_path):
    """A run with a report is limited by its measured cost per task (up to 48 KB), before it starts."""
    out = fleetchaos("run", "--param", f"workload.tasks_per_day={MAX_REPORT_TASKS * 2}", "--report", "rep",
                     "--no-history", cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2 and "more than the 4 GB a run may use" in out.stderr, out.stderr
    assert not (tmp_path / "rep").exists()


def test_a_closed_loop_is_estimated_as_fast_as_failing_tasks_go():
    """Clients of a closed loop send a task per think time plus a round trip: the fail-fast rate, not the mean task."""
    spec = parse_scenario(
        "name: x\nduration_s: 86400\nworkload:\n  clients: 10\n  think: {mean_s: 10}\n  templates:\n"
        "    - name: t\n      steps: [{tool: a, duration: {mean_s: 450}}]\n",
        "x.yaml",
    )
    tasks, _ = estimated_size(spec)
    assert tasks == pytest.approx(10 * 86400 / (10 + 2 * 0.08))
    with pytest.raises(UserError, match="about 850,394 tasks per run"):
        check_rows_fit(spec.model_copy(update={"duration_s": 86400 * 10}), "--report")


def test_a_sweep_grid_is_bounded_before_any_scenario_is_built():
    """A 64k-point grid is refused from its counts alone, with the figures and the fix."""
    spec = SweepSpec(params={"fleet.workers": list(range(1, 257)), "workload.tasks_per_day": list(range(1, 257))})
    with pytest.raises(UserError, match="65,536 points"):
        check_grid_size(spec, 10)


@pytest.fixture(scope="module")
def compare_results(tmp_path_factory, tiny) -> dict:
    """The results.json of a one-arm, one-seed compare report."""
    root = tmp_path_factory.mktemp("compare")
    out = fleetchaos("compare", "--scenario", str(tiny), "--policies", "structured", "--errors", "structured",
                     "--seeds", "1", "--report", "rep", "--no-history", cwd=root)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads((root / "rep" / "results.json").read_text())


@pytest.mark.parametrize("workers", [10**10, 10**20, 0], ids=["memory", "overflow", "none"])
def test_a_results_file_claiming_an_absurd_worker_count_is_refused(tmp_path, compare_results, workers):
    """`report` on a results file whose timeline claims 10**20 workers (OverflowError) or 10**10 (MemoryError): exit 2
    naming the field, before any chart is drawn."""
    doc = copy.deepcopy(compare_results)
    doc["timelines"][0]["workers"] = workers
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    out = fleetchaos("report", "bad.json", "-o", "again", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: bad.json: ") and "timelines.0.workers" in out.stderr, out.stderr
    assert not (tmp_path / "again").exists() or not any((tmp_path / "again").iterdir())


_FIFO_READERS = {
    "scenario": (["scenarios", "validate", "FIFO"], "scenario file"),
    "run": (["run", "--scenario", "FIFO", "--no-history"], "scenario file"),
    "results": (["report", "FIFO", "-o", "out"], "results file"),
    "baseline": (
        ["compare", "--scenario", "TINY", "--seeds", "1", "--quiet", "--baseline", "FIFO", "--no-history"],
        "results file",
    ),
    "diff": (["history", "diff", "FIFO", "FIFO"], "results file"),
    "sweep": (["sweep", "--file", "FIFO", "--no-history"], "sweep file"),
    "space": (["tune", "--space", "FIFO"], "search space"),
    "codes": (["calibrate", "TRACE", "--codes", "FIFO", "-o", "out.yaml"], "code mapping"),
    "trace": (["calibrate", "FIFO", "-o", "out.yaml"], "no trace records"),
}


@pytest.mark.parametrize("reader", sorted(_FIFO_READERS))
def test_a_named_pipe_nothing_writes_to_never_hangs_a_reader(tmp_path, tiny, reader):
    """A FIFO given as any input (open() waited for a writer for ever): exit 2 at once, one line naming it. A reader
    that hangs uses no processor time: patience ends it as stalled after a minute, and the test fails."""
    import os

    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    trace = Path(__file__).parents[2] / "examples" / "traces" / "crm_day.csv"
    args, what = _FIFO_READERS[reader]
    args = [str({"FIFO": fifo, "TINY": tiny, "TRACE": trace}.get(a, a)) for a in args]
    out = fleetchaos(*args, cwd=tmp_path, stall_s=60)
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"error: {fifo}: ") and what in line, line


def test_a_pipe_with_a_writer_is_read(tmp_path):
    """A pipe something writes to (the shell's <(command), whose writer holds the pipe from the start) is read
    whole, as before."""
    import shlex

    from reliability_cli import FLEETCHAOS

    import fleetchaos.catalogue as catalogue

    command = f"{shlex.quote(FLEETCHAOS)} scenarios validate <(cat {shlex.quote(str(catalogue.path('default')))})"
    out = patience.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, stall_s=60)
    assert out.returncode == 0 and "ok: /dev/fd/" in out.stdout and "scenario 'default'" in out.stdout, out.stderr


def test_a_policy_that_always_retries_cannot_keep_more_than_a_run_may(tiny, monkeypatch, tmp_path):
    """The memory bound of a run that keeps its tasks holds whatever the policy does: with the budget lowered to
    300 KB, a policy retrying every failure (it kept about 3.3 times the size guard's estimate per task) is stopped
    with exit 2 naming the run, while the built-in structured policy on the same world stays within it."""
    from click.testing import CliRunner

    from fleetchaos.cli.main import main
    from fleetchaos.scenario import load

    monkeypatch.setattr(load, "MAX_REPORT_BYTES", 300_000)
    monkeypatch.chdir(tmp_path)
    base = ["run", "--scenario", str(tiny), "--no-history", "--report"]
    result = CliRunner().invoke(main, [*base, "greedy", "--policy", "hostile_policies:AlwaysRetries"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        "error: policy hostile_policies:AlwaysRetries on structured, seed 1: stopped after "
    )
    assert "past the 0.0003 GB a run that keeps its tasks may use" in result.stderr
    result = CliRunner().invoke(main, [*base, "fine", "--policy", "structured"])
    assert result.exit_code == 0, result.output
