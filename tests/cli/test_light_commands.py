"""Commands load only what they need: no SciPy, matplotlib, Faker or hypothesis for a run, a comparison or help."""

from __future__ import annotations

import json
import sys

import patience
import pytest

HEAVY = ("scipy", "matplotlib", "faker", "hypothesis", "fleetchaos.reports.charts")

#: Runs the command line in a fresh interpreter and prints which of ``watched`` it loaded.
PROBE = """
import json, sys
from fleetchaos.cli.main import main
try:
    main(sys.argv[2:], prog_name="fleetchaos", standalone_mode=False)
except SystemExit:
    pass
watched = json.loads(sys.argv[1])
print("LOADED " + json.dumps(sorted(m for m in watched if m in sys.modules)))
"""


def _loaded(args: list[str], watched: tuple[str, ...], tmp_path) -> list[str]:
    out = patience.run(
        [sys.executable, "-c", PROBE, json.dumps(watched), *args],
        capture_output=True,
        text=True,
        check=True,
        cpu_s=120,
        cwd=tmp_path,
    )
    line = [x for x in out.stdout.splitlines() if x.startswith("LOADED ")][-1]
    return json.loads(line.removeprefix("LOADED "))


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--scenario", "default", "--no-history"],
        ["run", "--scenario", "default", "--no-history", "--json"],
        # best against best from default.yaml's tuned: block, on the formats whose texts plant no
        # Faker-made secrets (raw's vendor texts do: running raw needs Faker)
        [
            "compare",
            "--scenario",
            "default",
            "--seeds",
            "2",
            "--jobs",
            "1",
            "--no-history",
            "--errors",
            "generic,status,structured",
        ],
    ],
    ids=["run-table", "run-json", "compare-table"],
)
def test_runs_and_comparisons_without_a_report_load_nothing_heavy(args, tmp_path):
    """A run or comparison printed as a table or JSON imports no SciPy, matplotlib, Faker, hypothesis or charts."""
    assert _loaded(args, HEAVY, tmp_path) == []


def test_help_loads_neither_the_simulation_nor_pydantic(tmp_path):
    """`fleetchaos --help` imports no SimPy, pydantic or heavy library: it lists commands and nothing else."""
    assert _loaded(["--help"], (*HEAVY, "simpy", "pydantic"), tmp_path) == []


def test_a_report_does_load_matplotlib(tmp_path):
    """The probe sees what it should: a report drawn in the command's own process (--jobs 1) imports matplotlib."""
    args = ["compare", "--scenario", "default", "--seeds", "1", "--jobs", "1", "--no-history",
            "--policies", "blind-retry", "--errors", "generic", "--report", str(tmp_path / "out")]  # fmt: skip
    assert _loaded(args, ("matplotlib",), tmp_path) == ["matplotlib"]
