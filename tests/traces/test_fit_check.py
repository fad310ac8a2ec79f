"""`calibrate` prints its verdict: a fitted scenario that does not fail its calls as the traces did is a miss, exit 1.

The check: each fault kind's share of the traces' calls must lie in the 99.9% prediction
interval of one simulated day of the fitted scenario (Student's t over the simulated days'
spread, never narrower than binomial error).  Checked against hand-computed intervals,
then on the command line: a policy that recovers otherwise than the traced fleet (a
fitted kind misses), a kind calibration does not fit, and the README's example, which fits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from fleetchaos.calibrate.observed import Calls
from fleetchaos.calibrate.verdict import fit_check
from fleetchaos.traces.codes import FAULT_KINDS

ROOT = Path(__file__).resolve().parents[2]
FLEETCHAOS = [sys.executable, "-m", "fleetchaos.cli"]
BLIP = FAULT_KINDS.index("network_blip")


def _calls(failures: int, total: int) -> Calls:
    """``total`` calls of which ``failures`` are network blips (the only columns the check reads)."""
    kind = np.full(total, -1, dtype=np.int8)
    kind[:failures] = BLIP
    zeros = np.zeros(total)
    ints = np.zeros(total, dtype=np.int32)
    return Calls(ints, zeros, zeros, ints, ints, kind, ints, ints, zeros, [], [], zeros, ints, [], [])


def test_the_interval_is_students_t_over_the_days_spread_never_below_binomial_error():
    """Hand-computed: five days at 1.0, 1.2, 0.8, 1.1, 0.9% of 1,000 calls spread by sqrt(2.5e-6 x 1.2), less
    than the binomial error of one day against the traces (pooled 200/6000: sqrt(0.0333 x 0.9667 x 2/1000) =
    0.0080277); t(4) at 0.9995 is 8.6103: the interval is 1% +- 6.912%, so 15% misses and 5% fits."""
    days = [_calls(k, 1000) for k in (10, 12, 8, 11, 9)]
    miss = fit_check(_calls(150, 1000), days, range(5), frozenset({"network_blip"}))
    (row,) = miss.kinds
    assert row.kind == "network_blip" and row.observed == 150 and row.simulated_share == pytest.approx(0.01)
    assert (row.low, row.high) == (0.0, pytest.approx(0.079121, abs=1e-6))
    assert row.misses and not miss.fits and miss.misses == (row,)
    assert not fit_check(_calls(50, 1000), days, range(5), frozenset()).misses


def test_a_wide_day_to_day_spread_widens_the_interval():
    """Days at 5, 10, 15, 20, 25% of 10,000 calls: spread sqrt(0.0075) = 0.0866 beats binomial error; 15% +- 74.57%."""
    days = [_calls(k, 10_000) for k in (500, 1000, 1500, 2000, 2500)]
    (row,) = fit_check(_calls(600, 10_000), days, range(5), frozenset({"network_blip"})).kinds
    assert (row.low, row.high) == (0.0, pytest.approx(0.895674, abs=1e-6)) and not row.misses


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*FLEETCHAOS, *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False)


KEYS = {
    "name": "keys",
    "duration_s": 14400,
    "fleet": {"orchestrators": 1, "workers": 4, "api_rate_per_s": 50, "api_burst": 100},
    "workload": {
        "tasks_per_day": 4000,
        "diurnal_amplitude": 0,
        "templates": [{"name": "sync", "steps": [{"tool": "fetch", "duration": {"mean_s": 1, "cv": 0.3}},
                                                  {"tool": "write", "duration": {"mean_s": 2, "cv": 0.3}}]}],
    },
    "faults": [
        {"kind": "network_blip", "probability": 0.02},
        {"kind": "expired_key", "events": [{"worker": 0, "at_s": 1800}, {"worker": 2, "at_s": 5400},
                                           {"worker": 1, "at_s": 9000}]},
    ],
}  # fmt: skip


def test_a_fitted_kind_that_misses_exits_1_and_says_why(tmp_path):
    """Traces of a fleet that refreshes expired keys at once (structured errors and policy), simulated with
    backoff on generic errors (which never refreshes): 0.2% of calls refused for an expired key in the traces,
    about 61% on a simulated day (five days are plenty to tell).  The miss is printed with its interval and the advice, exit 1; --allow-misfit
    exits 0 and still prints it; simulated with the fleet's own policy, the same fit fits."""
    (tmp_path / "keys.yaml").write_text(yaml.safe_dump(KEYS))
    done = _cli("run", "--scenario", "keys.yaml", "--policy", "structured", "--errors", "structured", "--seed", "1",
                "--no-history", "--quiet", "--traces", "traces", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (traces,) = (tmp_path / "traces").iterdir()
    done = _cli("calibrate", str(traces), "-o", "fit.yaml", "--check-seeds", "5", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "fit check: MISSES: the fitted scenario does not fail its calls as the traces did, on 1 fault kind(s)" in (
        done.stderr
    )
    assert "  expired_key: " in done.stderr and "against 0.23% observed" in done.stderr
    assert "give the ones closest to how your fleet recovers" in done.stderr
    assert (tmp_path / "fit.yaml").exists()  # written all the same, for the user to read
    allowed = _cli("calibrate", str(traces), "-o", "fit.yaml", "--force", "--allow-misfit", "--check-seeds", "5",
                   cwd=tmp_path)  # fmt: skip
    assert (
        allowed.returncode == 0 and "fit check: MISSES" in allowed.stderr and "--allow-misfit: exit 0" in allowed.stderr
    )
    matched = _cli("calibrate", str(traces), "-o", "fit.yaml", "--force", "--policy", "structured", "--errors",
                   "structured", "--check-seeds", "5", cwd=tmp_path)  # fmt: skip
    assert matched.returncode == 0, matched.stderr
    assert (
        "fit check: fits: each of 2 fault kinds' share of the traces' calls lies within its 99.9% interval over 5"
        in (matched.stderr)
    )


def test_a_kind_calibration_does_not_fit_is_a_miss_to_declare_by_hand(tmp_path):
    """A tenth of the calls refused for an overflowing context (the model's window, not fitted): no simulated day has
    any."""
    rows = [
        {"time": 1735722000 + 20 * i, "task": f"t{i}", "tool": "llm", "worker": "w1", "duration_s": 1.0,
         "outcome": "error" if i % 10 == 3 else "ok", **({"error": "CONTEXT_LENGTH_EXCEEDED"} if i % 10 == 3 else {})}
        for i in range(400)
    ]  # fmt: skip
    (tmp_path / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = _cli("calibrate", "calls.jsonl", "-o", "fit.yaml", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert (
        "context_overflow: 0.00% of simulated calls" in done.stderr
        and "against 10.00% observed; not fitted" in done.stderr
    )
    assert "context_overflow: calibration does not fit this kind; declare it by hand in fit.yaml" in done.stderr


def test_the_readme_example_fits(tmp_path):
    """examples/traces/crm_day.csv with its code mapping: every kind within its interval, exit 0."""
    done = _cli("calibrate", str(ROOT / "examples/traces/crm_day.csv"), "--codes",
                str(ROOT / "examples/traces/codes.yaml"), "-o", "crm_day.yaml", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "fit check: fits: each of 3 fault kinds' share of the traces' calls lies within its 99.9% interval over "
        in (done.stderr)
    )


def test_a_fitted_world_whose_days_make_no_call_is_a_misfit_not_an_error(tmp_path):
    """Three calls stamped 55 years apart fit an arrival rate so low that the simulated days make no call (found
    by the trace fuzzer: the empty export was read back as a user's empty trace file, exit 2). Such a check holds
    nothing against the traces: exit 1 naming the idle days, 0 with --allow-misfit; the scenario is written."""
    rows = [("fetch", 1, 0.5), ("write", 1735722037, 0.6), ("note", 1735722074, 0.7)]
    lines = [
        json.dumps({"time": t, "task": "t0", "tool": tool, "worker": f"w{i}", "duration_s": d, "outcome": "ok",
                    "attempt": 1, "item": 0})
        for i, (tool, t, d) in enumerate(rows)
    ]  # fmt: skip
    traces = tmp_path / "traces.jsonl"
    traces.write_text("\n".join(lines) + "\n")
    args = [*FLEETCHAOS, "calibrate", str(traces), "-o", str(tmp_path / "fitted.yaml"), "--check-seeds", "2"]
    done = subprocess.run([*args, "--jobs", "1"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "2 of 2 simulated days of the fitted scenario made no tool call, where the traces have 3" in done.stderr
    assert "error:" not in done.stderr and (tmp_path / "fitted.yaml").exists()
    allowed = subprocess.run([*args, "--force", "--allow-misfit", "--jobs", "1"], capture_output=True, text=True,
                             cwd=tmp_path)  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr


def test_a_tool_whose_durations_the_fit_misses_exits_1_naming_the_quantile(tmp_path):
    """400 calls of one tool: 7 in 10 take 1 s, 3 in 10 take 20 s (two populations, a fast path and a slow one).  The
    log-normal fitted to them has the mean log 0.3 ln 20 = 0.899, a median of 2.46 s, so a simulated day's p50 is
    near 2.46 s where the traces' is 1 s: a miss of the duration quantile, printed, exit 1 (no fault kind misses)."""
    rows = [
        {"time": 1735722000 + 20 * i, "task": f"t{i}", "tool": "fetch", "worker": "w1",
         "duration_s": 1.0 if i % 10 < 7 else 20.0, "outcome": "ok"}
        for i in range(400)
    ]  # fmt: skip
    (tmp_path / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = _cli("calibrate", "calls.jsonl", "-o", "fit.yaml", "--check-seeds", "5", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "fit check: MISSES: the fitted scenario's calls do not take as long as the traces'" in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("  fetch p50: ")]
    assert line.endswith("against 1 s observed")
    assert 2.2 < float(line.split(": ")[1].split(" s ")[0]) < 2.75  # the simulated days' p50, about 2.46 s
    allowed = _cli("calibrate", "calls.jsonl", "-o", "fit.yaml", "--force", "--check-seeds", "5", "--allow-misfit",
                   cwd=tmp_path)  # fmt: skip
    assert allowed.returncode == 0 and "--allow-misfit: exit 0" in allowed.stderr
