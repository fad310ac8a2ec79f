"""Resuming a comparison (``compare --resume``): what identifies it, and its stored runs by job.

A comparison is identified by what decides its runs: the scenario as validated with its
``--param`` values applied (its digest, :func:`fleetchaos.scenario.load.scenario_hash`),
the policies (as specs, parameters included), the error formats and the seeds.  Its
history group records that identity as ``compare_id``; ``--resume`` continues the newest
group with the same one (whatever its status) and runs only the jobs it lacks, found by
each run's :func:`~fleetchaos.gates.history.run_key`.  A changed scenario file, another
seed or another arm gives another identity, so nothing resumes into stale runs.  The
confidence level, the report and the time limit are not part of it: the comparison is
aggregated again from every run, so it comes out the same as one that was never
interrupted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

__all__ = ["COMPARE_ID", "compare_id", "compare_jobs"]

#: The key of a comparison group's meta that identifies it for ``--resume``.
COMPARE_ID = "compare_id"


def compare_id(spec: Scenario, policies: Sequence[str], errors: Sequence[str], seeds: Sequence[int],
               params: Sequence[tuple[str, Any]] = (), arms: Sequence[tuple[str, str]] | None = None) -> str:  # fmt: skip
    """A stable id of one comparison: scenario digest, arms, seeds and ``--param`` values (16 hex digits).

    ``arms`` (policy, errors) when they are not every policy on every format (best against best).
    """
    from fleetchaos.scenario.load import scenario_hash

    parts: list[Any] = [scenario_hash(spec), list(policies), list(errors), [int(s) for s in seeds],
                        [[p, v] for p, v in params]]  # fmt: skip
    if arms is not None and list(arms) != [(p, e) for p in policies for e in errors]:
        parts.append([list(arm) for arm in arms])
    ident = json.dumps(parts, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]


def compare_jobs(spec: Scenario, policies: Sequence[str], errors: Sequence[str], seeds: Sequence[int],
                 params: Sequence[tuple[str, Any]] = (),
                 arms: Sequence[tuple[str, str]] | None = None) -> dict[str, tuple[str, str, int]]:  # fmt: skip
    """The run key of each job of a comparison -> its (policy, error format, seed)."""
    from fleetchaos.gates.history import run_key

    pairs = list(arms) if arms is not None else [(p, e) for p in policies for e in errors]
    return {run_key(spec.name, p, e, s, dict(params)): (p, e, s) for p, e in pairs for s in seeds}
