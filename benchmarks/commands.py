"""Figures of whole commands, as a user waits for them: start-up, a one-shot run, parallel compare, the demo, studies.

Each command runs as a fresh process, started by a small launcher process (:data:`LAUNCHER`);
its wall time is taken around it and its CPU time and peak memory from the operating
system's accounting of the finished process and the workers it reaped (``os.wait4``).  Every command is run once first, unmeasured, so its
bytecode is cached as after an install (``PYTHONDONTWRITEBYTECODE`` is removed from the
commands' environment), and commands compared with each other run in turn, A B A B, so a
change in the machine's load falls on both.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The modules a light command must not load.
HEAVY = ("scipy", "matplotlib", "faker", "hypothesis")


def fleetchaos() -> str:
    """The installed console script next to this interpreter."""
    return str(Path(sys.executable).with_name("fleetchaos"))


def environment(folder: Path, cache: Path | None = None) -> dict[str, str]:
    """The commands' environment: bytecode cached as after an install, the run history in ``folder``.

    Runs are made afresh (the run cache off) unless ``cache`` names a run cache folder.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["FLEETCHAOS_HISTORY"] = str(folder / "history.db")
    env["FLEETCHAOS_CACHE"] = str(cache) if cache is not None else "off"
    return env


#: Starts a command and reports its wall time and the operating system's accounting of it.  Run in a
#: small interpreter of its own: Linux carries a process's peak RSS across ``exec`` from the process it
#: was forked from, so a command forked straight from this (large) benchmark process would report at
#: least this process's size; forked from the launcher it starts from the launcher's few MiB.
LAUNCHER = """
import json, os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
wall = time.perf_counter() - start
print(json.dumps({"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024,
                  "code": os.waitstatus_to_exitcode(status), "err": err.decode(errors="replace")[-500:]}))
"""


def timed(cmd: Sequence[str], env: dict[str, str], cwd: Path, *, stderr: bool = False) -> dict[str, Any]:
    """One run of ``cmd``: wall seconds, CPU seconds (with its reaped workers) and peak RSS of its largest process.

    With ``stderr``, also the last 500 characters it printed there (the run cache's note).
    """
    out = subprocess.run([sys.executable, "-c", LAUNCHER, *cmd], capture_output=True, text=True, env=env, cwd=cwd)
    if out.returncode != 0:
        raise RuntimeError(f"the launcher failed for {' '.join(cmd)}: {out.stderr[-500:]}")
    figures = json.loads(out.stdout)
    if figures["code"] != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {figures['code']}: {figures['err']}")
    return {key: figures[key] for key in ("wall_s", "cpu_s", "peak_mib", *(("err",) if stderr else ()))}


def measure(commands: dict[str, Sequence[str]], runs: int, folder: Path, cache: Path | None = None) -> dict[str, dict]:
    """Each command ``runs`` times after one warm-up, in turn; the median of each figure, and every wall time.

    With a run ``cache`` folder the warm-up fills it, so the measured runs are the warm ones.
    """
    env = environment(folder, cache)
    for cmd in commands.values():
        timed(cmd, env, folder)
    seen: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            seen[name].append(timed(cmd, env, folder))
    out = {}
    for name, rows in seen.items():
        out[name] = {key: round(statistics.median(r[key] for r in rows), 3) for key in rows[0]}
        out[name]["walls"] = [round(r["wall_s"], 3) for r in rows]
    return out


def paired_ratio(slow: list[float], fast: list[float]) -> float:
    """The median of the pairwise ratios ``slow[i] / fast[i]`` (runs taken in turn)."""
    return round(statistics.median(s / f for s, f in zip(slow, fast)), 2)


# -- start-up and a one-shot run ----------------------------------------------------------------

#: Runs the command line (arguments after the first) in a fresh interpreter; prints which watched modules it loaded.
COMMAND_PROBE = """
import json, sys
from fleetchaos.cli.main import main
try:
    main(sys.argv[2:], prog_name="fleetchaos", standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)))
"""
#: The same for ``import fleetchaos`` and a look at its public names.
IMPORT_PROBE = """
import json, sys
import fleetchaos
fleetchaos.__all__
print(json.dumps(sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)))
"""


def heavy_loaded(probe: str, args: Sequence[str], folder: Path) -> list[str]:
    """Which of :data:`HEAVY` a probe (a command or the import) loads, in a fresh interpreter."""
    cmd = [sys.executable, "-c", probe, json.dumps(HEAVY), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=environment(folder), cwd=folder)
    return json.loads(out.stdout.strip().splitlines()[-1])


def startup(runs: int) -> dict:
    """``fleetchaos --help``, ``import fleetchaos`` and a one-shot ``fleetchaos run --scenario default``."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        figures = measure(
            {
                "help": [fleetchaos(), "--help"],
                "import": [sys.executable, "-c", "import fleetchaos"],
                "python": [sys.executable, "-c", "pass"],
                "run": [fleetchaos(), "run", "--scenario", "default"],
            },
            runs,
            folder,
        )
        figures["run_loads"] = heavy_loaded(COMMAND_PROBE, ["run", "--scenario", "default", "--no-history"], folder)
        figures["import_loads"] = heavy_loaded(IMPORT_PROBE, [], folder)
    return figures


# -- parallel compare -------------------------------------------------------------------------------


def compare_speedup(runs: int, seeds: int = 10) -> dict:
    """``compare --seeds 10`` at ``--jobs 2`` against ``--jobs 1``, taken in turn; the median pairwise speed-up."""
    base = [fleetchaos(), "compare", "--scenario", "default", "--seeds", str(seeds)]
    with tempfile.TemporaryDirectory() as tmp:
        figures = measure({"jobs1": [*base, "--jobs", "1"], "jobs2": [*base, "--jobs", "2"]}, runs, Path(tmp))
    figures["speedup"] = paired_ratio(figures["jobs1"]["walls"], figures["jobs2"]["walls"])
    return figures


# -- make demo ----------------------------------------------------------------------------------------


def demo(runs: int) -> dict:
    """The command behind ``make demo`` (a 10-seed comparison with its report folder), installed: cold and warm.

    Cold makes every run (the run cache off); warm is the same command repeated with its run
    cache filled by the first, as a second ``make demo`` is.
    """
    with tempfile.TemporaryDirectory() as tmp:
        report = str(Path(tmp) / "demo")
        cmd = [fleetchaos(), "compare", "--scenario", "default", "--seeds", "10", "--report", report]
        cold = measure({"demo": cmd}, runs, Path(tmp))["demo"]
        warm = measure({"demo": cmd}, runs, Path(tmp), cache=Path(tmp) / "cache")["demo"]
        return {**cold, "warm": warm}


# -- studies --------------------------------------------------------------------------------------


def _served(err: str) -> str:
    """The run cache's note from a command's stderr (``60 of 60``), or ``none``."""
    for line in err.splitlines():
        if line.startswith("run cache: "):
            return line.removeprefix("run cache: ").split(" runs served")[0]
    return "none"


def studies(jobs: int = 2) -> dict:
    """The studies users wait for, once each, in order, on ``jobs`` processes.

    ``tune`` on generic errors with the run cache empty, then ``compare --tune`` (which tunes
    both formats) served from it; then ``compare --tune`` with no cache at all; then a warm
    ``compare --report``.  Each with the runs the cache served.
    """
    with tempfile.TemporaryDirectory() as tmp:
        folder, cache = Path(tmp), Path(tmp) / "cache"
        cmds = {
            "tune generic (cache empty)": ["tune", "--scenario", "default", "--errors", "generic", "--json"],
            "compare --tune after it": ["compare", "--scenario", "default", "--tune", "--json", "--no-history"],
            "compare --tune, no cache": ["compare", "--scenario", "default", "--tune", "--json", "--no-history",
                                         "--no-cache"],
        }  # fmt: skip
        out = {}
        env = environment(folder, cache)
        for name, args in cmds.items():
            figures = timed([fleetchaos(), *args, "--jobs", str(jobs)], env, folder, stderr=True)
            figures["served"] = _served(figures.pop("err"))
            out[name] = figures
        return out
