"""The command line that replays one run: what every output names a run by.

Light to import: the standard library, and the ``--param`` value formatting when a run has parameters.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

__all__ = ["replay_command"]


def replay_command(
    scenario_ref: str,
    policy: str,
    errors: str,
    seed: int,
    params: Sequence[tuple[str, Any]] = (),
    *,
    gated: bool = False,
) -> str:
    """The command line that reproduces one run exactly (swept parameters as ``--param``).

    ``gated``: the scenario carries ``expect:`` gates.  The replay then says ``--no-expect``: it
    reproduces the run and its figures, and its gates' verdict belongs to the runs that were
    judged together (a mean over several seeds is not one seed's value), so judging them again
    on this one seed could fail a gate that passed, or pass one that failed.
    """
    from fleetchaos.scenario.params import format_value

    extra = "".join(f" --param {shlex.quote(f'{path}={format_value(value)}')}" for path, value in params)
    # A policy with parameters, backoff(base_s=0.5), is quoted for the shell; a bare name reads as it is.
    command = f"fleetchaos run --scenario {scenario_ref}{extra} --policy {shlex.quote(policy)} --errors {errors} --seed {seed}"
    return command + (" --no-expect" if gated else "")
