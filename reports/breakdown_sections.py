"""The "Breakdowns" section of a comparison report: counts by fault kind, reason, code, tool, worker and claim.

All seeds pooled.  Failed retries (a retry whose dispatch failed again) stand beside
wasted retries (a retry sent while the true cause still held): by the fault kind the
retry failed with, and by how it relates to the failure before it.
"""

from __future__ import annotations

from fleetchaos.reports.blocks import H2, H3, TABLE, Block, P, literal
from fleetchaos.reports.cells import counts, kind_recovery
from fleetchaos.reports.naming import arm_names
from fleetchaos.results.models import CompareResult

#: The breakdowns listed as counts per arm, with their titles, in order.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("failed_retries_by_kind", "Failed retries by the fault they met"),
    ("failed_retries_by_reason", "Failed retries by how they relate to the failure before them"),
    ("wasted_retries_by_reason", "Wasted retries by reason (judged against the fault's truth)"),
    ("fault_hits_by_error_code", "Faulted calls by error code"),
    ("fault_hits_by_tool", "Faulted calls by tool"),
    ("fault_hits_by_worker", "Faulted calls by worker"),
    ("misreported_failures_by_way", "Wrong envelopes by way (judged against the truth)"),
    ("provider_calls", "Provider calls: served, refused, abandoned by the client, cancelled"),
    ("dispatches_refused_locally", "Dispatches a throttle refused before they left the orchestrator"),
    ("tasks_stopped_by_limit", "Tasks stopped by a limit (deadline, call budget, action cap)"),
    ("claims", "Final claims"),
)

#: Sections shown even when every arm's counts are empty (an empty table says "none" in so many words).
ALWAYS = frozenset({"failed_retries_by_kind", "wasted_retries_by_reason"})


def breakdown_blocks(result: CompareResult) -> list[Block]:
    """The breakdown tables of a comparison, one row per arm."""
    names = [literal(x) for x in arm_names(result.arms)]
    blocks = [H2("Breakdowns (all seeds pooled)")]
    kinds = sorted({k for a in result.arms for k in a.breakdowns.get("faulted_tasks_by_first_fault", {})})
    if kinds:
        rows = []
        for name, a in zip(names, result.arms):
            d = kind_recovery(a)
            rows.append([name] + [
                (f"{100 * d[k][0] / d[k][1]:.0f}% ({d[k][0]}/{d[k][1]})" if d.get(k, (0, 0))[1] else "-") for k in kinds
            ])  # fmt: skip
        blocks += [
            H3("Recovery by kind of first fault (recovered / the arm's own faulted tasks)"),
            TABLE(["arm", *(literal(k) for k in kinds)], rows, 1),
        ]
    for key, title in SECTIONS:
        if not (any(a.breakdowns.get(key) for a in result.arms) or key in ALWAYS):
            continue
        rows = [[name, literal(counts(a.breakdowns.get(key, {})))] for name, a in zip(names, result.arms)]
        blocks += [H3(title), TABLE(["arm", "counts"], rows, 0)]
        if key == "failed_retries_by_reason":
            blocks.append(
                P(
                    "'after its retry-after instant': the refusal named when its cause would lift, the retry waited "
                    "that long and was refused again (obedient waiters woken together); 'same fault again': the same "
                    "kind, no such instant; 'a different fault': the retry met another kind."
                )
            )
    return blocks
