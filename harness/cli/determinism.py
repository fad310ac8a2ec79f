"""The --check-determinism mode of run, compare and sweep: each run made twice, traced, its event logs compared."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.markup import escape

from fleetchaos.cli.common import stderr_console

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

__all__ = ["run_determinism_check"]


def run_determinism_check(
    spec: Scenario | None,
    scenario_ref: str,
    arms: list[tuple[str, str]],
    seeds: list[int],
    runs: Sequence[tuple[Scenario, str, str, int, str]] | None = None,
) -> None:
    """The --check-determinism mode: exit 0 if every arm and seed ran the same twice, else 1.

    ``runs`` (a sweep's ``(scenario, policy, errors, seed, replay)`` tuples) replaces spec x arms x seeds.
    """
    from fleetchaos.runs.determinism import check_determinism, check_runs

    err = stderr_console()
    if runs is None:
        assert spec is not None  # without runs the check is of one scenario's arms and seeds
        mismatches = check_determinism(spec, scenario_ref, arms, seeds)
        count = len(arms) * len(seeds)
    else:
        mismatches = check_runs(runs)
        count = len(runs)
    for mismatch in mismatches:
        err.print(f"[red]error:[/red] {escape(mismatch.message())}", highlight=False)
    if mismatches:
        err.print(
            f"determinism check failed: {len(mismatches)} of {count} runs differ between two runs", highlight=False
        )
        sys.exit(1)
    err.print(f"determinism check passed: {count} runs, each run twice, identical event logs", highlight=False)
