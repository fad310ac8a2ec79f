"""Machine instructions per simulated tool call, counted by valgrind: the like-for-like ratio without the clock.

    .venv/bin/python benchmarks/instructions.py             # default scenario, seeds 1 and 2 (about 3 minutes)
    .venv/bin/python benchmarks/instructions.py --seeds 1

Wall and CPU time move with the machine's load; the number of instructions a run
executes does not (it varies by a fraction of a percent with string hashing).  Each side
runs under ``valgrind --tool=callgrind`` twice, with and without the timed runs, so the
count of the runs alone is the difference (imports, scenario loading and a warm-up run
cancel out):

* the harness: ``run_one`` of the default scenario, structured policy on structured
  errors (world, faults, formats, policy, ledger, oracle and metrics), as
  ``benchmarks/run.py``'s ratio section times it;
* the like-for-like skeleton (``benchmarks/skeleton.py``, the harness's own event pattern)
  on the same tasks.

The ratio of instructions per call is an estimate of the throughput ratio on an idle
machine (both are interpreted Python, so instructions per second are about equal).  Needs
valgrind (``apt-get install valgrind``); nothing here fails the build.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

#: The default scenario's size in scaled() terms (benchmarks/inprocess.py: scaled(10, 6_840) is the default).
WORKERS, CALLS = 10, 6_840


def child(side: str, seeds: int, timed: bool) -> int:
    """Prepare ``seeds`` seeds of one side and warm up; with ``timed``, run them; print the tool calls made."""
    from inprocess import scaled, scenario_of

    spec = scenario_of(scaled(WORKERS, CALLS))
    calls = 0
    if side == "harness":
        from fleetchaos.runs.runner import run_one

        run_one(spec, "structured", "structured", 0)  # warm-up: lazy imports, caches
        for seed in range(1, seeds + 1 if timed else 1):
            calls += int(run_one(spec, "structured", "structured", seed).metrics["tool_calls"] or 0)
    else:
        from skeleton import run_skeleton, skeleton_tasks

        # Task generation is not charged to the skeleton: built whether timed or not.
        tasks = {seed: skeleton_tasks(spec, seed) for seed in range(seeds + 1)}
        run_skeleton(spec, tasks[0], 0, pattern="fleetchaos")
        for seed in range(1, seeds + 1 if timed else 1):
            calls += run_skeleton(spec, tasks[seed], seed, pattern="fleetchaos").calls
    print(json.dumps({"calls": calls}))
    return 0


def child_env() -> dict[str, str]:
    """The children's environment: bytecode written and read, so no child compiles what another did not.

    With ``PYTHONDONTWRITEBYTECODE=1`` every child compiles each module it imports, and a
    module imported only by the timed runs is charged to them (it moved the ratio by 0.06).
    """
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def warm_bytecode() -> None:
    """Compile the package and the benchmarks before anything is counted (the children then only read bytecode)."""
    import compileall

    import fleetchaos
    import fleetchaos.sim

    for folder in (Path(fleetchaos.__file__).parent, Path(fleetchaos.sim.__file__).parent, HERE):
        compileall.compile_dir(folder, quiet=1)


def instructions(side: str, seeds: int, timed: bool) -> int:
    """Instructions valgrind counts for a child process of ``side`` (see :func:`child`)."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__]
    out = subprocess.run(
        [*cmd, "--child", f"{side},{seeds},{int(timed)}"], capture_output=True, text=True, check=True, env=child_env()
    )
    found = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output: {out.stderr[-500:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    """Print instructions per call of each side and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=2, help="timed seeds per side [default: 2]")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        side, seeds, timed = args.child.split(",")
        return child(side, int(seeds), timed == "1")
    if shutil.which("valgrind") is None:
        print("instructions.py needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    warm_bytecode()
    per_call = {}
    for side in ("harness", "skeleton"):
        # Uncounted, first: it also writes the bytecode of whatever the side imports.
        run = subprocess.run(
            [sys.executable, __file__, "--child", f"{side},{args.seeds},1"],
            capture_output=True,
            text=True,
            check=True,
            env=child_env(),
        )
        calls = json.loads(run.stdout.strip().splitlines()[-1])["calls"]
        counted = instructions(side, args.seeds, True) - instructions(side, args.seeds, False)
        per_call[side] = counted / calls
        print(f"{side:9s} {per_call[side]:10,.0f} instructions per tool call ({calls:,} calls, seeds 1-{args.seeds})")
    ratio = per_call["skeleton"] / per_call["harness"]
    print(f"like-for-like ratio by instructions: {ratio:.3f}x (tracked, not a target: docs/performance.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
