"""A digest of what the simulation does, to check that a speed change changed no result.

    .venv/bin/python benchmarks/digest.py                # prints one line per part, then the total
    .venv/bin/python benchmarks/digest.py --out a.txt    # also writes them, to diff with a later run

Parts:

* ``compare``: the SHA-256 of ``fleetchaos compare --scenario default --seeds 10 --json``
  (run in this process, no history; the JSON a user gets).
* one line per catalogue scenario: the SHA-256 over :data:`ARMS` and seeds 1 and 2 of each
  run's fingerprint (``fleetchaos.runs.determinism.fingerprint``: the traced event log, the
  fault log and every task record) and of its ``run_one`` result with per-task rows, so
  both the traced and the untraced paths are covered.

The arms cover every built-in error format and a policy of each kind (retries, backoff,
the decision trees, the remedy ladder with its breaker, budgets, a throttle, transport
layers), so every branch of the driver that a catalogue scenario reaches is run.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

#: (policy, error format) pairs run on every catalogue scenario.
ARMS = (
    ("blind-retry", "generic"),
    ("backoff", "structured"),
    ("structured", "structured"),
    ("failure-type-router", "failure-type"),
    ("raw-parse", "raw"),
    ("ladder-breaker", "tool-envelope"),
    ("layered-transport", "agent-tool-error"),
    ("throttle-sre", "subagent-result"),
    ("budget-aws", "empty-success"),
    ("category-tree-remediation", "fabricated-defaults"),
)
SEEDS = (1, 2)


def compare_digest() -> str:
    """SHA-256 of the default comparison's JSON (10 seeds, one process, no history)."""
    from fleetchaos.cli.main import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        try:
            args = ["compare", "--scenario", "default", "--seeds", "10", "--json", "--jobs", "1", "--no-history"]
            main(args, prog_name="fleetchaos", standalone_mode=False)
        except SystemExit:
            pass
    return hashlib.sha256(buffer.getvalue().encode()).hexdigest()


def scenario_digest(name: str) -> str:
    """SHA-256 over every arm and seed of one catalogue scenario (fingerprints and results with tasks)."""
    from fleetchaos.runs.determinism import fingerprint
    from fleetchaos.runs.runner import run_one
    from fleetchaos.scenario.load import load_scenario

    spec = load_scenario(name)
    h = hashlib.sha256()
    for policy, errors in ARMS:
        for seed in SEEDS:
            h.update(fingerprint(spec, policy, errors, seed).encode())
            h.update(run_one(spec, policy, errors, seed, keep_tasks=True).model_dump_json().encode())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    """Print (and with --out write) the digest of each part and of the whole."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="also write the lines here")
    parser.add_argument("--only", help="comma-separated parts (compare, scenario names) [default: all]")
    args = parser.parse_args(argv)
    from fleetchaos.catalogue import names

    parts = ["compare", *names()]
    if args.only:
        parts = [p for p in parts if p in set(args.only.split(","))]
    lines = []
    for part in parts:
        digest = compare_digest() if part == "compare" else scenario_digest(part)
        lines.append(f"{part} {digest}")
        print(lines[-1], flush=True)
    total = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    print(f"total {total}")
    if args.out:
        args.out.write_text("\n".join(lines) + f"\ntotal {total}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
