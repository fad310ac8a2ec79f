"""Hand-written mutants of the core modules, and whether the test suite kills each one.

    .venv/bin/python tests/mutants.py               # all 20 mutants against the fast unit, sim and real tests
    .venv/bin/python tests/mutants.py M02 M18       # some of them
    .venv/bin/python tests/mutants.py --jobs 2 --tests tests/sim/test_sim_hand_computed.py

Each mutant is one plausible one-line bug in the code that decides and judges
(the oracle, the metrics, the wasted-retry judge, the call decision, the kinds table,
the common set): the original line and its replacement.  A mutant is applied in memory
only: the suite runs in a child process whose import system serves the mutated source
for that one module, so no file is ever changed (an interrupted run leaves nothing
behind).  The mutant is *killed* when the tests fail, and *survives* when they pass;
docs/testing.md triages the survivors.  The tests run in one process each
(``-p no:xdist``); tests that start a fresh interpreter see the original code and can
neither kill nor miss a mutant.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import time
import types
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
#: The fast unit, simulation and real-code tests: a mutant survives when they all pass.
#: Tests that compare this process's results with a worker process's: the worker imports the original
#: source, so any mutant that changes a figure fails them without them judging it; they are left out.
IN_AND_OUT_OF_PROCESS = (
    "tests/sim/test_sim_ablation.py::test_cli_ablation_is_the_same_in_process_and_in_a_process_pool",
    "tests/unit/test_executors.py::test_map_chunks_with_processes_matches_serial",
)
DEFAULT_TESTS = (
    "tests/unit", "tests/sim", "tests/real", "-m", "not slow",
    *(arg for test in IN_AND_OUT_OF_PROCESS for arg in ("--deselect", test)),
)  # fmt: skip
#: Run first, on their own: a mutant they kill needs no more (they are part of the default tests,
#: so this changes how long a run takes, never its verdict).
FIRST_TESTS = ("tests/sim/test_sim_hand_computed.py", "tests/unit/test_kind_table.py")


class Mutant(NamedTuple):
    id: str
    module: str
    """The import name of the mutated module."""
    path: str
    """Its source file, relative to the repository."""
    old: str
    """The original text (it must occur exactly once in the file)."""
    new: str
    bug: str


MUTANTS = (
    Mutant("M01", "fleetchaos.results.oracle", "harness/results/oracle.py",
           'recovered = faulted and full and claim == "success"', 'recovered = faulted and claim == "success"',
           "a task claimed a success counts as recovered whatever its truth"),
    Mutant("M02", "fleetchaos.results.oracle", "harness/results/oracle.py",
           "full and claim in FAILURE_CLAIMS", 'full and claim != "success"',
           "an unfinished task whose work completed counts as a false alarm"),
    Mutant("M03", "fleetchaos.results.oracle", "harness/results/oracle.py",
           'claim == "success" and not full', 'claim == "success" and truth == "none"',
           "a silent failure only when nothing took effect (a half-done success passes)"),
    Mutant("M04", "fleetchaos.results.oracle", "harness/results/oracle.py",
           "steps = record.step_executions - record.step_executions_at_first_fault",
           "steps = record.step_executions",
           "steps to recovery counted from the task's start, not its first fault"),
    Mutant("M05", "fleetchaos.results.metrics", "harness/results/metrics.py",
           '"recovery_rate": recovered / faulted if faulted else None',
           '"recovery_rate": recovered / tasks if tasks else None',
           "recovery rate over every task, not the faulted ones"),
    Mutant("M06", "fleetchaos.results.metrics", "harness/results/metrics.py",
           '"silent_failure_rate": t["silent_failures"] / tasks if tasks else None',
           '"silent_failure_rate": t["silent_failures"] / faulted if faulted else None',
           "silent-failure rate over the faulted tasks, not every task"),
    Mutant("M07", "fleetchaos.results.metrics", "harness/results/metrics.py",
           'human_cost = t["human_ms"] / 3_600_000.0 * fleet.usd_per_human_hour',
           'human_cost = t["human_ms"] / 60_000.0 * fleet.usd_per_human_hour',
           "a paged human priced per minute at the hourly rate"),
    Mutant("M08", "fleetchaos.results.metrics", "harness/results/metrics.py",
           "sum(map(len, record.commits)) + record.extra_turns,", "len(record.commits) + record.extra_turns,",
           "logical calls counted per step, not per item of a fan-out step"),
    Mutant("M09", "fleetchaos.results.metrics", "harness/results/metrics.py",
           'judged.truth == TRUTH_FULL and claim == "success",', 'claim == "success",',
           "a success counted on the claim alone"),
    Mutant("M10", "fleetchaos.sim.waste", "simulated_fleet/waste.py",
           "dispatched_at >= last.retry_at", "dispatched_at > last.retry_at",
           "a retry refused again at its hinted instant counted as before the hint"),
    Mutant("M11", "fleetchaos.sim.waste", "simulated_fleet/waste.py",
           "retry.executions[last.step] + 1)", "retry.executions[last.step])",
           "a retry judged with the failed execution's draws, not the retry's"),
    Mutant("M12", "fleetchaos.sim.state_kinds", "simulated_fleet/state_kinds.py",
           "return shared.buckets[retry.tpl.steps[last.step].api].available(retry.now) < 1.0",
           "return last.retry_at is not None and retry.now < last.retry_at",
           "a retry after a 429 judged by the hint, not the token bucket"),
    Mutant("M13", "fleetchaos.sim.state_kinds", "simulated_fleet/state_kinds.py",
           "retry.node.disk_refuses(retry.now, retry.tpl.steps[last.step].disk_mb)",
           "retry.node.disk_refuses(retry.now, 0.0)",
           "a retry into a disk full of workspaces judged as if it wrote nothing"),
    Mutant("M14", "fleetchaos.sim.calls", "simulated_fleet/calls.py",
           "if limit is not None and duration + waited > limit:", "if limit is not None and duration > limit:",
           "time queued for a tool slot not counted toward the call timeout"),
    Mutant("M15", "fleetchaos.sim.calls", "simulated_fleet/calls.py",
           "committed = _draw(key, S_COMMIT ^ rule.stream) < hangs.committed_probability",
           "committed = _draw(key, S_COMMIT ^ rule.stream) > hangs.committed_probability",
           "a hung call commits with one minus its probability"),
    Mutant("M16", "fleetchaos.sim.calls", "simulated_fleet/calls.py",
           "return rule.info, latency + rule.fail_s, False, None", "return rule.info, rule.fail_s, False, None",
           "a persistent failure returns without its round trip"),
    Mutant("M17", "fleetchaos.sim.dispatch", "simulated_fleet/dispatch.py",
           "(token_at is None or retry_at < token_at)", "(token_at is None or retry_at > token_at)",
           "a step reports the latest retry-after of its items, not the earliest"),
    Mutant("M18", "fleetchaos.sim.kinds", "simulated_fleet/kinds.py",
           'wire=Wire(507, "Insufficient Storage", "ENOSPC")', 'wire=Wire(503, "Service Unavailable", "ENOSPC")',
           "a full disk reported as 503 instead of 507"),
    Mutant("M19", "fleetchaos.sim.kinds", "simulated_fleet/kinds.py",
           'FailureContract("AUTH_EXPIRED", "auth", True, "refresh_credentials")',
           'FailureContract("AUTH_EXPIRED", "auth", False, "refresh_credentials")',
           "expired credentials marked unrecoverable"),
    Mutant("M20", "fleetchaos.results.common_set", "harness/results/common_set.py",
           "common |= decode(task_sets[FAULTED])", "common &= decode(task_sets[FAULTED])",
           "the common set as the tasks faulted in every arm, not in any"),
)  # fmt: skip


def mutated_source(mutant: Mutant) -> str:
    """The module's source with the mutant applied; the original text must occur exactly once."""
    text = (ROOT / mutant.path).read_text(encoding="utf-8")
    if text.count(mutant.old) != 1:
        raise SystemExit(f"{mutant.id}: {mutant.path} holds {text.count(mutant.old)} copies of {mutant.old!r}, not one")
    return text.replace(mutant.old, mutant.new)


class _MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the mutated source for one module; every other import goes on as usual."""

    def __init__(self, mutant: Mutant):
        self.mutant = mutant
        self.source = mutated_source(mutant)

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.mutant.module:
            return None
        return importlib.util.spec_from_file_location(fullname, ROOT / self.mutant.path, loader=self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        exec(compile(self.source, str(ROOT / self.mutant.path), "exec"), module.__dict__)


def _child(mutant_id: str, pytest_args: list[str]) -> int:
    """Run pytest in this process with one mutant installed (the parent's ``--child``).

    The mutant's finder goes first on the import path before pytest starts, because
    plugins load the package early (hypothesis's entry point imports the scenario model,
    which imports the metrics and the oracle).  Assertions are then left plain: pytest's
    rewriting hook would otherwise sit in front of the finder and load the package's
    original source itself (it rewrites the whole ``fleetchaos`` distribution, the
    strict editable install's plugin).  A plain assert fails the test as a rewritten one
    does; only its message is shorter.
    """
    import pytest

    (mutant,) = [m for m in MUTANTS if m.id == mutant_id]
    if mutant.module in sys.modules:
        raise SystemExit(f"{mutant.id}: {mutant.module} was imported before the mutant could be installed")
    sys.meta_path.insert(0, _MutantFinder(mutant))
    return int(pytest.main([*pytest_args, "--assert=plain"]))


def _first_failure(mutant: Mutant, tests: Sequence[str]) -> str | None:
    """The first test that fails with ``mutant`` applied (None: every test passed)."""
    args = [*tests, "-x", "-q", "-p", "no:xdist", "-p", "no:randomly", "-p", "no:cacheprovider"]
    out = subprocess.run(
        [sys.executable, __file__, "--child", mutant.id, "--", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if out.returncode not in (0, 1):  # 0: every test passed, 1: one failed; anything else: the run itself broke
        raise SystemExit(f"{mutant.id}: pytest exited {out.returncode}:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    if out.returncode == 0:
        return None
    failures = (line.split(" ")[1] for line in out.stdout.splitlines() if line.startswith(("FAILED ", "ERROR ")))
    return next(failures, "?")


def run(mutant: Mutant, tests: Sequence[str]) -> tuple[Mutant, str | None, float]:
    """(mutant, the first test that failed with it or None if it survived, seconds) against ``tests``."""
    mutated_source(mutant)  # refuse a stale mutant before starting a child
    started = time.monotonic()
    failed = _first_failure(mutant, FIRST_TESTS) if tuple(tests) == DEFAULT_TESTS else None
    if failed is None:
        failed = _first_failure(mutant, tests)
    return mutant, failed, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    """Run the chosen mutants (default: all), print one line each, then the score; exit 1 below 18 of 20."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child(argv[1], argv[3:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", help="mutant ids (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once [default: 1]")
    parser.add_argument("--tests", nargs="+", default=list(DEFAULT_TESTS), help="pytest arguments selecting the tests")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.ids or m.id in args.ids]
    unknown = set(args.ids) - {m.id for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutant ids: {', '.join(sorted(unknown))}")
    killed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for mutant, failed, seconds in pool.map(lambda m: run(m, args.tests), chosen):
            killed += failed is not None
            verdict = "SURVIVED" if failed is None else f"killed by {failed}"
            print(f"{mutant.id} {mutant.path}: {mutant.bug}: {verdict} ({seconds:.0f} s)", flush=True)
    print(f"{killed} of {len(chosen)} mutants killed")
    return 0 if len(chosen) < len(MUTANTS) or killed >= 18 else 1


if __name__ == "__main__":
    sys.exit(main())
