"""The "Policy errors" section of a report: which arms' policies misbehaved, and how."""

from __future__ import annotations

from fleetchaos.reports.blocks import H2, H3, TABLE, Block, P
from fleetchaos.reports.tables import policy_error_tasks

#: What each kind of policy error the driver records means, by the start of its message
#: (simulated_fleet/world.py, ``World._decide``).
POLICY_ERROR_KINDS: tuple[tuple[str, str], ...] = (
    ("policy raised", "raised an exception"),
    ("policy returned an invalid action", "returned an invalid action (not one of the actions, or a bad field)"),
    # Results written before the action cap became the orchestrator's own limit (tasks_stopped_by_limit).
    ("action cap reached", "never gave up: hit the action cap for one task"),
)

#: Distinct messages listed per arm before the rest are summed into one row.
POLICY_ERROR_MESSAGES = 20


def _policy_error_kind(message: str) -> str:
    for prefix, meaning in POLICY_ERROR_KINDS:
        if message.startswith(prefix):
            return meaning
    return "other"


def policy_error_blocks(arms: list[tuple[str, str, dict, dict]], runs: int) -> list[Block]:
    """A "Policy errors" section for the arms ``(policy, errors, metrics, breakdowns)`` with any; [] if none.

    Each arm gets its task count and every distinct message with its problem and task
    count (pooled over ``runs`` seeds), the most frequent first.
    """
    blocks: list[Block] = []
    broken = 0
    for policy, errors, metrics, breakdowns in arms:
        tasks = policy_error_tasks(metrics, breakdowns, runs)
        if not tasks:
            continue
        broken += 1
        messages = sorted((breakdowns.get("policy_errors_by_message") or {}).items(), key=lambda kv: (-kv[1], kv[0]))
        blocks.append(H3(f"{policy} on {errors}: {tasks} task{'s' if tasks != 1 else ''} ended by a policy error"))
        if not messages:
            blocks.append(P("The messages were not recorded (results written by an older version): "
                            "replay a seed with `fleetchaos run ... --report DIR` to see them."))  # fmt: skip
            continue
        rows = [[_policy_error_kind(m), m, str(n)] for m, n in messages[:POLICY_ERROR_MESSAGES]]
        rest = messages[POLICY_ERROR_MESSAGES:]
        if rest:
            rows.append(["", f"and {len(rest)} more distinct messages", str(sum(n for _, n in rest))])
        blocks.append(TABLE(["problem", "message", "tasks"], rows, align_right=2))
    if not broken:
        return []
    intro = P(
        f"The policy of {'these arms' if broken > 1 else 'this arm'} misbehaved on some tasks: it raised or returned "
        "something that is not a valid action. Each such task "
        "was given up and counted in `policy_errors`, and the run went on. The figures of an arm with policy "
        "errors measure the bug, not a recovery strategy: fix the policy, then compare again."
    )
    return [H2("Policy errors"), intro, *blocks]
