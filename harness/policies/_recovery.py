"""Small helpers every policy module shares: jittered backoff, the unknown branch, resume points.

The built-in policies, the blocks and the presets all use them; they live apart so that
none of those modules has to import another just for a backoff formula.
"""

from __future__ import annotations

from fleetchaos.sim.envelope import AgentToolError, parse_item_ref, parse_step_ref
from fleetchaos.sim.observation import Action, Escalate, Retry, TaskHistory

__all__ = ["exponential", "full_jitter", "hinted_delay", "resume_from_refs", "resume_point", "unknown_branch"]


def exponential(base_s: float, cap_s: float, n: int) -> float:
    """``min(cap_s, base_s * 2**n)``: exponential backoff before jitter."""
    # 2**n overflows float past n ~ 1023; the cap is reached long before
    return cap_s if n >= 1000 else min(cap_s, base_s * 2.0**n)


def full_jitter(history: TaskHistory, base_s: float, cap_s: float) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**retries))."""
    return history.rng.uniform(0.0, exponential(base_s, cap_s, history.retries))


def hinted_delay(retry_after_s: float | None, history: TaskHistory, base_s: float, cap_s: float) -> float:
    """The retry-after hint plus a little jitter (so waiters do not all return at once), else full-jitter backoff."""
    if retry_after_s is not None:
        return retry_after_s + history.rng.uniform(0.0, base_s)
    return full_jitter(history, base_s, cap_s)


def unknown_branch(history: TaskHistory, retries: int, base_s: float, cap_s: float, reason: str) -> Action:
    """What a policy does with a failure it cannot read: back off and retry ``retries`` times, then escalate."""
    if history.retries < retries:
        return Retry(delay_s=full_jitter(history, base_s, cap_s))
    return Escalate(reason)


def resume_point(envelope: AgentToolError) -> tuple[int, tuple[int, ...]]:
    """Where to resume, from the envelope's partial_success: (step, items already done)."""
    partial = envelope.partial_success
    if partial is None:
        return 0, ()
    start = 0
    for ref in partial.completed_steps:
        start = max(start, parse_step_ref(ref) + 1)
    done = []
    for ref in partial.artifacts:
        parsed = parse_item_ref(ref)
        if parsed is not None and parsed[0] == start:
            done.append(parsed[1])
    return start, tuple(sorted(done))


def resume_from_refs(refs: tuple[str, ...] | None) -> tuple[int, tuple[int, ...]]:
    """Where to resume from a list of step and item references (``partial_results``); None means from the start."""
    if not refs:
        return 0, ()
    steps = [r for r in refs if parse_item_ref(r) is None]
    start = max((parse_step_ref(r) + 1 for r in steps), default=0)
    items = [parse_item_ref(r) for r in refs]
    done = sorted({p[1] for p in items if p is not None and p[0] == start})
    return start, tuple(done)
