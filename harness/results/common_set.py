"""Recovery on a common set of tasks: one denominator for every arm of a comparison.

``recovery_rate`` divides by the arm's own faulted tasks, which differ between arms (a
policy that waits causes fewer rate-limit faults, a policy that retries blindly more), so
two arms' rates are not fractions of the same tasks.  ``common_recovery_rate`` is: on
each seed, the common set is every task faulted in ANY arm of the comparison (in an
open-loop scenario a seed gives every arm the same arrivals, so task ids name the same
tasks across arms), and each arm's figure is its tasks of that set that ended truly
successful (fully done, claimed a success) over the size of the set.  Paired
differences per seed then share one denominator.

A run carries what this needs compactly in :attr:`RunResult.task_sets`: the ids of its
faulted tasks and of its truly successful tasks, each as a bitmap (bit ``i`` of the
little-endian bytes is task ``i``), base64-encoded.  The regression gate uses the same
sets to judge a run against a stored baseline run of the same seed on the union of the
two runs' faulted tasks (:func:`common_pair`).

Light to import: the standard library only (the regression gate reads it).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleetchaos.results.models import RunResult

__all__ = [
    "FAULTED",
    "SUCCEEDED",
    "TaskIdSets",
    "apply_common_sets",
    "common_counts",
    "common_pair",
    "decode",
    "encode",
    "faulted_union",
]

#: The keys of :attr:`RunResult.task_sets`.
FAULTED = "faulted"
SUCCEEDED = "succeeded"


def encode(bits: bytes | bytearray) -> str:
    """A bitmap as base64 text, trailing empty bytes dropped (the empty set is ``""``)."""
    return base64.b64encode(bytes(bits).rstrip(b"\0")).decode("ascii")


def decode(text: str) -> int:
    """A bitmap from :func:`encode` as a Python int (bit ``i`` set when task ``i`` is in the set)."""
    return int.from_bytes(base64.b64decode(text.encode("ascii"), validate=True), "little")


class TaskIdSets:
    """The ids of a run's faulted and truly successful tasks, set bit by bit as tasks end."""

    __slots__ = ("faulted", "succeeded")

    def __init__(self) -> None:
        self.faulted = bytearray()
        self.succeeded = bytearray()

    def add(self, task_id: int, faulted: bool, succeeded: bool) -> None:
        """Note one task: in the faulted set, the successful set, both or neither."""
        byte, bit = divmod(task_id, 8)
        for wanted, bits in ((faulted, self.faulted), (succeeded, self.succeeded)):
            if wanted:
                if byte >= len(bits):
                    bits.extend(bytes(byte + 1 - len(bits)))
                bits[byte] |= 1 << bit

    def encoded(self) -> dict[str, str]:
        """The two sets as :attr:`RunResult.task_sets` holds them."""
        return {FAULTED: encode(self.faulted), SUCCEEDED: encode(self.succeeded)}


def common_counts(common: int, task_sets: Mapping[str, str]) -> tuple[int, int]:
    """(tasks of the ``common`` set that ended truly successful in this run, size of the set)."""
    return (common & decode(task_sets[SUCCEEDED])).bit_count(), common.bit_count()


def faulted_union(sets: Iterable[Mapping[str, str]]) -> int:
    """The union of the faulted tasks of several runs' task sets, as a bitmap int."""
    common = 0
    for task_sets in sets:
        common |= decode(task_sets[FAULTED])
    return common


def apply_common_sets(
    runs: Sequence[RunResult],
    key: Callable[[RunResult], Hashable] = lambda r: (r.scenario, repr(sorted(r.params.items())), r.seed),
) -> None:
    """Give each run its ``common_recovery_rate`` on the comparison's common set, in place.

    Runs are grouped by ``key`` (by default the scenario, its swept parameters and the seed: the runs
    that met the same tasks); each group's common set is the union of its runs' faulted
    tasks.  The run's ``task_counts`` breakdown gets the set's size and its successes
    (``common_set``, ``common_recovered``), which the pooled rate reads.  Runs without
    task sets (a closed-loop scenario, whose arms run different tasks) are left alone.
    """
    from fleetchaos.results.models import rounded

    groups: dict[object, list[RunResult]] = {}
    for run in runs:
        if run.task_sets:
            groups.setdefault(key(run), []).append(run)
    for members in groups.values():
        common = faulted_union(r.task_sets for r in members)
        for run in members:
            recovered, size = common_counts(common, run.task_sets)
            run.metrics["common_recovery_rate"] = rounded(recovered / size) if size else None
            counts = run.breakdowns.setdefault("task_counts", {})
            counts["common_set"] = size
            counts["common_recovered"] = recovered
            run.breakdowns["task_counts"] = dict(sorted(counts.items()))


def common_pair(current: Mapping[str, str], baseline: Mapping[str, str]) -> tuple[float, float] | None:
    """(current, baseline) common recovery of two runs of one seed on the union of their faulted tasks.

    None when that union is empty.
    """
    common = faulted_union((current, baseline))
    if not common:
        return None
    size = common.bit_count()
    return common_counts(common, current)[0] / size, common_counts(common, baseline)[0] / size
